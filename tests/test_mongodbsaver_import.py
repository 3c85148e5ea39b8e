"""Import from ``langgraph-checkpoint-mongodb``'s ``MongoDBSaver``: data written by the real ``MongoDBSaver``
(a graph with a subgraph namespace, several checkpoints, an ``interrupt()`` pending) on the real-server tier,
imported, verified, and resumed with our saver.

mongomock is not in the storage tests: ``MongoDBSaver.put_writes`` cannot run on it (its ``bulk_write``
rejects pymongo 4.20's ``UpdateOne``), so no source can be written there.
"""

from __future__ import annotations

import ast
import io
import json
import operator
import re
import runpy
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.mongodb import MongoDBSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from pymongo import AsyncMongoClient, MongoClient, monitoring

from langgraph_durable_mongodb import InvalidInputError, MongoDBCheckpointer
from langgraph_durable_mongodb.cli import EXIT_OK, EXIT_PROBLEM, EXIT_UNKNOWN_THREAD, EXIT_USAGE, main
from langgraph_durable_mongodb.migrate import (
    READER_MONGODBSAVER,
    READER_OWN_PARSE,
    aimport_mongodbsaver,
    import_mongodbsaver,
)
from langgraph_durable_mongodb.storage.thread_summaries import NOT_SUMMARY, summary_id

from .cli_helpers import Terminal

#: Node executions per (thread, node): a node finished before the interrupt does not run again on resume.
RUNS: Counter = Counter()


class State(TypedDict):
    items: Annotated[list, operator.add]


def _node(name: str, value: Any = None) -> Any:
    def run(state: State, config: RunnableConfig) -> dict:
        RUNS[(config["configurable"]["thread_id"], name)] += 1
        return {"items": [interrupt("approve?") if value is None else value]}

    return run


def build() -> StateGraph:
    review = StateGraph(State)
    review.add_node("draft", _node("draft", "draft"))
    review.add_node("ask", _node("ask"))
    review.add_edge(START, "draft")
    review.add_edge("draft", "ask")
    review.add_edge("ask", END)
    graph = StateGraph(State)
    graph.add_node("prepare", _node("prepare", "prepared"))
    graph.add_node("review", review.compile())
    graph.add_node("finish", _node("finish", "done"))
    graph.add_edge(START, "prepare")
    graph.add_edge("prepare", "review")
    graph.add_edge("review", "finish")
    graph.add_edge("finish", END)
    return graph


def cfg(thread_id: str) -> dict:
    return {"configurable": {"thread_id": thread_id}}


class Writes(monitoring.CommandListener):
    """The write commands the client sends, and its ``find`` commands (database, collection, sort)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.finds: list[tuple[str, Any]] = []

    def started(self, event: Any) -> None:
        if event.command_name in ("insert", "update", "delete", "findAndModify", "createIndexes"):
            self.seen.append(event.command_name)
        if event.command_name == "find":
            self.finds.append((event.database_name, event.command["find"], dict(event.command.get("sort") or {})))

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


@pytest.fixture
def dbs(mongodb_uri: str) -> Iterator[tuple[MongoClient, str, str, Writes]]:
    """A client, a source database written by the real ``MongoDBSaver`` (t1 interrupted, t2 resumed to the
    end), a destination database name, and the client's write commands."""
    RUNS.clear()
    writes = Writes()
    client: MongoClient = MongoClient(mongodb_uri, event_listeners=[writes])
    source, dest = f"src_{uuid.uuid4().hex[:12]}", f"dst_{uuid.uuid4().hex[:12]}"
    graph = build().compile(checkpointer=MongoDBSaver(client, db_name=source))
    for thread in ("t1", "t2"):
        graph.invoke({"items": ["start"]}, cfg(thread))
    graph.invoke(Command(resume="yes"), cfg("t2"))
    yield client, source, dest, writes
    for name in (source, dest, dest + "_b"):
        client.drop_database(name)
    client.close()


def raw(db: Any) -> dict[str, Any]:
    """Every document and index of every collection, as stored."""
    return {
        name: (sorted(db[name].find(), key=lambda d: str(d["_id"])), db[name].index_information())
        for name in sorted(db.list_collection_names())
    }


