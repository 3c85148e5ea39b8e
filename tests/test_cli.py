"""The inspector CLI on fixtures: golden tree output, JSON, exit codes."""

from __future__ import annotations

import io
import json
import re
from datetime import datetime, timedelta
from pathlib import Path

import mongomock
import pytest
from pymongo.errors import OperationFailure

from langgraph_durable_mongodb import demo
from langgraph_durable_mongodb.cli import EXIT_OK, EXIT_PROBLEM, EXIT_UNKNOWN_THREAD, EXIT_UNREACHABLE, EXIT_USAGE, EXIT_WARNING, main
from langgraph_durable_mongodb.platform import DurablePlatform
from tests.cli_helpers import mongod_command, run

GOLDEN = Path(__file__).parent / "golden"
T0 = datetime(2026, 1, 1, 12, 0, 0)


def journal_entry(path: str, node: str, key: str, kind: str, name: str, **extra: object) -> dict:
    return {
        "thread_id": "case-42", "path": path, "node": node, "occurrence": "1", "effect_key": key, "chunk": 0,
        "kind": kind, "name": name, "status": "completed", "attempts": 1,
        "started_at": T0 + timedelta(seconds=len(key)), "duration_ms": 12, **extra,
    }


@pytest.fixture
def client() -> mongomock.MongoClient:
    """The demo scenario run for real (crash, resume), plus one failed effect written by hand."""
    platform = DurablePlatform.embedded()
    config = {"configurable": {"thread_id": "case-42"}}
    with pytest.raises(demo.SimulatedCrash):
        platform.compile(demo.build_graph("raise")).invoke({"case": "claim 7731", "findings": []}, config)
    platform.compile(demo.build_graph("none")).invoke(None, config)
    platform.compile(demo.build_graph("none")).invoke({"case": "other", "findings": []}, {"configurable": {"thread_id": "other"}})
    client = platform.checkpointer.client
    journal = client.langgraph.activity_journal
    journal.update_many({}, {"$set": {"duration_ms": 12}})  # the one volatile figure in the tree
    journal.insert_one(
        journal_entry("agent/1", "notify", "1", "email", "send_email", status="failed", duration_ms=3,
                      error={"type": "TimeoutError", "message": "smtp timed out"})
    )
    return client


#: What differs from run to run in ``inspect``'s text: the process of a run, and when it ran.
VOLATILE = ((re.compile(r"pid \d+ on \S+"), "pid PID on HOST"), (re.compile(r"\d{4}-\d\d-\d\d[ T][\d:.+]+"), "TIME"))


def test_inspect_prints_the_operation_tree(client: mongomock.MongoClient) -> None:
    code, out = run(client, "inspect", "case-42")
    assert code == 0
    for volatile, placeholder in VOLATILE:
        out = volatile.sub(placeholder, out)
    golden = GOLDEN / "inspect_case-42.txt"
    assert out == golden.read_text()


def test_inspect_json(client: mongomock.MongoClient) -> None:
    code, out = run(client, "--json", "inspect", "case-42")
    report = json.loads(out)
    assert code == 0
    assert {n["namespace"] for n in report["namespaces"]} == {"(root)", "case_investigation", "case_investigation|policy_analysis"}
    [op] = [o for o in report["operations"] if o["path"].endswith("policy_analysis/1")]
    assert [e["name"] for e in op["nodes"][0]["effects"]] == ["CaseModel", "lookup_policy"]
    # replayed under the run lock (platform.compile): from the entries as read, without a visit, so uncounted,
    # and proven by the resumed run's checkpoint, as the web inspector proves it
    assert [(e["status"], e["attempts"], e["replayed"]) for e in op["nodes"][0]["effects"]] == [("completed", 1, True)] * 2
    assert "replays" not in op["nodes"][0]["effects"][0]  # no count: it would cost a write per replay


def test_threads_lists_each_thread_with_its_latest_step(client: mongomock.MongoClient) -> None:
    code, out = run(client, "threads", "--json")
    rows = {r["thread_id"]: r for r in json.loads(out)}
    assert code == 0 and set(rows) == {"case-42", "other"}
    assert rows["case-42"]["latest_step"] == 2
    assert rows["case-42"]["checkpoints"] == client.langgraph.checkpoints.count_documents({"thread_id": "case-42", "checkpoint_ns": ""})
    code, text = run(client, "threads")
    assert text.splitlines()[0].split() == ["THREAD", "STATE", "STEP", "CHECKPOINTS", "UPDATED", "DUE"]
    assert any(line.startswith("case-42") for line in text.splitlines())


def test_journal_json_gives_the_raw_documents(client: mongomock.MongoClient) -> None:
    code, out = run(client, "journal", "case-42", "--json")
    docs = json.loads(out)
    assert code == 0 and len(docs) == 3
    assert {d["name"] for d in docs} == {"CaseModel", "lookup_policy", "send_email"}
    assert {d["path"] for d in docs} == {"agent/1", "agent/1/case_investigation/1/policy_analysis/1"}
    assert all("_id" not in d for d in docs)


