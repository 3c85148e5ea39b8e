#!/usr/bin/env python3
"""Build and start toxiproxy (Shopify's fault-injection TCP proxy) in front of a MongoDB server.

Stdlib only, the same shape as tests/servers/ferretdb.py. ``scripts/bench --only rtt`` puts it between the
client and each server to add 1 ms to every round trip (about a same-region Atlas round trip). From the
repository root::

    python -m tests.servers.toxiproxy install   # build toxiproxy-server into the cache (no-op when cached)

From Python::

    from tests.servers.toxiproxy import latency_proxy

    with latency_proxy("127.0.0.1", 27017, latency_ms=1) as (host, port):
        ...  # connect to host:port instead: each reply arrives 1 ms later

The binary is built with `go` from the Go module proxy (no binary download) into
``${XDG_CACHE_HOME:-~/.cache}/langgraph-durable-mongodb/toxiproxy-v2.12.0/toxiproxy-server``;
``TOXIPROXY_BIN`` points at a prebuilt one instead. The proxy is driven through toxiproxy's HTTP API with
urllib (PyPI's ``toxiproxy-python`` client has had no release since 2016).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import cache_dir as common_cache_dir
from .common import free_port, go_build, log_tail, terminate

VERSION = "v2.12.0"
MODULE = "github.com/Shopify/toxiproxy/v2"


class ToxiproxyError(RuntimeError):
    pass


def cache_dir() -> Path:
    return common_cache_dir(f"toxiproxy-{VERSION}")


def binary_path() -> Path:
    return Path(os.environ.get("TOXIPROXY_BIN") or cache_dir() / "toxiproxy-server")


def _binary_works(path: Path) -> bool:
    if not (path.is_file() and os.access(path, os.X_OK)):
        return False
    try:
        out = subprocess.run([str(path), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and VERSION.lstrip("v") in out.stdout + out.stderr


def is_cached() -> bool:
    """True when a working binary is cached: nothing to build."""
    return _binary_works(binary_path())


def is_available() -> bool:
    """True when a proxy can be started: a working binary is cached, or `go` can build one."""
    return is_cached() or shutil.which("go") is not None


def install(verbose: bool = True) -> Path:
    """Return a working toxiproxy-server binary, building it with `go` if needed.

    Raises:
        ToxiproxyError: ``TOXIPROXY_BIN`` is not a working binary, or the build failed (no `go`, no module proxy).
    """
    target = binary_path()
    if _binary_works(target):
        return target
    if os.environ.get("TOXIPROXY_BIN"):
        raise ToxiproxyError(f"TOXIPROXY_BIN={target} is not a working toxiproxy-server {VERSION} binary")
    started = time.monotonic()
    if verbose:
        print(f"building toxiproxy {VERSION} into {target} (about 1 min on a cold machine)...", file=sys.stderr)
    # The version is stamped at link time, as toxiproxy's own release build does ("git" otherwise).
    stamp = f"-ldflags=-X {MODULE}.Version={VERSION.lstrip('v')}"
    go_build(MODULE, VERSION, "./cmd/server", target, ToxiproxyError, build_flags=(stamp,), verbose=verbose)
    if not _binary_works(target):
        raise ToxiproxyError(f"built {target} but `{target} -version` does not report {VERSION}")
    if verbose:
        print(f"built {target} in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return target


@dataclass
class Toxiproxy:
    """A running toxiproxy-server and its HTTP API."""

    process: subprocess.Popen
    api: str  # http://127.0.0.1:<port>
    state_dir: Path

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One HTTP API call; return the decoded JSON reply (None when empty)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.api + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                raw = reply.read()
        except urllib.error.HTTPError as exc:
            raise ToxiproxyError(f"toxiproxy {method} {path} failed: {exc.code} {exc.read().decode(errors='replace')}") from exc
        return json.loads(raw) if raw.strip() else None

    def proxy(self, upstream_host: str, upstream_port: int, latency_ms: int = 0, name: str = "mongodb") -> tuple[str, int]:
        """Create a proxy on a free loopback port in front of ``upstream``; return its ``(host, port)``.

        With ``latency_ms``, a ``latency`` toxic on the downstream stream (server to client) delays every
        reply by that much. A MongoDB client waits for each reply before it goes on, so each round trip
        pays the delay exactly once; on the upstream stream too it would pay it twice.
        """
        port = free_port()
        self.call("POST", "/proxies", {"name": name, "listen": f"127.0.0.1:{port}",
                                       "upstream": f"{upstream_host}:{upstream_port}", "enabled": True})
        if latency_ms:
            self.call("POST", f"/proxies/{name}/toxics", {
                "name": "latency", "type": "latency", "stream": "downstream", "toxicity": 1.0,
                "attributes": {"latency": latency_ms, "jitter": 0},
            })
        return "127.0.0.1", port


def start(binary: Path | None = None, timeout: float = 30.0) -> Toxiproxy:
    """Start toxiproxy-server on a free loopback port; return once its HTTP API answers.

    Raises:
        ToxiproxyError: it exited or did not answer within ``timeout`` seconds.
    """
    binary = binary or install()
    state = Path(tempfile.mkdtemp(prefix="toxiproxy-"))
    port = free_port()
    cmd = [str(binary), "-host", "127.0.0.1", "-port", str(port)]
    with open(state / "toxiproxy.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    server = Toxiproxy(proc, f"http://127.0.0.1:{port}", state)
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError, ToxiproxyError):
            server.call("GET", "/version")
            return server
        if proc.poll() is not None or time.monotonic() > deadline:
            why = f"exited with code {proc.returncode}" if proc.poll() is not None else f"no API answer in {timeout:.0f}s"
            tail = log_tail(state / "toxiproxy.log")
            stop(server)
            raise ToxiproxyError(f"toxiproxy {why} ({' '.join(cmd)}). Last log lines:\n{tail}")
        time.sleep(0.05)


def stop(server: Toxiproxy) -> None:
    """Stop toxiproxy-server (its proxies close with it) and delete its log dir."""
    if server.process.poll() is None:
        terminate(server.process.pid, lambda: server.process.poll() is None)
    shutil.rmtree(server.state_dir, ignore_errors=True)


@contextlib.contextmanager
def latency_proxy(upstream_host: str, upstream_port: int, latency_ms: int = 1) -> Iterator[tuple[str, int]]:
    """A toxiproxy in front of ``upstream`` delaying each reply by ``latency_ms``; yields its ``(host, port)``."""
    server = start()
    try:
        yield server.proxy(upstream_host, upstream_port, latency_ms)
    finally:
        stop(server)


def main(argv: list[str]) -> int:
    if argv[1:] != ["install"]:
        print("usage: python -m tests.servers.toxiproxy install", file=sys.stderr)
        return 2
    try:
        print(install())
    except ToxiproxyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
