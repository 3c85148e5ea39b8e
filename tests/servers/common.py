"""What the server launchers share (stdlib only): the cache, free ports, logs, Go builds, a started server and
how it stops, and the command each launcher is."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def cache_dir(name: str) -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/langgraph-durable-mongodb/<name>``: where a launcher keeps its build."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "langgraph-durable-mongodb" / name


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def terminate(pid: int, alive: Callable[[], bool], wait: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `wait` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not alive():
            return


def go_build(
    module: str,
    version: str,
    package: str,
    target: Path,
    error: type[Exception],
    prepare: Callable[[Path], None] | None = None,
    build_flags: tuple[str, ...] = (),
    verbose: bool = True,
) -> None:
    """Build ``package`` of ``module@version`` into ``target`` with `go`, from the Go module proxy only.

    The module source is downloaded (``go mod download``), copied to a writable temporary dir
    (``prepare(src)`` may then add files the module zip lacks) and built with ``go build -trimpath`` and
    ``build_flags``;
    the binary replaces ``target`` atomically, so concurrent installs never see a half-written one.

    Raises:
        error: `go` is missing, or the download or the build failed.
    """
    go = shutil.which("go")
    if go is None:
        raise error(
            f"{module}@{version} is not cached at {target} and `go` is not on PATH to build it. "
            "Install Go (https://go.dev/dl/)."
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # The copied source is not a VCS checkout; keep any GOFLAGS the user set.
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -buildvcs=false").strip()
    env.pop("GOBIN", None)  # unused: we `go build -o`
    log = sys.stderr if verbose else subprocess.DEVNULL
    with tempfile.TemporaryDirectory(prefix="go-src-") as tmp:
        dl = subprocess.run([go, "mod", "download", "-json", f"{module}@{version}"], env=env, cwd=tmp,
                            capture_output=True, text=True)
        if dl.returncode != 0:
            raise error(f"`go mod download {module}@{version}` failed:\n{dl.stdout}{dl.stderr}")
        src = Path(tmp) / "src"
        shutil.copytree(json.loads(dl.stdout)["Dir"], src)
        for p in src.rglob("*"):  # the module cache is read-only
            p.chmod(p.stat().st_mode | 0o200)
        if prepare is not None:
            prepare(src)
        partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        build = subprocess.run([go, "build", "-trimpath", *build_flags, "-o", str(partial), package], env=env, cwd=src,
                               stdout=log, stderr=log)
        if build.returncode != 0:
            partial.unlink(missing_ok=True)
            raise error(f"`go build {package}` of {module}@{version} failed (exit {build.returncode})")
        partial.replace(target)


@dataclass
class Server:
    """A launched server: its process, its URI, and its state dir, which holds its log (``log_name``)."""

    process: subprocess.Popen
    uri: str
    state_dir: Path
    log_name: str

    @property
    def log_path(self) -> Path:
        return self.state_dir / self.log_name


def stop(server: Server, keep_state: bool = False) -> None:
    """Stop the server; delete its state dir unless ``keep_state`` (to start it again with its data)."""
    if server.process.poll() is None:
        terminate(server.process.pid, lambda: server.process.poll() is None)
    if not keep_state:
        shutil.rmtree(server.state_dir, ignore_errors=True)


@contextlib.contextmanager
def running(start: Callable[..., Server], timeout: float) -> Iterator[str]:
    """``start(timeout=timeout)`` a server (building it first if needed), yield its URI, stop it afterwards."""
    server = start(timeout=timeout)
    try:
        yield server.uri
    finally:
        stop(server)


# --- The command `python -m tests.servers.<launcher> install|start|stop|uri` ----------------------------------


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError):  # Linux: a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def is_ours(running: dict[str, Any], mark: str) -> bool:
    """The recorded server still runs: its pid is alive and (Linux) its command line holds ``running[mark]``
    (guards against a recycled pid)."""
    if not pid_alive(running["pid"]):
        return False
    with contextlib.suppress(OSError):
        return running[mark].encode() in Path(f"/proc/{running['pid']}/cmdline").read_bytes()
    return True


@dataclass(frozen=True)
class Command:
    """What a launcher's command needs of it. ``start()`` starts a server in the background and returns it with
    the fields to record besides its pid, URI and state dir; ``mark`` is the recorded field that the server's
    command line holds."""

    title: str
    module: str
    error: type[Exception]
    cache_dir: Path
    install: Callable[[], Path]
    start: Callable[[], tuple[Server, dict[str, str]]]
    mark: str

    def main(self, argv: list[str]) -> int:
        """``install`` builds the server into the cache; ``start`` leaves it running in the background (recorded
        in the cache's running.json) and prints its URI; ``uri`` prints it; ``stop`` ends it."""
        cmd = argv[1] if len(argv) == 2 else ""
        run_file = self.cache_dir / "running.json"
        running = json.loads(run_file.read_text()) if run_file.exists() else None
        if running and not is_ours(running, self.mark):  # stale record: the server is gone
            shutil.rmtree(running["state_dir"], ignore_errors=True)
            run_file.unlink()
            running = None
        try:
            if cmd == "install":
                print(self.install())
            elif cmd == "start":
                if running:
                    print(running["uri"])
                    return 0
                server, fields = self.start()
                run_file.parent.mkdir(parents=True, exist_ok=True)
                run_file.write_text(json.dumps(
                    {"pid": server.process.pid, "uri": server.uri, "state_dir": str(server.state_dir), **fields}
                ))
                print(server.uri)
            elif cmd == "uri":
                if not running:
                    print(f"{self.title} is not running (use `start`)", file=sys.stderr)
                    return 1
                print(running["uri"])
            elif cmd == "stop":
                if running:
                    terminate(running["pid"], lambda: pid_alive(running["pid"]))
                    shutil.rmtree(running["state_dir"], ignore_errors=True)
                    run_file.unlink(missing_ok=True)
            else:
                print(f"usage: python -m tests.servers.{self.module} install|start|stop|uri", file=sys.stderr)
                return 2
        except self.error as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
