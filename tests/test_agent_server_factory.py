"""``langgraph_durable_mongodb.server:checkpointer``, the factory ``langgraph.json`` names for Agent Server.

The end-to-end test with a real ``langgraph dev`` server is ``test_agent_server.py``.
"""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from pymongo import MongoClient

from langgraph_durable_mongodb import ClientConfigurationError, MongoDBCheckpointer
from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.server import checkpointer, database_of


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]


@pytest.mark.parametrize(
    ("uri", "environ", "database"),
    [
        ("mongodb://h:1/agents", {"MONGODB_DB": "other"}, "agents"),
        ("mongodb://h:1/?retryWrites=false", {"MONGODB_DB": "other"}, "other"),
        ("mongodb://h:1", {}, "langgraph"),
    ],
)
def test_the_database_comes_from_the_uri_then_mongodb_db(uri: str, environ: dict, database: str) -> None:
    assert database_of(uri, environ) == database


async def test_without_mongodb_uri_the_factory_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MONGODB_URI", raising=False)
    with pytest.raises(ClientConfigurationError, match="needs MONGODB_URI"):
        async with checkpointer():
            pass


async def test_the_factory_sets_up_and_a_graph_the_server_lends_it_to_journals(
    mongodb_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_name = f"t_{uuid.uuid4().hex[:12]}"
    base, _, query = mongodb_uri.partition("?")
    monkeypatch.setenv("MONGODB_URI", f"{base.rstrip('/')}/{db_name}" + (f"?{query}" if query else ""))
    calls: list[str] = []

    @effect(kind="tool", name="lookup")
    async def lookup(ref: str) -> str:
        calls.append(ref)
        return f"found {ref}"

    async def review(state: State) -> State:
        return {"notes": [await lookup("P-7")]}

    child = StateGraph(State)
    child.add_node("review", review)
    child.add_edge(START, "review")
    root = StateGraph(State)
    root.add_node("case", child.compile())
    root.add_edge(START, "case")
    exported = root.compile()  # what a graph module exports for Agent Server: no checkpointer
    try:
        async with checkpointer() as saver:
            assert isinstance(saver, MongoDBCheckpointer) and saver.db_name == db_name
            served = exported.copy(update={"checkpointer": saver})  # what the server runs
            assert (await served.ainvoke({"notes": []}, {"configurable": {"thread_id": "s1"}}))["notes"] == ["found P-7"]
        with MongoClient(mongodb_uri) as client:
            db = client[db_name]
            assert {"thread_ns_checkpoint", "thread_effect_position"} <= {
                ix["name"] for coll in ("checkpoints", "activity_journal") for ix in db[coll].list_indexes()
            }
            [entry] = list(db["activity_journal"].find({"thread_id": "s1"}))
            assert (entry["path"], entry["node"], entry["status"]) == ("agent/1/case/1", "review", "completed")
    finally:
        with MongoClient(mongodb_uri) as client:
            client.drop_database(db_name)
    assert calls == ["P-7"]
