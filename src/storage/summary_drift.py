"""Thread summaries that drifted from their root checkpoints: found, rebuilt, and stood in for in the lists.

A summary (``thread_summaries.py``) is kept by the root ``put`` of a process of storage format 2 or later. It
drifts where no such ``put`` kept it:

- a database of format 1 has none (``build_plan``, its migration, writes them);
- a process of format 1 still running after the upgrade stores root checkpoints without counting them: a
  thread it starts has no summary, a thread it goes on with a short one;
- a ``put`` racing the upgrade creates a summary counting only itself, when the upgrade has not reached its
  thread yet.

``drift_plan`` reads the root checkpoints in index order, in pages of ``thread_summaries.BUILD_PAGE``, folds each
thread's into what its summary should say, and compares with what is stored: one ``find`` of the page's summaries by
``_id``. With ``repair`` it rewrites the missing and short ones, conditionally, beside running writers: a
rewrite never lowers a count nor moves ``latest`` back, whatever was ``put`` between its read and its write
(the filter ``latest <= what was read``, and ``$max``); a summary already past what was read, whose count a
racing ``put`` may have started afresh, is counted again (``_recount_plan``) until a conditional write of
the count holds. ``doctor`` runs it bounded in time (a sample of a large database), ``doctor --repair``
whole.

The thread lists never hide a thread with root checkpoints: ``unsummarized_plan`` finds, beside a page of
summaries, the threads of the page's id range that have root checkpoints and no summary (one ``find`` served
by the checkpoints' key index, which finds nothing on a database without drift).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pymongo import UpdateOne

from . import thread_summaries
from .plans.requests import FencedUpdate, Find, Gather, InsertOne, Plan, Upsert, ask
from .schema import CHECKPOINT_INDEX_ORDER, CollectionNames, keys_filter
from .thread_summaries import COUNT, LATEST, SUMMARY_NS, summary_filter, summary_id

#: Thread ids a ``Drift`` names per kind of drift (it counts them all).
NAMED = 20
#: Times a summary is counted again before it is left as it is (``Drift.unsettled``): each new try follows a root
#: checkpoint ``put`` between the count and its write, or a summary naming a ``latest`` no checkpoint has.
RECOUNTS = 10
#: What a comparison reads of a root checkpoint, and of a summary.
_ROOT_FIELDS = {"_id": 0, "thread_id": 1, "checkpoint_id": 1, "expire_at": 1}
_STORED_FIELDS = {"_id": 0, "thread_id": 1, LATEST: 1, COUNT: 1}


@dataclass
class Drift:
    """What ``drift_plan`` found: the threads with root checkpoints it compared, those whose summary is
    ``missing`` or ``short`` (counted, and the first ``NAMED`` of each named), how many it rewrote, those it
    could not settle in ``RECOUNTS`` counts (``unsettled``, named), and whether it compared every thread
    (``complete``; False: it stopped at its time bound)."""

    threads: int = 0
    missing: int = 0
    short: int = 0
    named_missing: list[str] = field(default_factory=list)
    named_short: list[str] = field(default_factory=list)
    repaired: int = 0
    unsettled: list[str] = field(default_factory=list)
    complete: bool = True

    def note(self, thread_id: str, stored: Mapping[str, Any] | None) -> None:
        kind = "missing" if stored is None else "short"
        setattr(self, kind, getattr(self, kind) + 1)
        named = self.named_missing if stored is None else self.named_short
        if len(named) < NAMED:
            named.append(thread_id)

    def as_dict(self) -> dict[str, Any]:
        """The report's fields, as ``doctor`` shows them."""
        return {
            "threads": self.threads, "missing": self.missing, "short": self.short, "named_missing": self.named_missing,
            "named_short": self.named_short, "repaired": self.repaired, "unsettled": self.unsettled,
            "complete": self.complete,
        }


def build_plan(names: CollectionNames) -> Plan[int]:
    """The migration from storage format 1, which had no summaries: ``drift_plan`` with ``repair``, whole.

    Returns:
        The number of threads whose summary it wrote.
    """
    drift = yield from drift_plan(names, repair=True)
    return drift.repaired


