"""The queries of the thread views, as plans: each names one thread, or is bounded by one page of thread ids.

The thread list (``thread_page_plan``: the web inspector's and the CLI's) reads one page of thread summaries
(``summaries_page_plan``, ``thread_summaries.py``): one small document per thread, in id order, and the threads of
the page's range whose summary is missing (``summary_drift``).

``thread_page_plan`` reads one page of the thread list in at most three round trips whatever the number of
threads: the page's summaries; then, side by side, its latest root checkpoints (by ``_id``), run locks (by
``thread_id``), its threads' finished journal entries counted by status on the server and their unfinished
ones; and, for threads with tasks, the pending writes of their latest
checkpoint (who wrote which channel). ``thread_plan`` reads one thread: its root checkpoints (latest
first, ``limit``), their writes' task paths and channels (never their values), its journal entries and its
run lock.

Thread ids and prefixes are values in these filters, never field names, and are checked to be strings
before the first request, so no input can become an operator or a field path.
"""

from __future__ import annotations

from typing import Any

from .._bson import document_problem, key_id, require_str
from .._langgraph import checkpoint_tasks
from ..checkpointer.documents import STORED_CHANNELS_PROJECTION, stored_channels
from ..errors import InvalidInputError
from ..journal.labels import labelled
from ..storage.plans.requests import Aggregate, Find, Gather, Plan, ask
from ..storage.schema import CollectionNames
from ..storage.summary_drift import unsummarized_plan
from ..storage.thread_summaries import SUMMARY_NS, SUMMARY_PROJECTION
from .states import finished_state

#: What the views read of a root checkpoint: never its serialized checkpoint or values, only channel names
#: (``stored_channels``).
CHECKPOINT_PROJECTION = {
    "_id": 0, "thread_id": 1, "checkpoint_id": 1, "parent_checkpoint_id": 1, "ts": 1,
    "metadata.step": 1, "metadata.source": 1, **STORED_CHANNELS_PROJECTION,
}
#: What the thread list reads of a journal entry: enough to tell its state.
ENTRY_STATE_PROJECTION = {
    "_id": 0, "thread_id": 1, "status": 1, "lease_until": 1, "owner": 1, "owner_host": 1,
    "owner_pid": 1, "owner_process": 1, "at_most_once": 1, "not_run": 1,
}
#: What the views read of a pending write: who wrote which channel, never the value.
WRITE_PROJECTION = {"_id": 0, "thread_id": 1, "checkpoint_id": 1, "task_id": 1, "task_path": 1, "channel": 1}
#: The statuses of an entry whose state its status (and a failure's type) tells (``states.effect_state``): counted,
#: not read, by status and error type (a failure that is LangGraph's ``interrupt()`` counts as ``interrupted``).
FINISHED = ("completed", "failed")
FINISHED_GROUP = {"status": "$status", "type": "$error.type", "module": "$error.module"}
#: The most threads one page lists.
MAX_PAGE = 500
#: The most root checkpoints a thread's timeline shows, latest first.
TIMELINE_LIMIT = 200
#: Journal entries on one page of a thread (``thread_plan``'s ``page``).
ENTRIES_PAGE = 200
#: The last page number asked for that is checked against the thread, not refused outright (a bigger one is
#: a typo or a probe: 100,000 pages of 200 is more entries than any thread holds).
MAX_ENTRIES_PAGE = 100_000
#: The entries not completed (failed, or claimed and never finished) a thread's page reads, latest first, in one
#: query: the unfinished among them are counted by state and shown, so a thread with more says so.
OPEN_SHOWN = 1_000
#: The failed entries a thread's page reads to say why it stopped, latest first.
FAILED_SHOWN = 20


def thread_id_range(prefix: str, after: str | None) -> dict[str, Any]:
    """The ``thread_id`` condition of ids starting with ``prefix`` that sort after ``after``.

    Args:
        prefix: the ids' common start ("" for every id).
        after: the last id of the previous page, or None for the first page.

    Returns:
        A condition of ``$gte``/``$lt``/``$gt`` on string values, or ``{}`` for every id.

    Raises:
        InvalidInputError: ``prefix`` or ``after`` is not a string, or holds a lone surrogate (no UTF-8 for it).
    """
    condition: dict[str, Any] = {}
    if require_text("prefix", prefix):
        condition["$gte"] = prefix
        past = past_prefix(prefix)
        if past is not None:
            condition["$lt"] = past
    if after is not None:
        condition["$gt"] = require_text("after", after)
    return {"thread_id": condition} if condition else {}


