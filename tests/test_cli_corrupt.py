"""The CLI on documents it cannot read: it shows what it can, names each bad document (collection, ``_id``,
field) on stderr, and exits 1, instead of a traceback."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from pymongo.errors import WriteError

from langgraph_durable_mongodb import MongoDBCheckpointer
from langgraph_durable_mongodb.cli import EXIT_PROBLEM
from langgraph_durable_mongodb.storage.thread_summaries import summary_id
from tests.cli_helpers import run, write_thread
from tests.clients import on_servers

T0 = datetime(2026, 1, 1, 12, 0, 0)


@pytest.mark.parametrize("client_kind", ["mongomock", *on_servers("pymongo")], indirect=True)
def test_threads_lists_the_readable_threads_and_names_a_non_string_thread_id(
    mongo_client: Any, db_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    saver = MongoDBCheckpointer(mongo_client, db_name=db_name)
    write_thread(saver, "a", 2)
    write_thread(saver, "b", 1)
    db = mongo_client[db_name]
    write_thread(saver, "c", 1)
    # the list reads the threads' summaries: theirs are damaged
    db.checkpoints.update_one({"_id": summary_id("b")}, {"$set": {"thread_id": 42}})
    try:  # a document that reads like an operator must not become one (FerretDB refuses to store it)
        weird: dict = {"$gt": ""}
        db.checkpoints.update_one({"_id": summary_id("c")}, {"$set": {"thread_id": weird}})
    except WriteError:
        weird = {"id": "c"}
        db.checkpoints.update_one({"_id": summary_id("c")}, {"$set": {"thread_id": weird}})
    bad = db.checkpoints.find_one({"_id": summary_id("b")})
    operator_like = db.checkpoints.find_one({"_id": summary_id("c")})
    code, out = run(mongo_client, "--db", db_name, "threads")
    assert code == EXIT_PROBLEM
    assert [line.split()[0] for line in out.splitlines()] == ["THREAD", "a"]
    err = capsys.readouterr().err
    assert f"error: checkpoints document {bad['_id']!r}: field 'thread_id' is int 42, not a string" in err
    assert f"error: checkpoints document {operator_like['_id']!r}: field 'thread_id' is dict" in err


def entry(path: Any, node: str, key: str, **fields: Any) -> dict:
    return {"thread_id": "t", "path": path, "node": node, "occurrence": "1", "effect_key": key, "chunk": 0,
            "kind": "tool", "name": f"tool_{key}", "status": "completed", "attempts": 1, **fields}


@pytest.mark.parametrize("client_kind", ["mongomock", *on_servers("pymongo")], indirect=True)
def test_inspect_shows_the_rest_and_names_each_document_it_cannot_read(
    mongo_client: Any, db_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    saver = MongoDBCheckpointer(mongo_client, db_name=db_name)
    write_thread(saver, "t", 3)
    db = mongo_client[db_name]
    broken = db.checkpoints.find_one({"thread_id": "t", "checkpoint_ns": ""}, sort=[("checkpoint_id", 1)])
    db.checkpoints.update_one({"_id": broken["_id"]}, {"$unset": {"checkpoint_id": ""}})
    db.activity_journal.insert_many([
        entry("agent/1", "fetch", "1", started_at=T0),  # readable
        entry("agent/1", "fetch", "2"),  # readable, without started_at (mixed with the others)
        {**entry("agent/1", "fetch", "3", started_at=T0), "_id": "no-kind", "kind": None},
        {**entry(7, "fetch", "4", started_at=T0), "_id": "path-int"},
        {**entry("agent/1", "fetch", "5"), "_id": "started-text", "started_at": "yesterday"},
    ])
    code, out = run(mongo_client, "--db", db_name, "inspect", "t")
    assert code == EXIT_PROBLEM
    assert "(root)" in out and "2 checkpoints" in out  # the two readable checkpoints
    assert "tool_1" in out and "tool_2" in out and "tool_3" not in out and "tool_4" not in out
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"error: checkpoints document {broken['_id']!r}: field 'checkpoint_id' is missing, not a string: the document "
        "was edited by hand or damaged, and nothing was run from it; restore it from a backup, or delete it (or its thread)",
        *(
            f"error: activity_journal document {_id!r}: field {field!r} is {found}, not {wanted}: the document was edited "
            "by hand or damaged, and nothing was run from it; restore it from a backup, or delete it (or its thread)"
            for _id, field, found, wanted in (
                ("no-kind", "kind", "missing", "a string"),
                ("path-int", "path", "int 7", "a string"),
                ("started-text", "started_at", "str 'yesterday'", "datetime"),
            )
        ),
    ]