def drift_plan(names: CollectionNames, *, repair: bool, seconds: float | None = None) -> Plan[Drift]:
    """Compare every thread's summary with its root checkpoints, page by page in index order; with ``repair``,
    rewrite the missing and short ones (see the module docstring).

    Args:
        names: the collection names.
        repair: rewrite what drifted.
        seconds: stop after the first page that ends past this many seconds (None: compare every thread).

    Returns:
        The ``Drift``.
    """
    drift, after, pending = Drift(), None, None
    started = time.monotonic()
    while True:
        page = thread_summaries.BUILD_PAGE
        query = _after({"checkpoint_ns": ""}, after)
        docs = yield from ask(Find(names.checkpoints, query, _ROOT_FIELDS, list(CHECKPOINT_INDEX_ORDER), page))
        folded, pending = _fold(docs, pending)
        last = len(docs) < page
        if last and pending:
            folded.append(pending)
        yield from _compare_plan(names, folded, drift, repair)
        if last:
            return drift
        if seconds is not None and time.monotonic() - started >= seconds:
            drift.complete = False
            return drift
        after = (docs[-1]["thread_id"], docs[-1]["checkpoint_id"])


def _after(query: dict[str, Any], after: tuple[str, str] | None) -> dict[str, Any]:
    """``query`` limited to what follows ``(thread_id, checkpoint_id)`` in index order (ids descending)."""
    if after is None:
        return query
    thread_id, checkpoint_id = after
    later = [{"thread_id": {"$gt": thread_id}}, {"thread_id": thread_id, "checkpoint_id": {"$lt": checkpoint_id}}]
    return {**query, "$or": later}


