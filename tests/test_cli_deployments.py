"""The CLI on databases of other deployments' shapes, on the tier's servers.

| database | command | expected |
|---|---|---|
| written by the Agent Server factory (``server.checkpointer``, ``exclusive_runs=False``: no run lock ever taken) | ``doctor`` | exit 0; ``thread_runs.thread_run_lock`` "not used", not MISSING |
| written by ``DurablePlatform`` (run locks taken) | ``doctor`` | the run-lock index present |
| an index missing | ``doctor`` | the ``--fix`` hint keeps ``--uri`` (password left out) and ``--db`` |
| written by ``MongoDBSaver`` | ``threads``, ``inspect`` | exit 1: the format is foreign, ``import-mongodbsaver`` named; no msgpack printed |
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langgraph.checkpoint.mongodb import MongoDBSaver
from pymongo import AsyncMongoClient, MongoClient

from langgraph_durable_mongodb import DurablePlatform
from langgraph_durable_mongodb.storage.plans.interpreters import AsyncInterpreter, SyncInterpreter
from langgraph_durable_mongodb.storage.deployment import index_rows_plan
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.cli import EXIT_PROBLEM
from langgraph_durable_mongodb.server import checkpointer

from .cli_helpers import doctor_exit, run
from .clients import with_database
from .graphs import note_graph


def lock_row(out: str) -> dict[str, Any]:
    [row] = [r for r in json.loads(out)["indexes"] if r["collection"] == "thread_runs"]
    return row


async def test_doctor_on_an_agent_server_database_expects_no_run_lock(
    mongodb_uri: str, server_db_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONGODB_URI", with_database(mongodb_uri, server_db_name))
    async with checkpointer() as saver:  # what langgraph-api opens
        await note_graph().compile(checkpointer=saver).ainvoke({"notes": []}, {"configurable": {"thread_id": "served"}})
    code, out = run(None, "--json", "doctor")  # MONGODB_URI names the database
    assert code == (warned := doctor_exit(out)), out
    assert lock_row(out) == {"collection": "thread_runs", "index": "thread_run_lock", "present": False, "unused": True}
    code, out = run(None, "doctor")
    assert code == warned and re.search(r"thread_runs.thread_run_lock +not used", out) and "MISSING" not in out


@pytest.mark.parametrize("is_async", [False, True], ids=["invoke", "ainvoke"])
async def test_doctor_on_a_platform_database_finds_its_run_lock_index(
    mongodb_uri: str, server_db_name: str, is_async: bool
) -> None:
    config = {"configurable": {"thread_id": "locked"}}
    if is_async:
        async with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
            await platform.compile(note_graph()).ainvoke({"notes": []}, config)
    else:
        with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
            platform.compile(note_graph()).invoke({"notes": []}, config)
    code, out = run(None, "--uri", mongodb_uri, "--db", server_db_name, "--json", "doctor")
    assert lock_row(out)["present"] is True, out


def test_the_fix_hint_keeps_the_uri_and_the_database(
    mongodb_uri: str, server_db_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
        platform.compile(note_graph()).invoke({"notes": []}, {"configurable": {"thread_id": "t"}})
    with MongoClient(mongodb_uri) as client:
        client[server_db_name]["checkpoint_writes"].drop_index("thread_ns_checkpoint_task_idx")
    monkeypatch.delenv("MONGODB_URI", raising=False)
    code, out = run(None, "--uri", mongodb_uri, "doctor", "--db", server_db_name)
    assert code == EXIT_PROBLEM
    assert f"run `langgraph-durable-mongodb --uri {mongodb_uri} --db {server_db_name} doctor --fix`" in out, out
    monkeypatch.setenv("MONGODB_URI", mongodb_uri)  # the environment gives the URI: the hint needs no --uri
    code, out = run(None, "--db", server_db_name, "doctor")
    assert f"run `langgraph-durable-mongodb --db {server_db_name} doctor --fix`" in out, out


def test_the_fix_hint_leaves_the_password_out() -> None:
    from langgraph_durable_mongodb.cli.doctor import fix_command

    hint = fix_command("mongodb://admin:s3cret@db.example:27017/?tls=true", "agents")
    assert "s3cret" not in hint and "admin:<password>@db.example" in hint and "--db agents doctor --fix" in hint


def test_threads_on_a_mongodbsaver_database_names_the_import(
    mongodb_uri: str, server_db_name: str, capsys: pytest.CaptureFixture
) -> None:
    with MongoClient(mongodb_uri) as client:
        graph = note_graph().compile(checkpointer=MongoDBSaver(client, db_name=server_db_name))
        graph.invoke({"notes": []}, {"configurable": {"thread_id": "theirs"}})
    for command in (["threads"], ["inspect", "theirs"]):
        code, out = run(None, "--uri", mongodb_uri, "--db", server_db_name, *command)
        err = capsys.readouterr().err
        assert code == EXIT_PROBLEM and out == ""
        assert "MongoDBSaver" in err and f"import-mongodbsaver --source-db {server_db_name}" in err, err


def test_doctor_on_an_empty_database_still_wants_the_run_lock_index(mongodb_uri: str, server_db_name: str) -> None:
    # Nothing written yet: nothing says run locks are not used, so --fix creates their index with the rest.
    code, out = run(None, "--uri", mongodb_uri, "--db", server_db_name, "--json", "doctor")
    assert code == EXIT_PROBLEM and lock_row(out) == {"collection": "thread_runs", "index": "thread_run_lock", "present": False}
    code, out = run(None, "--uri", mongodb_uri, "--db", server_db_name, "--json", "doctor", "--fix")
    assert code == doctor_exit(out) and lock_row(out)["created"] is True


async def test_the_index_check_reads_and_fixes_alike_on_both_faces(mongodb_uri: str, server_db_name: str) -> None:
    """``doctor``'s index rows are a plan: the async face lists collections and indexes, and creates the missing,
    as the sync face does."""
    with DurablePlatform.from_conn_string(mongodb_uri, db_name=server_db_name) as platform:
        platform.setup()  # every declared index
    names, client, aclient = CollectionNames(), MongoClient(mongodb_uri), AsyncMongoClient(mongodb_uri)
    try:
        client[server_db_name]["activity_journal"].drop_index("thread_status")
        sync_rows = SyncInterpreter(client[server_db_name]).run(index_rows_plan(names, fix=False))
        async_rows = await AsyncInterpreter(aclient[server_db_name]).run(index_rows_plan(names, fix=False))
        assert sync_rows == async_rows
        assert [r["index"] for r in async_rows if not r["present"]] == ["thread_status"]
        fixed = await AsyncInterpreter(aclient[server_db_name]).run(index_rows_plan(names, fix=True))
        assert [r for r in fixed if not r["present"]] == [
            {"collection": "activity_journal", "index": "thread_status", "present": False, "created": True}
        ]
        assert all(r["present"] for r in SyncInterpreter(client[server_db_name]).run(index_rows_plan(names, fix=False)))
    finally:
        client.close()
        await aclient.close()


@pytest.mark.parametrize(
    ("options", "write", "read"),
    [("", {}, {}), ("w=1&readConcernLevel=local&wtimeoutMS=2000", {"w": 1, "wtimeout": 2000}, {"level": "local"})],
    ids=["defaults", "lowered"],
)
def test_doctor_reports_the_concerns_in_force(mongodb_uri: str, server_db_name: str, options: str, write: dict, read: dict) -> None:
    """Issue 34: the client's write and read concerns (as the URI sets them), the server's defaults where it reports
    them (neither FerretDB nor mongo-java-server does), and the collections always written with a majority."""
    uri = with_database(mongodb_uri, server_db_name)
    uri = f"{uri}{'&' if '?' in uri else '?'}{options}" if options else uri
    code, out = run(None, "--uri", uri, "--json", "doctor")
    concerns = json.loads(out)["concerns"]
    assert {k: v for k, v in concerns.items() if k != "server_default"} == {
        "write": write, "read": read, "read_preference": "primary", "majority_written": ["activity_journal", "thread_runs"],
    }
    code, out = run(None, "--uri", uri, "doctor")
    assert "concern     majority     activity_journal, thread_runs (every write, whatever the client's)\n" in out
    assert f"concern     write        {'w: 1, wtimeout: 2000' if write else 'the server default'}" in out
