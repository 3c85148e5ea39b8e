"""Every command names its thread by the shard key, ``thread_id`` (issue 50), and docs/storage.md says so truly.

On a sharded cluster an upsert whose filter lacks the shard key is refused (before MongoDB 7.0) or broadcast to
every shard (since), and any other command without it reads every shard. So over a representative workload
(durable ReAct turns, an ``at_most_once`` tool, an interrupt edited and resumed, a ``Send`` fan-out, compiled
children, a failed node resumed, a DeltaChannel chat, ``copy_thread``, ``delete_thread``, ``prune``, the TTL
sweep, the run lock, the journal's claims and records, the thread summaries, the inspector's thread page, the
stamp), sync and async, on both compile forms, each command is checked:

- a single-document write (an upsert, a ``findAndModify``, an insert) names its thread by equality, everywhere;
  an upsert into the checkpointer's collections names its namespace too (a document's key starts with both);
- any other command names its thread (by equality, or a page of given threads by ``$in``), unless it runs in one
  of the operations docs/storage.md's "What scatters" table lists: each of those must scatter in it (else the
  table lists one too many);
- the collections the "Shard keys" table leaves unsharded (``durable_metadata``) are not checked.

On FerretDB and mongo-java-server the commands are pymongo's command monitoring's, as they go on the wire in the
form MongoDB is sent them: these two servers find a document from its ``_id`` index only by a filter on ``_id``
alone, so the interpreters drop the key fields the ``_id`` encodes for them (``ServerQuirks.id_alone``; neither can
be sharded). The test turns that quirk off; ``test_the_test_servers_are_sent_id_alone`` checks that it holds.
mongomock sends no command, so offline the requests every interpreter runs are checked in the same form.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import mongomock
import pytest
from langchain_core.messages import HumanMessage
from langgraph.types import Command
from mongomock_motor import AsyncMongoMockClient
from pymongo import AsyncMongoClient, MongoClient, monitoring

from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.storage.deployment import check_deployment
from langgraph_durable_mongodb.storage.format import format_document
from langgraph_durable_mongodb.storage.plans import lease, quirks
from langgraph_durable_mongodb.storage.plans.interpreters import AsyncInterpreter, SyncInterpreter
from langgraph_durable_mongodb.storage.schema import INDEXES, CollectionNames
from langgraph_durable_mongodb.storage.summary_drift import drift_plan
from langgraph_durable_mongodb.storage.thread_summaries import summary_id
from langgraph_durable_mongodb.views.reader import ThreadViews
from langgraph_durable_mongodb.views.stored import ThreadDocuments

from .clients import COMPILE_FORMS, PlainCompile, on_servers, tier_uri
from .graphs import format2_case, invoke, run_chat, state_of, three_effects

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchmarks import rtt as bench_rtt  # noqa: E402  (scripts/benchmarks/rtt.py: the bench's durable ReAct turn)

DOC = Path(__file__).resolve().parents[1] / "docs" / "storage.md"
KEEP_LATEST = {"strategy": "keep_latest", "default_ttl": 60}
NAMES = CollectionNames()
#: The collections whose documents are named by ``_id`` = their key, which starts with the thread and namespace.
KEYED = {NAMES.checkpoints, NAMES.blobs, NAMES.writes}
PER_THREAD_AND_RUNS = (*NAMES.per_thread, NAMES.runs)


# -- what docs/storage.md says -------------------------------------------------------------


def doc_table(heading: str) -> list[list[str]]:
    """The rows (cells, stripped) of the first table under ``heading`` in docs/storage.md, its header left out."""
    text = DOC.read_text()
    rows: list[list[str]] = []
    for line in text[text.index(f"\n{heading}\n"):].splitlines()[2:]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    assert rows, f"no table under {heading!r} in {DOC}"
    return rows[2:]


def code(cell: str) -> str:
    """The first code span of a table cell ("" for none)."""
    found = re.search(r"`([^`]+)`", cell)
    return found.group(1) if found else ""


def scatter_set() -> set[str]:
    """The operations docs/storage.md's "What scatters" lists (each row's first code span)."""
    return {code(row[0]) for row in doc_table("### What scatters")}


def shard_keys() -> dict[str, list[str]]:
    """docs/storage.md's "Shard keys" table: collection -> its row's cells after the name."""
    return {code(row[0]): row[1:] for row in doc_table("### Shard keys")}


def unsharded() -> set[str]:
    return {name for name, cells in shard_keys().items() if cells[0] == "not sharded"}


# -- the commands, as sent -------------------------------------------------------------------


class Audit:
    """Every command on the watched databases, with the operation (``phase``) that sent it."""

    def __init__(self, db_names: set[str]) -> None:
        self.db_names, self.phase, self.seen = db_names, "unlabelled", []

    def note(self, name: str, command: Mapping[str, Any]) -> None:
        self.seen.append((self.phase, name, command))

    @contextmanager
    def within(self, phase: str) -> Iterator[None]:
        self.phase = phase
        try:
            yield
        finally:
            self.phase = "unlabelled"


class Wire(monitoring.CommandListener):
    """pymongo command monitoring into an ``Audit``."""

    def __init__(self, audit: Audit) -> None:
        self.audit = audit

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.database_name in self.audit.db_names:
            self.audit.note(event.command_name, event.command)

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


def as_command(request: Any) -> tuple[str, dict[str, Any]] | None:
    """A plan request as the wire command the interpreters send for it (None for what is not about documents)."""
    kind, coll = type(request).__name__, getattr(request, "collection", None)
    if kind == "Find":
        return "find", {"find": coll, "filter": request.filter}
    if kind == "Aggregate":
        return "aggregate", {"aggregate": coll, "pipeline": request.pipeline}
    if kind == "Upsert":
        ops = [{"q": op._filter, "upsert": op._upsert} for op in request.operations]  # noqa: SLF001
        return "update", {"update": coll, "updates": ops}
    if kind in ("UpdateMany", "FencedUpdate"):
        return "update", {"update": coll, "updates": [{"q": request.filter, "multi": kind == "UpdateMany"}]}
    if kind == "FindOneAndUpdate":
        return "findAndModify", {"findAndModify": coll, "query": request.filter, "upsert": request.upsert}
    if kind == "DeleteMany":
        return "delete", {"delete": coll, "deletes": [{"q": request.filter, "limit": 0}]}
    if kind in ("InsertOne", "InsertMany"):
        return "insert", {"insert": coll, "documents": [request.document] if kind == "InsertOne" else request.documents}
    return None


def tap_requests(monkeypatch: pytest.MonkeyPatch, audit: Audit) -> None:
    """Offline: note every request any interpreter runs (each storage class's, the views', doctor's)."""
    sync_execute, async_execute = SyncInterpreter.execute, AsyncInterpreter.execute

    def note(request: Any) -> None:
        if (sent := as_command(request)) is not None:
            audit.note(*sent)

    def execute(self: Any, request: Any) -> Any:
        note(request)
        return sync_execute(self, request)

    async def aexecute(self: Any, request: Any) -> Any:
        note(request)
        return await async_execute(self, request)

    monkeypatch.setattr(SyncInterpreter, "execute", execute)
    monkeypatch.setattr(AsyncInterpreter, "execute", aexecute)


# -- the check --------------------------------------------------------------------------------


def names_thread(query: Any, by_in: bool) -> bool:
    """Whether ``query`` names its thread: ``thread_id`` by equality (or, ``by_in``, a list of threads by ``$in``),
    in a clause of its ``$and``, or in every clause of its ``$or``."""
    if not isinstance(query, Mapping):
        return False
    value = query.get("thread_id")
    if isinstance(value, str) or (isinstance(value, Mapping) and isinstance(value.get("$eq"), str)):
        return True
    if by_in and isinstance(value, Mapping) and list(value) == ["$in"] and all(isinstance(t, str) for t in value["$in"]):
        return True
    if any(names_thread(clause, by_in) for clause in query.get("$and", ())):
        return True
    clauses = query.get("$or")
    return bool(clauses) and all(names_thread(clause, by_in) for clause in clauses)


def targets(name: str, command: Mapping[str, Any]) -> Iterator[tuple[bool, Any, bool]]:
    """``(one document, filter, upsert)`` of each operation of a command about documents."""
    if name == "find":
        yield False, command.get("filter") or {}, False
    elif name == "aggregate":
        first = (command.get("pipeline") or [{}])[0]
        yield False, first.get("$match", {}), False
    elif name in ("count", "distinct"):
        yield False, command.get("query") or {}, False
    elif name == "update":
        for op in command["updates"]:
            yield not op.get("multi") or bool(op.get("upsert")), op["q"], bool(op.get("upsert"))
    elif name == "delete":
        for op in command["deletes"]:
            yield op.get("limit") == 1, op["q"], False
    elif name == "findAndModify":
        yield True, command.get("query") or {}, bool(command.get("upsert"))
    elif name == "insert":
        for doc in command["documents"]:
            yield True, {"thread_id": doc.get("thread_id")}, False


def judged(audit: Audit, scattering: set[str]) -> tuple[list[str], set[str]]:
    """``(violations, the phases that scattered)`` of what ``audit`` saw."""
    violations, scattered = [], set()
    skipped = unsharded()
    for phase, name, command in audit.seen:
        coll = command.get(name)
        if coll in skipped:
            continue
        for one, query, upsert in targets(name, command):
            if one:
                ns_named = not upsert or coll not in KEYED or isinstance(query.get("checkpoint_ns"), str)
                if not (names_thread(query, by_in=False) and ns_named):
                    violations.append(f"{phase}: {name} on {coll} does not name its thread{'' if ns_named else ' and namespace'}: {query!r:.300}")
            elif not names_thread(query, by_in=True):
                scattered.add(phase)
                if phase not in scattering:
                    violations.append(f"{phase}: {name} on {coll} scatters: {query!r:.300}")
    return violations, scattered


# -- the workload -----------------------------------------------------------------------------


class Store:
    """A database watched by an ``Audit``: its platform's clients, and a raw sync handle that is not watched."""

    def __init__(self, client: Any, async_client: Any, raw: Any, db_name: str) -> None:
        self.client, self.async_client, self.raw, self.db_name = client, async_client, raw, db_name

    def platform(self, db_name: str | None = None, **options: Any) -> DurablePlatform:
        return DurablePlatform(self.client, async_client=self.async_client, db_name=db_name or self.db_name, **options)


@pytest.fixture(params=["mongomock", *on_servers("server")])
async def watched(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[Store, Audit]]:
    db_name = f"t_{uuid.uuid4().hex[:12]}"
    audit = Audit({db_name, f"{db_name}_old"})
    if request.param == "mongomock":
        client = mongomock.MongoClient()
        tap_requests(monkeypatch, audit)
        yield Store(client, AsyncMongoMockClient(mock_mongo_client=client), client, db_name), audit
        return
    uri = tier_uri(request)
    # What MongoDB is sent: these servers find by _id only from _id alone, so the key fields are dropped for them
    for server in ("FERRETDB", "MONGO_JAVA_SERVER"):
        monkeypatch.setattr(quirks, server, dataclasses.replace(getattr(quirks, server), id_alone=False))
    wire = Wire(audit)
    client, async_client, raw = MongoClient(uri, event_listeners=[wire]), AsyncMongoClient(uri, event_listeners=[wire]), MongoClient(uri)
    yield Store(client, async_client, raw, db_name), audit
    for name in audit.db_names:
        raw.drop_database(name)
    for c in (client, raw):
        c.close()
    await async_client.close()


async def call(target: Any, mode: str, name: str, *args: Any, **kwargs: Any) -> Any:
    """``target.name(...)``, or ``await target.aname(...)`` in async mode."""
    return await getattr(target, "a" + name)(*args, **kwargs) if mode == "async" else getattr(target, name)(*args, **kwargs)


def expire(store: Store, thread_id: str) -> None:
    """Move the thread's expiry into the past (unwatched), as the clock passing it would."""
    past = lease.utcnow() - timedelta(seconds=1)
    for coll in NAMES.per_thread:
        store.raw[store.db_name][coll].update_many({"thread_id": thread_id}, {"$set": {"expire_at": past}})


async def thread_workload(platform: Any, store: Store, mode: str) -> None:
    """What runs do on their threads: each command must name its thread."""
    saver = platform.checkpointer
    react = platform.compile(bench_rtt.secure_builder())
    for turn in range(2):
        await invoke(react, mode, {"messages": [HumanMessage(f"question {turn}")]}, "react")
    await invoke(platform.compile(bench_rtt.secure_builder(at_most_once=True)), mode, {"messages": [HumanMessage("q")]}, "once")
    executed: list[str] = []
    case = platform.compile(format2_case(executed))
    await invoke(case, mode, {"notes": [], "turns": 0}, "case")  # children, a Send fan-out, a payment, an interrupt
    config = {"configurable": {"thread_id": "case"}}
    assert "gate:approved" in (await invoke(case, mode, Command(resume="approved"), "case"))["notes"]
    await call(case, mode, "update_state", config, {"item": "edited"})  # an edit of the latest checkpoint
    retried = platform.compile(three_effects(fail_once=[True]))
    with pytest.raises(ConnectionError):
        await invoke(retried, mode, {"notes": []}, "retry")
    await invoke(retried, mode, None, "retry")  # the node's entries read, its effects replayed
    await run_chat(saver, mode == "async", 3)  # DeltaChannel history
    history = case.aget_state_history(config) if mode == "async" else None
    assert ([s async for s in history] if history is not None else list(case.get_state_history(config)))
    assert (await state_of(react, mode, "react")).values["messages"]
    await call(saver, mode, "copy_thread", "react", "react-copy")
    await call(saver, mode, "delete_thread", "react-copy")
    await call(saver, mode, "prune", ["retry"], strategy="keep_latest")
    await call(saver, mode, "prune", ["once"], strategy="delete")
    views, documents = ThreadViews(store.client, store.db_name), ThreadDocuments(store.client, store.db_name)
    assert views.thread("case") is not None
    assert documents.inspected("case")[1] and documents.exists("case") and documents.journal_documents("case", False)
    assert documents.checkpoint_counts(["case"])["case"] > 0


async def scattering_workload(platform: Any, store: Store, audit: Audit, mode: str) -> None:
    """The operations docs/storage.md lists as scattering, each run under its name."""
    saver = platform.checkpointer
    with audit.within("list(None)"):
        if mode == "async":
            assert [t async for t in saver.alist(None, limit=3)]
        else:
            assert list(saver.list(None, limit=3))
            assert list(saver.list(None, filter={"source": "loop"}, limit=3))
    with audit.within("delete_for_runs"):
        await call(saver, mode, "delete_for_runs", ["a-run"])
    expire(store, "case")
    with audit.within("sweep_expired"):
        assert await call(saver, mode, "sweep_expired") == ["case"]
    with audit.within("threads"):
        assert ThreadViews(store.client, store.db_name).threads()["threads"]
        assert ThreadViews(store.client, store.db_name).status("react") is not None  # a live page's row: a page of one
    store.raw[store.db_name][NAMES.checkpoints].delete_one({"_id": summary_id("react")})  # drift, for --repair to write
    with audit.within("doctor"):
        if isinstance(store.client, mongomock.MongoClient):  # it knows no server commands: the database's part
            drift = SyncInterpreter(store.client[store.db_name]).run(drift_plan(NAMES, repair=True)).as_dict()
        else:
            drift = check_deployment(store.client, store.db_name, NAMES, fix=False, repair=True)["summaries"]
        assert (drift["missing"], drift["repaired"]) == (1, 1)
    old = f"{store.db_name}_old"
    store.raw[old][NAMES.metadata].insert_one(format_document(version=1))
    with audit.within("MIGRATIONS"):
        await call(store.platform(old), mode, "setup")


@pytest.mark.parametrize("form", COMPILE_FORMS)
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_every_command_names_its_thread_but_the_documented_scatter_set(
    watched: tuple[Store, Audit], mode: str, form: str
) -> None:
    store, audit = watched
    real = store.platform(ttl=KEEP_LATEST)
    platform = real if form == "platform.compile" else PlainCompile(real)
    with audit.within("read_format_plan"):  # the first check of an empty database: it is stamped
        await call(real, mode, "setup")
    with audit.within("threads of a run"):
        await thread_workload(platform, store, mode)
        if real.run_locks is not None:
            real.run_locks.wait_releases(10)  # a sync run's release is sent in the background
    await scattering_workload(real, store, audit, mode)

    scattering = scatter_set()
    violations, scattered = judged(audit, scattering)
    assert violations == [], "\n".join(violations)
    assert scattered == scattering  # each listed operation scatters: none is listed that no longer does
    sent = {(name, command.get(name)) for _, name, command in audit.seen}
    # the workload reached what it is meant to: the journal's claims and records (fenced, without the run lock),
    # the run lock (under platform.compile), every collection named by key, the stamp
    locked = form == "platform.compile"
    reached = {("findAndModify", NAMES.journal), ("insert", NAMES.journal), ("update", NAMES.metadata)}
    reached |= {("insert", NAMES.runs), ("update", NAMES.runs)} if locked else {("update", NAMES.journal)}
    assert reached | {("update", coll) for coll in KEYED} <= sent


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_test_servers_are_sent_id_alone(request: pytest.FixtureRequest, mongodb_uri: str, mode: str) -> None:
    """FerretDB scans a collection for a filter on more than ``_id`` (it pushes no other filter down to SQLite),
    mongo-java-server for one that is not exactly a unique index's fields: a checkpoint's, a write's and a
    summary's upsert go to them by ``_id`` alone, as they did before the shard key (the ``_id`` encodes it)."""
    db_name = f"t_{uuid.uuid4().hex[:12]}"
    audit = Audit({db_name})
    wire = Wire(audit)
    client, async_client = MongoClient(mongodb_uri, event_listeners=[wire]), AsyncMongoClient(mongodb_uri, event_listeners=[wire])
    try:
        platform = DurablePlatform(client, async_client=async_client, db_name=db_name)
        await invoke(platform.compile(three_effects()), mode, {"notes": []}, "t")
        await invoke(platform.compile(three_effects()), mode, {"notes": []}, "t")
        keyed = [(command["update"], op["q"]) for _, name, command in audit.seen if name == "update" and command["update"] in KEYED
                 for op in command["updates"]]
        assert {coll for coll, _ in keyed} == {NAMES.checkpoints, NAMES.writes}
        assert all("_id" in query and not {"thread_id", "checkpoint_ns"} & set(query) for _, query in keyed), keyed
        assert any("latest" in query for _, query in keyed)  # the summary's, with its condition kept
    finally:
        client.drop_database(db_name)
        client.close()
        await async_client.close()


# -- the docs' tables against the library's declarations ----------------------------------------


def test_the_documented_shard_keys_are_served_by_the_librarys_own_unique_indexes() -> None:
    """Each sharded collection's row names an index this library's setup makes, led by the shard key, and lists
    exactly its unique indexes, each led by the shard key (else sharding would refuse it or void it)."""
    roles = {getattr(NAMES, role): role for role in INDEXES}
    rows = shard_keys()
    assert set(rows) == {*PER_THREAD_AND_RUNS, NAMES.metadata, NAMES.ordinals}
    assert unsharded() == {NAMES.metadata, NAMES.ordinals}
    for name in PER_THREAD_AND_RUNS:
        key, serving, unique = rows[name][0], code(rows[name][1]), set(re.findall(r"`([^`]+)`", rows[name][2]))
        assert key == "`{thread_id: 1}`", name
        indexes = {ix.document["name"]: ix.document for ix in INDEXES[roles[name]]}
        assert next(iter(indexes[serving]["key"])) == "thread_id", (name, serving)
        assert unique == {n for n, ix in indexes.items() if ix.get("unique")}, name
        assert all(next(iter(indexes[n]["key"])) == "thread_id" for n in unique), name


def test_the_documented_commands_shard_exactly_the_sharded_collections() -> None:
    text = DOC.read_text()
    commands = re.findall(r'sh\.shardCollection\("agents\.(\w+)", \{thread_id: 1\}\)', text)
    assert sorted(commands) == sorted(PER_THREAD_AND_RUNS)
