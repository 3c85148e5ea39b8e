"""The queries of the thread views, as plans: each names one thread, or is bounded by one page of thread ids.

``thread_groups_plan`` is the one aggregate of both thread lists, the web inspector's (``thread_page_plan``) and
the CLI's (``documents.thread_summaries_plan``): one page of checkpoints grouped by thread on the server, in id
order, with a ``find`` per listed thread where ``$group`` takes no ``$max`` (FerretDB 1.x).

``thread_page_plan`` reads one page of the thread list in at most five commands whatever the number of
threads (where ``$group`` takes ``$max``): one ``aggregate`` groups the root checkpoints of the page's id
range, then the page's latest root checkpoints (by ``_id``), run locks (by ``thread_id``), journal entries
(the page's id range on the ``thread_status`` index) and, for threads with tasks still due, the error and
interrupt writes of their latest checkpoint. ``thread_plan`` reads one thread: its root checkpoints (latest
first, ``limit``), their writes' task paths and channels (never their values), its journal entries and its
run lock.

Thread ids and prefixes are values in these filters, never field names, and are checked to be strings
before the first request, so no input can become an operator or a field path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._bson import dotted_value, require_str
from .._plans.requests import Aggregate, Find, Gather, Plan
from ..checkpointer.documents import STORED_CHANNELS_PROJECTION, key_id, stored_channels
from ..errors import InvalidInputError
from ..schema import CHECKPOINT_INDEX_ORDER, CollectionNames
from .states import ERROR, INTERRUPT, due_nodes

#: What the views read of a root checkpoint: never its serialized checkpoint or values, only channel names
#: (``stored_channels``).
CHECKPOINT_PROJECTION = {
    "_id": 0, "thread_id": 1, "checkpoint_id": 1, "parent_checkpoint_id": 1, "ts": 1,
    "metadata.step": 1, "metadata.source": 1, **STORED_CHANNELS_PROJECTION, "ordinals": 1,
}
#: What the thread list reads of a journal entry: enough to tell its state.
ENTRY_STATE_PROJECTION = {
    "_id": 0, "thread_id": 1, "status": 1, "replays": 1, "lease_until": 1, "owner": 1, "owner_host": 1,
    "owner_pid": 1, "owner_process": 1, "at_most_once": 1, "not_run": 1,
}
#: What the views read of a pending write: who wrote which channel, never the value.
WRITE_PROJECTION = {"_id": 0, "thread_id": 1, "checkpoint_id": 1, "task_id": 1, "task_path": 1, "channel": 1}
#: The most threads one page lists.
MAX_PAGE = 500
#: The most root checkpoints a thread's timeline shows, latest first.
TIMELINE_LIMIT = 200


def thread_id_range(prefix: str, after: str | None) -> dict[str, Any]:
    """The ``thread_id`` condition of ids starting with ``prefix`` that sort after ``after``.

    Args:
        prefix: the ids' common start ("" for every id).
        after: the last id of the previous page, or None for the first page.

    Returns:
        A condition of ``$gte``/``$lt``/``$gt`` on string values, or ``{}`` for every id.

    Raises:
        InvalidInputError: ``prefix`` or ``after`` is not a string.
    """
    require_str("prefix", prefix)
    condition: dict[str, Any] = {}
    if prefix:
        condition["$gte"] = prefix
        last = prefix[-1]
        if ord(last) < 0x10FFFF:  # the first string past every id with this prefix
            condition["$lt"] = prefix[:-1] + chr(ord(last) + 1)
    if after is not None:
        condition["$gt"] = require_str("after", after)
    return {"thread_id": condition} if condition else {}


def _page_size(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit must be an integer from 1 to {MAX_PAGE}, got {limit!r}")
    return limit


def thread_groups_plan(
    names: CollectionNames,
    match: Mapping[str, Any],
    limit: int,
    *,
    maxes: Mapping[str, str] | None = None,
    firsts: Mapping[str, str] | None = None,
    group_max: bool = True,
) -> Plan:
    """One page of the thread list: the checkpoints ``match`` selects, grouped by ``thread_id`` on the server in
    id order, in one ``aggregate`` whose reply holds only the page (never every checkpoint to the client).

    Args:
        names: the collection names.
        match: the checkpoints grouped: a ``thread_id_range`` condition, and any other (``checkpoint_ns``).
        limit: the most groups on the page (one more is read to tell whether more follow).
        maxes: ``{name: field}``: each group's greatest value of ``field`` (``$max``), as ``name``.
        firsts: ``{name: field}``: ``field`` of each group's first checkpoint in ``CHECKPOINT_INDEX_ORDER``
            (``$first`` after a ``$sort`` the index serves), as ``name``.
        group_max: the server's ``$group`` takes ``$first`` and ``$max`` (``ServerQuirks.group_first_max``);
            else it only counts, and ``firsts`` and ``maxes`` are read for each listed thread by ``find`` on
            the index (one for ``firsts``, one per field of ``maxes``).

    Returns:
        ``(groups, more)``: ``[{"_id", "checkpoints", name: value, ...}]`` in ``_id`` order, and whether more
        threads follow. A group's ``_id`` may be a non-string ``thread_id`` (stored by hand): nothing more is
        read for it, the caller reports it.
    """
    maxes, firsts = dict(maxes or {}), dict(firsts or {})
    stages: list[dict[str, Any]] = [{"$match": dict(match)}]
    group: dict[str, Any] = {"_id": "$thread_id", "checkpoints": {"$sum": 1}}
    if group_max:
        group.update({name: {"$max": f"${field}"} for name, field in maxes.items()})
        group.update({name: {"$first": f"${field}"} for name, field in firsts.items()})
        if firsts:
            stages.append({"$sort": dict(CHECKPOINT_INDEX_ORDER)})
    grouped = yield Aggregate(names.checkpoints, [*stages, {"$group": group}, {"$sort": {"_id": 1}}, {"$limit": limit + 1}])
    groups = grouped[:limit]
    if not group_max:
        yield from _grouped_by_find_plan(names, match, groups, maxes, firsts)
    return groups, len(grouped) > limit


def _grouped_by_find_plan(
    names: CollectionNames, match: Mapping[str, Any], groups: list[dict[str, Any]], maxes: dict[str, str], firsts: dict[str, str]
) -> Plan:
    """What ``$group`` says where it cannot (``$first``, ``$max``: FerretDB 1.x), into ``groups``: a ``find`` by
    index per thread for its ``firsts``, and one per field of ``maxes``."""
    reads: list[tuple[dict[str, Any], dict[str, str], Find]] = []
    for group in (g for g in groups if isinstance(g["_id"], str)):
        query = {**match, "thread_id": group["_id"]}
        if firsts:
            projection = {"_id": 0, **dict.fromkeys(firsts.values(), 1)}
            reads.append((group, firsts, Find(names.checkpoints, query, projection, sort=list(CHECKPOINT_INDEX_ORDER), limit=1)))
        for name, field in maxes.items():
            reads.append((group, {name: field}, Find(names.checkpoints, query, {"_id": 0, field: 1}, sort=[(field, -1)], limit=1)))
    if not reads:
        return
    found = yield Gather(tuple(find for _, _, find in reads))
    for (group, fields, _), docs in zip(reads, found):
        group.update({name: dotted_value(docs[0] if docs else {}, field) for name, field in fields.items()})


def thread_page_plan(
    names: CollectionNames, prefix: str = "", after: str | None = None, limit: int = 50, *, group_max: bool = True
) -> Plan:
    """One page of threads in id order, with what their state is made of.

    Args:
        names: the collection names.
        prefix: list only ids starting with it.
        after: list only ids sorting after it (the last id of the previous page).
        limit: the most threads listed (1 to ``MAX_PAGE``).
        group_max: the server's ``$group`` takes ``$max`` (``ServerQuirks.group_first_max``); else one more
            ``find`` per listed thread reads the id of its latest root checkpoint.

    Returns:
        ``{"groups": [{"_id", "checkpoints", "latest"}], "more", "latest": {thread_id: checkpoint},
        "locks": {thread_id: lock}, "entries": [entry], "written": {thread_id: {channel, ...}}}``; a group's
        ``_id`` may be a non-string ``thread_id`` (stored by hand): the caller reports it.

    Raises:
        InvalidInputError: ``prefix`` or ``after`` is not a string, or ``limit`` is out of range.
    """
    match = {**thread_id_range(prefix, after), "checkpoint_ns": ""}
    limit = _page_size(limit)
    # checkpoint ids sort by time: a thread's greatest is its latest
    groups, more = yield from thread_groups_plan(names, match, limit, maxes={"latest": "checkpoint_id"}, group_max=group_max)
    ids = [g["_id"] for g in groups if isinstance(g["_id"], str)]
    page = {"groups": groups, "more": more, "latest": {}, "locks": {}, "entries": [], "written": {}}
    if ids:
        latest_docs = yield from _latest_roots_plan(names, groups)
        page["latest"] = {doc["thread_id"]: doc for doc in latest_docs}
        yield from _page_runs_plan(names, ids, page)
        page["written"] = yield from _due_writes_plan(names, ids, latest_docs)
    return page


def _page_runs_plan(names: CollectionNames, ids: list[str], page: dict[str, Any]) -> Plan:
    """The run locks and journal entries of a page's threads, into ``page``."""
    span = {"thread_id": {"$gte": ids[0], "$lte": ids[-1]}}
    locks, entries = yield Gather((
        Find(names.runs, {"thread_id": {"$in": ids}}, {"_id": 0}),
        Find(names.journal, {**span, "chunk": 0}, ENTRY_STATE_PROJECTION),
    ))
    page["locks"] = {doc["thread_id"]: doc for doc in locks}
    page["entries"] = [e for e in entries if e.get("thread_id") in page["latest"] or e.get("thread_id") in ids]


