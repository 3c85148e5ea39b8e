"""A platform's life: ``with`` and ``async with``, several event loops, and ``close()``/``aclose()``.

pymongo's ``AsyncMongoClient`` binds itself to the loop it first ran on; mongomock_motor does not, so
everything here runs on the real-server tier. ``closed`` spies on ``AsyncMongoClient.close`` (each
real close the package makes), and a closed pymongo client raises ``InvalidOperation`` when used.
"""

from __future__ import annotations

import asyncio
import operator
import textwrap
import threading
from collections.abc import Iterator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from pymongo import AsyncMongoClient, MongoClient
from pymongo.errors import InvalidOperation

from langgraph_durable_mongodb import DurablePlatform, InvalidInputError, MongoDBCheckpointer
from langgraph_durable_mongodb import platform as platform_module


class State(TypedDict, total=False):
    case: str
    steps: Annotated[list, operator.add]


def builder() -> StateGraph:
    graph = StateGraph(State)
    graph.add_node("step", lambda state: {"steps": [state.get("case", "")]})
    graph.add_edge(START, "step")
    return graph


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


@pytest.fixture
def closed(monkeypatch: pytest.MonkeyPatch) -> list[AsyncMongoClient]:
    """Every ``AsyncMongoClient`` closed during the test, in order."""
    seen: list[AsyncMongoClient] = []
    original = AsyncMongoClient.close

    async def spy(self: AsyncMongoClient) -> None:
        seen.append(self)
        await original(self)

    monkeypatch.setattr(AsyncMongoClient, "close", spy)
    return seen


async def run_once(platform: DurablePlatform, thread: str) -> AsyncMongoClient:
    """One ``ainvoke`` on the platform; returns the async client the running loop used."""
    result = await platform.compile(builder()).ainvoke({"case": thread}, config(thread))
    assert result["steps"] == [thread]
    return platform.checkpointer.async_client.current()


async def no_other_task_pending() -> None:
    assert asyncio.all_tasks() == {asyncio.current_task()}


def test_a_platform_serves_two_asyncio_runs_and_closes_each_loops_client(
    mongodb_uri: str, server_db_name: str, closed: list[AsyncMongoClient]
) -> None:
    with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
        first = asyncio.run(run_once(platform, "one"))
        assert closed == [first]  # the first loop closed its client when it ended
        second = asyncio.run(run_once(platform, "two"))
        assert second is not first and closed == [first, second]
        assert platform.compile(builder()).get_state(config("one")).values["steps"] == ["one"]
    with pytest.raises(InvalidOperation):
        platform.checkpointer.client.admin.command("ping")
    with pytest.raises(InvalidOperation):  # a closed platform makes no client for a new loop
        asyncio.run(run_once(platform, "three"))
    assert closed == [first, second]


async def test_async_with_closes_the_clients_it_opened_and_leaves_no_task(
    mongodb_uri: str, server_db_name: str, closed: list[AsyncMongoClient]
) -> None:
    async with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
        used = await run_once(platform, "one")
        assert platform.compile(builder()).get_state(config("one")).values["steps"] == ["one"]  # sync face too
    assert closed == [used]
    await no_other_task_pending()  # the client's monitors are gone; nothing was left to finish later
    with pytest.raises(InvalidOperation):
        await used.admin.command("ping")
    with pytest.raises(InvalidOperation):
        platform.checkpointer.client.admin.command("ping")


def test_a_loop_that_is_not_running_has_its_client_closed_by_close(
    mongodb_uri: str, server_db_name: str, closed: list[AsyncMongoClient]
) -> None:
    loop = asyncio.new_event_loop()
    try:
        with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
            used = loop.run_until_complete(run_once(platform, "one"))
        assert closed == [used]
    finally:
        loop.close()


def test_a_sync_with_inside_a_coroutine_leaves_the_client_to_its_loops_end(
    mongodb_uri: str, server_db_name: str, closed: list[AsyncMongoClient]
) -> None:
    async def inside() -> AsyncMongoClient:
        with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
            used = await run_once(platform, "one")
        assert closed == []  # sync code cannot await it; no task is made to do so
        return used

    used = asyncio.run(inside())
    assert closed == [used]