def test_import_copies_every_thread_verifies_it_and_leaves_the_source_untouched(dbs: tuple) -> None:
    client, source, dest, _ = dbs
    before = raw(client[source])
    saver = MongoDBCheckpointer(client, db_name=dest)
    report = import_mongodbsaver(client[source], saver, graph=build().compile(), batch_size=2)

    n_checkpoints = client[source].checkpoints.count_documents({})
    n_writes = client[source].checkpoint_writes.count_documents({})
    assert report.reader == READER_MONGODBSAVER and report.ok, report.mismatches
    assert (report.threads, report.checkpoints_imported, report.writes_imported) == (2, n_checkpoints, n_writes)
    assert (report.verified, report.states_verified, report.checkpoints_present) == (n_checkpoints, 2, 0)
    assert raw(client[source]) == before
    stored = client[dest][saver.collections.checkpoints]
    assert len(stored.distinct("checkpoint_ns", {"thread_id": "t1", "checkpoint_ns": NOT_SUMMARY})) == 2  # the root and the subgraph's
    assert stored.find_one({"_id": summary_id("t1")})["checkpoints"] == stored.count_documents({"thread_id": "t1", "checkpoint_ns": ""})
    state = build().compile(checkpointer=saver).get_state(cfg("t1"))
    assert state.next == ("review",) and [i.value for i in state.interrupts] == ["approve?"]

    result = build().compile(checkpointer=saver).invoke(Command(resume="yes"), cfg("t1"))
    assert result == MongoDBSaver(client, db_name=source).get_tuple(cfg("t2")).checkpoint["channel_values"]
    assert result["items"][-1] == "done"
    # finished before the interrupt: not run again; the interrupted node ran once more
    assert (RUNS[("t1", "prepare")], RUNS[("t1", "draft")], RUNS[("t1", "ask")]) == (1, 1, 2)


def test_a_second_run_writes_nothing(dbs: tuple) -> None:
    client, source, dest, writes = dbs
    saver = MongoDBCheckpointer(client, db_name=dest)
    first = import_mongodbsaver(client[source], saver)
    stored = raw(client[dest])
    writes.seen.clear()
    second = import_mongodbsaver(client[source], MongoDBCheckpointer(client, db_name=dest, auto_setup=False))

    assert writes.seen == []
    assert raw(client[dest]) == stored
    assert (second.checkpoints_imported, second.writes_imported) == (0, 0)
    assert (second.checkpoints_present, second.writes_present) == (first.checkpoints_imported, first.writes_imported)
    assert second.ok and second.verified == first.verified


def test_the_source_is_read_in_pages_of_batch_size_oldest_first(dbs: tuple) -> None:
    client, source, dest, writes = dbs
    per_namespace = [g["n"] for g in client[source].checkpoints.aggregate([{"$group": {"_id": "$checkpoint_ns", "n": {"$sum": 1}}}])]
    saver = MongoDBCheckpointer(client, db_name=dest)
    saver.setup()
    writes.finds.clear()
    import_mongodbsaver(client[source], saver, batch_size=2)
    pages = [f for f in writes.finds if f == (source, "checkpoints", {"checkpoint_id": 1})]
    # a namespace of n checkpoints: n // 2 full pages, then one short (maybe empty) page that ends it
    assert len(pages) == sum(n // 2 + 1 for n in per_namespace)


def test_a_run_stopped_midway_then_run_again_ends_as_an_uninterrupted_one(dbs: tuple) -> None:
    client, source, dest, _ = dbs

    def stop_after_five(done: int, total: int) -> None:
        if done == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_mongodbsaver(client[source], MongoDBCheckpointer(client, db_name=dest), batch_size=2, progress=stop_after_five)
    assert client[dest].checkpoints.count_documents({"checkpoint_ns": NOT_SUMMARY}) == 5
    resumed = import_mongodbsaver(client[source], MongoDBCheckpointer(client, db_name=dest), batch_size=2)
    whole = import_mongodbsaver(client[source], MongoDBCheckpointer(client, db_name=dest + "_b"), batch_size=2)

    assert resumed.ok and resumed.checkpoints_present == 5
    assert resumed.checkpoints_imported + 5 == whole.checkpoints_imported
    assert raw(client[dest]) == raw(client[dest + "_b"])


async def test_the_async_form_imports_verifies_and_resumes(dbs: tuple, mongodb_uri: str) -> None:
    client, source, dest, _ = dbs
    before = raw(client[source])
    async_client: AsyncMongoClient = AsyncMongoClient(mongodb_uri)
    try:
        saver = MongoDBCheckpointer(async_client=async_client, db_name=dest)
        seen: list[tuple[int, int]] = []
        report = await aimport_mongodbsaver(async_client[source], saver, batch_size=3, progress=lambda *p: seen.append(p))
        again = await aimport_mongodbsaver(async_client[source], saver, batch_size=3)
        result = await build().compile(checkpointer=saver).ainvoke(Command(resume="yes"), cfg("t1"))
    finally:
        await async_client.close()

    n_checkpoints = client[source].checkpoints.count_documents({})
    assert report.reader == READER_OWN_PARSE and report.ok, report.mismatches
    assert (report.checkpoints_imported, report.verified) == (n_checkpoints, n_checkpoints)
    assert report.writes_imported == client[source].checkpoint_writes.count_documents({})
    assert seen[-1] == (n_checkpoints, n_checkpoints) and len(seen) == n_checkpoints
    assert (again.checkpoints_imported, again.writes_imported, again.checkpoints_present) == (0, 0, n_checkpoints)
    assert result["items"][-1] == "done" and RUNS[("t1", "draft")] == 1
    assert raw(client[source]) == before


def run_cli(client: Any, *argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), client=client, out=out), out.getvalue()


