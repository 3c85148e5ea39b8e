"""``async_commands="threads"`` (issue 37): the async methods send their commands with the sync client on the event
loop's default executor, as ``MongoDBSaver``'s do, because pymongo's sync driver spends less client CPU per command
than ``AsyncMongoClient`` (BENCHMARKS.md). The conformance suite, the journal's async tests and the platform tests
run in this mode too (``tests/clients.py THREAD_KINDS``, ``make_platform``'s ``embedded_threads``); these tests
check what only this mode does: where its commands are sent from, how it is chosen and refused."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypedDict

import mongomock
import pytest
from langgraph.graph import END, START, StateGraph
from mongomock_motor import AsyncMongoMockClient
from pymongo import MongoClient

from langgraph_durable_mongodb import DurablePlatform, MongoDBCheckpointer
from langgraph_durable_mongodb.errors import ClientConfigurationError, InvalidInputError
from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.journal.journal import ActivityJournal
from langgraph_durable_mongodb.storage.plans.interpreters import AsyncInterpreter, SyncInterpreter, ThreadedAsyncInterpreter


class State(TypedDict):
    n: int
    out: str


def _graph(platform: DurablePlatform, executed: list[int]) -> Any:
    @effect(kind="payment")
    async def pay(n: int) -> str:
        executed.append(n)
        return f"paid {n}"

    async def node(state: State) -> dict[str, Any]:
        return {"out": await pay(state["n"])}

    builder = StateGraph(State)
    builder.add_node("pay", node)
    builder.add_edge(START, "pay")
    builder.add_edge("pay", END)
    return platform.compile(builder)


def _threads_sending(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The thread ids every sync interpreter sends a command from, appended as they are sent."""
    senders: list[int] = []
    execute = SyncInterpreter.execute

    def noted(self: SyncInterpreter, request: Any) -> Any:
        senders.append(threading.get_ident())
        return execute(self, request)

    monkeypatch.setattr(SyncInterpreter, "execute", noted)
    return senders


def _run_a_durable_turn(platform: DurablePlatform, executed: list[int]) -> int:
    """One ``ainvoke`` of a graph with one journaled effect; returns the event loop's thread id."""

    async def turn() -> int:
        out = await _graph(platform, executed).ainvoke({"n": 3, "out": ""}, {"configurable": {"thread_id": "t"}})
        assert out == {"n": 3, "out": "paid 3"}
        return threading.get_ident()

    return asyncio.run(turn())


def test_a_threads_platform_sends_its_async_runs_commands_from_executor_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    senders = _threads_sending(monkeypatch)
    executed: list[int] = []
    with DurablePlatform(mongomock.MongoClient(), async_commands="threads") as platform:
        for part in (platform.checkpointer, platform.journal, platform.run_locks):
            assert isinstance(part._async_io, ThreadedAsyncInterpreter)  # noqa: SLF001
        loop_thread = _run_a_durable_turn(platform, executed)
        assert executed == [3]
        assert senders and loop_thread not in senders  # every command of the async run left the loop's thread


def test_a_native_platform_sends_its_async_runs_commands_with_the_async_client(monkeypatch: pytest.MonkeyPatch) -> None:
    senders = _threads_sending(monkeypatch)
    executed: list[int] = []
    client = mongomock.MongoClient()
    with DurablePlatform(client, async_client=AsyncMongoMockClient(mock_mongo_client=client)) as platform:
        assert type(platform.checkpointer._async_io) is AsyncInterpreter  # noqa: SLF001
        _run_a_durable_turn(platform, executed)
    assert executed == [3] and senders == []  # the sync face sent nothing


def test_async_commands_is_checked_before_any_query() -> None:
    client = mongomock.MongoClient()
    for odd in ("thread", "", None, True, 1):
        with pytest.raises(InvalidInputError, match="async_commands must be one of"):
            MongoDBCheckpointer(client, async_commands=odd)  # type: ignore[arg-type]
    with pytest.raises(ClientConfigurationError, match="pass client=MongoClient"):
        MongoDBCheckpointer(async_client=AsyncMongoMockClient(), async_commands="threads")
    with pytest.raises(ClientConfigurationError, match="pass client=MongoClient"):
        ActivityJournal(async_client=AsyncMongoMockClient(), async_commands="threads")
    with pytest.raises(ClientConfigurationError, match="pass client=MongoClient"):
        DurablePlatform(async_client=AsyncMongoMockClient(), async_commands="threads")
    assert client.list_database_names() == []  # nothing was written


def test_the_journal_built_from_a_saver_sends_its_commands_as_the_saver_does() -> None:
    saver = MongoDBCheckpointer(mongomock.MongoClient(), async_commands="threads")
    assert ActivityJournal.for_checkpointer(saver).async_commands == "threads"
    assert MongoDBCheckpointer(mongomock.MongoClient()).async_commands == "native"


def test_a_threads_saver_on_a_server_answers_its_async_methods_from_threads(mongodb_uri: str, server_db_name: str) -> None:
    from langgraph.checkpoint.base import empty_checkpoint
    from pymongo import monitoring

    class Senders(monitoring.CommandListener):
        def __init__(self) -> None:
            self.threads: set[int] = set()

        def started(self, event: Any) -> None:
            if event.command_name in ("update", "find", "aggregate", "insert"):
                self.threads.add(threading.get_ident())

        def succeeded(self, event: Any) -> None:
            pass

        def failed(self, event: Any) -> None:
            pass

    listener = Senders()
    with MongoClient(mongodb_uri, event_listeners=[listener]) as client:
        saver = MongoDBCheckpointer(client, db_name=server_db_name, async_commands="threads")
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}

        async def put_and_read() -> int:
            stored = await saver.aput(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
            assert (await saver.aget_tuple(stored)).config == stored
            return threading.get_ident()

        loop_thread = asyncio.run(put_and_read())
        client.drop_database(server_db_name)
    assert listener.threads and loop_thread not in listener.threads
