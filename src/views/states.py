"""What a thread and each of its effects are in, judged from stored documents alone.

An effect (a journal entry) is ``completed``, ``failed`` (``interrupted`` when its failure is LangGraph's
``interrupt()`` asking from inside it: it runs again once answered), ``in flight`` (started under a live lease),
``outcome unknown`` (an ``at_most_once`` effect started by a worker whose lease expired or whose process
exited before it recorded an outcome: the next run raises ``EffectOutcomeUnknownError`` until a person
resolves or discards it) or ``abandoned`` (any other effect whose worker died: the next run runs it again).
A completed effect is also ``replayed`` where stored documents prove a later visit returned its outcome
(``replayed``): a visit counted in its ``replays``, or the latest run's checkpoint that follows it. A replay
under the run lock writes nothing, so no view shows a count of replays, only whether one is proven.

A thread's state is judged in one place (``thread_state``), for the list, the page, their JSON and the CLI alike,
from LangGraph's own account of its latest root checkpoint (``checkpoint_tasks``: one task per ``Send`` packet, one
per node its edges made due, each ``due``, ``done``, ``failed`` or ``interrupted`` by its writes there), the run lock
and the journal, first match wins:

- ``running``: a run holds the thread's lock under a live lease and renews it, or (runs that take no lock) an
  effect is claimed under a live lease;
- ``waiting for a lock``: a run holds the lock under a lease that has not run out but stopped renewing it (its
  process died on another host, or froze): the next run waits until the lease ends;
- ``outcome unknown``: an ``at_most_once`` effect's holder died before it recorded: a person resolves or discards
  it before the thread can go on;
- ``failed``: a task of the latest root checkpoint saved an error;
- ``crashed``: tasks are still due (or interrupted) and the last run never released the lock (its process died: a
  run that stops, even at an interrupt, releases it), or, without a lock, left an effect abandoned;
- ``interrupted``: tasks are still due otherwise (an ``interrupt()`` waits for its answer, a breakpoint);
- ``done``: nothing is due.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from .._langgraph import ERROR, INTERRUPT, checkpoint_tasks, interrupt_error, task_outcome, tool_call_of
from ..errors import InvalidInputError
from ..storage.liveness import owner_gone
from ..storage.plans import lease

#: The effect states, in the order they are shown.
EFFECT_STATES = ("completed", "in flight", "interrupted", "failed", "outcome unknown", "abandoned")
#: The thread states, in the order they are judged (``thread_state``).
THREAD_STATES = ("running", "waiting for a lock", "outcome unknown", "failed", "crashed", "interrupted", "done")


def state_named(name: Any) -> str | None:
    """The thread state ``name`` names (one of ``THREAD_STATES``, or its first word: ``unknown``, ``waiting``), or
    None for no name.

    Raises:
        InvalidInputError: ``name`` names no state (the message lists them).
    """
    if name is None or name == "":
        return None
    for state in THREAD_STATES:
        if name in (state, state.split()[0], state.split()[-1]):
            return state
    raise InvalidInputError(f"state must be one of {', '.join(THREAD_STATES)} (or unknown, waiting), got {name!r:.40}")


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
        error = stored if isinstance(stored := entry.get("error"), Mapping) else {}
        return finished_state(str(status), error.get("type"), error.get("module"))
    if lease_live(entry, now):
        return "in flight"
    if entry.get("at_most_once") and entry.get("not_run") is not True:
        return "outcome unknown"
    return "abandoned"


def finished_state(status: str, error_type: Any = None, error_module: Any = None) -> str:
    """The state of an entry that finished: ``completed``; ``failed``, or ``interrupted`` when its failure is
    LangGraph's ``interrupt()`` asking from inside the effect (it runs again once answered)."""
    return "interrupted" if status == "failed" and interrupt_error(error_type, error_module) else status


def effect_counts(entries: Iterable[Mapping[str, Any]], now: datetime) -> dict[str, int]:
    """How many of ``entries`` are in each of ``EFFECT_STATES``."""
    counts = Counter(effect_state(entry, now) for entry in entries if entry.get("chunk", 0) == 0)
    return {state: counts.get(state, 0) for state in EFFECT_STATES}


