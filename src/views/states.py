"""What a thread and each of its effects are in, judged from stored documents alone.

An effect (a journal entry) is ``completed``, ``failed``, ``in flight`` (started under a live lease),
``outcome unknown`` (an ``at_most_once`` effect started by a worker whose lease expired or whose process
exited before it recorded an outcome: the next run raises ``EffectOutcomeUnknownError`` until a person
resolves or discards it) or ``abandoned`` (any other effect whose worker died: the next run runs it again).
A completed effect is also ``replayed`` where stored documents prove a later visit returned its outcome
(``replayed``): a visit counted in its ``replays``, or the latest run's checkpoint that follows it. A replay
under the run lock writes nothing, so no view shows a count of replays, only whether one is proven.

A thread is ``running`` while a run holds its run lock, else ``failed`` when a task of its latest root
checkpoint recorded an error, ``crashed`` when that checkpoint has tasks still to run and its last run never
released the lock (its process died: a released lock has no owner), ``interrupted`` when tasks are still to
run otherwise (an ``interrupt()``, a breakpoint), else ``done``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .._langgraph import DUE_PREFIX, ERROR, INTERRUPT, START
from ..storage.liveness import owner_gone
from ..storage.plans import lease

#: The effect states, in the order they are shown.
EFFECT_STATES = ("completed", "in flight", "failed", "outcome unknown", "abandoned")
#: The thread states.
THREAD_STATES = ("running", "failed", "crashed", "interrupted", "done")


def lease_live(doc: Mapping[str, Any], now: datetime) -> bool:
    """Whether ``doc`` (a journal entry or a run lock) is held: an owner, a lease in the future, and not
    a process of this host that has exited."""
    until = lease.naive(doc.get("lease_until"))
    return doc.get("owner") is not None and until is not None and until > now and not owner_gone(doc)


def effect_state(entry: Mapping[str, Any], now: datetime) -> str:
    """The state of one journal entry (one of ``EFFECT_STATES``).

    Args:
        entry: the entry document.
        now: the present, naive UTC (``lease.utcnow()``).

    Returns:
        ``completed``, ``failed``, ``in flight``, ``outcome unknown`` or ``abandoned``.
    """
    status = entry.get("status")
    if status in ("completed", "failed"):
        return str(status)
    if lease_live(entry, now):
        return "in flight"
    if entry.get("at_most_once") and entry.get("not_run") is not True:
        return "outcome unknown"
    return "abandoned"


def effect_counts(entries: Iterable[Mapping[str, Any]], now: datetime) -> dict[str, int]:
    """How many of ``entries`` are in each of ``EFFECT_STATES``."""
    counts = Counter(effect_state(entry, now) for entry in entries if entry.get("chunk", 0) == 0)
    return {state: counts.get(state, 0) for state in EFFECT_STATES}


def due_nodes(channels: Iterable[Any]) -> list[str]:
    """The nodes a root checkpoint has yet to run, from the names of the channels it holds."""
    names = [c for c in channels if isinstance(c, str)]
    return sorted(c[len(DUE_PREFIX):] for c in names if c.startswith(DUE_PREFIX)) + ([START] if START in names else [])


def thread_state(lock: Mapping[str, Any] | None, due: list[str], channels_written: Iterable[str], now: datetime) -> str:
    """The state of a thread (one of ``THREAD_STATES``).

    Args:
        lock: its run lock document, if any.
        due: ``due_nodes`` of its latest root checkpoint.
        channels_written: the channels of the pending writes of that checkpoint.
        now: the present, naive UTC.

    Returns:
        ``running``, ``failed``, ``crashed``, ``interrupted`` or ``done``.
    """
    written = set(channels_written)
    if lock is not None and lease_live(lock, now):
        return "running"
    if ERROR in written:
        return "failed"
    if due and INTERRUPT not in written and lock is not None and lock.get("owner") is not None:
        return "crashed"  # its run never released the lock: the process died with nodes still due
    return "interrupted" if due or INTERRUPT in written else "done"


def _when(value: Any) -> datetime | None:
    """A stored time (a date, or a checkpoint's ISO ``ts``) as naive UTC, or None."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    return lease.naive(value)


def replayed(entry: Mapping[str, Any], lock: Mapping[str, Any] | None, roots: Iterable[Mapping[str, Any]]) -> bool:
    """Whether stored documents prove a visit returned this effect's recorded outcome instead of running it: it
    completed, and a visit without the run lock counted itself in ``replays`` or the latest run replayed it
    (``replayed_on_resume``). An entry still started, failed or of unknown outcome was never replayed.

    Args:
        entry: the journal entry.
        lock: the thread's run lock, if any.
        roots: the thread's root checkpoints, as ``replayed_on_resume`` reads them.

    Returns:
        True if a replay is proven.
    """
    if entry.get("status") != "completed":
        return False
    counted = entry.get("replays")
    return (isinstance(counted, int) and not isinstance(counted, bool) and counted > 0) or replayed_on_resume(entry, lock, roots)


def replayed_on_resume(entry: Mapping[str, Any], lock: Mapping[str, Any] | None, roots: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the thread's latest run replayed this completed effect without counting it.

    A run that holds the thread's lock replays an effect from the entries it read, writing nothing (so
    ``replays`` stays as it was). It shows in the checkpoints instead: the effect was recorded before the
    latest run started, and that run wrote the root checkpoint that follows the one the effect's visit was
    prepared from (its ``root_key``), made by the writes of the visit's root-level node.

    Args:
        entry: the journal entry (as stored: its ``path`` names the visit's root-level node).
        lock: the thread's run lock (its ``started_at`` is the latest run's start), if any.
        roots: the thread's root checkpoints: ``ts``, ``parent`` and ``wrote`` (the nodes whose writes made it).

    Returns:
        True if the latest run replayed it.
    """
    run_started, finished = _when((lock or {}).get("started_at")), _when(entry.get("finished_at"))
    segments = str(entry.get("path") or "").split("/")
    if entry.get("status") != "completed" or run_started is None or finished is None or len(segments) < 4:
        return False
    node = segments[2]
    for root in roots:
        at = _when(root.get("ts"))
        if at is not None and finished < run_started <= at and node in root.get("wrote", ()) and root.get("parent") == entry.get("root_key"):
            return True
    return False
