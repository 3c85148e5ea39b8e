"""Bad input, component by component: each case gets a clear error or works, and nothing else in the
database is touched.

- The checkpointer alone, on every client kind (mongomock, mongomock-motor, and pymongo,
  ``AsyncMongoClient`` and motor on the real-server tier): unusual thread ids, operators in
  identifiers and in ``list`` filters. A bystander thread's checkpoints, blobs and writes are compared
  before and after each case.
- The whole platform (``DurablePlatform``: checkpointer, journal and resolver together),
  embedded (mongomock) and on the real-server tier: identifiers of any type or carrying operators,
  ``$`` and ``.`` in channel, node and effect names, NUL, a 20 MiB value, malformed namespaces, and a
  journal entry edited by hand into an invalid state. A bystander thread's documents in all five
  collections are compared before and after each case.
"""

from __future__ import annotations

import operator
import uuid
from datetime import datetime
from typing import Annotated, Any, TypedDict

import pytest
from bson import Binary
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import (
    CorruptJournalEntryError,
    DurableMongoError,
    InvalidInputError,
    NamespaceError,
    NondeterminismError,
    TopologyError,
)
from langgraph_durable_mongodb.journal import EffectPosition, effect
from langgraph_durable_mongodb.platform import DurablePlatform

from .clients import Face
from .checkpoints import cfg, put
from .workers import durable_worker
from .workers.harness import reference_run

# == the checkpointer alone ===================================================================================

SAVER_COLLECTIONS = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


async def snapshot(face: Face, thread: str) -> dict:
    return {c: await face.raw(c, {"thread_id": thread}) for c in SAVER_COLLECTIONS}


@pytest.fixture
async def bystander_documents(face: Face) -> dict:
    """A thread with a checkpoint and a pending write: its documents as stored, compared after each case."""
    saved, _ = await put(face, cfg("bystander"), {"big": ["keep me"] * 200, "n": 1})
    await face.call("put_writes", saved, [("w", "pending")], "task")
    return await snapshot(face, "bystander")


UNUSUAL_IDS = ["a\x00b", "x" * 10_000, "a.b$c", "$where", "ünïcødé 🚀", " "]


@pytest.mark.parametrize("thread", UNUSUAL_IDS, ids=["nul", "10k", "dots", "dollar", "unicode", "space"])
async def test_unusual_thread_ids_work_and_stay_separate(face: Face, bystander_documents: dict, thread: str) -> None:
    saved, cp = await put(face, cfg(thread, ns="child:" + thread), {"v": [thread]})
    await face.call("put_writes", saved, [("w", thread)], "task\x00id", "path.$x")
    got = await face.call("get_tuple", cfg(thread, ns="child:" + thread))
    assert got.checkpoint["channel_values"] == {"v": [thread]}
    assert got.pending_writes == [("task\x00id", "w", thread)]
    assert [t.checkpoint["id"] for t in await face.list({"configurable": {"thread_id": thread}})] == [cp["id"]]
    await face.call("delete_thread", thread)
    assert await face.call("get_tuple", cfg(thread, ns="child:" + thread)) is None
    assert await snapshot(face, "bystander") == bystander_documents


BAD_SAVER_CALLS = [
    ("get_tuple", ({"configurable": {"thread_id": ["bystander"]}},)),
    ("get_tuple", ({"configurable": {"thread_id": {"$regex": ".*"}}},)),
    ("get_tuple", ({"configurable": {"thread_id": "bystander", "checkpoint_ns": {"$ne": "x"}}},)),
    ("put_writes", ({"configurable": {"thread_id": "bystander", "checkpoint_id": {"$gt": ""}}}, [("a", 1)], "t")),
    ("put_writes", ({"configurable": {"thread_id": "bystander", "checkpoint_id": "c"}}, [(7, 1)], "t")),
    ("delete_thread", ({"$gt": ""},)),
    ("delete_thread", (None,)),
    ("copy_thread", ({"$gt": ""}, "new")),
    ("prune", ([{"$gt": ""}],)),
    ("delete_for_runs", ({"$gt": ""},)),
    ("get_delta_channel_history", ()),
]


