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
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .common import Command, Server, running, stop
from .common import cache_dir as common_cache_dir
from .common import log_tail as _log_tail

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


def is_cached() -> bool:
    """True when the launcher jar is cached: nothing to build."""
    return jar_path().is_file()


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
            stop(Server(proc, "", state, "server.log"))
            raise MongoJavaServerError(f"mongo-java-server {why} ({' '.join(cmd)}). Last log lines:\n{tail}")
        time.sleep(0.05)
    return Server(proc, (state / "uri").read_text().strip(), state, "server.log")


def running_mongo_java_server(timeout: float = 60.0) -> contextlib.AbstractContextManager[str]:
    """Start mongo-java-server (building it first if needed), yield its URI, stop it afterwards."""
    return running(start, timeout)


def _start_detached() -> tuple[Server, dict[str, str]]:
    jar = install()
    return start(jar, detach=True), {"jar": str(jar)}


def main(argv: list[str]) -> int:
    """The command: ``install``, ``start`` (in the background), ``uri``, ``stop``."""
    return Command(
        "mongo-java-server", "mongo_java_server", MongoJavaServerError, cache_dir(), install, _start_detached, mark="jar"
    ).main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
