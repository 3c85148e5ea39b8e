"""A thread's runs, as the page lists them and the timeline draws them: which process ran, from when to when, how
each run ended, and which effects it executed or replayed.

The run lock keeps the run holding it and the last ended runs (``run_lock.RUNS_KEPT``, written with each release
and by the take-over of a dead holder's lock: ``finished``, ``failed``, ``crashed``, ``lock lost``). A run that
ended cleanly at an ``interrupt()`` is told by its last root checkpoint, which holds the interrupt; the latest run
ends as the thread stands (``failed``, ``interrupted``, ...). Threads whose runs take no lock (Agent Server, a graph
merely compiled with the platform's checkpointer) have their runs inferred from the processes that claimed their
effects, one run per process, ``crashed`` when it left an effect abandoned or its outcome unknown.

An effect was executed by the run of the process that claimed it, when it started; replayed by the run whose
visit counted it (``visited_at``), else, proven by the checkpoints, by the latest run (``states.replayed``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..storage.liveness import owner_gone
from .states import lease_live, lock_stalled

#: How a run ended, as the page and the timeline name it (``running`` and ``waiting for a lock`` for the one holding
#: the lock now).
RUN_ENDS = ("running", "waiting for a lock", "finished", "interrupted", "failed", "crashed", "lock lost")
#: The thread states that say how its latest run ended, when it ended.
_LATEST_ENDS = {"interrupted": "interrupted", "failed": "failed", "crashed": "crashed", "outcome unknown": "crashed"}


def _date(value: Any) -> datetime | None:
    return value.replace(tzinfo=None) if isinstance(value, datetime) else None


def _recorded(lock: Mapping[str, Any] | None, now: datetime) -> list[dict[str, Any]]:
    """The runs the lock keeps, oldest first, and the one holding it now."""
    if lock is None:
        return []
    kept = stored if isinstance(stored := lock.get("runs"), Mapping) else {}
    runs = [
        {"fence": r.get("fence"), "host": r.get("host"), "pid": r.get("pid"), "started_at": _date(r.get("started_at")),
         "ended_at": _date(r.get("ended_at")), "ended": r.get("ended") if r.get("ended") in RUN_ENDS else "finished"}
        for r in kept.values() if isinstance(r, Mapping) and isinstance(r.get("fence"), int)
    ]
    if lock.get("owner") is not None:
        runs.append({"fence": lock.get("fence"), "host": lock.get("owner_host"), "pid": lock.get("owner_pid"),
                     "started_at": _date(lock.get("started_at")), **_holding(lock, now)})
    return sorted(runs, key=lambda r: r["fence"] if isinstance(r["fence"], int) else -1)


def _holding(lock: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """How the run holding the lock stands: running (its lease live), or ended: crashed, or its lock lost (last seen
    when it last renewed; ``_last_seen`` moves it to its last work)."""
    if lease_live(lock, now):
        return {"ended_at": None, "ended": "waiting for a lock" if lock_stalled(lock, now) else "running"}
    seen = _date(lock.get("renewed_at")) or _date(lock.get("started_at"))
    return {"ended_at": seen, "ended": "crashed" if owner_gone(lock) else "lock lost"}


def _inferred(effects: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One run per process that claimed effects, from its first effect's start to its last one's end."""
    by_process: dict[tuple[Any, Any], dict[str, Any]] = {}
    for effect in sorted(effects, key=lambda e: _date(e.get("started_at")) or datetime.min):
        host, pid, start = effect.get("host"), effect.get("pid"), _date(effect.get("started_at"))
        if start is None or host is None:
            continue
        run = by_process.setdefault((host, pid), {"fence": None, "host": host, "pid": pid, "started_at": start,
                                                  "ended_at": start, "ended": "finished"})
        end = _date(effect.get("finished_at")) or _date(effect.get("updated_at")) or start
        run["ended_at"] = max(run["ended_at"], end)
        if effect.get("state") in ("abandoned", "outcome unknown"):
            run["ended"] = "crashed"
        elif effect.get("state") == "in flight":
            run["ended"], run["ended_at"] = "running", None
    return sorted(by_process.values(), key=lambda r: r["started_at"])


