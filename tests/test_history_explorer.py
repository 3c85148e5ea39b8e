"""The history explorer (issue 32 item 5): Hypothesis draws a graph and a fault schedule, the history runs, and an
oracle that counts real executions judges it (tests/explorer/).

- Graphs: a chain of 1-3 stages among loops, parallel branches, compiled children nested up to 3 deep, a function
  node running such a child, a ``Send`` fan-out, ``interrupt()`` answered with ``Command(resume=...)`` (after an
  ``update_state`` with or without ``as_node``, or none; at the root or inside a compiled child), a ``RetryPolicy``
  retry, a ``ToolNode`` fed two tool calls by a ``SecureLLM``, effects inside LangGraph ``@task``s (in a node, in an
  ``@entrypoint``), and effects started together; effects are ``@effect`` (some ``at_most_once``), ``SecureTool`` and
  ``SecureLLM``; sync, async or async nodes calling sync effects, called from plain code, a coroutine or ``batch``,
  in both compile forms, under ``durability`` sync or async, records landing late or not.
- Operator actions between runs: ``copy_thread`` once the first run stopped, then both threads resumed
  (explorer/copies.py); delete and reuse; a fork, once done, at a checkpoint the thread moved past.
- Storage history: one history in eight starts from a golden database of formats 1-3, written by their own code
  and stopped mid-effect (SIGKILLed, a run lock held or not), mid-``Send``, in a child, or at an interrupt; today's
  code refuses it while a run is in flight, or upgrades it and resumes it to the end (explorer/storage_history.py).
- Faults, one per history: an exception in a node, a storage command that fails (never sent) or whose reply is lost
  (sent), at any request of the run; the resume in the same platform or in a new one (another process). SIGKILLs of a
  child process at any command: ``test_history_kills.py``.
- The oracle: tests/explorer/oracle.py, with LangGraph's ``@task`` over ``InMemorySaver`` running the same plan.

CI runs ``EXPLORE_HISTORIES`` (200) histories on mongomock, derandomized: the same histories on every run. A failing
history is shrunk by Hypothesis and printed with ``EXPLORE_REPLAY='Plan(...)'``, which
``test_the_replayed_history_keeps_every_guarantee`` runs alone; ``scripts/explore --histories N --seed S`` runs more.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import time
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed, settings

from .explorer import history, ledger, oracle
from .explorer.plans import Fault, Plan, Stage, plans

HISTORIES = int(os.environ.get("EXPLORE_HISTORIES", "200"))
SEED = os.environ.get("EXPLORE_SEED", "")
REPLAY = os.environ.get("EXPLORE_REPLAY", "")
#: Guarantees not judged (``scripts/explore --ignore``): to look past a break already known.
IGNORED = {name for name in os.environ.get("EXPLORE_IGNORE", "").split(",") if name}
#: What the histories of this module did, printed at its end (``-s`` shows it).
TALLY: collections.Counter[str] = collections.Counter()

#: One exception type per guarantee, so Hypothesis tells the breaks apart and shrinks each to its own history.
BROKEN = {name: type(f"Broken_{name}", (AssertionError,), {}) for name in oracle.GUARANTEES}


def judge(plan: Plan) -> None:
    """Run ``plan``'s history and raise ``BROKEN[guarantee]`` for the first guarantee it breaks."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # InputChangedWarning and the like: the oracle judges what they warn of
        ref = history.reference(plan)
        task = history.task_reference(plan)
        recorded = ledger.Ledger()
        outcome = history.run_history(plan, recorded, ref.requests)
    found = oracle.problems(plan, outcome, recorded.all(), ref.notes, ref.fork_notes, task)
    found = {name: lines for name, lines in found.items() if name not in IGNORED}
    dimensions = [*(["copied"] if plan.copy else []), *([f"from format {plan.golden[6]}"] if plan.golden else [])]
    TALLY.update(["histories", f"fault fired: {outcome.fault_fired.split(' ')[0] or 'none'}", *dimensions, *(f"broken: {n}" for n in found)])
    for name, lines in found.items():
        shown = "\n  ".join(lines[:6])
        raise BROKEN[name](f"{name} broken (fault fired: {outcome.fault_fired or 'none'}):\n  {shown}\nEXPLORE_REPLAY={plan!r}")


@pytest.fixture(scope="module", autouse=True)
def tally() -> Any:
    TALLY.clear()
    started = time.monotonic()
    yield
    if TALLY:
        print(f"\nexplorer: {dict(sorted(TALLY.items()))} in {time.monotonic() - started:.0f} s (shrinking included)")