def checkpoint_tasks_of(
    channels: Iterable[Any], sends: Sequence[Any] | None, writes: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The tasks of a root checkpoint, as LangGraph prepares them (``_langgraph.checkpoint_tasks``), each with what
    its writes there say of it.

    Args:
        channels: the names of the channels holding a value in the checkpoint.
        sends: its ``Send`` packets as read, or None when they were not read (one unnamed task stands for them).
        writes: its pending writes (``task_path``, ``channel``, ``task_id``).

    Returns:
        ``[{"name", "via": "edge" | "send", "send", "tool_call": {"name", "id"} | None, "status", "task_id"}]``,
        ``status`` one of ``due``, ``done``, ``failed``, ``interrupted``; a ``Send`` whose node is unknown is named
        ``None``.
    """
    written: dict[Any, set[Any]] = {}
    task_ids: dict[Any, Any] = {}
    for write in writes:
        written.setdefault(write.get("task_path"), set()).add(write.get("channel"))
        task_ids.setdefault(write.get("task_path"), write.get("task_id"))
    tasks = []
    for task in checkpoint_tasks(channels, sends):
        call = tool_call_of(task.arg)
        tasks.append({
            "name": task.name, "via": "edge" if task.send is None else "send", "send": task.send,
            "tool_call": {"name": call[0], "id": call[1]} if call else None,
            # an unnamed task stands for Send packets unread: some of them may not have run yet
            "status": task_outcome(written.get(task.path, ())) if task.name is not None else "due",
            "task_id": task_ids.get(task.path),
        })
    return tasks


def due_names(tasks: Iterable[Mapping[str, Any]]) -> list[str]:
    """The nodes of ``tasks`` still to run, as a person reads them (a ``Send`` whose node is unknown as ``Send``)."""
    return [t["name"] or "Send" for t in tasks if t["status"] in ("due", "interrupted")]


def lock_stalled(lock: Mapping[str, Any], now: datetime) -> bool:
    """Whether a held lock's holder stopped renewing it: more than two renewals late (each is due a third of the
    lease after the one before), its lease not over yet."""
    last = lease.naive(lock.get("renewed_at")) or lease.naive(lock.get("started_at"))
    until = lease.naive(lock.get("lease_until"))
    if last is None or until is None or until <= last:
        return False
    return (now - last) > (until - last) * 2 / lease.RENEWALS_PER_LEASE


def thread_state(
    lock: Mapping[str, Any] | None, tasks: Iterable[Mapping[str, Any]], channels_written: Iterable[Any],
    effects: Mapping[str, int], now: datetime,
) -> str:
    """The state of a thread (one of ``THREAD_STATES``; see the module docstring).

    Args:
        lock: its run lock document, if any.
        tasks: ``checkpoint_tasks_of`` its latest root checkpoint.
        channels_written: the channels of that checkpoint's pending writes.
        effects: its effects counted by state (``effect_counts``: the unfinished ones at least).
        now: the present, naive UTC.

    Returns:
        The state.
    """
    live = _live_state(lock, effects, now)
    if live is not None:
        return live
    written = set(channels_written)
    statuses = {t["status"] for t in tasks}
    if ERROR in written or "failed" in statuses:
        return "failed"
    due, interrupted = "due" in statuses, INTERRUPT in written or "interrupted" in statuses
    left_held = lock is not None and lock.get("owner") is not None  # a run that stops releases its lock
    if ((due or interrupted) and left_held) or (due and not interrupted and effects.get("abandoned")):
        return "crashed"  # its run died holding the lock, or (no lock) left an effect abandoned
    return "interrupted" if due or interrupted else "done"


def _live_state(lock: Mapping[str, Any] | None, effects: Mapping[str, int], now: datetime) -> str | None:
    """``running``, ``waiting for a lock`` or ``outcome unknown`` when a run or an effect says so, else None."""
    if lock is not None and lease_live(lock, now):
        return "waiting for a lock" if lock_stalled(lock, now) else "running"
    if effects.get("in flight"):
        return "running"
    return "outcome unknown" if effects.get("outcome unknown") else None


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
    return (
        (isinstance(counted, int) and not isinstance(counted, bool) and counted > 0)
        or replayed_on_resume(entry, lock, roots)
    )


def replayed_on_resume(
    entry: Mapping[str, Any], lock: Mapping[str, Any] | None, roots: Iterable[Mapping[str, Any]]
) -> bool:
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
        if (
            at is not None and finished < run_started <= at and node in root.get("wrote", ())
            and root.get("parent") == entry.get("root_key")
        ):
            return True
    return False
