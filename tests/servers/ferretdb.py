#!/usr/bin/env python3
"""Build, start and stop a throwaway FerretDB (SQLite backend) for the real-server test tier.

Stdlib only. From the repository root::

    python -m tests.servers.ferretdb install   # build the binary into the cache (no-op when cached)
    python -m tests.servers.ferretdb start     # start in the background, print its URI
    python -m tests.servers.ferretdb uri       # print the URI of the server started by `start`
    python -m tests.servers.ferretdb stop      # stop it and delete its state

From Python::

    from tests.servers.ferretdb import running_ferretdb

    with running_ferretdb() as uri:
        ...

Why not plain ``go install ...@v1.24.2``: the module zip lacks the generated
build/version/version.txt, and the resulting binary panics at startup ("Invalid
build/version/version.txt file content"). So we download the module source, write that
file, and ``go build`` it. The binary lands in
``${XDG_CACHE_HOME:-~/.cache}/langgraph-durable-mongodb/ferretdb-v1.24.2/ferretdb``;
``FERRETDB_BIN`` points at a prebuilt binary instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import Command, Server, free_port, go_build, running, stop
from .common import cache_dir as common_cache_dir
from .common import log_tail as _log_tail

VERSION = "v1.24.2"
MODULE = "github.com/FerretDB/FerretDB"


class FerretDBError(RuntimeError):
    pass


def cache_dir() -> Path:
    return common_cache_dir(f"ferretdb-{VERSION}")


def binary_path() -> Path:
    return Path(os.environ.get("FERRETDB_BIN") or cache_dir() / "ferretdb")


def _binary_works(path: Path) -> bool:
    if not (path.is_file() and os.access(path, os.X_OK)):
        return False
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and VERSION in out.stdout


def is_cached() -> bool:
    """True when a working binary is cached: nothing to build."""
    return _binary_works(binary_path())


def is_available() -> bool:
    """True when a server can be started: a working binary is cached, or `go` can build one."""
    return is_cached() or shutil.which("go") is not None


def install(verbose: bool = True) -> Path:
    """Return a working FerretDB binary, building it with `go` if needed."""
    target = binary_path()
    if _binary_works(target):
        return target
    if os.environ.get("FERRETDB_BIN"):
        raise FerretDBError(f"FERRETDB_BIN={target} is not a working FerretDB {VERSION} binary")
    if shutil.which("go") is None:
        raise FerretDBError(
            f"FerretDB {VERSION} is not cached at {target} and `go` is not on PATH to build it. "
            "Install Go (https://go.dev/dl/), or set MONGODB_URI to an existing MongoDB server."
        )
    started = time.monotonic()
    if verbose:
        print(f"building FerretDB {VERSION} into {target} (about 2 min on a cold machine)...", file=sys.stderr)

    def write_version(src: Path) -> None:
        (src / "build" / "version" / "version.txt").write_text(VERSION + "\n")

    go_build(MODULE, VERSION, "./cmd/ferretdb", target, FerretDBError, prepare=write_version, verbose=verbose)
    if not _binary_works(target):
        raise FerretDBError(f"built {target} but `{target} --version` does not report {VERSION}")
    if verbose:
        print(f"built {target} in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return target


def _bson(doc: dict[str, int | str]) -> bytes:
    """Encode a flat document of int32 / str values (all `ping` needs)."""
    body = b""
    for key, value in doc.items():
        name = key.encode() + b"\0"
        if isinstance(value, int):
            body += b"\x10" + name + struct.pack("<i", value)
        else:
            raw = value.encode() + b"\0"
            body += b"\x02" + name + struct.pack("<i", len(raw)) + raw
    return struct.pack("<i", len(body) + 5) + body + b"\0"


def ping(host: str, port: int, timeout: float = 2.0) -> bool:
    """Send OP_MSG {ping: 1} and return True when the server answers ok: 1."""
    payload = struct.pack("<I", 0) + b"\0" + _bson({"ping": 1, "$db": "admin"})
    header = struct.pack("<iiii", 16 + len(payload), 1, 0, 2013)  # length, id, responseTo, OP_MSG
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(header + payload)
            reply = b""
            while len(reply) < 4 or len(reply) < struct.unpack("<i", reply[:4])[0]:
                chunk = s.recv(65536)
                if not chunk:
                    return False
                reply += chunk
    except OSError:
        return False
    return b"\x01ok\x00" + struct.pack("<d", 1.0) in reply  # {ok: 1.0} as a BSON double


def start(
    binary: Path | None = None,
    timeout: float = 60.0,
    detach: bool = False,
    state_dir: Path | None = None,
    port: int | None = None,
    user: tuple[str, str] | None = None,
) -> Server:
    """Start FerretDB on a loopback port with a state dir; wait until it answers ping.

    By default the port is a free one and the state dir a fresh temporary one. Pass
    ``state_dir`` and ``port`` to restart a server stopped with ``stop(server, keep_state=True)``
    on the same address with its data. ``user=(name, password)`` enforces authentication (FerretDB's
    ``--test-enable-new-auth``, SCRAM): that user, in ``admin``, is the only one that can log in.
    """
    binary = binary or install()
    state = Path(state_dir) if state_dir is not None else Path(tempfile.mkdtemp(prefix="ferretdb-state-"))
    (state / "data").mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    cmd = [
        str(binary),
        "--handler=sqlite",
        f"--sqlite-url=file:{state / 'data'}/",
        f"--state-dir={state}",
        f"--listen-addr=127.0.0.1:{port}",
        "--debug-addr=-",  # no metrics/pprof HTTP listener
        "--telemetry=disable",
    ]
    if user is not None:
        cmd += ["--test-enable-new-auth", "--setup-database=admin", f"--setup-username={user[0]}", f"--setup-password={user[1]}"]
    with open(state / "ferretdb.log", "ab") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=detach)
    server = Server(proc, f"mongodb://127.0.0.1:{port}/", state, "ferretdb.log")
    deadline = time.monotonic() + timeout
    while not ping("127.0.0.1", port):
        if proc.poll() is not None or time.monotonic() > deadline:
            why = f"exited with code {proc.returncode}" if proc.poll() is not None else f"no ping answer in {timeout:.0f}s"
            tail = _log_tail(server.log_path)
            stop(server, keep_state=state_dir is not None)
            raise FerretDBError(f"FerretDB {why} ({' '.join(cmd)}). Last log lines:\n{tail}")
        time.sleep(0.1)
    return server


def running_ferretdb(timeout: float = 60.0) -> contextlib.AbstractContextManager[str]:
    """Start FerretDB (building it first if needed), yield its URI, stop it afterwards."""
    return running(start, timeout)


def main(argv: list[str]) -> int:
    """The command: ``install``, ``start`` (in the background), ``uri``, ``stop``."""
    return Command(
        "FerretDB", "ferretdb", FerretDBError, cache_dir(), install, lambda: (start(detach=True), {}), mark="state_dir"
    ).main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