def _fold(
    docs: list[dict[str, Any]], pending: dict[str, Any] | None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The summaries ``docs`` (root checkpoints in index order) complete, and that of their last thread, which
    the next page may continue."""
    done: list[dict[str, Any]] = []
    for doc in docs:
        thread_id = doc.get("thread_id")
        if not isinstance(thread_id, str):
            continue  # stored by hand: no summary lists it (the views report such documents)
        if pending is None or pending["thread_id"] != thread_id:
            done += [pending] if pending else []
            pending = {"thread_id": thread_id, LATEST: doc["checkpoint_id"], COUNT: 0}
        pending[LATEST] = max(pending[LATEST], doc["checkpoint_id"])  # the first in index order; any, unsorted
        pending[COUNT] += 1
        if doc.get("expire_at") is not None:
            pending["expire_at"] = max(pending.get("expire_at", doc["expire_at"]), doc["expire_at"])
    return done, pending


def _stored_plan(names: CollectionNames, thread_ids: list[str]) -> Plan[dict[str, dict[str, Any]]]:
    """The stored summaries of ``thread_ids``, by thread id (one ``find`` by ``_id``)."""
    query = keys_filter((t, SUMMARY_NS, None) for t in thread_ids)
    found = yield from ask(Find(names.checkpoints, query, _STORED_FIELDS))
    return {d["thread_id"]: d for d in found}


def _verdict(stored: Mapping[str, Any] | None, folded: Mapping[str, Any]) -> str:
    """``"missing"``, ``"short"`` (behind what was read: fewer checkpoints, or an older latest), ``"past"``
    (a later checkpoint was counted since the read: its count may have started afresh) or ``"held"``."""
    if stored is None:
        return "missing"
    latest, count = stored.get(LATEST), stored.get(COUNT)
    if not isinstance(latest, str) or not isinstance(count, int) or latest < folded[LATEST]:
        return "short"
    if latest > folded[LATEST]:
        return "past"
    return "short" if count < folded[COUNT] else "held"


def _compare_plan(names: CollectionNames, folded: list[dict[str, Any]], drift: Drift, repair: bool) -> Plan[None]:
    """Compare the ``folded`` summaries of one page with the stored ones; note and (``repair``) rewrite drift."""
    if not folded:
        return
    stored = yield from _stored_plan(names, [s["thread_id"] for s in folded])
    drift.threads += len(folded)
    behind, past = [], []
    for summary in folded:
        verdict = _verdict(stored.get(summary["thread_id"]), summary)
        if verdict in ("missing", "short"):
            drift.note(summary["thread_id"], stored.get(summary["thread_id"]))
            behind.append(summary)
        elif verdict == "past":
            past.append(summary["thread_id"])
    if not repair:
        return
    if behind:
        yield Upsert(names.checkpoints, [_raised_to(s) for s in behind])
        again = yield from _stored_plan(names, [s["thread_id"] for s in behind])
        past += [s["thread_id"] for s in behind if _verdict(again.get(s["thread_id"]), s) != "held"]
        drift.repaired += len(behind)
    for thread_id in past:
        if not (yield from _recount_plan(names, thread_id)):
            drift.unsettled.append(thread_id)


def _raise_to(summary: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The filter and the update that raise a thread's summary to ``summary`` (what was read), unless a later
    checkpoint was counted since: ``latest`` never moves back, nor the expiry."""
    expiry = {"expire_at": summary["expire_at"]} if "expire_at" in summary else {}
    return (
        {**summary_filter(summary["thread_id"]), LATEST: {"$lte": summary[LATEST]}},
        {
            "$set": {"thread_id": summary["thread_id"], "checkpoint_ns": SUMMARY_NS, COUNT: summary[COUNT]},
            "$max": {LATEST: summary[LATEST], **expiry},
        },
    )


def _raised_to(summary: Mapping[str, Any]) -> UpdateOne:
    """``_raise_to`` as an upsert: a summary past it makes it a duplicate key, which ``Upsert`` ignores (the
    caller then counts again)."""
    return UpdateOne(*_raise_to(summary), upsert=True)


def _recount_plan(names: CollectionNames, thread_id: str) -> Plan[bool]:
    """Count the thread's root checkpoints and set its summary to the count, on the condition that no later one
    was counted since: else count again, ``RECOUNTS`` times at most. A ``put`` counts only checkpoints past the
    summary's ``latest``, so once this write holds, every ``put`` after it adds to a count that includes all
    before it.

    Returns:
        Whether the summary now holds a count (False: it names a later ``latest`` every time, left as it is).
    """
    for _ in range(RECOUNTS):
        docs = yield from ask(Find(names.checkpoints, {"thread_id": thread_id, "checkpoint_ns": ""}, _ROOT_FIELDS))
        _, summary = _fold(docs, None)
        if summary is None:
            return True  # deleted meanwhile: nothing to count
        if (yield from ask(FencedUpdate(names.checkpoints, *_raise_to(summary)))):
            return True
        created = {"_id": summary_id(thread_id), **summary, "checkpoint_ns": SUMMARY_NS}
        if (yield from ask(InsertOne(names.checkpoints, created))):
            return True  # there was none: a put racing it would have made one, so this one holds every checkpoint
    return False


def unsummarized_plan(
    names: CollectionNames, id_range: Mapping[str, Any], summarized: list[Any], limit: int
) -> Plan[list[dict[str, Any]]]:
    """The threads whose id is within ``id_range`` (a ``thread_id`` condition) that have root checkpoints but no
    summary (none among ``summarized``, the ids of the summaries the range holds, and none under their summary's
    ``_id``: a summary damaged by hand is the lists' to report), in id order, at most ``limit``, each as the
    summary it should have.

    One ``find`` served by the checkpoints' key index (it finds nothing where no summary is missing), then
    two more per such thread (its root checkpoints beside its summary, and the next such thread).
    """
    found: list[dict[str, Any]] = []
    condition = dict(id_range)
    while len(found) < limit:
        query = {"checkpoint_ns": "", "thread_id": {**condition, "$nin": summarized}}
        first = Find(names.checkpoints, query, {"_id": 0, "thread_id": 1}, sort=[("thread_id", 1)], limit=1)
        hit = yield from ask(first)
        if not hit:
            break
        thread_id = hit[0]["thread_id"]
        docs, damaged = yield from ask(Gather((
            Find(names.checkpoints, {"thread_id": thread_id, "checkpoint_ns": ""}, {"_id": 0, "checkpoint_id": 1}),
            # by _id alone: a summary whose thread_id was damaged by hand still counts (the lists report it)
            Find(names.checkpoints, {"_id": summary_id(thread_id)}, {"_id": 1}, limit=1),
        )))
        if docs and not damaged:
            found.append({"thread_id": thread_id, LATEST: max(d["checkpoint_id"] for d in docs), COUNT: len(docs)})
        condition.pop("$gte", None)
        condition["$gt"] = thread_id
    return found
