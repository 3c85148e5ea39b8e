"""Start ``durable_worker`` runs in child processes and read what they left behind.

Two ways to get a new process:

- ``spawn``: ``python tests/workers/durable_worker.py <spec>``, a fresh
  interpreter (about 2 s on a small machine, most of it importing LangGraph);
- ``fork``: a child of a fork server (``multiprocessing``'s ``forkserver``)
  that imported LangGraph and the worker once, before any client or thread
  existed. Each run is still a new process with its own pid, its own clients
  and nothing of any earlier run's memory; it just starts in milliseconds,
  which is what makes dozens of kill-and-resume cycles affordable.
"""

from __future__ import annotations

import contextlib
import functools
import json
import multiprocessing
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_durable_mongodb.journal.labels import labelled
from langgraph_durable_mongodb.storage.visit_keys import KEY, levels

from . import durable_worker

WORKER = Path(durable_worker.__file__)
KILLED = -9  # exit code of a process killed by SIGKILL (multiprocessing and subprocess alike)
#: What multiprocessing's fork server reports when it lost a child's status under load (CPython issue
#: #140867: Popen.poll() reads EOF and returns 255). The worker itself never exits with it.
LOST_STATUS = 255

_context: Any = None


def fork_context() -> Any:
    """The fork server's context; it preloads the worker (and so LangGraph and pymongo) once."""
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(["tests.workers.durable_worker"])
    return _context


def _entry(spec: dict[str, Any]) -> None:
    sys.exit(durable_worker.main(spec))


@dataclass
class Outcome:
    """What one worker process did: its exit code, its result file, the point it was killed at."""

    exitcode: int | None
    result: dict[str, Any] | None
    killed_at: str | None
    pid: int | None = None

    @property
    def killed(self) -> bool:
        # The kill switch writes its marker just before the SIGKILL: evidence when the status was lost.
        return self.exitcode == KILLED or (self.exitcode == LOST_STATUS and self.killed_at is not None)

    @property
    def done(self) -> bool:
        status_ok = self.exitcode == 0 or self.exitcode == LOST_STATUS
        return status_ok and self.result is not None and self.result["status"] == "done"

    @property
    def left_no_trace(self) -> bool:
        """The fork server lost the child's status, and the child left no result and no kill marker."""
        return self.exitcode == LOST_STATUS and self.result is None and self.killed_at is None


@dataclass(frozen=True)
class Execution:
    """One real execution of an effect, as the effect logged it."""

    name: str
    key: str
    pid: int
    t0: int
    t1: int


def read_log(path: Path) -> list[Execution]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        name, key, pid, t0, t1 = line.split()
        out.append(Execution(name, key, int(pid), int(t0), int(t1)))
    return out


def by_key(executions: list[Execution]) -> dict[str, list[Execution]]:
    grouped: dict[str, list[Execution]] = defaultdict(list)
    for e in executions:
        grouped[e.key].append(e)
    return dict(grouped)


def overlapping(executions: list[Execution]) -> list[tuple[Execution, Execution]]:
    """Pairs of executions of one idempotency key that ran at the same time (in different processes)."""
    pairs = []
    for runs in by_key(executions).values():
        runs = sorted(runs, key=lambda e: e.t0)
        pairs += [(a, b) for a, b in zip(runs, runs[1:]) if b.t0 < a.t1]
    return pairs


