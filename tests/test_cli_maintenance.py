"""``delete``, ``prune`` and ``sweep``: they delete what they say, only that, and only once asked (or ``--yes``)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from langgraph_durable_mongodb import MongoDBCheckpointer
from langgraph_durable_mongodb.storage.plans.lease import utcnow
from langgraph_durable_mongodb.cli import EXIT_PROBLEM, EXIT_UNKNOWN_THREAD, EXIT_USAGE
from langgraph_durable_mongodb.errors import DeltaChainError
from langgraph_durable_mongodb.journal import ActivityJournal, EffectCall, EffectPosition
from langgraph_durable_mongodb.storage.schema import CollectionNames
from tests.cli_helpers import Terminal, run, write_thread
from tests.clients import on_servers

SYNC_KINDS = ["mongomock", *on_servers("pymongo")]
PER_THREAD = CollectionNames().per_thread


def counts(client: Any, db_name: str, thread_id: str) -> dict[str, int]:
    """The thread's raw documents per collection."""
    return {c: client[db_name][c].count_documents({"thread_id": thread_id}) for c in PER_THREAD}


@pytest.fixture
def threads(mongo_client: Any, db_name: str) -> MongoDBCheckpointer:
    """Threads ``a`` and ``b``: five checkpoints and one journal entry each."""
    saver = MongoDBCheckpointer(mongo_client, db_name=db_name)
    journal = ActivityJournal.for_checkpointer(saver)
    for thread_id in ("a", "b"):
        write_thread(saver, thread_id, 5)
        journal.run(EffectCall("tool", "search"), lambda: "found", position=EffectPosition(thread_id, "agent/1", "n", "1", "1"))
    return saver


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_delete_asks_first_and_deletes_only_its_thread(
    mongo_client: Any, db_name: str, threads: MongoDBCheckpointer, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = counts(mongo_client, db_name, "a"), counts(mongo_client, db_name, "b")
    assert a["checkpoints"] == 5 + 1 and a["activity_journal"] == 1  # its checkpoints and its summary
    # no terminal to ask and no --yes: refused, nothing deleted
    assert run(mongo_client, "--db", db_name, "delete", "a")[0] == EXIT_USAGE
    assert "pass --yes" in capsys.readouterr().err
    # a person says no
    assert run(mongo_client, "--db", db_name, "delete", "a", stdin=Terminal("n\n")) == (0, "nothing deleted\n")
    assert "Delete thread 'a' from database" in capsys.readouterr().err
    assert counts(mongo_client, db_name, "a") == a
    # a person says yes
    assert run(mongo_client, "--db", db_name, "delete", "a", stdin=Terminal("y\n")) == (0, "deleted a\n")
    assert counts(mongo_client, db_name, "a") == dict.fromkeys(PER_THREAD, 0)
    assert counts(mongo_client, db_name, "b") == b
    assert run(mongo_client, "--db", db_name, "delete", "a", "--yes")[0] == EXIT_UNKNOWN_THREAD
    code, out = run(mongo_client, "--db", db_name, "--json", "delete", "b", "--yes")
    assert (code, json.loads(out)) == (0, {"deleted": ["b"]})
    assert counts(mongo_client, db_name, "b") == dict.fromkeys(PER_THREAD, 0)


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_prune_keeps_the_latest_checkpoint_of_its_threads_only(
    mongo_client: Any, db_name: str, threads: MongoDBCheckpointer, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = counts(mongo_client, db_name, "a"), counts(mongo_client, db_name, "b")
    assert run(mongo_client, "--db", db_name, "prune", "a")[0] == EXIT_USAGE
    assert "pass --yes" in capsys.readouterr().err and counts(mongo_client, db_name, "a") == a
    assert run(mongo_client, "--db", db_name, "prune", "a", stdin=Terminal("\n")) == (0, "nothing pruned\n")
    assert counts(mongo_client, db_name, "a") == a
    code, out = run(mongo_client, "--db", db_name, "--json", "prune", "a", "--yes")
    assert (code, json.loads(out)) == (0, {"pruned": ["a"], "checkpoints": {"a": {"before": 5, "after": 1}}})
    latest = threads.get_tuple({"configurable": {"thread_id": "a", "checkpoint_ns": ""}})
    assert latest.metadata["step"] == 4 and counts(mongo_client, db_name, "a")["activity_journal"] == 1
    assert counts(mongo_client, db_name, "b") == b
    assert run(mongo_client, "--db", db_name, "prune", "b", stdin=Terminal("yes\n")) == (0, "pruned b: 5 -> 1 checkpoints\n")


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_sweep_deletes_the_expired_threads_only_once_asked(
    mongo_client: Any, db_name: str, threads: MongoDBCheckpointer, capsys: pytest.CaptureFixture[str]
) -> None:
    # a's TTL passed an hour ago, as on a server whose TTL monitor does not delete (no TTL index here: mongomock's
    # would delete it on read)
    past = {"$set": {"expire_at": utcnow() - timedelta(hours=1)}}
    for coll in PER_THREAD:
        mongo_client[db_name][coll].update_many({"thread_id": "a"}, past)
    a, b = counts(mongo_client, db_name, "a"), counts(mongo_client, db_name, "b")
    assert run(mongo_client, "--db", db_name, "sweep")[0] == EXIT_USAGE
    assert "pass --yes" in capsys.readouterr().err and counts(mongo_client, db_name, "a") == a
    assert run(mongo_client, "--db", db_name, "sweep", stdin=Terminal("no\n")) == (0, "nothing deleted\n")
    assert counts(mongo_client, db_name, "a") == a
    assert run(mongo_client, "--db", db_name, "sweep", "--yes") == (0, "deleted a\n")
    assert counts(mongo_client, db_name, "a") == dict.fromkeys(PER_THREAD, 0)
    assert counts(mongo_client, db_name, "b") == b


@pytest.mark.parametrize("client_kind", ["mongomock"], indirect=True)
def test_a_refusal_by_the_library_exits_1_with_its_reason(
    mongo_client: Any, db_name: str, threads: MongoDBCheckpointer, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def refuse(self: MongoDBCheckpointer, thread_ids: Any, *, strategy: str) -> None:
        raise DeltaChainError("a later checkpoint still replays these writes: prune the later ones too")

    monkeypatch.setattr(MongoDBCheckpointer, "prune", refuse)
    assert run(mongo_client, "--db", db_name, "prune", "a", "--yes")[0] == EXIT_PROBLEM
    assert capsys.readouterr().err == "error: a later checkpoint still replays these writes: prune the later ones too\n"