def _ends_at_interrupt(run: Mapping[str, Any], checkpoints: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the last root checkpoint a run wrote holds an interrupt."""
    start, end = run["started_at"], run["ended_at"]
    written = (
        [c for c in checkpoints if (at := _date(c.get("at"))) is not None and start <= at <= end]
        if start and end else []
    )
    return bool(written) and bool(max(written, key=lambda c: c["at"]).get("interrupted"))


def thread_runs(
    lock: Mapping[str, Any] | None, effects: list[dict[str, Any]], checkpoints: Sequence[Mapping[str, Any]],
    state: str, now: datetime,
) -> list[dict[str, Any]]:
    """The thread's runs, oldest first (see the module docstring), each with the effects it executed and replayed.

    Args:
        lock: the thread's run lock document, if any.
        effects: its effects as the page shows them (``host``, ``pid``, ``started_at``, ``finished_at``,
            ``visited_at``, ``state``, ``replayed``), marked here with ``executed_by`` and ``replayed_by`` (run
            numbers).
        checkpoints: its root checkpoints (``at``: when written, ``interrupted``: holds an interrupt).
        state: the thread's state (``states.thread_state``).
        now: the present, naive UTC.

    Returns:
        ``[{"n", "host", "pid", "started_at", "ended_at", "ended", "inferred", "executed", "replayed"}]``.
    """
    runs, inferred = _recorded(lock, now), False
    if not runs:
        runs, inferred = _inferred(effects), True
    for n, run in enumerate(runs, 1):
        run.update(n=n, inferred=inferred, executed=0, replayed=0)
        if run["ended"] == "finished" and _ends_at_interrupt(run, checkpoints):
            run["ended"] = "interrupted"
    if runs and runs[-1]["ended"] == "finished" and state in _LATEST_ENDS:
        runs[-1]["ended"] = _LATEST_ENDS[state]
    for effect in effects:
        _attribute(effect, runs, now)
    _last_seen(runs, effects, checkpoints)
    return runs


def _last_seen(
    runs: list[dict[str, Any]], effects: Sequence[Mapping[str, Any]], checkpoints: Sequence[Mapping[str, Any]]
) -> None:
    """A run that died ends where it was last seen at work: its last effect, its last root checkpoint (a process is
    known dead only later, and its lease ran on past its death)."""
    for n, run in enumerate(runs):
        if run["ended"] in ("crashed", "lock lost") and run["started_at"] is not None:
            before = runs[n + 1]["started_at"] if n + 1 < len(runs) else None
            seen = [
                _date(e.get(f))
                for e in effects if e.get("executed_by") == run["n"]
                for f in ("updated_at", "finished_at")
            ]
            seen += [
                at for c in checkpoints
                if (at := _date(c.get("at"))) and run["started_at"] <= at and (before is None or at < before)
            ]
            run["ended_at"] = max([t for t in (run["ended_at"], *seen) if t is not None], default=run["started_at"])


def _within(run: Mapping[str, Any], at: datetime | None, now: datetime) -> bool:
    return at is not None and run["started_at"] is not None and run["started_at"] <= at <= (run["ended_at"] or now)


def _attribute(effect: Any, runs: list[dict[str, Any]], now: datetime) -> None:
    """Mark which run executed the effect (the latest run of its process begun before it started) and which replayed
    it."""
    started = _date(effect.get("started_at"))
    executed = next((r for r in reversed(runs) if (r["host"], r["pid"]) == (effect.get("host"), effect.get("pid"))
                     and started is not None and r["started_at"] is not None and r["started_at"] <= started), None)
    effect["executed_by"] = executed["n"] if executed else None
    if executed:
        executed["executed"] += 1
    replayed = None
    if effect.get("replayed") and runs:
        visited = _date(effect.get("visited_at"))
        replayed = next((r for r in reversed(runs) if _within(r, visited, now) and r is not executed), runs[-1])
        replayed["replayed"] += 1
    effect["replayed_by"] = replayed["n"] if replayed else None