def _due_writes_plan(names: CollectionNames, ids: list[str], latest_docs: list[dict[str, Any]]) -> Plan:
    """``{thread_id: {channel, ...}}``: the error and interrupt writes of the latest checkpoint of each listed thread
    that has tasks still due."""
    due = [doc["checkpoint_id"] for doc in latest_docs if due_nodes(stored_channels(doc))]
    if not due:
        return {}
    span = {"thread_id": {"$gte": ids[0], "$lte": ids[-1]}}
    writes = yield Find(
        names.writes,
        {**span, "checkpoint_ns": "", "checkpoint_id": {"$in": due}, "channel": {"$in": [ERROR, INTERRUPT]}},
        WRITE_PROJECTION,
    )
    latest = {doc["thread_id"]: doc["checkpoint_id"] for doc in latest_docs}
    written: dict[str, set[str]] = {}
    for write in writes:
        if latest.get(write["thread_id"]) == write["checkpoint_id"]:
            written.setdefault(write["thread_id"], set()).add(write["channel"])
    return written


def _latest_roots_plan(names: CollectionNames, groups: list[dict[str, Any]]) -> Plan:
    """The latest root checkpoint of each listed thread, by ``_id`` from its group's ``latest``, in one ``find``."""
    keys = [key_id(g["_id"], "", g["latest"]) for g in groups if isinstance(g["_id"], str) and isinstance(g.get("latest"), str)]
    return (yield Find(names.checkpoints, {"_id": {"$in": keys}}, CHECKPOINT_PROJECTION))