def require_text(name: str, value: Any, *, allow_empty: bool = True) -> str:
    """``value`` if it is a string BSON can hold (UTF-8: no lone surrogate), else ``InvalidInputError``.

    Args:
        name: what ``value`` is, for the message.
        value: the input.
        allow_empty: whether "" is accepted.

    Returns:
        ``value``.

    Raises:
        InvalidInputError: ``value`` is not a string, is empty (unless ``allow_empty``), or is not valid Unicode.
    """
    text = require_str(name, value, allow_empty=allow_empty)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidInputError(
            f"{name} holds a lone surrogate at {error.start} ({value!r:.80}): not text MongoDB can store"
        ) from None
    return text


def past_prefix(prefix: str) -> str | None:
    r"""The first string that sorts after every string starting with ``prefix`` (code point order, as MongoDB's
    UTF-8 byte order), or None when none does (``prefix`` is all U+10FFFF).

    The last character below U+10FFFF is raised by one, past the surrogates (U+D7FF is followed by U+E000:
    a surrogate has no UTF-8), and every U+10FFFF after it is dropped.

    >>> past_prefix("ab"), past_prefix("a\U0010ffff"), past_prefix("a\ud7ff"), past_prefix("\U0010ffff")
    ('ac', 'b', 'a\ue000', None)
    """
    kept = prefix.rstrip("\U0010ffff")
    if not kept:
        return None
    following = ord(kept[-1]) + 1
    return kept[:-1] + chr(0xE000 if 0xD800 <= following <= 0xDFFF else following)


def require_entries_page(page: Any) -> int:
    """``page`` if it is a page number of a thread's entries (1 to ``MAX_ENTRIES_PAGE``), else ``InvalidInputError``.

    Args:
        page: the input.

    Returns:
        ``page``.

    Raises:
        InvalidInputError: ``page`` is not an integer in range (a bool is not one).
    """
    if isinstance(page, bool) or not isinstance(page, int) or not 1 <= page <= MAX_ENTRIES_PAGE:
        raise InvalidInputError(f"page must be an integer from 1 to {MAX_ENTRIES_PAGE}, got {page!r:.40}")
    return page


def _page_size(limit: Any) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InvalidInputError(f"limit must be an integer from 1 to {MAX_PAGE}, got {limit!r}")
    return limit


def summaries_page_plan(
    names: CollectionNames, prefix: str = "", after: str | None = None, limit: int = 50
) -> Plan[tuple[list[dict[str, Any]], bool]]:
    """One page of thread summaries (``thread_summaries.py``) in ``thread_id`` order: one ``find`` of one small
    document per listed thread, whatever the number of checkpoints, and one that finds the threads of the page's
    range with root checkpoints and no summary (``summary_drift.unsummarized_plan``), listed as if they had one.

    Args:
        names: the collection names.
        prefix: list only ids starting with it.
        after: list only ids sorting after it (the last id of the previous page).
        limit: the most threads listed (1 to ``MAX_PAGE``; one more is read to tell whether more follow).

    Returns:
        ``(summaries, more)``: ``[{"thread_id", "latest", "checkpoints"}]`` (``SUMMARY_PROJECTION``), and
        whether more threads follow. A ``thread_id`` may be a non-string (stored by hand): the caller reports it.

    Raises:
        InvalidInputError: ``prefix`` or ``after`` is not a string, or ``limit`` is out of range.
    """
    # the namespace first: a server matching a collection scan in key order (mongo-java-server) then tests the
    # id range only on summaries. That server orders strings by UTF-16 code units, not code points: its range of
    # a prefix ending in U+10000 or above also holds ids of U+E000 to U+FFFF, which are left out below
    id_range = thread_id_range(prefix, after)
    query = {"checkpoint_ns": SUMMARY_NS, **id_range}
    found = yield from ask(
        Find(names.checkpoints, query, SUMMARY_PROJECTION, sort=[("thread_id", 1)], limit=_page_size(limit) + 1)
    )
    condition = dict(id_range.get("thread_id", {}))
    if len(found) > limit and isinstance(found[limit].get("thread_id"), str):
        condition["$lt"] = min(condition.get("$lt", found[limit]["thread_id"]), found[limit]["thread_id"])
    missing = yield from unsummarized_plan(names, condition, [s.get("thread_id") for s in found], limit + 1)
    listed = sorted(found + missing, key=_in_id_order) if missing else found
    listed = [s for s in listed if not isinstance(s.get("thread_id"), str) or s["thread_id"].startswith(prefix)]
    return listed[:limit], len(listed) > limit


