"""What the server launchers share (stdlib only): the cache, free ports, logs, stopping, Go builds."""

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
from collections.abc import Callable
from pathlib import Path


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
