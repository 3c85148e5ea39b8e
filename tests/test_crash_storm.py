"""Crash storm: SIGKILL at 20 seeded random points per durability mode, each followed by a resume
in a new process. Real-server tier.

The graph (tests/workers/durable_worker.py) is three levels deep with six
secure effects. For each durability mode (``sync``, ``async``), 20 trials,
each on its own thread: a child process runs the graph and is SIGKILLed at its
kill point, the journal is read raw, then a *new* process resumes the thread
until it is done. Trials alternate ``invoke`` (sync nodes, pymongo
``MongoClient``) and ``ainvoke`` (async nodes, ``AsyncMongoClient``).

Kill points, from ``random.Random("7:<mode>")``: the first six trials die inside
each of the six effects in turn (after its side effect was logged, before it
returned: the effect is in flight); the other fourteen at a random point among
the run's database command starts and acknowledgements (counted by pymongo
command monitoring), drawn from the range an uncrashed run passes.

Every trial must end with the uncrashed run's final state and journal
positions; every effect completed before the kill executed exactly once; an
effect in flight at the kill at most twice, both times under the same
idempotency key. Real executions are counted from the effects' own log
(tests/workers), not from MongoDB.

A kill at one chosen point, then a restart: test_process_restarts.py. Several
processes on one thread or on many at once: test_concurrent_runs.py.
"""

from __future__ import annotations

import collections
import random
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from pymongo import MongoClient

from .workers.durable_worker import EFFECTS
from .workers.harness import Outcome, Workers, by_key, execution_problems, journal_entries, positions, statuses

SEED = 7
KILLS = 20
APIS = ("invoke", "ainvoke")
LEASE_SECONDS = 1.0  # a killed owner's claim may be taken over after this


@dataclass
class Trial:
    thread: str
    api: str
    kill: dict[str, Any]
    first: Outcome
    resume: Outcome
    at_kill: dict[str, str]
    resume_spec: dict[str, Any]
    problems: list[str] = field(default_factory=list)


@pytest.fixture
def workers(mongodb_uri: str, tmp_path: Any) -> Any:
    db = f"rel_storm_{uuid.uuid4().hex[:12]}"
    client = MongoClient(mongodb_uri)
    yield Workers(tmp_path, mongodb_uri, db, {"lease_seconds": LEASE_SECONDS, "wait_seconds": 60.0})
    client.drop_database(db)
    client.close()


def kill_plan(durability: str, points: dict[str, int]) -> list[tuple[str, dict[str, Any]]]:
    """``(api, kill)`` per trial: the six in-flight points first, then fourteen random command points."""
    rng = random.Random(f"{SEED}:{durability}")
    plan = []
    for i in range(KILLS):
        api = APIS[i % 2]
        if i < len(EFFECTS):
            plan.append((api, {"kill_on": f"effect:{EFFECTS[i]}"}))
        else:
            plan.append((api, {"kill_at": rng.randint(1, int(points[api] * 0.95))}))
    return plan


def run_trial(workers: Workers, db: Any, durability: str, i: int, api: str, kill: dict[str, Any]) -> Trial:
    thread = f"storm-{durability}-{i}"
    first = workers.run(workers.spec(thread, durability=durability, api=api, **kill))
    at_kill = statuses(journal_entries(db, thread))
    resume_spec = workers.spec(thread, durability=durability, api=api)
    return Trial(thread, api, kill, first, workers.run(resume_spec), at_kill, resume_spec)


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_crash_storm(workers: Workers, durability: str, record_property: Any) -> None:
    db = MongoClient(workers.uri)[workers.db]
    references = {}
    for api in APIS:
        spec = workers.spec(f"reference-{durability}-{api}", durability=durability, api=api)
        outcome = workers.run(spec)
        assert outcome.done, workers.failure(spec, outcome)
        references[api] = outcome.result
    assert references["invoke"]["values"] == references["ainvoke"]["values"]
    expected_values = references["invoke"]["values"]
    expected_positions = positions(journal_entries(db, f"reference-{durability}-invoke"))
    assert len(expected_positions) == len(EFFECTS)
    assert positions(journal_entries(db, f"reference-{durability}-ainvoke")) == expected_positions

    plan = kill_plan(durability, {api: r["points"] for api, r in references.items()})
    with ThreadPoolExecutor(max_workers=2) as pool:  # two trials at a time: the machine may have two cores
        trials = list(pool.map(lambda t: run_trial(workers, db, durability, t[0], *t[1]), enumerate(plan)))

    for t in trials:
        if not t.first.killed:
            t.problems.append(f"the first run was not killed (exit {t.first.exitcode}, {t.first.result})")
        if not t.resume.done:
            t.problems.append(workers.failure(t.resume_spec, t.resume))
            continue
        if t.resume.result["values"] != expected_values:
            t.problems.append(f"final state {t.resume.result['values']} != uncrashed {expected_values}")
        final = journal_entries(db, t.thread)
        if positions(final) != expected_positions:
            t.problems.append(f"journal positions {positions(final)} != uncrashed {expected_positions}")
        t.problems += execution_problems(workers.log(t.thread), final, t.at_kill, t.first.pid)

    numbers = summarize(workers, trials)
    record_property("crash_storm", numbers)
    print(f"\ncrash storm, durability={durability}: {numbers}")
    failed = {f"{t.thread} ({t.api}, {t.kill}, killed at {t.first.killed_at})": t.problems for t in trials if t.problems}
    assert not failed, f"{len(failed)} of {len(trials)} trials broke a guarantee: {failed}"


def summarize(workers: Workers, trials: list[Trial]) -> dict[str, Any]:
    where = collections.Counter((t.first.killed_at or "not killed").split(":")[0] for t in trials)
    runs = [by_key(workers.log(t.thread)) for t in trials]
    # In flight at the kill: first executed in the killed process, not completed then (claimed, or not yet
    # journaled at all: under the run lock an at-least-once effect's entry is written when it ends).
    in_flight = sum(
        1
        for t, r in zip(trials, runs)
        for key, executions in r.items()
        if executions[0].pid == t.first.pid and t.at_kill.get(key) != "completed"
    )
    completed = sum(list(t.at_kill.values()).count("completed") for t in trials)
    return {
        "kills": sum(t.first.killed for t in trials),
        "killed_in_effect": where["effect"],
        "killed_at_command_start": where["start"],
        "killed_at_command_ack": where["ack"],
        "resumes_in_new_process": sum(t.resume.done for t in trials),
        "effects_completed_before_kill": completed,
        "effects_in_flight_at_kill": in_flight,
        "executions": sum(len(e) for r in runs for e in r.values()),
        "re_executed_same_key": sum(len(e) == 2 for r in runs for e in r.values()),
        "max_executions_per_key": max((len(e) for r in runs for e in r.values()), default=0),
        "lost_effects": sum(len(EFFECTS) - len(r) for r in runs),
    }