@pytest.mark.parametrize("method,args", BAD_SAVER_CALLS, ids=[f"{m}-{i}" for i, (m, _) in enumerate(BAD_SAVER_CALLS)])
async def test_bad_calls_raise_and_touch_nothing(face: Face, bystander_documents: dict, method: str, args: tuple) -> None:
    kwargs = {}
    if method == "get_delta_channel_history":
        kwargs = {"config": {"configurable": {"thread_id": 5}}, "channels": ["messages"]}
    with pytest.raises(InvalidInputError):
        await face.call(method, *args, **kwargs)
    assert await snapshot(face, "bystander") == bystander_documents


async def test_list_filters_cannot_reach_other_threads(face: Face, bystander_documents: dict) -> None:
    await put(face, cfg("mine"), {"n": 1}, {"source": "loop", "step": 0, "owner": "me"})
    for bad in ({"$or": [{}]}, {"owner": {"$exists": True}}, {"thread_id": {"$ne": None}}, {1: "x"}):
        with pytest.raises(InvalidInputError):
            await face.list(cfg("mine"), filter=bad)
    # a literal "thread_id" metadata key is metadata, not the document's thread
    assert await face.list(cfg("mine"), filter={"thread_id": "bystander"}) == []
    assert await snapshot(face, "bystander") == bystander_documents


# == the whole platform =======================================================================================

COLLECTIONS = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "activity_journal")


@pytest.fixture
def platform(make_platform: Any) -> Any:
    durable_worker.configure(log=None)
    platform = make_platform()
    platform.checkpointer.inline_value_bytes = 64  # some values in blobs: every collection holds documents
    return platform


def raw(platform: DurablePlatform) -> Any:
    return platform.checkpointer.client[platform.checkpointer.db_name]


def documents(platform: DurablePlatform, thread: str) -> dict[str, list[dict]]:
    db = raw(platform)
    return {c: sorted(db[c].find({"thread_id": thread}), key=lambda d: str(d["_id"])) for c in COLLECTIONS}


@pytest.fixture
def bystander(platform: DurablePlatform) -> Any:
    """A finished thread of the six-effect graph; the test checks its documents are untouched."""
    graph = platform.compile(durable_worker.build_graph())
    graph.invoke(durable_worker.inputs("bystander"), {"configurable": {"thread_id": "bystander"}})
    before = documents(platform, "bystander")
    assert all(before.values())
    yield graph
    assert documents(platform, "bystander") == before, "a bad input touched another thread's documents"


# -- identifiers ---------------------------------------------------------------------------------------------

THREAD_IDS = {
    "int": 42,
    "uuid": uuid.UUID(int=7),
    "operator": {"$ne": None},
    "list": ["bystander"],
    "regex-like": {"$regex": ".*"},
    "dollar": "$where",
    "dots": "a.b.c",
    "nul": "case\x0042",
    "10k": "t" * 10_000,
    "unicode": "ünïcødé 🚀",
}


@pytest.mark.parametrize("thread", THREAD_IDS.values(), ids=THREAD_IDS.keys())
def test_thread_ids_of_any_type_or_shape_stay_their_own_thread(platform: DurablePlatform, bystander: Any, thread: Any) -> None:
    """LangGraph saves a run under ``str(thread_id)``; the journal and ordinals follow it. An operator is never
    a query: ``{"$ne": None}`` is the thread named ``"{'$ne': None}"``, and the bystander is untouched."""
    expected_values, expected_positions = reference_run()
    config = {"configurable": {"thread_id": thread}}
    assert bystander.invoke(durable_worker.inputs("case-42"), config) == expected_values
    name = str(thread)
    entries = platform.journal.entries(name)
    assert len(entries) == 6 and {e["thread_id"] for e in entries} == {name}
    assert sorted((e["path"], e["node"], e["occurrence"], e["effect_key"], e["kind"], e["name"]) for e in entries) == (
        expected_positions
    )
    assert bystander.get_state(config).values == expected_values


