"""The thread summary: one document per thread in ``checkpoints`` (namespace ``#thread``), kept by the root
``put``'s own command, read by both thread lists, and built for a database of storage format 1.

Each test reads the raw summary and compares it with the root checkpoints it summarizes, on the sync and the
async face, on mongomock and on every server of the tier.
"""

from __future__ import annotations

import io
import json
from typing import Any

import mongomock
import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph_durable_mongodb import IncompatibleStorageError, InvalidInputError
from langgraph_durable_mongodb.storage import deployment, summary_drift, thread_summaries
from langgraph_durable_mongodb.storage.plans.interpreters import AsyncInterpreter, SyncInterpreter
from langgraph_durable_mongodb.storage.plans.requests import FencedUpdate, Find, InsertOne, Upsert
from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.cli import EXIT_OK, EXIT_PROBLEM, main
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.storage.format import FORMAT_VERSION
from langgraph_durable_mongodb.storage.thread_summaries import SUMMARY_NS, summary_id
from langgraph_durable_mongodb.views.plans import summaries_page_plan
from langgraph_durable_mongodb.views.reader import ThreadViews

from .cli_helpers import doctor_exit, mongod_command
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


def _format_1_threads(store: Store) -> None:
    saver = saver_on(store)
    for thread_id in ("x", "y"):
        saver.put({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}, empty_checkpoint(), {"source": "input", "step": -1}, {})
    _as_format_1(store)


def test_the_inspector_upgrades_a_format_1_database_before_listing_it_when_it_may_write(store: Store) -> None:
    _format_1_threads(store)
    listing = ThreadViews(store.client, store.db_name, CollectionNames(), upgrade=True).threads()
    assert [(row["thread_id"], row["checkpoints"]) for row in listing["threads"]] == [("x", 1), ("y", 1)]
    assert store.db.durable_metadata.find_one()["version"] == FORMAT_VERSION  # the lists would show them without it


def _every_document(store: Store) -> dict[str, list[dict[str, Any]]]:
    return {name: sorted(store.db[name].find(), key=repr) for name in sorted(store.db.list_collection_names())}


