"""Client handling: from_conn_string, client detection, configuration errors."""

from __future__ import annotations

import mongomock
import pytest
from langgraph.graph import START, StateGraph
from mongomock_motor import AsyncMongoMockClient

from langgraph_durable_mongodb import ClientConfigurationError, DurablePlatform, InvalidInputError, MongoDBCheckpointer
from langgraph_durable_mongodb.errors import ServerUnreachableError

from .graphs import Notes, config, nested_graph


def test_from_conn_string_sync(mongodb_uri: str, server_db_name: str) -> None:
    with MongoDBCheckpointer.from_conn_string(mongodb_uri, db_name=server_db_name) as saver:
        graph = nested_graph().compile(checkpointer=saver)
        graph.invoke({"log": [], "n": 0}, {"configurable": {"thread_id": "conn"}})
        assert saver.get_tuple({"configurable": {"thread_id": "conn"}}) is not None
    with pytest.raises(Exception):
        saver.client.admin.command("ping")  # the client was closed on exit


async def test_from_conn_string_async(mongodb_uri: str, server_db_name: str) -> None:
    async with MongoDBCheckpointer.from_conn_string(mongodb_uri, db_name=server_db_name) as saver:
        graph = nested_graph().compile(checkpointer=saver)
        await graph.ainvoke({"log": [], "n": 0}, {"configurable": {"thread_id": "conn"}})
        assert (await saver.aget_tuple({"configurable": {"thread_id": "conn"}})) is not None
        # both faces work on one saver
        assert saver.get_tuple({"configurable": {"thread_id": "conn"}}) is not None


def test_client_kinds_are_detected() -> None:
    sync = MongoDBCheckpointer(mongomock.MongoClient())
    assert sync.client is not None and sync.async_client is None
    aio = MongoDBCheckpointer(AsyncMongoMockClient())
    assert aio.client is None and aio.async_client is not None
    both = MongoDBCheckpointer(mongomock.MongoClient(), async_client=AsyncMongoMockClient())
    assert both.client is not None and both.async_client is not None


def test_configuration_errors_name_the_fix() -> None:
    with pytest.raises(ClientConfigurationError, match="from_conn_string"):
        MongoDBCheckpointer()
    with pytest.raises(ClientConfigurationError, match="async client"):
        MongoDBCheckpointer(mongomock.MongoClient(), async_client=mongomock.MongoClient())
    with pytest.raises(InvalidInputError):
        MongoDBCheckpointer(mongomock.MongoClient(), db_name="bad.name")
    with pytest.raises(InvalidInputError):
        MongoDBCheckpointer(mongomock.MongoClient(), ttl=-1)
    with pytest.raises(InvalidInputError):
        MongoDBCheckpointer.from_conn_string(42)


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_an_unreachable_server_fails_fast_naming_the_wait_never_the_password(face: str) -> None:
    """The clients from_conn_string opens look for a server 10 s (pymongo's default is 30 s), unless the URI says:
    the first call then raises ServerUnreachableError, with the wait and how to change it, never the password."""
    with DurablePlatform.from_conn_string("mongodb://alice:s3cret@localhost:9/agents") as platform:
        assert platform.checkpointer.client.options.server_selection_timeout == 10
    builder = StateGraph(Notes)
    builder.add_node("note", lambda s: {"notes": ["seen"]})
    builder.add_edge(START, "note")
    uri = "mongodb://alice:s3cret@localhost:9/agents?serverSelectionTimeoutMS=200"
    async with DurablePlatform.from_conn_string(uri) as platform:
        graph = platform.compile(builder)
        with pytest.raises(ServerUnreachableError) as refused:
            graph.invoke({"notes": []}, config()) if face == "sync" else await graph.ainvoke({"notes": []}, config())
    message = str(refused.value)
    assert "within 0.2 s" in message and "localhost:9" in message and "serverSelectionTimeoutMS" in message
    assert "s3cret" not in message and "Topology Description" not in message