def thread_plan(names: CollectionNames, thread_id: str, *, with_outcomes: bool = False, limit: int = TIMELINE_LIMIT) -> Plan:
    """What one thread is made of: its latest ``limit`` root checkpoints, their writes (paths and channels),
    its journal entries and its run lock.

    Args:
        names: the collection names.
        thread_id: the thread.
        with_outcomes: read each entry's serialized outcome (``outcome.data``) too.
        limit: the most root checkpoints read, latest first (one more tells whether older ones exist).

    Returns:
        ``{"checkpoints": [...latest first], "writes": [...], "entries": [...], "lock": doc or None}``, or
        None when the thread has no checkpoint and no journal entry.

    Raises:
        InvalidInputError: ``thread_id`` is not a non-empty string, or ``limit`` is out of range.
    """
    require_str("thread_id", thread_id, allow_empty=False)
    _page_size(limit)
    checkpoints, entries, locks = yield Gather((
        Find(names.checkpoints, {"thread_id": thread_id, "checkpoint_ns": ""}, CHECKPOINT_PROJECTION,
             sort=[("checkpoint_id", -1)], limit=limit + 1),
        Find(names.journal, {"thread_id": thread_id, "chunk": 0}, {"_id": 0} if with_outcomes else {"_id": 0, "outcome.data": 0}),
        Find(names.runs, {"thread_id": thread_id}, {"_id": 0}, limit=1),
    ))
    if not checkpoints and not entries:
        subgraph_only = yield Find(names.checkpoints, {"thread_id": thread_id}, {"_id": 1}, limit=1)
        if not subgraph_only:
            return None
    ids = [doc["checkpoint_id"] for doc in checkpoints]
    writes = (
        (yield Find(names.writes, {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": {"$in": ids}}, WRITE_PROJECTION))
        if ids else []
    )
    return {"checkpoints": checkpoints, "writes": writes, "entries": entries, "lock": locks[0] if locks else None}