def test_the_read_only_inspector_writes_nothing_to_a_format_1_database(
    store: Store, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It refuses the older format with the command that upgrades it: no migration, no stamp bumped, not one
    document written, whether asked for the list, a thread, or started as ``ui``."""
    _format_1_threads(store)
    before = _every_document(store)
    views = ThreadViews(store.client, store.db_name, CollectionNames())
    for read in (views.threads, lambda: views.thread("x")):
        with pytest.raises(IncompatibleStorageError, match=r"version 1, older .* ui --allow-writes`") as refused:
            read()
        assert refused.value.found == "version 1"
    from langgraph_durable_mongodb.ui import serving

    monkeypatch.setattr(serving.uvicorn, "run", lambda *args, **kwargs: pytest.fail("ui served a database it cannot read"))
    assert main(["--db", store.db_name, "ui"], client=store.client) != EXIT_OK  # refused before it listens
    assert f"--db {store.db_name} ui --allow-writes" in capsys.readouterr().err
    assert _every_document(store) == before
    assert store.db.durable_metadata.find_one()["version"] == 1


# -- issue 34: upgrades never roll back; drift is found, repaired, and never hides a thread -------------------------


#: Where another process's turns land in an upgrader's run: before each of these requests (``MOMENTS``).
def _reads_roots(request: Any) -> bool:
    return isinstance(request, Find) and request.collection == "checkpoints" and request.filter.get("checkpoint_ns") == "" and "thread_id" not in request.filter


def _reads_summaries(request: Any) -> bool:
    return isinstance(request, Find) and request.collection == "checkpoints" and "_id" in request.filter


def _writes_summaries(request: Any) -> bool:
    return isinstance(request, Upsert) and request.collection == "checkpoints"


def _recounts(request: Any) -> bool:
    return isinstance(request, FencedUpdate) and request.collection == "checkpoints"


MOMENTS = {
    "before_its_read": _reads_roots,
    "before_it_reads_the_summaries": _reads_summaries,
    "before_its_write": _writes_summaries,
}


class Rollbacks:
    """Every summary as it is after each write of an upgrader, and whether any count went down or ``latest`` back."""

    def __init__(self, store: Store) -> None:
        self.store, self.seen, self.found = store, {}, []

    def look(self) -> None:
        for doc in self.store.db.checkpoints.find({"checkpoint_ns": SUMMARY_NS}):
            before = self.seen.get(doc["thread_id"])
            if before and (doc["checkpoints"] < before[0] or doc["latest"] < before[1]):
                self.found.append((doc["thread_id"], before, (doc["checkpoints"], doc["latest"])))
            self.seen[doc["thread_id"]] = (doc["checkpoints"], doc["latest"])


def interleaved(io: Any, is_async: bool, moment: Any, others: Any, watch: Rollbacks | None = None) -> None:
    """Run ``others()`` once, just before ``io`` sends the first request ``moment(request)`` is true of: what other
    processes do at that point of an upgrader's (or a repair's) run. ``watch`` looks at the summaries after each
    write of ``io`` to ``checkpoints``."""
    execute, done = io.execute, []

    def due(request: Any) -> bool:
        if done or not moment(request):
            return False
        done.append(request)
        return True

    def after(request: Any) -> None:
        if watch is not None and getattr(request, "collection", None) == "checkpoints" and isinstance(request, (Upsert, FencedUpdate, InsertOne)):
            watch.look()

    def look() -> None:
        if watch is not None:
            watch.look()

    if is_async:

        async def aexecute(request: Any) -> Any:
            if due(request):
                await others()
                look()
            result = await execute(request)
            after(request)
            return result

        io.execute = aexecute
    else:

        def sexecute(request: Any) -> Any:
            if due(request):
                finished(others())
                look()
            result = execute(request)
            after(request)
            return result

        io.execute = sexecute


def finished(coroutine: Any) -> Any:
    """The value of a coroutine that never suspends (the sync face's calls, wrapped in ``async def``), run here:
    a sync test body runs inside the test's event loop, where ``asyncio.run`` cannot."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine suspended: it awaited real I/O")


async def upgrade(store: Store, is_async: bool) -> None:
    """A process's first use of a format-1 database: its format check upgrades it."""
    await call(saver_on(store), "get_tuple", is_async, {"configurable": {"thread_id": "any"}})


def every_thread_summarized(store: Store) -> list[str]:
    """The threads whose summary does not count their root checkpoints or name their latest (none: all right)."""
    threads = sorted(store.db.checkpoints.distinct("thread_id", {"checkpoint_ns": ""}))
    assert threads
    return [t for t in threads if not summarizes(store, t)]


@FACES
@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("writer", ["after_the_first_upgrade", "before_any_upgrade"])
async def test_an_upgrade_never_rolls_a_summary_back_whatever_was_put_between_its_read_and_its_write(
    store: Store, is_async: bool, writer: str, moment: str
) -> None:
    """Two processes upgrade a format-1 database while a third already runs turns: the later upgrader read the
    checkpoints before the turns. Before issue 34 its summaries overwrote theirs: a count of 4 of 8, and a latest
    gone back. Deterministic: the turns run at one point of that upgrader's run; the writer checked the format
    before (it already writes summaries), so with no upgrade before it, its ``put``s start the summaries of
    threads the upgrade has not reached, counting only themselves. No summary is ever seen to go back."""
    saver, writing = saver_on(store), saver_on(store)
    for thread_id in ("a", "b"):
        await put_chain(saver, is_async, thread_id, 4)
    await upgrade_with(writing, is_async)
    _as_format_1(store)

    async def others() -> None:
        if writer == "after_the_first_upgrade":
            await upgrade(store, is_async)
        for thread_id in ("a", "c"):  # c: a thread the writer starts
            await put_chain(writing, is_async, thread_id, 4, run_id="writer")

    late, watch = saver_on(store), Rollbacks(store)
    io = late._async_io if is_async else late._sync_io  # noqa: SLF001
    interleaved(io, is_async, MOMENTS[moment], others, watch)
    watch.look()
    await upgrade_with(late, is_async)
    assert every_thread_summarized(store) == [] and watch.found == []
    assert summary(store, "a")["checkpoints"] == 8 and summary(store, "c")["checkpoints"] == 4
    await upgrade(store, is_async)  # a process arriving after all this changes nothing
    assert every_thread_summarized(store) == []


@FACES
async def test_a_recount_never_loses_a_checkpoint_put_between_its_count_and_its_write(store: Store, is_async: bool) -> None:
    """A summary past what an upgrader read is counted again: a ``put`` between that count and its write is counted
    too (the write holds only if no later checkpoint was counted since; else it counts again)."""
    saver, writing = saver_on(store), saver_on(store)
    await put_chain(saver, is_async, "a", 3)
    await upgrade_with(writing, is_async)
    _as_format_1(store)
    puts = []

    async def one_more() -> None:
        puts.append(await put_chain(writing, is_async, "a", 1, run_id="writer"))

    late = saver_on(store)
    io = late._async_io if is_async else late._sync_io  # noqa: SLF001
    async def others() -> None:  # at the first summary read: a turn, so the summary is past what was read ...
        await one_more()

    interleaved(io, is_async, _reads_summaries, others)

    def recounting(request: Any) -> bool:  # ... and at the recount's write: another
        return _recounts(request) and len(puts) == 1

    interleaved(io, is_async, recounting, one_more)
    await upgrade_with(late, is_async)
    assert len(puts) == 2 and every_thread_summarized(store) == [] and summary(store, "a")["checkpoints"] == 5


async def upgrade_with(saver: MongoDBCheckpointer, is_async: bool) -> None:
    await call(saver, "get_tuple", is_async, {"configurable": {"thread_id": "any"}})


def as_a_format_1_writer_left_it(store: Store, is_async: bool) -> Any:
    """A database upgraded while a process of format 1 kept running: it started thread ``new`` (no summary), and
    went on with ``old`` (its summary counts what was there before). Returns a coroutine."""

    async def written() -> None:
        saver = saver_on(store)
        await put_chain(saver, is_async, "old", 2)
        await put_chain(saver, is_async, "kept", 1)
        counted = summary(store, "old")
        await put_chain(saver, is_async, "old", 3, run_id="format 1")
        await put_chain(saver, is_async, "new", 2, run_id="format 1")
        store.db.checkpoints.replace_one({"_id": summary_id("old")}, {"_id": summary_id("old"), **counted})
        store.db.checkpoints.delete_one({"_id": summary_id("new")})

    return written()


def doctor_report(store: Store, *options: str) -> tuple[int, dict]:
    out = io.StringIO()
    code = main(["--db", store.db_name, "--json", "doctor", *options], client=store.client, out=out)
    return code, json.loads(out.getvalue())


@FACES
async def test_a_format_1_writer_after_the_upgrade_is_found_and_repaired_by_doctor(
    store: Store, is_async: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if store.commands is None:
        monkeypatch.setattr(mongomock.database.Database, "command", mongod_command, raising=False)
    await as_a_format_1_writer_left_it(store, is_async)
    doctor_report(store, "--fix")  # every index: what is found wrong below is the summaries alone
    code, report = doctor_report(store)
    assert code == EXIT_PROBLEM and report["summaries"] == {
        "threads": 3, "missing": 1, "short": 1, "named_missing": ["new"], "named_short": ["old"], "repaired": 0, "unsettled": [],
        "complete": True,
    }
    text = io.StringIO()
    main(["--db", store.db_name, "doctor"], client=store.client, out=text)
    assert f"run `langgraph-durable-mongodb --db {store.db_name} doctor --repair`" in text.getvalue()
    assert every_thread_summarized(store) == ["new", "old"]
    code, report = doctor_report(store, "--repair")
    assert code == doctor_exit(report) and report["summaries"]["repaired"] == 2 and every_thread_summarized(store) == []
    code, report = doctor_report(store)
    assert code == doctor_exit(report) and report["summaries"]["missing"] == report["summaries"]["short"] == 0


@FACES
async def test_a_repair_never_rolls_a_summary_back_whatever_was_put_between_its_read_and_its_write(store: Store, is_async: bool) -> None:
    await as_a_format_1_writer_left_it(store, is_async)

    async def writer() -> None:
        for thread_id in ("old", "new", "kept"):
            await put_chain(saver_on(store), is_async, thread_id, 2, run_id="writer")

    io_ = AsyncInterpreter(store.async_client[store.db_name]) if is_async else SyncInterpreter(store.db)
    interleaved(io_, is_async, _writes_summaries, writer)
    plan = summary_drift.drift_plan(CollectionNames(), repair=True)
    drift = await io_.run(plan) if is_async else io_.run(plan)
    assert drift.repaired == 2 and every_thread_summarized(store) == []


def test_doctor_compares_a_sample_of_a_large_database_within_its_time_bound(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    if store.commands is None:
        monkeypatch.setattr(mongomock.database.Database, "command", mongod_command, raising=False)
    saver = saver_on(store)
    for thread_id in ("a", "b", "c", "d"):
        finished(put_chain(saver, False, thread_id, 2))
    monkeypatch.setattr(thread_summaries, "BUILD_PAGE", 3)
    monkeypatch.setattr(deployment, "DRIFT_SECONDS", 0)
    code, report = doctor_report(store)
    assert report["summaries"]["complete"] is False and 1 <= report["summaries"]["threads"] < 4
    code, report = doctor_report(store, "--repair")  # a repair compares every thread, whatever the bound
    assert report["summaries"]["complete"] is True and report["summaries"]["threads"] == 4


def test_both_thread_lists_show_a_thread_whose_summary_is_missing(store: Store) -> None:
    finished(as_a_format_1_writer_left_it(store, False))
    saver = saver_on(store)
    for thread_id in ("a", "z"):
        finished(put_chain(saver, False, thread_id, 1))
    store.db.checkpoints.delete_one({"_id": summary_id("z")})  # the last thread, and the page's last
    expected = [("a", 1), ("kept", 1), ("new", 2), ("old", 2), ("z", 1)]
    views = ThreadViews(store.client, store.db_name, CollectionNames())
    assert [(r["thread_id"], r["checkpoints"]) for r in views.threads()["threads"]] == expected
    paged, after = [], None
    while True:  # a page at a time, summarized and unsummarized threads interleaved
        page = views.threads(after=after, limit=1)
        paged += [r["thread_id"] for r in page["threads"]]
        if not page["more"]:
            break
        after = page["next_after"]
    assert paged == [t for t, _ in expected]
    assert [r["thread_id"] for r in views.threads(prefix="n")["threads"]] == ["new"]
    page = views.threads(after="kept", limit=2)
    assert [r["thread_id"] for r in page["threads"]] == ["new", "old"] and page["more"]
    sent: list[Any] = []
    io = SyncInterpreter(store.db)
    execute = io.execute
    io.execute = lambda request: sent.append(request) or execute(request)  # type: ignore[method-assign]
    summaries, _ = io.run(summaries_page_plan(CollectionNames(), limit=1))
    assert [s["thread_id"] for s in summaries] == ["a"]
    # the summaries, and the search for unsummarized threads up to the next summary (none): the threads without a
    # summary past the page cost nothing
    assert [type(r).__name__ for r in sent] == ["Find", "Find"]


def test_a_summary_naming_a_later_checkpoint_than_any_is_reported_not_counted_forever(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A summary edited to name a ``latest`` past every checkpoint is past whatever is read: counted again
    ``RECOUNTS`` times, then left as it is and named, so ``doctor --repair`` ends."""
    if store.commands is None:
        monkeypatch.setattr(mongomock.database.Database, "command", mongod_command, raising=False)
    finished(put_chain(saver_on(store), False, "a", 2))
    store.db.checkpoints.update_one({"_id": summary_id("a")}, {"$set": {"latest": "~", "checkpoints": 1}})
    code, report = doctor_report(store, "--repair")
    assert code == EXIT_PROBLEM and report["summaries"]["unsettled"] == ["a"]
    text = io.StringIO()
    main(["--db", store.db_name, "doctor", "--repair"], client=store.client, out=text)
    assert "not settled (written on while counted, or naming a later checkpoint than any): 'a'" in text.getvalue()
    assert f"run `langgraph-durable-mongodb --db {store.db_name} doctor --repair`" in text.getvalue()