def _in_id_order(summary: dict[str, Any]) -> tuple[int, str]:
    """Where a summary sorts by ``thread_id`` as the server sorts it: numbers, then strings, then the rest."""
    thread_id = summary.get("thread_id")
    if isinstance(thread_id, str):
        return 1, thread_id
    return (0, "") if isinstance(thread_id, (int, float)) and not isinstance(thread_id, bool) else (2, "")


def thread_id_problem_plan(names: CollectionNames, thread_id: Any) -> Plan[str]:
    """The problem of the thread summary stored under a ``thread_id`` that is not a string, naming it."""
    # $eq: a thread_id stored as a document such as {"$gt": ""} must not become an operator here
    docs = yield from ask(
        Find(names.checkpoints, {"thread_id": {"$eq": thread_id}, "checkpoint_ns": SUMMARY_NS}, limit=1)
    )
    doc = docs[0] if docs else {"thread_id": thread_id}
    return str(document_problem(names.checkpoints, doc, {"thread_id": (str,)}))


def thread_page_plan(
    names: CollectionNames, prefix: str = "", after: str | None = None, limit: int = 50
) -> Plan[dict[str, Any]]:
    """One page of threads in id order, with what their state is made of.

    Args:
        names: the collection names.
        prefix: list only ids starting with it.
        after: list only ids sorting after it (the last id of the previous page).
        limit: the most threads listed (1 to ``MAX_PAGE``).

    Returns:
        ``{"summaries": [{"thread_id", "latest", "checkpoints"}], "more", "latest": {thread_id: checkpoint},
        "locks": {thread_id: lock}, "entries": [entry not finished], "finished": {thread_id: {status: count}},
        "written": {thread_id: [write, ...]}, "problems": [the problem of each summary whose thread_id is not a
        string]}``: finished entries (completed, failed) are counted by the server,
        so the page reads documents in proportion to its threads, not to their journals; a summary's
        ``thread_id`` may be a non-string (stored by hand): the caller reports it.

    Raises:
        InvalidInputError: ``prefix`` or ``after`` is not a string, or ``limit`` is out of range.
    """
    summaries, more = yield from summaries_page_plan(names, prefix, after, limit)
    listed = [s for s in summaries if isinstance(s.get("thread_id"), str)]
    page: dict[str, Any] = {
        "summaries": summaries, "more": more, "latest": {}, "locks": {}, "entries": [], "finished": {}, "written": {},
        "problems": [],
    }
    for unlisted in (s for s in summaries if s not in listed):
        page["problems"].append((yield from thread_id_problem_plan(names, unlisted.get("thread_id"))))
    if not listed:
        return page
    ids = [s["thread_id"] for s in listed]
    entries = {"thread_id": {"$in": ids}, "chunk": 0}
    latest_docs, locks, finished, unfinished = yield from ask(Gather((
        Find(names.checkpoints, {"_id": {"$in": latest_keys(listed)}}, CHECKPOINT_PROJECTION),
        Find(names.runs, {"thread_id": {"$in": ids}}, {"_id": 0}),
        Aggregate(names.journal, [
            {"$match": {**entries, "status": {"$in": list(FINISHED)}}},
            {"$group": {"_id": {"thread_id": "$thread_id", **FINISHED_GROUP}, "n": {"$sum": 1}}},
        ]),
        Find(names.journal, {**entries, "status": {"$nin": list(FINISHED)}}, ENTRY_STATE_PROJECTION),
    )))
    page["latest"] = by_thread(latest_docs)
    page["locks"] = {doc["thread_id"]: doc for doc in locks}
    page["entries"] = unfinished
    for group in finished:
        by_state = page["finished"].setdefault(group["_id"]["thread_id"], {})
        state = finished_group_state(group["_id"])
        by_state[state] = by_state.get(state, 0) + group["n"]
    page["written"] = yield from _due_writes_plan(names, ids, page["latest"])
    return page


