"""The thread summary: one small document per thread, so that a list of threads reads one document per thread.

It lives in the ``checkpoints`` collection, under a namespace no checkpoint can have (``SUMMARY_NS``)::

    {"_id": '["t1","#thread",null]', "thread_id": "t1", "checkpoint_ns": "#thread",
     "latest": "<id of the thread's latest root checkpoint>", "checkpoints": <root checkpoints>,
     "expire_at": ...}

Why there: the root ``put`` keeps it in its own command (one more operation in the same ``update``), so a
durable turn costs no command for it; a collection of its own would cost one per checkpoint. It is a
per-thread document like any other of ``checkpoints``: ``delete_thread``, ``copy_thread``, the TTL and the
sweep treat it with its thread. Each query of checkpoints that names no namespace leaves it out
(``NOT_SUMMARY``), and a namespace given as input may not be ``SUMMARY_NS`` (``require_checkpoint_ns``).

The ``put`` counts a root checkpoint only when its id is above the summary's ``latest`` (LangGraph's
checkpoint ids grow with time): a retried ``put`` finds the summary already past it, its upsert meets the
summary's ``_id`` and the duplicate key is ignored (``Upsert``), so it counts once. ``prune`` and
``delete_for_runs`` subtract what they delete (``pruned_update``).

A database of storage format 1 has no summaries; ``summary_drift.build_plan`` writes them
(``storage.format.MIGRATIONS``), and ``summary_drift`` finds and repairs a summary that drifted since.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pymongo import UpdateOne

from .._bson import key_id, require_str
from ..errors import InvalidInputError
from .schema import key_filter

#: The namespace of the summary documents. Not one LangGraph writes: each of its namespaces is "" or holds a ":".
SUMMARY_NS = "#thread"
#: The fields of a summary: its thread's latest root checkpoint id, and its count of root checkpoints.
LATEST, COUNT = "latest", "checkpoints"
#: The condition on ``checkpoint_ns`` of a query of checkpoints that names no namespace.
NOT_SUMMARY = {"$ne": SUMMARY_NS}
#: What the lists read of a summary.
SUMMARY_PROJECTION = {"_id": 0, "thread_id": 1, LATEST: 1, COUNT: 1}
#: Root checkpoints read per page while comparing or building the summaries of a database (``summary_drift``).
BUILD_PAGE = 10_000


def summary_id(thread_id: str) -> str:
    """The ``_id`` of the thread's summary: the key of a checkpoint document, as ``copy_thread`` rebuilds it."""
    return key_id(thread_id, SUMMARY_NS, None)


def summary_filter(thread_id: str) -> dict[str, Any]:
    """The filter naming the thread's summary: its ``_id``, its thread and namespace (``schema.key_filter``)."""
    return key_filter(thread_id, SUMMARY_NS, None)


def require_checkpoint_ns(value: Any) -> str:
    """``value`` as a checkpoint namespace given as input.

    Raises:
        InvalidInputError: it is not a string, or it is ``SUMMARY_NS``.
    """
    checkpoint_ns = require_str("checkpoint_ns", value)
    if checkpoint_ns == SUMMARY_NS:
        raise InvalidInputError(
            f"checkpoint_ns {SUMMARY_NS!r} is reserved for the thread summaries; use another namespace"
        )
    return checkpoint_ns


def summary_update(thread_id: str, checkpoint_id: str, expiry: Mapping[str, Any]) -> UpdateOne:
    """The operation a root ``put`` adds to its own: count checkpoint ``checkpoint_id`` if it is the latest yet.

    A summary already at or past ``checkpoint_id`` does not match; the upsert then meets its ``_id``, a
    duplicate key the ``Upsert`` request ignores.
    """
    return UpdateOne(
        {**summary_filter(thread_id), LATEST: {"$lt": checkpoint_id}},
        {
            "$set": {"thread_id": thread_id, "checkpoint_ns": SUMMARY_NS, LATEST: checkpoint_id, **expiry},
            "$inc": {COUNT: 1},
        },
        upsert=True,
    )


def pruned_update(thread_id: str, deleted: int, latest: str | None) -> UpdateOne:
    """The summary of a thread ``deleted`` of whose root checkpoints were deleted: ``latest``, the latest left
    ("" for none), when the latest was deleted, else None. Never creates one.

    Counted down, not set: a checkpoint ``put`` meanwhile stays counted.
    """
    update: dict[str, Any] = {"$inc": {COUNT: -deleted}}
    if latest is not None:
        update["$set"] = {LATEST: latest}
    return UpdateOne(summary_filter(thread_id), update, upsert=False)
