"""scripts/release-check's steps: build, twine check, and the wheel installed and run on each Python (see there).

    .venv/bin/python scripts/release_check.py TOOLS_VENV VERSION=PYTHON...
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from pymongo import MongoClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.clients import with_database  # noqa: E402
from tests.servers.mongo_java_server import running_mongo_java_server  # noqa: E402
from tests.test_readme import use_it_snippet  # noqa: E402

#: Run in the clean venv, outside the checkout: what ships (no test or otel extra), and a journaled effect under
#: embedded() on the runtime dependencies alone.
WHEEL_CHECK = """
import asyncio
import importlib.metadata
import importlib.resources
import importlib.util
from typing import TypedDict

from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import STORAGE_FORMAT, DurablePlatform, __version__, effect

assert importlib.util.find_spec("pytest") is None, "the test extra leaked into the runtime dependencies"
assert importlib.util.find_spec("opentelemetry") is None, "the otel extra leaked into the runtime dependencies"
assert importlib.resources.files("langgraph_durable_mongodb").joinpath("py.typed").is_file(), "py.typed is not in the wheel"
files = importlib.metadata.files("langgraph-durable-mongodb") or []
assert any(f.name == "LICENSE" for f in files), "LICENSE is not in the wheel"
ui = importlib.resources.files("langgraph_durable_mongodb.ui")
for asset in ("templates/threads.html", "templates/thread.html", "static/ui.css", "static/ui.js"):
    assert ui.joinpath(asset).is_file(), f"the ui's {asset} is not in the wheel"
from langgraph_durable_mongodb.ui import missing_extra

assert missing_extra(), "the ui extra leaked into the runtime dependencies"


class State(TypedDict):
    n: int


@effect(kind="tool", name="bump")
def bump(n: int) -> int:
    return n + 1


builder = StateGraph(State)
builder.add_node("inc", lambda state: {"n": bump(state["n"])})
builder.add_edge(START, "inc")
graph = DurablePlatform.embedded().compile(builder)
assert graph.invoke({"n": 1}, {"configurable": {"thread_id": "sync"}}) == {"n": 2}
assert asyncio.run(graph.ainvoke({"n": 2}, {"configurable": {"thread_id": "async"}})) == {"n": 3}
from langgraph_durable_mongodb.telemetry.instruments import _Found

assert _Found.missing, "a journaled effect without the otel extra did not find opentelemetry missing"
print(f"{__version__}, storage format {STORAGE_FORMAT}")
"""
README_PRINTS = "paid 120000 cents to claim-7731 (idempotency key ik-"


def run(*args: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> str:
    """Run a command; its output, or exit with it when it fails."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(map(str, args))} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout.strip()


def build(tools: Path, out: Path) -> Path:
    """The sdist, the wheel built from it, both twine-checked; the wheel's path."""
    run(tools / "bin/python", "-m", "build", "--installer", "uv", "--outdir", out, ".")
    run(tools / "bin/python", "-m", "twine", "check", "--strict", *sorted(out.iterdir()))
    print("built and twine-checked:", " ".join(p.name for p in sorted(out.iterdir())))
    return next(out.glob("*.whl"))


def check_on(version: str, python: str, tools: Path, wheel: Path, uri: str, work: Path) -> None:
    """The wheel alone in a clean venv on ``python``: what ships, embedded(), and the README's example on ``uri``."""
    venv = work / f"venv-{version}"
    run(tools / "bin/uv", "venv", "-q", "--python", python, venv)
    run(tools / "bin/uv", "pip", "install", "-q", "--python", venv / "bin/python", wheel)
    shipped = run(venv / "bin/python", "-c", WHEEL_CHECK, cwd=work)  # outside the checkout: the wheel, not ./src
    db = f"release_check_{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "MONGODB_URI": with_database(uri, db)}
    try:
        printed = run(venv / "bin/python", work / "use_it.py", cwd=work, env=env)
    finally:
        with MongoClient(uri) as client:
            client.drop_database(db)
    if not printed.startswith(README_PRINTS):
        sys.exit(f"Python {version}: the README's example printed {printed!r}")
    print(f"Python {version}: the wheel installs alone ({shipped}); embedded() sync and async; the README's example: {printed}")


def main(tools: Path, pythons: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="release-check-") as tmp:
        work = Path(tmp)
        wheel = build(tools, work / "dist")
        (work / "use_it.py").write_text(use_it_snippet())  # a file of its own: the platform reads node source
        given = os.environ.get("MONGODB_URI", "").strip()
        with running_mongo_java_server() if not given else contextlib.nullcontext(given) as uri:
            for pair in pythons:
                version, python = pair.split("=", 1)
                check_on(version, python, tools, wheel, uri, work)
    print(f"release check passed on Python {', '.join(p.split('=')[0] for p in pythons)}")


if __name__ == "__main__":
    main(ROOT / sys.argv[1], sys.argv[2:])
