"""The thread summary: one document per thread in ``checkpoints`` (namespace ``#thread``), kept by the root
``put``'s own command, read by both thread lists, and built for a database of storage format 1.

Each test reads the raw summary and compares it with the root checkpoints it summarizes, on the sync and the
async face, on mongomock and on every server of the tier.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph_durable_mongodb import InvalidInputError, thread_summaries
from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.schema import CollectionNames
from langgraph_durable_mongodb.storage_format import FORMAT_VERSION
from langgraph_durable_mongodb.thread_summaries import SUMMARY_NS, summary_id
from langgraph_durable_mongodb.views.reader import ThreadViews

from .graphs import run_probe
from .stores import Store

FACES = pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])


def saver_on(store: Store, **options: Any) -> MongoDBCheckpointer:
    return MongoDBCheckpointer(store.client, async_client=store.async_client, db_name=store.db_name, **options)


async def call(saver: MongoDBCheckpointer, method: str, is_async: bool, *args: Any, **kwargs: Any) -> Any:
    if is_async:
        found = getattr(saver, f"a{method}")(*args, **kwargs)
        return [t async for t in found] if method == "list" else await found
    found = getattr(saver, method)(*args, **kwargs)
    return list(found) if method == "list" else found


async def put_chain(saver: MongoDBCheckpointer, is_async: bool, thread_id: str, n: int, ns: str = "", run_id: str = "r1") -> dict:
    """``n`` checkpoints of one namespace, each the child of the one before; returns the last one's config."""
    config: dict = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
    for step in range(n):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {"step": step}
        checkpoint["channel_versions"] = {"step": saver.get_next_version(None, None)}
        metadata = {"source": "loop", "step": step, "run_id": run_id}
        config = await call(saver, "put", is_async, config, checkpoint, metadata, checkpoint["channel_versions"])
    return config


def summary(store: Store, thread_id: str) -> dict | None:
    return store.db.checkpoints.find_one({"_id": summary_id(thread_id)}, {"_id": 0})


def roots(store: Store, thread_id: str) -> list[str]:
    return sorted(d["checkpoint_id"] for d in store.db.checkpoints.find({"thread_id": thread_id, "checkpoint_ns": ""}))


def summarizes(store: Store, thread_id: str) -> bool:
    """The thread's summary counts its root checkpoints and names the latest."""
    found, ids = summary(store, thread_id), roots(store, thread_id)
    return found is not None and (found["checkpoints"], found["latest"]) == (len(ids), max(ids)) and found["checkpoint_ns"] == SUMMARY_NS


@FACES
async def test_runs_keep_the_summary_in_the_root_puts_own_commands(store: Store, is_async: bool) -> None:
    calls: list[str] = []
    for _ in range(2):
        await run_probe(store.platform(), "t", calls, is_async)
    assert calls == ["t", "t"]
    assert summarizes(store, "t")
    assert store.db.checkpoints.count_documents({"thread_id": "t", "checkpoint_ns": {"$nin": ["", SUMMARY_NS]}}) > 0
    if store.commands:  # one command per checkpoint stored, the root ones carrying the summary along
        updates = [c for c in store.commands.seen if c[:2] == ("update", "checkpoints")]
        assert len(updates) == store.db.checkpoints.count_documents({"checkpoint_ns": {"$ne": SUMMARY_NS}})


@FACES
async def test_a_put_stored_again_is_counted_once(store: Store, is_async: bool) -> None:
    """A ``put`` sent again (its reply lost) meets a summary already past it: the checkpoint counts once."""
    saver = saver_on(store)
    checkpoint = empty_checkpoint()
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    for _ in range(2):
        await call(saver, "put", is_async, config, checkpoint, {"source": "input", "step": -1}, {})
    assert summary(store, "t")["checkpoints"] == 1
    await put_chain(saver, is_async, "t", 2)
    await put_chain(saver, is_async, "t", 3, ns="child:1")  # a subgraph's checkpoints are not the thread's count
    assert summarizes(store, "t") and summary(store, "t")["checkpoints"] == 3


@FACES
async def test_reads_without_a_namespace_leave_the_summary_out(store: Store, is_async: bool) -> None:
    saver = saver_on(store)
    await put_chain(saver, is_async, "t", 3)
    await put_chain(saver, is_async, "t", 2, ns="child:1")
    listed = await call(saver, "list", is_async, {"configurable": {"thread_id": "t"}})
    assert len(listed) == 5 and SUMMARY_NS not in {t.config["configurable"]["checkpoint_ns"] for t in listed}
    assert len(await call(saver, "list", is_async, None)) == 5
    assert summary(store, "t") is not None


