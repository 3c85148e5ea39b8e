"""The on-call threads of the inspector's browser tests and of its screenshots (``scripts/screenshots``): a prebuilt
ReAct agent crashed in its tool by a SIGKILL and resumed by another process, one whose ``at_most_once`` payment's
outcome is unknown (killed inside it), and one waiting for an approval (``interrupt()`` in its tool), each left by
real processes on a real server (tests/state_shapes.py)."""

from __future__ import annotations

from typing import Any

from pymongo import MongoClient

from . import state_shapes
from .workers.harness import fork_context

#: The threads, as named in the database: thread id -> (what the page shows, the state it is in).
THREADS = {
    "react-crashed-and-resumed": "done",
    "react-outcome-unknown": "outcome unknown",
    "react-approval": "interrupted",
}


def _killed(uri: str, db_name: str, thread_id: str, mode: str) -> None:
    child = fork_context().Process(target=state_shapes.run_in_child, args=(uri, db_name, thread_id, "react", mode), daemon=True)
    child.start()
    child.join(120)
    if child.exitcode not in (-9, 255):
        raise RuntimeError(f"{thread_id}: the run was to die by SIGKILL, it exited {child.exitcode}")


def leave(uri: str, db_name: str) -> None:
    """Write the three threads to ``db_name`` on the server at ``uri``."""
    _killed(uri, db_name, "react-crashed-and-resumed", "crash")
    with MongoClient(uri) as client:
        resumed: Any = state_shapes.resume(client, db_name, "react-crashed-and-resumed", "react")
        assert resumed["messages"][-1].content == "paid, thank you"
    _killed(uri, db_name, "react-outcome-unknown", "unknown")
    with MongoClient(uri) as client:
        state_shapes.run(client, db_name, "react-approval", "react", "interrupt")
