"""Replay-matrix rows that need processes (issue 5). Real-server tier; every process is a fresh interpreter.

| scenario | expected |
|---|---|
| the process is SIGKILLed mid-run (durability ``sync`` / ``async``), then restarted in a new process | completed effects replayed; the in-flight one runs again once, with the same idempotency key |
| two processes resume the same thread at the same time | no position runs concurrently twice |

The graph and its six effects are in tests/workers/durable_worker.py; each
effect appends ``<name> <idempotency key> <pid> <t0> <t1>`` to a log file and
fsyncs it, so the tests count real executions outside MongoDB.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from pymongo import MongoClient

from .workers.harness import (
    concurrent_resume_problems,
    execution_problems,
    journal_entries,
    judge,
    positions,
    reference_run,
    statuses,
    workers_on,
)

SPAWN = "spawn"  # a fresh `python tests/workers/durable_worker.py` per process


@pytest.fixture
def workers(mongodb_uri: str, tmp_path: Any) -> Any:
    with workers_on(mongodb_uri, tmp_path, lease_seconds=1.0, wait_seconds=60.0) as w:
        yield w


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_sigkill_in_an_effect_then_restart_in_a_new_process(workers: Any, durability: str) -> None:
    expected_values, expected_positions = reference_run(durability=durability)
    db = MongoClient(workers.uri)[workers.db]
    thread = f"killed-{durability}"

    # lookup_claim is the second effect of `gather` (in the child graph): the process dies after its
    # side effect, before it returns. triage (an earlier node) and lookup_policy (same node) completed.
    first = workers.run(workers.spec(thread, durability=durability, kill_on="effect:lookup_claim"), how=SPAWN)
    assert first.killed and first.killed_at == "effect:lookup_claim", first
    at_kill = {e["name"]: e["status"] for e in journal_entries(db, thread)}
    at_kill_by_key = statuses(journal_entries(db, thread))
    assert at_kill == {"triage": "completed", "lookup_policy": "completed", "lookup_claim": "started"}

    spec = workers.spec(thread, durability=durability)
    restarted = workers.run(spec, how=SPAWN)
    assert restarted.done, workers.failure(spec, restarted)
    assert restarted.pid != first.pid
    assert restarted.result["values"] == expected_values
    final = journal_entries(db, thread)
    assert positions(final) == expected_positions

    executions = workers.log(thread)
    runs = {name: [e for e in executions if e.name == name] for name in at_kill}
    assert [e.pid for e in runs["triage"]] == [first.pid]  # completed: never again
    assert [e.pid for e in runs["lookup_policy"]] == [first.pid]  # completed: replayed when `gather` re-ran
    assert [e.pid for e in runs["lookup_claim"]] == [first.pid, restarted.pid]  # in flight: once more,
    assert runs["lookup_claim"][0].key == runs["lookup_claim"][1].key  # with the same idempotency key
    assert Counter(e.name for e in executions if e.pid == restarted.pid) == Counter(
        {"lookup_claim": 1, "review": 1, "risk_score": 1, "issue_payment": 1}
    )
    entry = {e["name"]: e for e in final}
    assert entry["lookup_policy"].get("replays") == 1 and entry["lookup_policy"]["attempts"] == 1
    assert entry["lookup_claim"]["attempts"] == 2 and entry["lookup_claim"]["status"] == "completed"
    assert "replays" not in entry["triage"]  # its node did not run again: its checkpoint carried it
    assert execution_problems(executions, final, at_kill_by_key, first.pid) == []


def test_two_processes_resume_the_same_thread_at_once(workers: Any) -> None:
    expected_values, _ = reference_run()
    db = MongoClient(workers.uri)[workers.db]
    thread = "shared"
    first = workers.run(workers.spec(thread, kill_on="effect:lookup_claim"), how=SPAWN)
    assert first.killed
    at_crash = statuses(journal_entries(db, thread))

    # Both wait for one start time, then resume; effects take 0.3 s so overlaps would show.
    specs = [workers.spec(thread, lease_seconds=20.0, effect_seconds=0.3) for _ in range(2)]
    resumed = workers.run_at_once(specs, how=SPAWN)
    judge(workers.uri, concurrent_resume_problems(workers, db, thread, at_crash, specs, resumed, expected_values))
    names = Counter(e.name for e in workers.log(thread))
    # Work pending at the resumed checkpoint ran once: the in-flight effect once more, under its key.
    assert [names[n] for n in ("triage", "lookup_policy", "lookup_claim", "review", "risk_score")] == [1, 1, 2, 1, 1]
    # The root step after it ran once per branch: each process that saved its own checkpoint first forks the
    # thread, and a fork's tasks are new positions (see docs/reliability.md).
    decide_positions = {e["occurrence"] for e in journal_entries(db, thread) if e["name"] == "issue_payment"}
    assert names["issue_payment"] == len(decide_positions) in (1, 2)
