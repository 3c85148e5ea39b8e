"""``journal`` (outcome bytes only on request) and ``resolve`` / ``discard`` of a position from the shell."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import DurablePlatform
from langgraph_durable_mongodb.cli import EXIT_UNKNOWN_THREAD, EXIT_USAGE
from langgraph_durable_mongodb.errors import EffectOutcomeUnknownError
from langgraph_durable_mongodb.journal import ActivityJournal, EffectCall, EffectPosition, effect
from tests.cli_helpers import run
from tests.clients import on_servers
from tests.graphs import Notes
from tests.journal_helpers import Counter

SYNC_KINDS = ["mongomock", *on_servers("pymongo")]
CHARGE = EffectCall("payment", "charge", input={"amount": 42}, at_most_once=True)
POS = EffectPosition("case-7", "agent/1", "pay", "1", "1")


class Interrupted(BaseException):
    """Like a crash: the effect stops with its outcome unknown."""


def interrupted() -> None:
    raise Interrupted


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_journal_leaves_outcome_bytes_out_unless_asked(mongo_client: Any, db_name: str) -> None:
    journal = ActivityJournal(mongo_client, db_name=db_name, chunk_bytes=512 * 1024)  # 2 MB: a head and chunks
    big = "x" * 2_000_000
    assert journal.run(EffectCall("tool", "fetch"), lambda: big, position=POS) == big
    stored = mongo_client[db_name].activity_journal.count_documents({"thread_id": "case-7"})
    assert stored > 1

    code, out = run(mongo_client, "--db", db_name, "journal", "case-7", "--json")
    assert code == 0 and len(out) < 5_000
    [doc] = json.loads(out)
    assert doc["status"] == "completed" and "data" not in doc["outcome"] and doc["outcome"]["preview"].startswith("xxx")

    code, out = run(mongo_client, "--db", db_name, "journal", "case-7", "--json", "--with-outcomes")
    docs = json.loads(out)
    assert code == 0 and len(docs) == stored
    data = [d["outcome"]["data"] for d in docs if "outcome" in d] + [d["data"] for d in docs if "data" in d]
    assert sum(len(d["$binary"]["base64"]) for d in data) > 2_000_000


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_resolve_and_discard_settle_an_unknown_outcome_from_the_shell(mongo_client: Any, db_name: str) -> None:
    journal = ActivityJournal(mongo_client, db_name=db_name)
    with pytest.raises(Interrupted):
        journal.run(CHARGE, interrupted, position=POS)  # the claim is in flight when the worker dies
    charges = Counter()
    with pytest.raises(EffectOutcomeUnknownError) as caught:
        journal.run(CHARGE, charges, position=POS)
    printed = str(caught.value.position)

    code, out = run(mongo_client, "--db", db_name, "resolve", printed, '{"id": "ch_1"}')
    assert code == 0 and out == f"completed payment 'charge' at {printed} (was started)\n"
    assert journal.run(CHARGE, charges, position=POS) == {"id": "ch_1"}
    assert charges.n == 0
    [doc] = mongo_client[db_name].activity_journal.find({"thread_id": "case-7"})
    assert (doc["status"], doc["resolved_by"]) == ("completed", "operator")

    code, out = run(mongo_client, "--db", db_name, "--json", "discard", str(caught.value))  # the whole message will do
    assert code == 0
    assert json.loads(out) == {
        "position": {"thread_id": "case-7", "path": "agent/1", "node": "pay", "occurrence": "1", "effect_key": "1"},
        "kind": "payment", "name": "charge", "was": "completed", "now": "discarded",
    }
    assert journal.run(CHARGE, lambda: charges("again"), position=POS) == "again"
    assert charges.n == 1


def test_resolve_refuses_what_it_cannot_read_before_any_query(capsys: pytest.CaptureFixture[str]) -> None:
    unreachable = ("--uri", "mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=300")  # a query would exit 4
    assert run(None, *unreachable, "resolve", "case-7 agent/1 pay", '"x"')[0] == EXIT_USAGE
    assert "cannot read a journal position" in capsys.readouterr().err
    assert run(None, *unreachable, "resolve", str(POS), "charged")[0] == EXIT_USAGE
    assert "the outcome must be JSON" in capsys.readouterr().err
    assert run(None, *unreachable, "discard", "thread 'case-7'")[0] == EXIT_USAGE


@pytest.mark.parametrize("client_kind", ["mongomock"], indirect=True)
def test_settling_a_position_without_an_entry_exits_3(mongo_client: Any, db_name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(mongo_client, "--db", db_name, "discard", str(POS))[0] == EXIT_UNKNOWN_THREAD
    assert run(mongo_client, "--db", db_name, "resolve", str(POS), '"x"')[0] == EXIT_UNKNOWN_THREAD
    assert f"no journal entry at {POS}" in capsys.readouterr().err
    assert mongo_client[db_name].activity_journal.count_documents({}) == 0


@pytest.mark.parametrize("written", ["as the error printed it", "as inspect labels it"])
@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_resolve_settles_a_platform_run_s_payment_at_its_key_or_its_labels(mongo_client: Any, db_name: str, written: str) -> None:
    """A platform run's positions are keyed by its visits (the error prints the key); ``inspect`` shows labels.
    ``resolve`` takes either, and settles the entry stored at the key."""
    charges, crash = Counter(), [True]

    @effect(kind="payment", name="charge", at_most_once=True)
    def charge(amount: int) -> Any:
        if crash:
            crash.clear()
            raise Interrupted  # the worker died mid-payment
        charges()
        return "charged"

    builder = StateGraph(Notes)
    builder.add_node("pay", lambda s: {"notes": [charge(42)]})
    builder.add_edge(START, "pay")
    graph = DurablePlatform(mongo_client, db_name=db_name).compile(builder)
    config = {"configurable": {"thread_id": "case-8"}}
    with pytest.raises(Interrupted):
        graph.invoke({"notes": []}, config)
    with pytest.raises(EffectOutcomeUnknownError) as caught:
        graph.invoke(None, config)
    stored = caught.value.position
    assert stored.occurrence != "1"  # keyed by the root checkpoint its visit was prepared from
    position = str(stored) if written.startswith("as the error") else "thread 'case-8' path 'agent/1' node 'pay'#1 effect '1'"

    code, out = run(mongo_client, "--db", db_name, "--json", "resolve", position, '{"id": "ch_8"}')
    assert code == 0 and json.loads(out)["position"]["occurrence"] == stored.occurrence
    assert graph.invoke(None, config)["notes"] == [{"id": "ch_8"}]
    assert charges.n == 0


@pytest.mark.parametrize("client_kind", SYNC_KINDS, indirect=True)
def test_an_unknown_outcome_prints_the_shell_lines_that_settle_it(mongo_client: Any, db_name: str) -> None:
    """The error names the CLI's resolve and discard with the position quoted for a shell: pasted, they work."""
    journal = ActivityJournal(mongo_client, db_name=db_name)
    odd = EffectPosition("case 'x' $HOME", "agent/1", "pay", "1", "1")  # quotes and a $ a shell would expand
    with pytest.raises(Interrupted):
        journal.run(CHARGE, interrupted, position=odd)
    with pytest.raises(EffectOutcomeUnknownError) as caught:
        journal.run(CHARGE, Counter(), position=odd)
    line = str(caught.value).split("langgraph-durable-mongodb resolve ", 1)[1].split(", or langgraph-durable-mongodb", 1)[0]
    position, outcome = shlex.split(line)
    assert outcome == "<what it returned, as JSON>"
    code, out = run(mongo_client, "--db", db_name, "resolve", position, '"charged"')
    assert code == 0 and journal.run(CHARGE, Counter(), position=odd) == "charged"