def test_unknown_thread_exits_3(client: mongomock.MongoClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(client, "inspect", "nope")[0] == EXIT_UNKNOWN_THREAD
    assert run(client, "journal", "nope", "--json")[0] == EXIT_UNKNOWN_THREAD
    assert "unknown thread 'nope'" in capsys.readouterr().err


def test_doctor_reports_and_fixes_missing_indexes(client: mongomock.MongoClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mongomock.database.Database, "command", mongod_command, raising=False)
    client.langgraph.checkpoint_blobs.drop_index("thread_ns_channel_version")
    code, out = run(client, "doctor")
    assert code == EXIT_PROBLEM
    assert "checkpoint_blobs.thread_ns_channel_version" in out and "MISSING" in out
    code, out = run(client, "--json", "doctor", "--fix")
    assert code == 0 and json.loads(out)["ok"] is True
    assert run(client, "doctor")[0] == 0


def _fake_mongo_java_server(self: object, command: object, *args: object, **kwargs: object) -> dict:
    """mongo-java-server's replies, as the launcher's server gives them: no `hello`."""
    name = command if isinstance(command, str) else next(iter(command))
    if name in ("hello", "getDefaultRWConcern"):
        raise OperationFailure(f"no such command: '{name}'", code=59)
    return {"buildInfo": {"version": "5.0.0"}, "serverStatus": {"process": "java"}, "isMaster": {"ismaster": True}}[name]


def test_doctor_falls_back_to_is_master_and_names_mongo_java_server(client: mongomock.MongoClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mongomock.database.Database, "command", _fake_mongo_java_server, raising=False)
    code, out = run(client, "--json", "doctor")
    report = json.loads(out)
    assert code == 0
    assert report["server"] == {
        "version": "5.0.0", "name": "mongo-java-server", "ferretdb": None, "mongo_java_server": True, "handshake": "isMaster"
    }
    assert report["features"] == {"replica_set": False, "transactions": False, "ttl_indexes": False, "atomic_updates": True}
    assert "server      mongo-java-server (MongoDB 5.0.0 wire protocol)" in run(client, "doctor")[1]


#: What doctor must say about each server the tier starts (MONGODB_URI: any MongoDB).
DOCTOR_SAYS = {
    "ferretdb": ("FerretDB v1.24.2 (MongoDB 7.0.42 wire protocol)", "hello", False),
    "mongo_java_server": ("mongo-java-server (MongoDB 5.0.0 wire protocol)", "isMaster", True),
}


def test_doctor_on_a_real_server(mongodb_uri: str, mongodb_server: str, server_db_name: str) -> None:
    code, out = run(None, "--uri", mongodb_uri, "--db", server_db_name, "--json", "doctor", "--fix")
    report = json.loads(out)
    warned = EXIT_WARNING if report["warnings"] else 0  # a warning is heard by a script checking the exit code
    assert code == warned and report["ok"]
    assert report["server"]["version"]
    code, out = run(None, "--uri", mongodb_uri, "--db", server_db_name, "doctor")
    assert code == warned and "connection  ok" in out and "MISSING" not in out
    if mongodb_server in DOCTOR_SAYS:
        kind, command, atomic = DOCTOR_SAYS[mongodb_server]
        assert f"server      {kind}\n" in out and report["server"]["handshake"] == command
        assert report["features"] == {"replica_set": False, "transactions": False, "ttl_indexes": False, "atomic_updates": atomic}
        assert ("run one worker per thread" in out) is not atomic and (warned == EXIT_WARNING) is not atomic


class _ClosedPipe(io.StringIO):
    """Standard output whose reader went away (``inspect t | head`` once ``head`` has its lines)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_closed_pipe_ends_the_command_quietly(client: mongomock.MongoClient, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["inspect", "case-42"], ["threads"], ["journal", "case-42"]):
        assert main(argv, client=client, out=_ClosedPipe()) == EXIT_OK, argv
    assert "Traceback" not in capsys.readouterr().err


def test_bad_uri_and_no_uri_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MONGODB_URI", raising=False)
    assert run(None, "threads")[0] == EXIT_USAGE
    assert run(None, "--uri", "http://nope", "threads")[0] == EXIT_USAGE
    err = capsys.readouterr().err
    assert "MONGODB_URI" in err and "bad MongoDB URI" in err
    # not a URI at all: pymongo would take it for a host name and time out (exit 4)
    assert run(None, "--uri", "notauri", "threads")[0] == EXIT_USAGE
    assert "bad MongoDB URI 'notauri': it must start with mongodb:// or mongodb+srv://" in capsys.readouterr().err


def test_unreachable_server_exits_4(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run(None, "--uri", "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=300", "threads")
    assert code == EXIT_UNREACHABLE
    assert "cannot reach MongoDB" in capsys.readouterr().err
