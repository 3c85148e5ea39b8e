"""Run pytest selections, one after another, each in a fork of a process that has imported the heavy libraries once.

A mutant's tests take about a second; starting an interpreter and importing pytest, LangChain, LangGraph and pymongo
cost about three more, every time (``scripts/mutants -k redact --jobs 1``: 4.5 s of CPU a mutant). ``Forks`` starts
one server process that imports those libraries once (never the package under test, nor the tests: each fork
imports the tree's own, as a fresh ``python -m pytest`` would) and answers each selection from a fork of itself.

    forks = Forks(tree, pythonpath)
    code, output = forks.run(["-q", "-x", "tests/test_journal_redaction.py"])
    forks.close()

POSIX only (``os.fork``). The server process runs no thread, so forking it is safe.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

#: Imported once by the server; each is a third-party library every test run imports (a missing one is skipped).
PRELOADED = (
    "pytest",
    "pytest_asyncio",
    "anyio",
    "langsmith",
    "langchain_core.language_models",
    "langchain_core.messages",
    "langchain_core.runnables",
    "langchain_core.tools",
    "langgraph.checkpoint.base",
    "langgraph.checkpoint.memory",
    "langgraph.func",
    "langgraph.graph",
    "langgraph.types",
    "pymongo",
    "mongomock",
    "mongomock_motor",
)

#: Modules the server must not have imported: a fork would run them instead of the tree's own.
OWN = ("langgraph_durable_mongodb", "tests")


class Forks:
    """A server of pytest runs whose working directory is ``tree``, with ``pythonpath`` ahead on the import path."""

    def __init__(self, tree: Path, pythonpath: str) -> None:
        env = {**os.environ, "PYTHONPATH": pythonpath}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # the processes the tests start write bytecode too (``serve``)
        self._server = subprocess.Popen(
            [sys.executable, __file__], cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, args: list[str]) -> tuple[int, str]:
        """``python -m pytest *args`` in the tree: its exit code (negative: killed by that signal) and its output."""
        assert self._server.stdin is not None and self._server.stdout is not None
        with tempfile.NamedTemporaryFile("r", prefix="pytest-fork-", suffix=".log") as output:
            self._server.stdin.write(json.dumps({"args": args, "output": output.name}) + "\n")
            self._server.stdin.flush()
            reply = self._server.stdout.readline()
            if not reply:
                raise RuntimeError(f"the pytest fork server ended (rc={self._server.wait()})")
            return json.loads(reply)["code"], output.read()

    def close(self) -> None:
        assert self._server.stdin is not None
        self._server.stdin.close()
        self._server.wait()


def serve() -> None:
    """The server: import ``PRELOADED``, then fork once per request line and answer with the fork's exit code."""
    sys.path[0] = os.getcwd()  # as ``python -m pytest`` run here: the tree first, not this script's directory
    for name in PRELOADED:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in OWN)
    if leaked:
        sys.exit(f"a preloaded library imported {leaked[0]}: a fork would not test the tree's own")
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _fork(request["args"], request["output"])
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), flush=True)


def _fork(args: list[str], output: str) -> None:
    """In the fork: pytest, its output into ``output``; never returns."""
    code = 3
    try:
        sink = os.open(output, os.O_WRONLY | os.O_TRUNC)
        os.dup2(sink, 1)
        os.dup2(sink, 2)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        sys.dont_write_bytecode = False
        import pytest

        # The preloaded plugins (pytest_asyncio, anyio, langsmith's) were imported before pytest could rewrite their
        # asserts, which it says once per run; the tree's own modules are imported here, and rewritten.
        code = int(pytest.main(["-W", "ignore::pytest.PytestAssertRewriteWarning", *args]))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    serve()
