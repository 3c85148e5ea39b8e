"""Issue 32's breaks and explorer histories across real processes, on mongo-java-server (atomic per document, as
MongoDB is): a child process runs the history (tests/workers/history_worker.py) and dies (SIGKILL) or fails, and a
NEW child process resumes it. Real executions and the values nodes got back are read from the ledger file both
children append to; the oracle is tests/explorer/oracle.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from pymongo import MongoClient

from .explorer import history, ledger, oracle
from .explorer.plans import Fault, Plan, Stage, plans

ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass
class Child:
    """Runs history_worker lives on one database of the server, each in a fresh interpreter."""

    uri: str
    tmp: Path
    db: str = dataclasses.field(default_factory=lambda: f"kills_{uuid.uuid4().hex[:12]}")

    def run(self, plan: Plan, name: str, **options: Any) -> dict[str, Any] | None:
        """One life of ``plan``'s thread in a new process; its result, or None when it was killed."""
        result = self.tmp / f"{name}.{uuid.uuid4().hex[:6]}.json"
        spec = {"uri": self.uri, "db": self.db, "plan": repr(plan), "ledger": str(self.ledger(name)), "result": str(result), **options}
        with open(self.tmp / f"{name}.err", "a") as err:
            code = subprocess.run([sys.executable, "-m", "tests.workers.history_worker", json.dumps(spec)], cwd=ROOT, stderr=err, timeout=120).returncode
        if code == -9:
            return None
        assert code == 0 and result.exists(), f"the worker of {name} exited {code}: {(self.tmp / f'{name}.err').read_text()[-3000:]}"
        return json.loads(result.read_text())

    def ledger(self, name: str) -> Path:
        return self.tmp / f"{name}.ledger.jsonl"

    def judge(self, plan: Plan, name: str, last: dict[str, Any], fired: str) -> dict[str, list[str]]:
        """The oracle on the ledger both processes wrote, against the fault-free run of ``plan`` (in this process)."""
        notes = history.reference(dataclasses.replace(plan, fault=Fault())).notes
        life = history.Life(values=last["values"] if last["status"] == "done" else None, errors=last["errors"])
        life.unknown = [UnknownKey(key) for key in last["unknown"]]
        with MongoClient(self.uri) as client:
            stored = history.journal_labels(client, self.db)
        outcome = history.Outcome([life], fault_fired=fired, labels={1: stored})  # every child writes life 1 of the ledger
        records = ledger.Ledger(self.ledger(name)).all()
        return oracle.problems(plan, outcome, records, notes)


class UnknownKey(Exception):
    """An ``EffectOutcomeUnknownError`` a child reported, by its idempotency key."""

    def __init__(self, key: str) -> None:
        super().__init__(f"unknown outcome under {key}")
        self.idempotency_key = key


@pytest.fixture
def child(mongo_java_server_uri: str, tmp_path: Path) -> Any:
    made = Child(mongo_java_server_uri, tmp_path)
    yield made
    with MongoClient(mongo_java_server_uri) as client:
        client.drop_database(made.db)


def resumed(plan: Plan) -> Plan:
    """The plan a resuming process runs: the same graph, its fault spent."""
    return dataclasses.replace(plan, fault=Fault())


@pytest.mark.parametrize("form", ["platform.compile", "plain compile"])
def test_a_parallel_sibling_failed_and_a_new_process_resumes_every_later_visit_runs_anew(child: Child, form: str) -> None:
    """Sync nodes: under async ones LangGraph cancels the sibling when one fails, so nothing of it is saved (the
    in-process form of this break, test_history_breaks.py, runs both)."""
    plan = Plan((Stage("parallel", ("once",), loops=2),), form=form, fault=Fault("raise", node="s0b1", visit=1))
    first = child.run(plan, "parallel", stop_on_error=True)
    assert first["status"] == "error" and first["errors"][0].startswith("Boom")
    last = child.run(resumed(plan), "parallel")
    assert child.judge(plan, "parallel", last, "raise") == {}


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_loop_killed_before_its_step_2_checkpoint_charges_its_third_visit_anew(child: Child, mode: str) -> None:
    """``x`` loops; the process dies (SIGKILL) as it sends the store of the step-2 root checkpoint, after step 1 was
    saved; a new process resumes: the third visit must run its charge for real."""
    plan = Plan((Stage("node", ("once",), loops=3),), mode=mode, durability="sync")
    assert child.run(plan, "loop", root_step=2) is None
    last = child.run(plan, "loop")
    assert last["status"] == "done", last
    thirds = [r for r in ledger.Ledger(child.ledger("loop")).of("executed") if r["visit"] == 3]
    assert len(thirds) == 1
    assert child.judge(plan, "loop", last, "kill") == {}


