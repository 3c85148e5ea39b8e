"""A process SIGKILLed at a chosen point, then restarted: a new process resumes the thread. Real-server tier.

| scenario | expected |
|---|---|
| the process is SIGKILLed inside an effect (durability ``sync`` / ``async``), then restarted in a fresh interpreter | completed effects replayed; the in-flight one runs again once, with the same idempotency key |
| ``durability="async"`` with slow checkpoint saves: the process dies inside the first effect, a new one resumes | no effect ran before the checkpoint its task came from was saved: the resume ends as an uncrashed run |

The graph and its six effects are in tests/workers/durable_worker.py; each
effect appends ``<name> <idempotency key> <pid> <t0> <t1>`` to a log file and
fsyncs it, so the tests count real executions outside MongoDB. Kills at random
points: test_crash_storm.py; several processes at once: test_concurrent_runs.py.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from pymongo import MongoClient

from .workers.harness import Workers, execution_problems, journal_entries, positions, reference_run, statuses, workers_on

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
    # Under the run lock an at-least-once effect's entry is written once, when it ends: the in-flight one has none.
    assert at_kill == {"triage": "completed", "lookup_policy": "completed"}

    spec = workers.spec(thread, durability=durability)
    restarted = workers.run(spec, how=SPAWN)
    assert restarted.done, workers.failure(spec, restarted)
    assert restarted.pid != first.pid
    assert restarted.result["values"] == expected_values
    final = journal_entries(db, thread)
    assert positions(final) == expected_positions

    executions = workers.log(thread)
    runs = {name: [e for e in executions if e.name == name] for name in ("triage", "lookup_policy", "lookup_claim")}
    assert [e.pid for e in runs["triage"]] == [first.pid]  # completed: never again
    assert [e.pid for e in runs["lookup_policy"]] == [first.pid]  # completed: replayed when `gather` re-ran
    assert [e.pid for e in runs["lookup_claim"]] == [first.pid, restarted.pid]  # in flight: once more,
    assert runs["lookup_claim"][0].key == runs["lookup_claim"][1].key  # with the same idempotency key
    assert Counter(e.name for e in executions if e.pid == restarted.pid) == Counter(
        {"lookup_claim": 1, "review": 1, "risk_score": 1, "issue_payment": 1}
    )
    entry = {e["name"]: e for e in final}
    assert entry["lookup_policy"]["attempts"] == 1
    # The execution the kill cut short left no entry: the journal counts the one that recorded.
    assert (entry["lookup_claim"]["attempts"], entry["lookup_claim"]["status"]) == (1, "completed")
    assert execution_problems(executions, final, at_kill_by_key, first.pid) == []


def test_async_durability_never_runs_an_effect_before_its_checkpoint_is_saved(workers: Workers) -> None:
    """Deterministic: checkpoint saves are held 0.5 s (a slow server), the process dies inside the first effect."""
    db = MongoClient(workers.uri)[workers.db]
    thread = "slow-saves"
    first = workers.run(workers.spec(thread, durability="async", kill_on="effect:triage", slow_saves=0.5))
    assert first.killed
    at_kill = statuses(journal_entries(db, thread))
    resume = workers.run(workers.spec(thread, durability="async"))
    assert resume.done
    reference = workers.run(workers.spec("reference", durability="sync"))
    assert resume.result["values"] == reference.result["values"]
    final = journal_entries(db, thread)
    assert execution_problems(workers.log(thread), final, at_kill, first.pid) == []
    assert positions(final) == positions(journal_entries(db, "reference"))