BAD_IDENTIFIER_CALLS = {
    "entries-operator": lambda p: p.journal.entries({"$ne": ""}),
    "entries-int": lambda p: p.journal.entries(7),
    "discard-operator": lambda p: p.journal.discard(EffectPosition({"$ne": ""}, "agent/1", "intake", "1", "1")),
    "discard-all-operators": lambda p: p.journal.discard(EffectPosition(*({"$exists": True},) * 5)),
    "resolve-operator": lambda p: p.journal.resolve(EffectPosition("bystander", {"$ne": ""}, "n", "1", "1"), "x"),
    "delete-thread-operator": lambda p: p.checkpointer.delete_thread({"$ne": ""}),
    "copy-thread-operator": lambda p: p.checkpointer.copy_thread({"$ne": ""}, "copy"),
}


@pytest.mark.parametrize("call", BAD_IDENTIFIER_CALLS.values(), ids=BAD_IDENTIFIER_CALLS.keys())
def test_operators_in_identifiers_are_refused_before_any_query(platform: DurablePlatform, bystander: Any, call: Any) -> None:
    with pytest.raises(InvalidInputError):
        call(platform)


# -- names, values, namespaces ---------------------------------------------------------------------------------

Odd = TypedDict("Odd", {"price.usd": int, "$meta": str, "notes": Annotated[list, operator.add]})


def test_dollar_and_dot_in_channel_and_node_names_and_nul_in_values(platform: DurablePlatform, bystander: Any) -> None:
    calls = []

    @effect(kind="tool", name="quote.v2$")
    def quote(price: int, note: str) -> str:
        calls.append(note)
        return f"quoted {price} ({note})"

    inner = StateGraph(Odd)
    inner.add_node("$price.step", lambda s: {"price.usd": s["price.usd"] + 1, "notes": [quote(s["price.usd"], "a\x00b")]})
    inner.add_edge(START, "$price.step")
    root = StateGraph(Odd)
    root.add_node("child.$graph", inner.compile())
    root.add_edge(START, "child.$graph")
    graph = platform.compile(root)
    config = {"configurable": {"thread_id": "names"}}
    result = graph.invoke({"price.usd": 1, "$meta": "m\x00n", "notes": []}, config)
    assert result == {"price.usd": 2, "$meta": "m\x00n", "notes": ["quoted 1 (a\x00b)"]}
    [entry] = platform.journal.entries("names")
    assert (entry["path"], entry["node"], entry["name"]) == ("agent/1/child.$graph/1", "$price.step", "quote.v2$")
    assert graph.invoke(None, config) == result and calls == ["a\x00b"]


def test_a_20_mib_value_in_the_state_and_as_an_effect_outcome(platform: DurablePlatform, bystander: Any) -> None:
    big = "x" * (20 * 1024 * 1024)
    calls = []

    @effect(kind="tool", name="download")
    def download(size: int) -> str:
        calls.append(size)
        return big

    class Big(TypedDict, total=False):
        blob: str
        n: int

    crashed = []

    def fetch(s: Big) -> Big:
        blob = download(len(big))
        if not crashed:
            crashed.append(1)
            raise ConnectionError("worker lost after the download")
        return {"blob": blob, "n": len(blob)}

    g = StateGraph(Big)
    g.add_node("fetch", fetch)
    g.add_edge(START, "fetch")
    graph = platform.compile(g)
    config = {"configurable": {"thread_id": "big"}}
    with pytest.raises(ConnectionError):
        graph.invoke({"n": 0}, config)
    result = graph.invoke(None, config)  # the 20 MiB outcome is replayed from its chunks
    assert result["n"] == len(big) and result["blob"] == big and calls == [len(big)]
    assert graph.get_state(config).values["blob"] == big


MALFORMED_NAMESPACES = ["bogus", "intake", "case_investigation:x|nope:y", "$where:1", "a.b:c", "\x00:1", "|||", ":"]


