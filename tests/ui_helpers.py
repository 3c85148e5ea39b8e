"""Threads for the inspector's tests: the demo's crash and resume, an effect in flight, an outcome unknown,
and a thread whose id is markup. Written through the library (the demo, a graph, the journal's documents
as its claims write them), on any sync client."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, TypedDict

from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import DurablePlatform, demo
from langgraph_durable_mongodb.journal import EffectPosition

PATH = demo.PATH
#: A thread id that is markup: every page must show it as text.
INJECTION = "<script>alert(1)</script>"
#: The owner of the claim in flight (another host: this one cannot judge its process gone).
OWNER = "owner-7f3a"


class _State(TypedDict, total=False):
    n: int


def _entry(thread_id: str, effect_key: str, name: str, *, lease: timedelta, at_most_once: bool) -> dict[str, Any]:
    """A journal entry as a claim writes it: started, under a lease that ends ``lease`` from now."""
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    pos = EffectPosition(thread_id, "agent/1", "pay", "1", effect_key)
    return {
        "thread_id": thread_id, "path": "agent/1", "node": "pay", "occurrence": "1", "effect_key": effect_key, "chunk": 0,
        "kind": "tool", "name": name, "status": "started", "idempotency_key": pos.idempotency_key,
        "at_most_once": at_most_once, "input": {"digest": "sha256:0", "preview": '{"amount": 10}'},
        "owner": OWNER, "owner_host": "worker-9.example", "owner_pid": 4242, "fence": 1, "attempts": 1,
        "lease_until": now + lease, "started_at": now - timedelta(seconds=2), "created_at": now - timedelta(seconds=2),
        "updated_at": now,
    }


def seed(client: Any, db_name: str, *, with_demo: bool = True) -> None:
    """``case-43`` with a claim in flight and an at_most_once effect whose outcome is unknown, the ``INJECTION``
    thread and (``with_demo``) the demo's ``case-42``, crashed in-process, then resumed."""
    platform = DurablePlatform(client, db_name=db_name)
    if with_demo:
        config = {"configurable": {"thread_id": "case-42"}}
        try:
            platform.compile(demo.build_graph("raise")).invoke({"case": "claim 7731", "findings": []}, config)
        except demo.SimulatedCrash:
            pass
        platform.compile(demo.build_graph("none")).invoke(None, config)
    builder = StateGraph(_State)
    builder.add_node("inc", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "inc")
    graph = platform.compile(builder)
    for thread_id in ("case-43", INJECTION):
        graph.invoke({"n": 1}, {"configurable": {"thread_id": thread_id}})
    journal = client[db_name][platform.checkpointer.collections.journal]
    journal.insert_many([
        _entry("case-43", "1", "charge_card", lease=timedelta(minutes=5), at_most_once=False),
        _entry("case-43", "2", "send_payment", lease=-timedelta(minutes=5), at_most_once=True),
    ])
    platform.run_locks.wait_releases(10)  # the runs' locks are free in the database: the threads show as done


def position(effect_key: str) -> str:
    """The position of a ``case-43`` entry, as the errors print it."""
    return str(EffectPosition("case-43", "agent/1", "pay", "1", effect_key))