#: Each trial holds the journal's record of the charge that long, then the process dies right after the charge
#: returned to its node: with the record still trailing (0 s: as it comes), the resume met an unknown outcome.
RECORD_DELAYS = (0.0, 0.1, 0.3)


@pytest.mark.parametrize("form", ["platform.compile", "plain compile"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_at_most_once_charge_that_returned_is_never_an_unknown_outcome_after_a_sigkill(child: Child, mode: str, form: str) -> None:
    def trial(i: int) -> tuple[float, dict[str, list[str]], dict[str, Any]]:
        delay, name = RECORD_DELAYS[i], f"pay{i}"
        plan = Plan((Stage("node", ("once",)),), mode=mode, form=form, fault=Fault("node_kill", node="s0", visit=1, after=1))
        thread_child = dataclasses.replace(child, db=f"{child.db}_{i}")
        assert thread_child.run(plan, name, record_delay=delay) is None  # killed in the node, the charge returned
        last = thread_child.run(resumed(plan), name)
        return delay, thread_child.judge(plan, name, last, "kill"), last

    with ThreadPoolExecutor(2) as pool:  # two trials at a time: the machine may have two cores
        trials = list(pool.map(trial, range(len(RECORD_DELAYS))))
    with MongoClient(child.uri) as client:
        for i in range(len(RECORD_DELAYS)):
            client.drop_database(f"{child.db}_{i}")
    failed = {delay: (found, last["status"]) for delay, found, last in trials if found}
    assert failed == {}, f"{len(failed)} of {len(trials)} trials broke a guarantee: {failed}"


# -- explorer histories SIGKILLed at a command --------------------------------------------------------------------

KILL_HISTORIES = int(os.environ.get("EXPLORE_KILLS", "4"))  # scripts/explore --kills K


@settings(
    max_examples=KILL_HISTORIES, deadline=None, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
@given(plan=plans(fault_kinds=("kill",), hostile=False))  # the result a child reports holds notes only
def test_histories_killed_at_any_command_keep_every_guarantee(mongo_java_server_uri: str, tmp_path_factory: Any, plan: Plan) -> None:
    """A child runs the history and is SIGKILLed at the storage request its fault picks among the fault-free run's;
    a new child resumes it (SIGKILLed histories are not shrunk: each costs two interpreters). A fork is not made
    here: each child runs one life of the thread (forks are explored in this process, test_history_explorer.py)."""
    plan = dataclasses.replace(plan, fork="")
    made = Child(mongo_java_server_uri, tmp_path_factory.mktemp("kill"))
    try:
        requests = history.reference(resumed(plan)).requests
        # past the setup (its kills are among the in-process histories' faults): the run's own commands
        label, n = history.target(plan.fault, [r for r in requests if not r.startswith("create_indexes") and "metadata" not in r])
        first = made.run(plan, "history", kill=[label, n])
        fired = "kill" if first is None else ""
        print(f"history killed at the {n}th {label}: {bool(fired)}; {plan!r}")  # shown with -s
        last = first if first is not None and first["status"] != "error" else made.run(resumed(plan), "history")
        found = made.judge(plan, "history", last, fired)
    finally:
        with MongoClient(mongo_java_server_uri) as client:
            client.drop_database(made.db)
    assert found == {}, f"killed at the {n}th {label}: {found}\nEXPLORE_REPLAY={plan!r}"