@dataclass
class Workers:
    """Makes specs for one database and runs them; every run gets its own result file under ``tmp``."""

    tmp: Path
    uri: str
    db: str
    defaults: dict[str, Any] = field(default_factory=dict)

    def spec(self, thread: str, **options: Any) -> dict[str, Any]:
        run = uuid.uuid4().hex[:8]
        spec = {
            "uri": self.uri,
            "db": self.db,
            "thread": thread,
            "case": "case-42",
            "log": str(self.tmp / f"{thread}.log"),
            "result": str(self.tmp / f"{thread}.{run}.json"),
            "stderr": str(self.tmp / f"{thread}.{run}.err"),
            **self.defaults,
        }
        spec.update(options)
        return spec

    def log(self, thread: str) -> list[Execution]:
        return read_log(self.tmp / f"{thread}.log")

    # -- running --------------------------------------------------------------------

    def start(self, spec: dict[str, Any], how: str = "fork") -> Any:
        if how == "fork":
            process = fork_context().Process(target=_entry, args=(spec,), daemon=True)
            process.start()
            return process
        return subprocess.Popen(
            [sys.executable, str(WORKER), json.dumps(spec)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def wait(self, spec: dict[str, Any], process: Any, timeout: float = 120.0) -> Outcome:
        if isinstance(process, subprocess.Popen):
            try:
                exitcode = process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
                raise AssertionError(f"worker {spec['thread']} did not finish in {timeout:.0f}s: {self._stderr(spec)}")
        else:
            process.join(timeout)
            if process.is_alive():
                process.kill()
                process.join()
                raise AssertionError(f"worker {spec['thread']} did not finish in {timeout:.0f}s: {self._stderr(spec)}")
            exitcode = process.exitcode
        result_path = Path(spec["result"])
        result = json.loads(result_path.read_text()) if result_path.exists() else None
        marker = result_path.with_suffix(".killed")
        killed_at = marker.read_text().split(maxsplit=1)[1].strip() if marker.exists() else None
        return Outcome(exitcode, result, killed_at, process.pid)

    def run(self, spec: dict[str, Any], how: str = "fork", timeout: float = 120.0) -> Outcome:
        outcome = self.wait(spec, self.start(spec, how), timeout)
        if how == "fork" and outcome.left_no_trace and not self.log_of(outcome.pid, spec):
            # The fork server failed under load before the worker did anything: run it in a fresh interpreter.
            outcome = self.wait(spec, self.start(spec, "spawn"), timeout)
        return outcome

    def log_of(self, pid: int | None, spec: dict[str, Any]) -> list[Execution]:
        """The effect executions process ``pid`` logged for the spec's thread."""
        return [e for e in read_log(Path(spec["log"])) if e.pid == pid]

    def run_at_once(self, specs: list[dict[str, Any]], how: str = "fork", lead: float = 2.0) -> list[Outcome]:
        start_at = time.time() + lead * (1 if how == "fork" else 3)
        processes = [(s, self.start({**s, "start_at": start_at}, how)) for s in specs]
        _reap_as_they_end([p for _, p in processes])
        return [self.wait({**s, "start_at": start_at}, p) for s, p in processes]

    @staticmethod
    def _stderr(spec: dict[str, Any]) -> str:
        path = Path(spec.get("stderr") or "/nonexistent")
        return path.read_text()[-3000:] if path.exists() else "(no output)"

    def failure(self, spec: dict[str, Any], outcome: Outcome) -> str:
        return f"worker {spec['thread']} exit {outcome.exitcode}, result {outcome.result}, output:\n{self._stderr(spec)}"


def _reap_as_they_end(processes: list[Any], timeout: float = 120.0) -> None:
    """Wait until every worker ended, reaping each as it ends. A worker that ended but is not reaped yet is a zombie,
    which ``kill(pid, 0)`` still finds: a sibling waiting for its run lock would take it for a live holder and wait
    out the lease (``owner_gone``), instead of taking the lock of a process that is gone at once, as a user's would."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = [p for p in processes if (p.poll() is None if isinstance(p, subprocess.Popen) else p.is_alive())]
        if not running:
            return
        time.sleep(0.05)


# -- reading the journal as stored ------------------------------------------------------------------


def journal_entries(db: Any, thread: str) -> list[dict[str, Any]]:
    """The thread's journal entries (``chunk: 0``), read raw with pymongo."""
    return list(db["activity_journal"].find({"thread_id": thread, "chunk": 0}, {"_id": 0, "outcome.data": 0}))


def positions(entries: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """The entries' positions as labels (``journal.labels``): the same in every run of one graph, whose keys differ."""
    return sorted((e["path"], e["node"], e["occurrence"], e["effect_key"], e["kind"], e["name"]) for e in labelled(entries))


def statuses(entries: list[dict[str, Any]]) -> dict[str, str]:
    """``idempotency_key -> status``."""
    return {e["idempotency_key"]: e["status"] for e in entries}


def execution_problems(
    executions: list[Execution], final: list[dict[str, Any]], at_kill: dict[str, str], killed_pid: int | None
) -> list[str]:
    """What breaks "every completed effect executed exactly once; an in-flight one at most twice, with the same key".

    An effect was in flight at the kill when its first execution was in the killed process and its entry
    was ``started`` then, or absent (a run under the run lock writes an at-least-once effect's entry only
    when it ends).

    ``final`` are the journal entries after the resume, ``at_kill`` the statuses
    read between the kill and the resume.
    """
    problems = []
    keys_of: dict[str, set[str]] = defaultdict(set)
    for e in executions:
        keys_of[e.name].add(e.key)
    for name, keys in keys_of.items():
        if len(keys) != 1:
            problems.append(f"{name} ran under {len(keys)} idempotency keys: {sorted(keys)}")
    runs = by_key(executions)
    recorded = {e["idempotency_key"]: e for e in final}
    for key, entry in recorded.items():
        n = len(runs.get(key, []))
        before = at_kill.get(key)
        if entry["status"] != "completed":
            problems.append(f"{entry['name']} is {entry['status']} after the resume")
        if n == 0:
            problems.append(f"{entry['name']} completed but never ran")
        elif before == "completed" and n != 1:
            problems.append(f"{entry['name']} was completed before the kill yet ran {n} times")
        elif n > 2:
            problems.append(f"{entry['name']} ran {n} times")
        elif n == 2:
            # In flight at the kill: claimed (``started``), or, in a run holding its thread's run lock, not
            # journaled at all yet (an at-least-once effect's entry is written once, when it ends).
            if before not in ("started", None):
                problems.append(f"{entry['name']} ran twice but was {before} at the kill")
            elif [e.pid for e in runs[key]][0] != killed_pid:
                problems.append(f"{entry['name']} ran twice, first not in the killed process: {runs[key]}")
    for key in runs:
        if key not in recorded:
            problems.append(f"an execution under key {key} ({runs[key][0].name}) has no journal entry")
    return problems


@contextlib.contextmanager
def workers_on(uri: str, tmp: Path, **defaults: Any) -> Iterator[Workers]:
    """``Workers`` on a fresh database of the server at ``uri``, dropped afterwards."""
    from pymongo import MongoClient

    db = f"rel_{uuid.uuid4().hex[:16]}"
    client = MongoClient(uri)
    try:
        yield Workers(tmp, uri, db, defaults)
    finally:
        client.drop_database(db)
        client.close()


def reference_run(api: str = "invoke", durability: str = "sync", case: str = "case-42") -> tuple[dict, list[tuple]]:
    """An uncrashed run in this process on the embedded platform: its final state and journal positions."""
    from langgraph_durable_mongodb.platform import DurablePlatform

    previous = (durable_worker.Run.log, durable_worker.Run.switch, durable_worker.Run.effect_seconds, durable_worker.Run.hook)
    durable_worker.configure(log=None)
    try:
        platform = DurablePlatform.embedded()
        graph = platform.compile(durable_worker.build_graph(api))
        config = {"configurable": {"thread_id": "reference"}}
        values = durable_worker.run_until_done(graph, case, config, durability, api)
        return values, positions(platform.journal.entries("reference"))
    finally:
        durable_worker.Run.log, durable_worker.Run.switch, durable_worker.Run.effect_seconds, durable_worker.Run.hook = previous


def position_problems(db: Any, thread: str) -> list[str]:
    """Every journal position must be a visit's (``visit_keys``: each level of its path and its occurrence a key),
    its root-level key one of the thread's stored root checkpoints (or a task prepared from one), its ``root_key``
    a stored root checkpoint: an effect never ran under an identity a crash could lose."""
    roots = {d["checkpoint_id"] for d in db["checkpoints"].find({"thread_id": thread, "checkpoint_ns": ""}, {"_id": 0, "checkpoint_id": 1})}
    problems = []
    for e in journal_entries(db, thread):
        found = levels(e)
        if found is None or any(KEY.match(text) is None for _, text in found):
            problems.append(f"{e['path']} {e['node']}#{e['occurrence']} is not keyed by a visit")
        elif e.get("root_key") not in roots:
            problems.append(f"{e['path']} {e['node']}#{e['occurrence']} names root checkpoint {e.get('root_key')}, never stored")
    return problems


# -- what the server guarantees -----------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def server_gaps(uri: str) -> tuple[tuple[str, str], ...]:
    """The gaps in single-document atomicity that may excuse a concurrency problem: ``((gap, evidence), ...)``.

    Only FerretDB may have any (measured by ``measure_gaps``). Every other server (MongoDB,
    mongo-java-server, whose collections serialise their writes) owes the journal MongoDB's
    guarantees: no gaps, so ``judge`` fails on whatever shows up there.
    """
    from pymongo import MongoClient

    from langgraph_durable_mongodb.storage.plans import quirks

    with MongoClient(uri) as client:
        if quirks.identify(client.admin.command("buildInfo")).atomic_conditional_updates:
            return ()
    return measure_gaps(uri)


def measure_gaps(uri: str, rounds: int = 30) -> tuple[tuple[str, str], ...]:
    """Single-document atomicity the journal relies on, measured: ``((gap, evidence), ...)``, empty on MongoDB.

    - ``conditional_update``: of several writers racing ``update_one({_id, owner: old}, {$set: {owner: me}})``
      exactly one may match (the journal's take-over and record fences). FerretDB 1.x on SQLite reads
      and writes without a transaction between them, so several "win".
    - ``upsert_race``: an upsert that loses a duplicate-key race must fail with a write error (or be retried
      by the server). FerretDB 1.x answers without ``nModified`` and pymongo's ``bulk_write`` raises
      ``KeyError('nModified')``.
    """
    from pymongo import MongoClient, UpdateOne
    from pymongo.errors import BulkWriteError

    client = MongoClient(uri, maxPoolSize=16)
    coll = client[f"probe_{uuid.uuid4().hex[:12]}"]["race"]
    gaps = []
    try:
        several = 0
        for _ in range(rounds):
            coll.delete_many({})
            coll.insert_one({"_id": 1, "owner": "old"})
            wins: list[int] = []
            barrier = threading.Barrier(6)

            def take(k: int) -> None:
                barrier.wait()
                if coll.update_one({"_id": 1, "owner": "old"}, {"$set": {"owner": k}}).modified_count:
                    wins.append(k)

            _together(take, 6)
            several += len(wins) > 1
        if several:
            gaps.append(("conditional_update", f"{several} of {rounds} races of 6 writers had several winners"))
        coll.create_index("k", unique=True)
        key_errors = 0
        for r in range(rounds):
            barrier = threading.Barrier(4)

            def upsert(k: int, r: int = r) -> None:
                nonlocal key_errors
                barrier.wait()
                try:
                    coll.bulk_write([UpdateOne({"k": r}, {"$setOnInsert": {"v": k}}, upsert=True)], ordered=False)
                except BulkWriteError:
                    pass
                except KeyError:
                    key_errors += 1

            _together(upsert, 4)
        if key_errors:
            gaps.append(("upsert_race", f"{key_errors} upserts that lost a race raised KeyError('nModified')"))
    finally:
        client.drop_database(coll.database.name)
        client.close()
    return tuple(gaps)


def _together(fn: Any, n: int) -> None:
    threads = [threading.Thread(target=fn, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def concurrent_resume_problems(
    workers: Workers, db: Any, thread: str, at_crash: dict[str, str], specs: list[dict], resumed: list[Outcome],
    expected_values: dict,
) -> list[tuple[str, str]]:
    """What breaks the guarantees when several processes resume one crashed thread at once.

    Returns ``(kind, message)`` pairs; ``kind`` names the server gap (see ``server_gaps``) that explains
    the problem on a server lacking it, or ``"guarantee"`` when nothing but the library can.
    ``at_crash`` maps each idempotency key to its entry's status before the resumes.
    """
    problems: list[tuple[str, str]] = []
    for spec, outcome in zip(specs, resumed):
        if not outcome.done:
            error = (outcome.result or {}).get("error", "")
            # A record another resumer beat (EffectRecordLostError) needs two take-overs of one claim: the gap.
            kind = (
                "upsert_race" if "KeyError: 'nModified'" in error
                else "conditional_update" if "EffectRecordLostError" in error
                else "guarantee"
            )
            problems.append((kind, workers.failure(spec, outcome)))
        elif outcome.result["values"] != expected_values:
            problems.append(("guarantee", f"process {outcome.pid} ended with {outcome.result['values']}"))
    executions = read_log(workers.tmp / f"{thread}.log")
    resumers = {o.pid for o in resumed}
    # Two resumers can only run one position at once if a conditional update admitted both: the journal's
    # take-over of a claimed position, or the run lock's take-over (then a position not journaled yet).
    for a, b in overlapping(executions):
        kind = "conditional_update" if at_crash.get(a.key) in ("started", None) else "guarantee"
        problems.append((kind, f"{a.name} ran in processes {a.pid} and {b.pid} at the same time (key {a.key})"))
    for key, runs in by_key(executions).items():
        after = [e for e in runs if e.pid in resumers]
        if at_crash.get(key) == "completed" and after:
            problems.append(("guarantee", f"{runs[0].name} was completed before the crash yet ran again: {after}"))
        elif len(after) > 1:
            kind = "conditional_update" if at_crash.get(key) in ("started", None) else "guarantee"
            problems.append((kind, f"{runs[0].name} ran {len(after)} times after the crash (key {key})"))
    entries = journal_entries(db, thread)
    problems += [("guarantee", f"{e['name']} at {e['path']} is {e['status']}") for e in entries if e["status"] != "completed"]
    problems += [("guarantee", p) for p in position_problems(db, thread)]
    recorded = {e["idempotency_key"] for e in entries}
    problems += [("guarantee", f"{r[0].name} ran under key {k}, which has no entry") for k, r in by_key(executions).items() if k not in recorded]
    return problems


def judge(uri: str, problems: list[tuple[str, str]]) -> None:
    """Fail on any problem a server gap does not explain; xfail (naming the gap) when gaps explain all of them.

    Only FerretDB has gaps (see ``server_gaps``): on any other server every problem fails the test, and the
    message says whether the server itself broke single-document atomicity in a fresh probe.
    """
    import pytest

    if not problems:
        return
    gaps = dict(server_gaps(uri))
    unexplained = [message for kind, message in problems if kind not in gaps]
    if unexplained and not gaps:
        probe = measure_gaps(uri)
        assert not unexplained, (
            f"{len(unexplained)} problem(s) on a server owing MongoDB's single-document atomicity "
            f"(its probe now: {dict(probe) or 'atomic'}): {unexplained}"
        )
    assert not unexplained, f"{len(unexplained)} problem(s): {unexplained}"
    kinds = sorted({kind for kind, _ in problems})
    pytest.xfail(
        "the server lacks single-document atomicity the journal relies on ("
        + "; ".join(f"{k}: {gaps[k]}" for k in kinds)
        + f"), and it showed: {[m for _, m in problems]}"
    )