def test_the_cli_imports_with_a_progress_bar_and_exits_1_on_a_mismatch(
    dbs: tuple, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    client, source, dest, _ = dbs
    n = client[source].checkpoints.count_documents({})
    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)  # a person watching: tqdm's bar
    code, out = run_cli(client, "--db", dest, "import-mongodbsaver", "--source-db", source, "--thread", "t1")
    monkeypatch.undo()
    assert code == EXIT_OK, out
    t1 = client[source].checkpoints.count_documents({"thread_id": "t1"})
    assert f"checkpoints {t1} imported, 0 already present" in out
    assert f"verified    {t1} checkpoints against MongoDBSaver" in out
    assert "importing: 100%" in terminal.getvalue() and f"| {t1}/{t1} " in terminal.getvalue()
    assert "importing" not in out
    assert client[dest].checkpoints.distinct("thread_id") == ["t1"]

    code, out = run_cli(client, "--db", dest, "import-mongodbsaver", "--source-db", source, "--json")
    assert "importing" not in capsys.readouterr().err  # not a terminal (logs, pipes): no bar
    report = json.loads(out)
    assert code == EXIT_OK and report["ok"] and report["checkpoints_imported"] == n - t1 and report["threads"] == 2

    victim = client[dest].checkpoints.find_one({"thread_id": "t2", "checkpoint_ns": ""}, sort=[("checkpoint_id", -1)])
    client[dest].checkpoints.update_one({"_id": victim["_id"]}, {"$set": {"metadata.step": 99}})
    code, out = run_cli(client, "--db", dest, "import-mongodbsaver", "--source-db", source)
    assert code == EXIT_PROBLEM
    assert f"t2 '' {victim['checkpoint_id']}: metadata differs" in out and "mismatches  1" in out


def test_the_cli_names_a_thread_the_source_does_not_hold_and_exits_3(dbs: tuple) -> None:
    client, source, dest, _ = dbs
    code, out = run_cli(client, "--db", dest, "import-mongodbsaver", "--source-db", source, "--thread", "t1", "--thread", "nope")
    assert code == EXIT_UNKNOWN_THREAD, out
    assert "unknown     'nope': not in the source" in out
    assert client[dest].checkpoints.distinct("thread_id") == ["t1"], "the threads the source holds are imported"


class DropsOne(MongoDBCheckpointer):
    """A saver that loses the first root checkpoint it is given."""

    dropped: str | None = None

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if self.dropped is None and not config["configurable"]["checkpoint_ns"]:
            self.dropped = checkpoint["id"]
            return config
        return super().put(config, checkpoint, metadata, new_versions)


def test_the_verification_names_checkpoints_missing_from_or_extra_in_the_destination(dbs: tuple) -> None:
    client, source, dest, _ = dbs
    lossy = DropsOne(client, db_name=dest)
    report = import_mongodbsaver(client[source], lossy, thread_ids=["t2"])
    assert report.mismatches == [f"t2 '' {lossy.dropped}: missing from the destination"]

    bystander = client[dest].checkpoints.find_one({"thread_id": "t2"})
    client[dest].checkpoints.insert_one({**bystander, "_id": "extra", "checkpoint_id": "z-extra"})
    saver = MongoDBCheckpointer(client, db_name=dest)
    report = import_mongodbsaver(client[source], saver, thread_ids=["t2"])
    assert report.checkpoints_imported == 1  # the lost one, imported by this run
    assert report.mismatches == [f"t2 {bystander['checkpoint_ns']!r} z-extra: in the destination, not in the source"]


