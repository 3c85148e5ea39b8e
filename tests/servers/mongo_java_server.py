#!/usr/bin/env python3
"""Build, start and stop a throwaway mongo-java-server (in-memory) for the real-server test tier.

Stdlib only. The same shape as tests/servers/ferretdb.py; from the repository root::

    python -m tests.servers.mongo_java_server install   # build the launcher jar into the cache (no-op when cached)
    python -m tests.servers.mongo_java_server start     # start in the background, print its URI
    python -m tests.servers.mongo_java_server uri       # print the URI of the server started by `start`
    python -m tests.servers.mongo_java_server stop      # stop it

From Python::

    from tests.servers.mongo_java_server import running_mongo_java_server

    with running_mongo_java_server() as uri:
        ...

The launcher (tests/servers/mongo_java_server_launcher/, a pom.xml and one Java class) is built with
``mvn -q -B package`` into one runnable jar, cached as
``${XDG_CACHE_HOME:-~/.cache}/langgraph-durable-mongodb/mongo-java-server-1.47.0/launcher-<hash>.jar``,
where ``<hash>`` covers the launcher's sources: a changed launcher is rebuilt. Maven resolves
from its own local repository (``~/.m2`` unless configured otherwise). Why a launcher at all:
see docs/mongo-java-server.md (the server must report wire version 13 for pymongo 4.20).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .common import cache_dir as common_cache_dir
from .common import log_tail as _log_tail
from .common import terminate as _terminate

VERSION = "1.47.0"
SOURCES = Path(__file__).resolve().parent / "mongo_java_server_launcher"
SOURCE_FILES = ("pom.xml", "src/main/java/MongoJavaServerLauncher.java")


class MongoJavaServerError(RuntimeError):
    pass


def cache_dir() -> Path:
    return common_cache_dir(f"mongo-java-server-{VERSION}")


def source_hash() -> str:
    digest = hashlib.sha256()
    for name in SOURCE_FILES:
        digest.update(name.encode() + b"\0" + (SOURCES / name).read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def jar_path() -> Path:
    return cache_dir() / f"launcher-{source_hash()}.jar"


def missing_tools() -> list[str]:
    """What is missing to start a server: `java` always, `mvn` while the jar is not cached."""
    tools = ["java"] + ([] if jar_path().is_file() else ["mvn"])
    return [t for t in tools if shutil.which(t) is None]


def is_available() -> bool:
    """True when a server can be started: `java` runs the jar, which is cached or `mvn` can build."""
    return not missing_tools()


def install(verbose: bool = True) -> Path:
    """Return the launcher jar, building it with Maven if it is not cached."""
    target = jar_path()
    if target.is_file():
        return target
    missing = missing_tools()
    if missing:
        raise MongoJavaServerError(
            f"mongo-java-server {VERSION} is not cached at {target}, and building and running it needs "
            f"{' and '.join(f'`{t}`' for t in missing)} on PATH. Install Java 17+ and Maven, or set MONGODB_URI "
            "to an existing MongoDB server."
        )
    mvn = shutil.which("mvn")
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if verbose:
        print(f"building mongo-java-server {VERSION} into {target} (Maven: about 20 s with an empty ~/.m2, 5 s warm)...", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="mongo-java-server-src-") as tmp:
        src = Path(tmp) / "launcher"
        shutil.copytree(SOURCES, src, ignore=shutil.ignore_patterns("target"))
        build = subprocess.run([mvn, "-q", "-B", "package"], cwd=src, capture_output=True, text=True)
        built = src / "target" / "mongo-java-server-launcher.jar"
        if build.returncode != 0 or not built.is_file():
            raise MongoJavaServerError(
                f"`mvn -q -B package` of the mongo-java-server launcher failed (exit {build.returncode}); "
                f"Maven needs Maven Central or a mirror in ~/.m2/settings.xml:\n{build.stdout[-3000:]}{build.stderr[-3000:]}"
            )
        partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        shutil.copyfile(built, partial)
        partial.replace(target)  # atomic: concurrent installs never see a half-written jar
    if verbose:
        print(f"built {target} in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return target


@dataclass
class Server:
    process: subprocess.Popen
    uri: str
    state_dir: Path

    @property
    def log_path(self) -> Path:
        return self.state_dir / "server.log"


def start(jar: Path | None = None, timeout: float = 60.0, detach: bool = False, port: int = 0) -> Server:
    """Start the server on 127.0.0.1 (``port`` 0: a free one); return once it listens.

    The launcher prints its URI on one line once bound; that line is the readiness signal.
    The state dir holds only that line and the server's log: the data lives in memory.
    """
    jar = jar or install()
    java = shutil.which("java")
    if java is None:
        raise MongoJavaServerError("`java` is not on PATH: install Java 17+ to run mongo-java-server")
    state = Path(tempfile.mkdtemp(prefix="mongo-java-server-"))
    cmd = [java, "-jar", str(jar), str(port)]
    with open(state / "uri", "wb") as out, open(state / "server.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=log, start_new_session=detach)
    deadline = time.monotonic() + timeout
    while not (state / "uri").read_text().endswith("\n"):
        if proc.poll() is not None or time.monotonic() > deadline:
            why = f"exited with code {proc.returncode}" if proc.poll() is not None else f"did not listen in {timeout:.0f}s"
            tail = _log_tail(state / "server.log")
            stop(Server(proc, "", state))
            raise MongoJavaServerError(f"mongo-java-server {why} ({' '.join(cmd)}). Last log lines:\n{tail}")
        time.sleep(0.05)
    return Server(proc, (state / "uri").read_text().strip(), state)


def stop(server: Server) -> None:
    """Stop the server (its data is gone with it) and delete its state dir."""
    if server.process.poll() is None:
        _terminate(server.process.pid, lambda: server.process.poll() is None)
    shutil.rmtree(server.state_dir, ignore_errors=True)


@contextlib.contextmanager
def running_mongo_java_server(timeout: float = 60.0) -> Iterator[str]:
    """Start mongo-java-server (building it first if needed), yield its URI, stop it afterwards."""
    server = start(timeout=timeout)
    try:
        yield server.uri
    finally:
        stop(server)


# --- CLI: `start` leaves the server running in the background; `stop` ends it. -----------------

def _run_file() -> Path:
    return cache_dir() / "running.json"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # Linux: a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _is_ours(running: dict) -> bool:
    """The recorded server still runs (guards against a recycled pid)."""
    if not _pid_alive(running["pid"]):
        return False
    with contextlib.suppress(OSError):  # Linux: check it is the launcher we started
        return running["jar"].encode() in Path(f"/proc/{running['pid']}/cmdline").read_bytes()
    return True


def main(argv: list[str]) -> int:
    cmd = argv[1] if len(argv) == 2 else ""
    run_file = _run_file()
    running = json.loads(run_file.read_text()) if run_file.exists() else None
    if running and not _is_ours(running):  # stale record: the server is gone
        shutil.rmtree(running["state_dir"], ignore_errors=True)
        run_file.unlink()
        running = None
    try:
        if cmd == "install":
            print(install())
        elif cmd == "start":
            if running:
                print(running["uri"])
                return 0
            jar = install()
            server = start(jar, detach=True)
            run_file.parent.mkdir(parents=True, exist_ok=True)
            run_file.write_text(json.dumps(
                {"pid": server.process.pid, "uri": server.uri, "state_dir": str(server.state_dir), "jar": str(jar)}
            ))
            print(server.uri)
        elif cmd == "uri":
            if not running:
                print("mongo-java-server is not running (use `start`)", file=sys.stderr)
                return 1
            print(running["uri"])
        elif cmd == "stop":
            if running:
                _terminate(running["pid"], lambda: _pid_alive(running["pid"]))
                shutil.rmtree(running["state_dir"], ignore_errors=True)
                run_file.unlink(missing_ok=True)
        else:
            print("usage: python -m tests.servers.mongo_java_server install|start|stop|uri", file=sys.stderr)
            return 2
    except MongoJavaServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