EXPLORE = settings(
    max_examples=HISTORIES,
    deadline=None,
    derandomize=not SEED,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@EXPLORE
@given(plan=plans())
def test_every_history_keeps_every_guarantee(plan: Plan) -> None:
    judge(plan)


if SEED:
    test_every_history_keeps_every_guarantee = seed(int(SEED))(test_every_history_keeps_every_guarantee)


@pytest.mark.skipif(not REPLAY, reason="EXPLORE_REPLAY='Plan(...)' names a history to replay")
def test_the_replayed_history_keeps_every_guarantee() -> None:
    judge(eval(REPLAY, {"Plan": Plan, "Stage": Stage, "Fault": Fault}))  # noqa: S307 - the text this module printed


#: A history the explorer found (its timing dimension, issue 44): parallel branches, records written 30 ms late, a
#: sibling failing at once. The run stopped with two branches' records in flight, their writes unsaved; the resume
#: (in this platform, or in another once the run lock was released) read no entry, ran both charges again, and the
#: late records then lost to its own (``EffectRecordLostError``). A new run now waits for the records the runs
#: before left in flight here, and a run lock is released only after them.
RECORDS_IN_FLIGHT = Plan(
    (Stage("parallel", ("effect",), width=3),), mode="async", durability="sync",
    fault=Fault("raise", node="s0b1", visit=1, after=0), slow=0.03,
)


@pytest.mark.parametrize(
    "variant",
    [{}, {"mode": "sync"}, {"fault": Fault("raise", node="s0b1", visit=1, resume="new")}, {"form": "plain compile"},
     {"durability": "async"}],
    ids=["async", "sync", "another platform", "plain compile", "durability async"],
)
def test_a_resume_finds_the_records_its_stopped_run_left_in_flight(variant: dict[str, Any]) -> None:
    judge(dataclasses.replace(RECORDS_IN_FLIGHT, **variant))


def test_the_oracle_sees_a_later_visit_given_an_earlier_visit_s_outcome() -> None:
    """The oracle bites: a ledger where visit 2 got visit 1's value, and one where a slot ran twice without a fault."""
    plan = Plan((Stage("node", ("effect",), loops=2),))
    executed = [
        {"kind": "executed", "life": 1, "node": "s0", "item": None, "visit": v, "idx": 1, "token": f"a{v}", "key": f"k{v}"}
        for v in (1, 2)
    ]
    got = [{"kind": "got", "life": 1, "node": "s0", "item": None, "visit": 2, "idx": 1, "value": "s0.e1|v1|ta1"}]
    clean = history.Outcome([history.Life(values={"notes": []})])
    assert oracle.problems(plan, clean, executed, []) == {}
    assert list(oracle.problems(plan, clean, executed + got, [])) == ["own_value"]
    assert list(oracle.problems(plan, clean, executed + [executed[0]], [])) == ["runs_once"]


def test_the_oracle_sees_a_copy_run_under_its_source_s_key_and_a_copy_given_a_later_outcome() -> None:
    """A copy (life 101 of life 1, made after the ledger's first record) that runs a slot again under the source's
    key breaks ``one_key``; under its own key it breaks nothing; a value it got from an execution the source made
    after the copy breaks ``own_value``; the source's execution before the copy counts in its runs."""
    plan = Plan((Stage("node", ("effect",)),), copy=True)
    before = {"kind": "executed", "life": 1, "node": "s0", "item": None, "visit": 1, "idx": 1, "token": "a1", "key": "k1"}
    after = {**before, "token": "a2"}
    copied = history.Outcome([history.Life(values={"notes": []})] * 2, fault_fired="command x", copies={101: (1, 1)})
    assert oracle.problems(plan, copied, [before, {**before, "life": 101, "token": "b1", "key": "k2"}], []) == {}
    assert list(oracle.problems(plan, copied, [before, {**before, "life": 101, "token": "b1"}], [])) == ["one_key"]
    replayed = {"kind": "got", "life": 101, "node": "s0", "item": None, "visit": 1, "idx": 1, "value": "s0.e1|v1|ta1"}
    assert oracle.problems(plan, copied, [before, replayed], []) == {}
    late = {**replayed, "value": "s0.e1|v1|ta2"}
    assert list(oracle.problems(plan, copied, [before, after, late], [])) == ["own_value"]
    twice = [before, {**before, "life": 101, "token": "b1", "key": "k2"}, {**before, "life": 101, "token": "b2", "key": "k2"}]
    assert list(oracle.problems(plan, copied, twice, [])) == ["runs_once"]


def test_the_oracle_judges_what_an_upgrade_did() -> None:
    plan = Plan((Stage("node", ("effect",)),), golden="format2 platform.compile effect")
    upgraded = history.Outcome([history.Life(values={"notes": []})], upgrade=["a run in flight of format 2 was upgraded"])
    assert list(oracle.problems(plan, upgraded, [], [])) == ["upgrade"]