@FACES
async def test_prune_and_delete_for_runs_count_out_what_they_delete(store: Store, is_async: bool) -> None:
    saver = saver_on(store)
    await put_chain(saver, is_async, "kept", 3)
    await put_chain(saver, is_async, "runs", 2, run_id="first")
    last = await put_chain(saver, is_async, "runs", 2, run_id="second")
    await put_chain(saver, is_async, "kept", 2, ns="child:1")
    await call(saver, "prune", is_async, ["kept"], strategy="keep_latest")
    assert summarizes(store, "kept") and summary(store, "kept")["checkpoints"] == 1
    assert summary(store, "runs")["latest"] == last["configurable"]["checkpoint_id"]
    await call(saver, "delete_for_runs", is_async, ["second"])  # the thread's latest root checkpoint goes
    assert summarizes(store, "runs") and summary(store, "runs")["checkpoints"] == 2
    await call(saver, "delete_for_runs", is_async, ["first"])
    assert roots(store, "runs") == [] and summary(store, "runs")["checkpoints"] == 0


@FACES
async def test_copy_and_delete_carry_the_summary_with_the_thread(store: Store, is_async: bool) -> None:
    saver = saver_on(store, ttl={"default_ttl": 60})
    await put_chain(saver, is_async, "source", 3)
    expiry = store.db.checkpoints.find_one({"thread_id": "source", "checkpoint_ns": ""})["expire_at"]
    assert store.db.checkpoints.find_one({"_id": summary_id("source")})["expire_at"] == expiry  # expires with it
    await call(saver, "copy_thread", is_async, "source", "copy")
    copied = summary(store, "copy")
    assert summarizes(store, "copy") and {**copied, "thread_id": "source", "expire_at": None} == {**summary(store, "source"), "expire_at": None}
    await call(saver, "delete_thread", is_async, "source")
    assert summary(store, "source") is None and summary(store, "copy") is not None


@FACES
@pytest.mark.parametrize("method", ["get_tuple", "list", "put"])
async def test_the_summary_namespace_is_refused_as_input(store: Store, is_async: bool, method: str) -> None:
    saver = saver_on(store)
    await put_chain(saver, is_async, "t", 1)
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": SUMMARY_NS}}
    args = (config, empty_checkpoint(), {}, {}) if method == "put" else (config,)
    with pytest.raises(InvalidInputError, match="reserved for the thread summaries"):
        await call(saver, method, is_async, *args)
    assert summarizes(store, "t")


def _as_format_1(store: Store) -> list[dict]:
    """The database as version 1 left it: its summaries gone, its stamp at version 1. Returns the summaries."""
    before = sorted(store.db.checkpoints.find({"checkpoint_ns": SUMMARY_NS}), key=lambda d: d["_id"])
    store.db.checkpoints.delete_many({"checkpoint_ns": SUMMARY_NS})
    store.db.durable_metadata.update_one({"_id": "storage_format"}, {"$set": {"version": 1}})
    return before


@FACES
async def test_a_format_1_database_gets_its_summaries_on_first_use(store: Store, is_async: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    saver = saver_on(store)
    for thread_id, n in (("a", 3), ("b", 1), ("c", 4), ("d", 2)):
        await put_chain(saver, is_async, thread_id, n)
    before = _as_format_1(store)
    monkeypatch.setattr(thread_summaries, "BUILD_PAGE", 3)  # threads span pages
    await call(saver_on(store), "get_tuple", is_async, {"configurable": {"thread_id": "a"}})
    assert sorted(store.db.checkpoints.find({"checkpoint_ns": SUMMARY_NS}), key=lambda d: d["_id"]) == before
    assert store.db.durable_metadata.find_one()["version"] == FORMAT_VERSION


@FACES
async def test_an_unstamped_database_with_checkpoints_is_stamped_then_upgraded(store: Store, is_async: bool) -> None:
    saver = saver_on(store)
    await put_chain(saver, is_async, "old", 2)
    _as_format_1(store)
    store.db.durable_metadata.delete_many({})  # written by 0.1.0: no stamp at all
    await call(saver_on(store), "get_tuple", is_async, {"configurable": {"thread_id": "old"}})
    assert summarizes(store, "old") and store.db.durable_metadata.find_one()["version"] == FORMAT_VERSION


def test_the_inspector_upgrades_a_format_1_database_before_listing_it(store: Store) -> None:
    saver = saver_on(store)
    for thread_id in ("x", "y"):
        saver.put({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}, empty_checkpoint(), {"source": "input", "step": -1}, {})
    _as_format_1(store)
    listing = ThreadViews(store.client, store.db_name, CollectionNames()).threads()
    assert [(row["thread_id"], row["checkpoints"]) for row in listing["threads"]] == [("x", 1), ("y", 1)]
