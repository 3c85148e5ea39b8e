"""Who holds a claim: the claiming process's identity, and whether a same-host owner is gone.

Every claim records its process (``owner_host``, ``owner_pid`` and, on Linux,
``owner_process``: the boot, the pid namespace and the process's start time).
A worker that meets a ``started`` entry under a live lease asks ``owner_gone``:
when the owner ran on this machine, in this pid namespace, and that process
has exited (or its pid now belongs to a later process), nobody will ever
finish or renew the claim, so it is taken over at once instead of waiting
for the lease to expire.

The check only ever answers True when it is sure. Anything it cannot tell
(another host or container, no ``/proc``, an unreadable process) means
"alive", and the lease decides as before. Another thread or task of the same
process is alive too: same pid, same start time.

Example::

    claim = {..., **identity()}
    if lease_is_live and not owner_gone(entry):
        wait()
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        # Field 2 is "(comm)" and may hold spaces or parentheses: count from the last ")", field 3 on.
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _pid_space() -> dict[str, str] | None:
    """This kernel boot and pid namespace, which give a pid its meaning; None where unknown."""
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        pid_ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        return None
    return {"boot_id": boot_id, "pid_ns": pid_ns} if boot_id and pid_ns else None


@functools.cache
def _identity(pid: int) -> dict[str, Any]:
    fields: dict[str, Any] = {"owner_host": socket.gethostname(), "owner_pid": pid}
    space, start = _pid_space(), _start_ticks(pid)
    if space is not None and start is not None:
        fields["owner_process"] = {**space, "start": start}
    return fields


def identity() -> dict[str, Any]:
    """The entry fields naming this process as a claim's owner (computed once per process, fork-aware)."""
    return _identity(os.getpid())


def owner_gone(entry: Mapping[str, Any]) -> bool:
    """True only if the entry's owner ran in this host's pid namespace and its process no longer runs."""
    recorded, pid = entry.get("owner_process"), entry.get("owner_pid")
    mine = identity()
    if not (isinstance(recorded, Mapping) and "owner_process" in mine and type(pid) is int and pid > 0):
        return False
    here = mine["owner_process"]
    if entry.get("owner_host") != mine["owner_host"] or any(recorded.get(k) != here[k] for k in ("boot_id", "pid_ns")):
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except OSError:
        pass  # EPERM: it exists, under another user
    start = _start_ticks(pid)
    return start is not None and start != recorded.get("start")  # the pid was reused by a later process