@pytest.mark.parametrize("ns", MALFORMED_NAMESPACES)
def test_malformed_namespaces(platform: DurablePlatform, bystander: Any, ns: str) -> None:
    """The resolver refuses a namespace the topology cannot explain (``NamespaceError``); given in a config, the
    namespace reaches no other thread, and a resume of the bystander under it is refused, changing nothing (a run
    started at a namespace that is not the root's: ``TopologyError``, before any step)."""
    with pytest.raises(NamespaceError):
        bystander.resolver.resolve_namespace(ns + "|review:t")
    config = {"configurable": {"thread_id": "bystander", "checkpoint_ns": ns}}
    try:
        bystander.get_state(config)
    except ValueError as error:  # LangGraph 1.2.0 (constraints/oldest.txt) refuses it itself; later ones read it
        assert "Subgraph" in str(error) and "not found" in str(error)
    before = bystander.get_state({"configurable": {"thread_id": "bystander"}})
    with pytest.raises((TopologyError, ValueError)):  # ValueError: LangGraph 1.2.0 refuses the namespace itself
        bystander.invoke(None, config)
    after = bystander.get_state({"configurable": {"thread_id": "bystander"}})
    assert (after.values, after.config) == (before.values, before.config)


# -- a journal document edited by hand ---------------------------------------------------------------------------

EDITS = {
    "completed-without-outcome": {"$set": {"status": "completed"}, "$unset": {"outcome": ""}},
    "unknown-status": {"$set": {"status": "paused"}},
    "status-of-wrong-type": {"$set": {"status": 3}},
    "lease-until-a-string": {"$set": {"status": "started", "lease_until": "tomorrow"}, "$unset": {"outcome": ""}},
    "attempts-a-string": {
        "$set": {"status": "failed", "attempts": "x", "error": {"type": "E", "module": "m", "message": "", "terminal": False}},
        "$unset": {"outcome": ""},
    },
    "outcome-bytes-corrupted": {"$set": {"outcome.data": Binary(b"\xff\x00garbage")}},
    "outcome-of-unknown-type": {"$set": {"outcome.type": "pickle"}},
    "outcome-not-a-document": {"$set": {"outcome": "done"}},
    "error-not-a-document": {"$set": {"status": "failed", "error": "boom"}, "$unset": {"outcome": ""}},
    "started-without-owner": {
        "$set": {"status": "started", "lease_until": datetime(2000, 1, 1)},
        "$unset": {"owner": "", "outcome": ""},
    },
    "outcome-chunks-missing": {"$set": {"outcome.chunks": 3}},
    "kind-changed": {"$set": {"kind": "payment"}},
}


class _S(TypedDict, total=False):
    out: str


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_a_journal_entry_edited_into_an_invalid_state(platform: DurablePlatform, bystander: Any, edit: dict) -> None:
    """The node re-runs and meets the edited entry: a typed error (``DurableMongoError``) naming the position,
    never a bare KeyError, never a silently wrong value, and the effect does not run again."""
    calls, crashed = [], []

    @effect(kind="tool", name="lookup")
    def lookup(ref: str) -> str:
        calls.append(ref)
        return f"found {ref}"

    def node(s: _S) -> _S:
        found = lookup("7")
        if not crashed:
            crashed.append(1)
            raise ConnectionError("worker lost")
        return {"out": found}

    g = StateGraph(_S)
    g.add_node("n", node)
    g.add_edge(START, "n")
    graph = platform.compile(g)
    config = {"configurable": {"thread_id": "edited"}}
    with pytest.raises(ConnectionError):
        graph.invoke({}, config)
    assert raw(platform)["activity_journal"].update_many({"thread_id": "edited", "chunk": 0}, edit).modified_count == 1
    with pytest.raises(DurableMongoError) as error:
        graph.invoke(None, config)
    assert "'edited'" in str(error.value) and "agent/1" in str(error.value)  # names the position
    if not isinstance(error.value, NondeterminismError):
        assert isinstance(error.value, CorruptJournalEntryError)
        assert "discard" in str(error.value) and "resolve" in str(error.value)  # and what to do
    assert calls == ["7"]