def test_a_loop_running_in_another_thread_closes_its_client_for_close(
    mongodb_uri: str, server_db_name: str, closed: list[AsyncMongoClient]
) -> None:
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever)
    runner.start()
    try:
        with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
            used = asyncio.run_coroutine_threadsafe(run_once(platform, "one"), loop).result(30)
        assert closed == [used]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join()
        loop.close()


@pytest.fixture
def user_clients(mongodb_uri: str) -> Iterator[tuple[MongoClient, AsyncMongoClient]]:
    client, async_client = MongoClient(mongodb_uri), AsyncMongoClient(mongodb_uri)
    yield client, async_client
    client.close()


def test_close_leaves_the_clients_you_passed_open(
    user_clients: tuple[MongoClient, AsyncMongoClient], server_db_name: str
) -> None:
    client, async_client = user_clients
    platform = DurablePlatform(client, async_client=async_client, db_name=server_db_name)
    platform.compile(builder()).invoke({"case": "one"}, config("one"))
    platform.close()
    assert client.admin.command("ping")["ok"] == 1

    async def still_open() -> None:
        assert (await async_client.admin.command("ping"))["ok"] == 1
        await async_client.close()

    asyncio.run(still_open())


async def test_aclose_leaves_the_clients_you_passed_open(
    user_clients: tuple[MongoClient, AsyncMongoClient], server_db_name: str
) -> None:
    client, async_client = user_clients
    platform = DurablePlatform(client, async_client=async_client, db_name=server_db_name)
    await platform.compile(builder()).ainvoke({"case": "one"}, config("one"))
    await platform.aclose()
    assert client.admin.command("ping")["ok"] == 1
    assert (await async_client.admin.command("ping"))["ok"] == 1
    await async_client.close()


async def test_the_saver_alone_serves_async_with_too(mongodb_uri: str, server_db_name: str, closed: list) -> None:
    async with MongoDBCheckpointer.from_conn_string(mongodb_uri, db_name=server_db_name) as saver:
        await builder().compile(checkpointer=saver).ainvoke({"case": "one"}, config("one"))
        used = saver.async_client.current()
    assert closed == [used]
    await no_other_task_pending()


def test_a_uri_that_is_not_a_string_is_refused_at_the_call() -> None:
    with pytest.raises(InvalidInputError, match="MongoDB URI"):
        DurablePlatform.from_conn_string(42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="MongoDB URI"):
        DurablePlatform.from_conn_string("")


def test_the_module_docstring_example_runs_as_written(mongodb_uri: str, server_db_name: str) -> None:
    """The example in ``platform.py``'s docstring, run with ``uri`` and a tiny ``builder``."""
    _, example = platform_module.__doc__.split("``builder`` your ``StateGraph``)::\n\n")  # the docstring ends with it
    code = textwrap.dedent(example)
    assert code.count('db_name="agents"') == 1  # on this server, in the test's own database
    namespace: dict[str, Any] = {"uri": mongodb_uri, "builder": builder()}
    exec(compile(code.replace('db_name="agents"', f'db_name="{server_db_name}"'), "platform.py example", "exec"), namespace)
    with MongoClient(mongodb_uri) as client:
        assert client[server_db_name]["checkpoints"].count_documents({"thread_id": "case-42"}) >= 1
    assert isinstance(namespace["platform"], DurablePlatform)


def test_probing_a_private_attribute_outside_a_loop_makes_no_client() -> None:
    """``copy``, ``pickle`` and mocks probe ``__deepcopy__`` and the like: they get AttributeError, not a client."""
    with DurablePlatform.from_conn_string("mongodb://127.0.0.1:1/?connect=false") as platform:
        clients = platform.checkpointer.async_client
        assert getattr(clients, "__deepcopy__", None) is None
        assert getattr(clients["db"]["coll"], "_private", None) is None
        with pytest.raises(RuntimeError, match="no running event loop"):
            clients.admin  # a public attribute is the running loop's client's, and there is none
