"""``langgraph_durable_mongodb.server.checkpointer``, the factory ``langgraph.json`` names for Agent Server.

Agent Server pulls each step of a run's stream in an asyncio task of its own; a run stays bound
there, served or in the plain form (``run_binding``). The end-to-end
test with a real ``langgraph dev`` server is ``test_agent_server.py``.
"""

from __future__ import annotations

import asyncio
import json
import contextvars
import operator
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from pymongo import MongoClient

from langgraph_durable_mongodb import ClientConfigurationError, DurablePlatform, InvalidInputError, MongoDBCheckpointer
from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.journal.labels import labelled
from langgraph_durable_mongodb.server import checkpointer, database_of, ttl_of

from .clients import names_us_once


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


@pytest.fixture
def served_db(mongodb_uri: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh database named by ``MONGODB_URI``'s path, as a deployment names it; dropped afterwards."""
    db_name = f"t_{uuid.uuid4().hex[:12]}"
    base, _, query = mongodb_uri.partition("?")
    monkeypatch.setenv("MONGODB_URI", f"{base.rstrip('/')}/{db_name}" + (f"?{query}" if query else ""))
    try:
        yield db_name
    finally:
        with MongoClient(mongodb_uri) as client:
            client.drop_database(db_name)


async def test_the_factory_sets_up_and_a_graph_the_server_lends_it_to_journals(mongodb_uri: str, served_db: str) -> None:
    db_name = served_db
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
    async with checkpointer() as saver:
        assert isinstance(saver, MongoDBCheckpointer) and saver.db_name == db_name
        served = exported.copy(update={"checkpointer": saver})  # what the server runs
        assert (await served.ainvoke({"notes": []}, {"configurable": {"thread_id": "s1"}}))["notes"] == ["found P-7"]
        for client in (saver.client, saver.async_client.current()):  # the handshake names us (test_driver_info.py)
            assert names_us_once(client)
    with MongoClient(mongodb_uri) as client:
        db = client[db_name]
        assert {"thread_ns_checkpoint", "thread_effect_position"} <= {
            ix["name"] for coll in ("checkpoints", "activity_journal") for ix in db[coll].list_indexes()
        }
        [entry] = labelled(db["activity_journal"].find({"thread_id": "s1"}))
        assert (entry["path"], entry["node"], entry["status"]) == ("agent/1/case/1", "review", "completed")
    assert calls == ["P-7"]


def nested_graph(calls: list[str]) -> Any:
    """root -> case (compiled child) -> policy (compiled grandchild) -> review, which runs one effect; then decide."""

    @effect(kind="tool", name="lookup")
    async def lookup(ref: str) -> str:
        calls.append(ref)
        return f"found {ref}"

    async def review(state: State) -> State:
        return {"notes": [await lookup("P-7")]}

    async def decide(state: State) -> State:
        return {"notes": ["decided"]}

    policy = StateGraph(State)
    policy.add_node("review", review)
    policy.add_edge(START, "review")
    case = StateGraph(State)
    case.add_node("policy", policy.compile())
    case.add_edge(START, "policy")
    root = StateGraph(State)
    root.add_node("case", case.compile())
    root.add_node("decide", decide)
    root.add_edge(START, "case")
    root.add_edge("case", "decide")
    return root.compile()


async def pulled_step_by_step(stream: AsyncIterator[Any]) -> list[Any]:
    """Consume ``stream`` as Agent Server does (``langgraph_api.asyncio.wait_if_not_done``): each step in a new task."""
    chunks = []
    while True:
        try:
            chunks.append(await asyncio.create_task(anext(stream)))
        except StopAsyncIteration:
            return chunks


async def test_a_served_run_stays_bound_when_each_step_is_pulled_in_its_own_task(mongodb_uri: str, served_db: str) -> None:
    db_name = served_db
    calls: list[str] = []
    exported = nested_graph(calls)
    config = {"configurable": {"thread_id": "s1"}}
    async with checkpointer() as saver:
        served = exported.copy(update={"checkpointer": saver})
        chunks = await pulled_step_by_step(served.astream({"notes": []}, config, stream_mode="values"))
        assert chunks[-1]["notes"][-2:] == ["found P-7", "decided"]
    with MongoClient(mongodb_uri) as client:
        [entry] = labelled(client[db_name]["activity_journal"].find({"thread_id": "s1"}))
        assert (entry["path"], entry["node"], entry["status"]) == ("agent/1/case/1/policy/1", "review", "completed")
    assert calls == ["P-7"]


async def test_a_plain_form_run_stays_bound_when_each_step_is_pulled_in_its_own_task() -> None:
    calls: list[str] = []
    platform = DurablePlatform.embedded()
    graph = nested_graph(calls).copy(update={"checkpointer": platform.checkpointer})
    chunks = await pulled_step_by_step(graph.astream({"notes": []}, {"configurable": {"thread_id": "p1"}}, stream_mode="values"))
    assert chunks[-1]["notes"][-2:] == ["found P-7", "decided"] and calls == ["P-7"]


def test_a_plain_form_sync_run_stays_bound_when_each_step_is_pulled_in_a_fresh_context() -> None:
    """The sync twin: each ``next()`` of ``stream`` in an empty ``contextvars.Context`` (as a thread pool
    without copied context pulls an iterator), so no step sees what an earlier one bound."""
    calls: list[str] = []

    @effect(kind="tool", name="lookup")
    def lookup(ref: str) -> str:
        calls.append(ref)
        return f"found {ref}"

    policy = StateGraph(State)
    policy.add_node("review", lambda state: {"notes": [lookup("P-7")]})
    policy.add_edge(START, "review")
    root = StateGraph(State)
    root.add_node("case", policy.compile())
    root.add_node("decide", lambda state: {"notes": ["decided"]})
    root.add_edge(START, "case")
    root.add_edge("case", "decide")
    platform = DurablePlatform.embedded()
    graph = root.compile(checkpointer=platform.checkpointer)
    stream = graph.stream({"notes": []}, {"configurable": {"thread_id": "p2"}}, stream_mode="values")
    chunks, done = [], object()
    while (chunk := contextvars.Context().run(next, stream, done)) is not done:
        chunks.append(chunk)
    assert chunks[-1]["notes"][-2:] == ["found P-7", "decided"] and calls == ["P-7"]
    [entry] = platform.journal.entries("p2")
    assert (entry["path"], entry["node"], entry["status"]) == ("agent/1/case/1", "review", "completed")


KEEP_LATEST = {"strategy": "keep_latest", "default_ttl": 1440, "sweep_interval_minutes": 60, "sweep_limit": 500}


@pytest.mark.parametrize(
    ("environ", "ttl"),
    [
        ({}, None),
        ({"LANGGRAPH_CHECKPOINTER": json.dumps({"path": "x.y", "ttl": KEEP_LATEST})}, KEEP_LATEST),
        # langgraph-api reads LANGGRAPH_THREAD_TTL first: a JSON block, or minutes (delete, swept every 5.1)
        (
            {"LANGGRAPH_THREAD_TTL": json.dumps(KEEP_LATEST), "LANGGRAPH_CHECKPOINTER": '{"ttl": {"default_ttl": 1}}'},
            KEEP_LATEST,
        ),
        ({"LANGGRAPH_THREAD_TTL": "90"}, {"strategy": "delete", "default_ttl": 90.0, "sweep_interval_minutes": 5.1}),
        # a bare number in the checkpointer's block is minutes too (langgraph-api's thread TTL numbers all are)
        ({"LANGGRAPH_CHECKPOINTER": '{"ttl": 60}'}, {"strategy": "delete", "default_ttl": 60, "sweep_interval_minutes": 5.1}),
        ({"LANGGRAPH_CHECKPOINTER": '{"path": "x.y"}'}, None),
    ],
)
def test_the_factory_reads_the_ttl_where_langgraph_api_does(environ: dict, ttl: Any) -> None:
    assert ttl_of(environ) == ttl


async def test_a_bad_ttl_block_fails_the_factory_before_any_query(monkeypatch: pytest.MonkeyPatch) -> None:
    # nothing listens on port 1: a query would fail with ServerSelectionTimeoutError, not InvalidInputError
    monkeypatch.setenv("MONGODB_URI", "mongodb://127.0.0.1:1/agents?serverSelectionTimeoutMS=1")
    monkeypatch.setenv("LANGGRAPH_CHECKPOINTER", json.dumps({"ttl": {"strategy": "keep", "default_ttl": 60}}))
    with pytest.raises(InvalidInputError, match="strategy"):
        async with checkpointer():
            pass
    monkeypatch.setenv("LANGGRAPH_CHECKPOINTER", "{not json")
    with pytest.raises(InvalidInputError, match="LANGGRAPH_CHECKPOINTER"):
        async with checkpointer():
            pass
    # about 9,500 years: every write would fail with OverflowError; refused at startup, naming the largest
    monkeypatch.setenv("LANGGRAPH_THREAD_TTL", "5000000000")
    with pytest.raises(InvalidInputError, match="default_ttl must be at most 52596000 minutes"):
        async with checkpointer():
            pass


async def test_a_bare_ttl_in_the_checkpointer_block_is_minutes(served_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_CHECKPOINTER", json.dumps({"path": "x.y", "ttl": 60}))
    async with checkpointer() as saver:
        assert saver.ttl == 3600 and saver.ttl_config.sweep_interval_minutes == 5.1


async def test_the_factory_runs_the_sweeper_of_the_ttl_block_for_the_servers_lifetime(
    served_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LANGGRAPH_CHECKPOINTER", json.dumps({"ttl": KEEP_LATEST}))

    def sweepers() -> list[asyncio.Task]:
        return [t for t in asyncio.all_tasks() if t.get_name() == "durable-mongodb-ttl-sweeper"]

    async with checkpointer() as saver:
        assert saver.ttl_config is not None and saver.ttl_config.strategy == "keep_latest"
        assert saver.ttl == 1440 * 60 and saver.ttl_config.sweep_limit == 500
        assert len(sweepers()) == 1
    assert sweepers() == []
