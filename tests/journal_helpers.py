"""Fixtures and helpers of the journal tests (no tests here).

``jface`` builds an ``ActivityJournal`` from the client of the ``tests.clients``
plugin: which kinds run is chosen by the ``client_kind`` parametrization of each
test (offline kinds below; the real-server kinds are ``pymongo`` /
``pymongo_async`` / ``motor``). Tests are written once as ``async`` and call sync
methods on sync clients, native async ones on async. It is a fixture of every
test: tests/conftest.py loads this module as a plugin, as it does tests.clients.
"""

from __future__ import annotations

import itertools
from datetime import timedelta
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.config import get_config
from pydantic import Field

from langgraph_durable_mongodb.journal import (
    ActivityJournal,
    EffectCall,
    EffectPosition,
    NodePosition,
    ResolverLocator,
    langgraph_task,
    digest,
    effect_scope,
)
from langgraph_durable_mongodb.storage.plans.lease import utcnow
from langgraph_durable_mongodb.storage.liveness import identity
from langgraph_durable_mongodb.journal.documents import claim_fields, new_entry
from langgraph_durable_mongodb.resolver import DurableSubgraphResolver, durable_scope

from .clients import is_async_kind, on_servers

SYNC_KINDS = ["mongomock", *on_servers("pymongo")]
ASYNC_KINDS = ["mongomock_motor", *on_servers("pymongo_async"), *on_servers("motor")]
KINDS = SYNC_KINDS + ASYNC_KINDS

#: A test mark: skip where this process has no process identity to tell a dead owner by.
linux_only = pytest.mark.skipif("owner_process" not in identity(), reason="needs /proc (Linux) to tell a dead owner")

#: A position and an effect call for the journal tests' entries.
POS = EffectPosition("t1", "agent/1", "work", "1", "1")
SEARCH = EffectCall("tool", "search", input={"q": "weather"})


def owned_entry(pos: EffectPosition = POS, *, lease_seconds: float = 3600, **fields: Any) -> dict[str, Any]:
    """A ``started`` entry claimed by this process (its identity), with ``fields`` changed."""
    now = utcnow()
    claim = claim_fields(
        SEARCH,
        pos,
        owner="other-worker",
        now=now,
        lease_until=now + timedelta(seconds=lease_seconds),
        input={"digest": digest(SEARCH.input), "preview": ""},
    )
    entry = new_entry(pos, claim, {})
    for key, value in fields.items():  # "owner_process.start": a nested field
        *parents, last = key.split(".")
        doc = entry
        for parent in parents:
            doc[parent] = dict(doc[parent])
            doc = doc[parent]
        doc[last] = value
    return entry


def run_now(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (a sync face's call) from sync code."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    raise RuntimeError("the coroutine suspended; only sync faces may use run_now")


class JournalFace:
    """One journal, called through its sync or its async methods by the client kind."""

    def __init__(self, journal: ActivityJournal, kind: str, db: Any, make: Callable[..., ActivityJournal]) -> None:
        self.journal, self.kind, self.db, self._make = journal, kind, db, make
        self.is_async = is_async_kind(kind)

    def variant(self, **options: Any) -> JournalFace:
        """Another journal on the same client and database, with other options."""
        return JournalFace(self._make(**options), self.kind, self.db, self._make)

    def fn(self, body: Callable[[], Awaitable[Any]]) -> Callable[[], Any]:
        """An effect function for this face from an ``async`` body (run inline on a sync face)."""
        return body if self.is_async else (lambda: run_now(body()))

    async def run(self, call: EffectCall, fn: Callable[[], Any], position: EffectPosition | None = None) -> Any:
        if self.is_async:
            return await self.journal.arun(call, fn, position=position)
        return self.journal.run(call, fn, position=position)

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.is_async:
            return await getattr(self.journal, "a" + name)(*args, **kwargs)
        return getattr(self.journal, name)(*args, **kwargs)

    async def raw(self, query: dict | None = None) -> list[dict]:
        cursor = self.db[self.journal.collection].find(query or {}, {"_id": 0})
        return await cursor.to_list(None) if self.is_async else list(cursor)

    async def raw_update(self, query: dict, update: dict) -> None:
        result = self.db[self.journal.collection].update_many(query, update)
        if self.is_async:
            await result

    async def raw_insert(self, doc: dict) -> None:
        result = self.db[self.journal.collection].insert_one(doc)
        if self.is_async:
            await result


@pytest.fixture
async def jface(client_kind: str, mongo_client: Any, db_name: str) -> Any:
    def make(**options: Any) -> ActivityJournal:
        options.setdefault("wait_seconds", 2.0)
        return ActivityJournal(mongo_client, db_name=db_name, **options)

    face = JournalFace(make(), client_kind, mongo_client[db_name], make)
    await face.call("setup")
    yield face
    if client_kind == "pymongo_async":
        await mongo_client.close()


class _Task:
    """Stands for a LangGraph task: effect ordinals are counted per task object."""


class NodeRun:
    """A node locator for one run of one node; a new ``NodeRun`` is the node running again."""

    def __init__(self, thread_id: str = "t1", path: str = "agent/1", node: str = "work", occurrence: str = "1") -> None:
        self.position = NodePosition(thread_id, path, node, occurrence)
        self._task = _Task()

    def task(self) -> tuple[Any, int]:
        return self._task, 1

    def node(self) -> NodePosition:
        return self.position

    async def anode(self) -> NodePosition:
        return self.position


class CheckpointNsLocator:
    """A node locator in real graphs without the resolver: the path is the namespace's node names, each once."""

    def task(self) -> tuple[Any, int]:
        return langgraph_task(get_config())

    async def anode(self) -> NodePosition:
        return self.node()

    def node(self) -> NodePosition:
        config = get_config()
        conf = config["configurable"]
        names = [segment.split(":")[0] for segment in conf["checkpoint_ns"].split("|")]
        step = config["metadata"].get("langgraph_step", 0)
        return NodePosition(conf["thread_id"], "/".join(f"{n}/1" for n in names[:-1]), names[-1], str(max(step, 0) + 1))


@contextmanager
def journaled(face: JournalFace, graph: Any) -> Iterator[None]:
    """Run ``graph`` the way the platform does: a durable scope, effects at the resolver's positions."""
    with durable_scope(DurableSubgraphResolver.from_graph(graph)):
        with effect_scope(face.journal, ResolverLocator()):
            yield


class CountingChatModel(GenericFakeChatModel):
    """A scripted chat model that counts its real calls and can bind tools."""

    calls: list[dict[str, Any]] = Field(default_factory=list)

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs)


def scripted(*replies: Any) -> CountingChatModel:
    return CountingChatModel(messages=itertools.cycle(replies) if len(replies) == 1 else iter(replies))


class Counter:
    """Counts real executions of an effect."""

    def __init__(self) -> None:
        self.n = 0
        self.values: list[Any] = []  # what each execution returned, in order

    def __call__(self, value: Any = None) -> Any:
        self.n += 1
        self.values.append(value)
        return value