def finished_group_state(group: dict[str, Any]) -> str:
    """The effect state of a group of finished entries counted by ``FINISHED_GROUP``."""
    return finished_state(str(group.get("status")), group.get("type"), group.get("module"))


def _finished(groups: list[dict[str, Any]]) -> dict[str, int]:
    """``{state: count}`` of a thread's finished entries, from their groups (``FINISHED_GROUP``)."""
    counts: dict[str, int] = {}
    for group in groups:
        state = finished_group_state(group["_id"])
        counts[state] = counts.get(state, 0) + group["n"]
    return counts


def by_thread(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``docs`` by their ``thread_id`` (one whose ``thread_id`` was edited into a non-string is left out)."""
    return {doc["thread_id"]: doc for doc in docs if isinstance(doc.get("thread_id"), str)}


def latest_keys(summaries: list[dict[str, Any]]) -> list[str]:
    """The ``_id`` of the latest root checkpoint of each of ``summaries`` that names one."""
    return [
        key_id(s["thread_id"], "", s["latest"]) for s in summaries if isinstance(s.get("latest"), str) and s["latest"]
    ]


def _due_writes_plan(
    names: CollectionNames, ids: list[str], latest_docs: dict[str, dict[str, Any]]
) -> Plan[dict[str, list[dict[str, Any]]]]:
    """``{thread_id: [write, ...]}``: the pending writes (who wrote which channel, never the value) of the latest
    checkpoint of each listed thread (``latest_docs``, by thread) that has tasks (``checkpoint_tasks``)."""
    due = [
        doc.get("checkpoint_id")
        for doc in latest_docs.values()
        if checkpoint_tasks(stored_channels(doc, holding=True), None)
    ]
    if not due:
        return {}
    span = {"thread_id": {"$gte": ids[0], "$lte": ids[-1]}}
    writes = yield from ask(
        Find(names.writes, {**span, "checkpoint_ns": "", "checkpoint_id": {"$in": due}}, WRITE_PROJECTION)
    )
    written: dict[str, list[dict[str, Any]]] = {}
    for write in writes:
        thread_id: Any = write.get("thread_id")  # any stored value: one not a string has no latest checkpoint here
        if latest_docs.get(thread_id, {}).get("checkpoint_id") == write.get("checkpoint_id"):
            written.setdefault(write["thread_id"], []).append(write)
    return written


def thread_plan(
    names: CollectionNames, thread_id: str, *, with_outcomes: bool = False, limit: int = TIMELINE_LIMIT, page: int = 1,
) -> Plan[dict[str, Any] | None]:
    """What one thread is made of: its latest ``limit`` root checkpoints, their writes (paths and channels),
    one page of its journal entries (``ENTRIES_PAGE``, in the order they were claimed: ``_id``), its entries'
    counts by status (counted by the server), its latest entries not completed (unfinished or failed), and its
    run lock: the documents read grow with the page, not with the journal.

    Args:
        names: the collection names.
        thread_id: the thread.
        with_outcomes: read each entry's serialized outcome (``outcome.data``) too.
        limit: the most root checkpoints read, latest first (one more tells whether older ones exist).
        page: which page of entries (from 1).

    Returns:
        ``{"checkpoints": [...latest first], "writes": [...], "entries": [...this page], "labelled" (whether paths
        read as labels: on the first page; ``page_labels``), "more_entries", "finished": {status: count},
        "unfinished": [...those among the latest ``OPEN_SHOWN`` entries not completed, in the order claimed],
        "more_open" (whether more entries are not completed than were read), "failed": [...the latest
        ``FAILED_SHOWN`` of those read, latest first], "lock": doc or None}``,
        or None when the thread has no checkpoint and no journal entry.

    Raises:
        InvalidInputError: ``thread_id`` is not a non-empty string, or ``limit`` or ``page`` is out of range.
    """
    require_text("thread_id", thread_id, allow_empty=False)
    _page_size(limit)
    skip = (require_entries_page(page) - 1) * ENTRIES_PAGE
    entry = {"thread_id": thread_id, "chunk": 0}
    shown = {"_id": 0} if with_outcomes else {"_id": 0, "outcome.data": 0}
    checkpoints, entries, counted, open_entries, locks = yield from ask(Gather((
        Find(names.checkpoints, {"thread_id": thread_id, "checkpoint_ns": ""}, CHECKPOINT_PROJECTION,
             sort=[("checkpoint_id", -1)], limit=limit + 1),
        Aggregate(names.journal, [
            {"$match": entry}, {"$sort": {"_id": 1}}, {"$skip": skip}, {"$limit": ENTRIES_PAGE + 1},
            {"$project": shown},
        ]),
        Aggregate(names.journal, [
            {"$match": {**entry, "status": {"$in": list(FINISHED)}}},
            {"$group": {"_id": FINISHED_GROUP, "n": {"$sum": 1}}},
        ]),
        Find(names.journal, {**entry, "status": {"$ne": "completed"}}, {"_id": 0, "outcome.data": 0},
             sort=[("_id", -1)], limit=OPEN_SHOWN + 1),
        Find(names.runs, {"thread_id": thread_id}, {"_id": 0}, limit=1),
    )))
    if not checkpoints and not entries and not skip:
        subgraph_only = yield from ask(Find(names.checkpoints, {"thread_id": thread_id}, {"_id": 1}, limit=1))
        if not subgraph_only:
            return None
    ids = [doc["checkpoint_id"] for doc in checkpoints if isinstance(doc.get("checkpoint_id"), str)]
    of_checkpoints = {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": {"$in": ids}}
    writes = (yield from ask(Find(names.writes, of_checkpoints, WRITE_PROJECTION))) if ids else []
    latest = open_entries[:OPEN_SHOWN]
    failed = [e for e in latest if e.get("status") == "failed"][:FAILED_SHOWN]
    unfinished = [e for e in reversed(latest) if e.get("status") != "failed"]  # in the order claimed
    page_entries, unfinished, failed = page_labels(entries[:ENTRIES_PAGE], unfinished, failed, first_page=not skip)
    return {
        "checkpoints": checkpoints, "writes": writes, "entries": page_entries,
        "labelled": _labelled(page_entries, not skip),
        "more_entries": len(entries) > ENTRIES_PAGE, "finished": _finished(counted),
        "unfinished": unfinished, "more_open": len(open_entries) > OPEN_SHOWN, "failed": failed,
        "lock": locks[0] if locks else None,
    }


def _labelled(entries: list[dict[str, Any]], first_page: bool) -> bool:
    """Whether every visit of a page reads as its label: on the first page, or when each of its entries stores one."""
    return first_page or all("visit" in e for e in entries if "root_key" in e)


def page_labels(
    page: list[dict[str, Any]], *others: list[dict[str, Any]], first_page: bool
) -> tuple[list[dict[str, Any]], ...]:
    """The entries of one page, and ``others`` of the same thread, with their labels: the label each stores, and,
    for an entry stored without one (written before labels were stored), the one the page proves.

    An entry without a stored label is numbered among the visits of its sequence claimed before it
    (``journal.labels``), exact when counted over the thread's first entries: on the first page, each entry of
    ``others`` whose visit is on the page reads that label. On a later page the earlier visits are not read, so such
    an entry keeps its stored key rather than show a number counted from the page's middle.
    """
    shown = labelled(page, number=first_page)
    by_visit = {(e["visit"]["path"], e["node"], e["visit"]["occurrence"]): e for e in shown if "visit" in e}

    def label(entry: dict[str, Any]) -> dict[str, Any]:
        named = by_visit.get((entry.get("path"), entry.get("node"), entry.get("occurrence")))
        if named is None:
            return labelled([entry], number=False)[0]
        return {**entry, "path": named["path"], "occurrence": named["occurrence"], "visit": named["visit"]}

    return (shown, *([label(entry) for entry in entries] for entries in others))