class NoQueries:
    """A database that fails the test on any use but its name."""

    name = "checkpointing_db"

    def __getitem__(self, name: str) -> Any:
        raise AssertionError(f"queried {name}")

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"used {name}")


BAD = [
    ({"thread_ids": [1]}, "thread_ids must be a str"),
    ({"thread_ids": "t1"}, "thread_ids must be a list"),
    ({"checkpoint_collection": "$cmd"}, "no leading '\\$'"),
    ({"writes_collection": "$where"}, "no leading '\\$'"),
    ({"checkpoint_collection": ""}, "non-empty"),
    ({"batch_size": 0}, "batch_size must be a positive int"),
]


@pytest.mark.parametrize(("kwargs", "message"), BAD)
async def test_bad_input_is_refused_before_any_query(kwargs: dict, message: str) -> None:
    import mongomock
    from mongomock_motor import AsyncMongoMockClient

    sync_saver = MongoDBCheckpointer(mongomock.MongoClient(), db_name="dst")
    async_saver = MongoDBCheckpointer(async_client=AsyncMongoMockClient(), db_name="dst")
    with pytest.raises(InvalidInputError, match=message):
        import_mongodbsaver(NoQueries(), sync_saver, **kwargs)
    with pytest.raises(InvalidInputError, match=message):
        await aimport_mongodbsaver(NoQueries(), async_saver, **kwargs)
    assert sync_saver.client["dst"].list_collection_names() == []


def test_importing_a_database_into_itself_is_refused() -> None:
    import mongomock

    client = mongomock.MongoClient()
    with pytest.raises(InvalidInputError, match="import into another database"):
        import_mongodbsaver(NoQueries(), MongoDBCheckpointer(client, db_name="checkpointing_db"))
    code, _ = run_cli(client, "--db", "checkpointing_db", "import-mongodbsaver", "--source-db", "checkpointing_db")
    assert code == EXIT_USAGE
    code, _ = run_cli(client, "import-mongodbsaver", "--source-db", "src", "--checkpoint-collection", "$cmd")
    assert code == EXIT_USAGE
    assert client.list_database_names() == []


def guide_snippet() -> str:
    """The Python snippet of docs/mongodbsaver.md, as a reader copies it."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "mongodbsaver.md").read_text()
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def test_the_guide_s_snippet_runs_as_copied(
    mongodb_uri: str, mongodb_server: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    """The snippet names its databases as a reader's would (``checkpointing_db``, ``langgraph``): it runs on the
    tier's throwaway servers only, never on a MONGODB_URI whose databases those may be."""
    if mongodb_server == "uri":
        pytest.skip("the snippet writes the databases checkpointing_db and langgraph: not on a server of yours")
    client: MongoClient = MongoClient(mongodb_uri)
    for name in ("checkpointing_db", "langgraph"):
        client.drop_database(name)
    try:
        graph = build().compile(checkpointer=MongoDBSaver(client, db_name="checkpointing_db"))
        for thread in ("t1", "t2"):
            graph.invoke({"items": ["start"]}, cfg(thread))
        stored = client["checkpointing_db"]["checkpoints"].count_documents({})
        monkeypatch.setenv("MONGODB_URI", mongodb_uri)
        script = tmp_path / "import_snippet.py"
        script.write_text(guide_snippet())
        runpy.run_path(str(script), run_name="__main__")
        sync, async_ = (ast.literal_eval(line) for line in capsys.readouterr().out.strip().splitlines())
        assert (sync["threads"], sync["checkpoints_imported"], sync["ok"]) == (2, stored, True)
        assert (async_["checkpoints_imported"], async_["checkpoints_present"], async_["ok"]) == (0, stored, True)
        ours = MongoDBCheckpointer(client, db_name="langgraph")
        assert len(list(ours.list(cfg("t1")))) + len(list(ours.list(cfg("t2")))) == stored
    finally:
        for name in ("checkpointing_db", "langgraph"):
            client.drop_database(name)
        client.close()
