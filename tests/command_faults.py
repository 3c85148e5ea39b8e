"""Faults injected at the interpreters' seam (no tests here): one storage command fails, sent or not.

Every request a plan yields reaches MongoDB through ``SyncInterpreter.execute`` or ``AsyncInterpreter.execute``
(``src/storage/plans/interpreters.py``), records written in the background included. ``CommandFault`` wraps both, counts
the storage requests (those naming a collection) and fails the one its ``hits`` picks, once:

- ``lost_reply=False``: the command is never sent (a failed ``put``, ``put_writes``, record, ...);
- ``lost_reply=True``: the command runs, then the caller gets ``AutoReconnect`` (its reply was lost: a standalone
  server, whose writes pymongo does not retry);
- ``kill=True``: the process SIGKILLs itself there instead (a child process's; after the command with
  ``lost_reply``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pymongo.errors import AutoReconnect

from langgraph_durable_mongodb.storage.plans import interpreters


def op(request: Any) -> str:
    """A storage request's name, the snake case of its type (``FindOneAndUpdate`` -> ``find_one_and_update``)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", type(request).__name__).lower()


def checkpoint_step(request: Any, child: bool = False) -> int | None:
    """The step of the root checkpoint (with ``child``: of a compiled child's) a request stores (an ``Upsert`` of
    ``checkpoints``), else None."""
    for op in getattr(request, "operations", None) or ():
        fields = (getattr(op, "_doc", None) or {}).get("$set") or {}
        if (fields.get("checkpoint_ns") != "") is child and "checkpoint_id" in fields and "metadata" in fields:
            return (fields.get("metadata") or {}).get("step")
    return None


def stores_root_checkpoint(step: int) -> Callable[[Any, int], bool]:
    """``hits`` for the store of the root checkpoint of ``step``."""
    return lambda request, index: op(request) == "upsert" and checkpoint_step(request) == step


def stores_child_checkpoint(step: int) -> Callable[[Any, int], bool]:
    """``hits`` for the store of a compiled child's checkpoint of ``step`` (the first such store)."""
    return lambda request, index: op(request) == "upsert" and checkpoint_step(request, child=True) == step


def label(request: Any) -> str:
    """``<op> <collection>``: what a storage request does, where."""
    return f"{op(request)} {request.collection}"


def nth_of(what: str, n: int) -> Callable[[Any, int], bool]:
    """``hits`` for the ``n``-th storage request (1-based) labelled ``what`` (``label``). Requests of one label keep
    their order from run to run where the library orders them (a thread's checkpoints, a task's records), which
    the index among all requests does not (records written in the background interleave with the rest)."""
    seen = [0]

    def hits(request: Any, index: int) -> bool:
        if label(request) != what:
            return False
        seen[0] += 1
        return seen[0] == n

    return hits


@dataclass
class CommandFault:
    """Fails the first storage request ``hits(request, index)`` picks (``index``: 1-based count of storage requests)."""

    hits: Callable[[Any, int], bool]
    lost_reply: bool = False
    #: set: the request picked waits for it (10 s at most) before it fails, as a slow server would hold it
    after: threading.Event | None = None
    #: instead of failing: SIGKILL this process (before the command is sent, or after it ran with ``lost_reply``)
    kill: bool = False
    seen: int = 0
    failed: list[str] = field(default_factory=list)  # the label of the request failed
    labels: list[str] = field(default_factory=list)  # the label of every storage request, in order
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def pick(self, request: Any) -> bool:
        if getattr(request, "collection", None) is None:
            return False  # Defer, Join, Invoke, Sleep, ...: no command of their own
        with self._lock:
            self.seen += 1
            self.labels.append(label(request))
            if self.failed or not self.hits(request, self.seen):
                return False
            self.failed.append(label(request))
            return True

    def hold(self) -> None:
        if self.after is not None:
            assert self.after.wait(10), "the fault waited 10 s for its moment in vain"

    async def ahold(self) -> None:
        deadline = time.monotonic() + 10
        while self.after is not None and not self.after.is_set():
            assert time.monotonic() < deadline, "the fault waited 10 s for its moment in vain"
            await asyncio.sleep(0.005)

    def fail(self) -> None:
        if self.kill:
            os.kill(os.getpid(), signal.SIGKILL)
        raise AutoReconnect("connection closed (injected: " + ("the reply was lost" if self.lost_reply else "not sent") + ")")


@contextlib.contextmanager
def injected(fault: CommandFault) -> Iterator[CommandFault]:
    """Both interpreters fail the request ``fault`` picks while the block runs."""
    sync_execute, async_execute = interpreters.SyncInterpreter.execute, interpreters.AsyncInterpreter.execute

    def execute(self: Any, request: Any) -> Any:
        if not fault.pick(request):
            return sync_execute(self, request)
        fault.hold()
        if fault.lost_reply:
            sync_execute(self, request)
        fault.fail()

    async def aexecute(self: Any, request: Any) -> Any:
        if not fault.pick(request):
            return await async_execute(self, request)
        await fault.ahold()
        if fault.lost_reply:
            await async_execute(self, request)
        fault.fail()

    interpreters.SyncInterpreter.execute, interpreters.AsyncInterpreter.execute = execute, aexecute
    try:
        yield fault
    finally:
        interpreters.SyncInterpreter.execute, interpreters.AsyncInterpreter.execute = sync_execute, async_execute
