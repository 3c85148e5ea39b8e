"""``ThreadViews``: the thread list and one thread's page, read through the views' plans and shaped for people.

Everything returned is plain data (strings, numbers, lists, dicts, None), ready for JSON and for templates.
Text stored by the library (previews, error messages) is returned as stored: redacted when it was written.
A serialized outcome is read only with ``with_outcomes``; one the serde encrypted is shown as ``encrypted``.
The latest state's values are redacted as journal previews are (``redacted_values``), unless ``with_outcomes``:
the inspector never shows more than the CLI.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from .._langgraph import DUE_PREFIX, INTERRUPT, TASKS, ViewSerializer
from .._lru import LRU
from ..checkpointer import MongoDBCheckpointer
from ..checkpointer.documents import stored_channels
from ..errors import IncompatibleStorageError, InvalidInputError
from ..journal.redaction import credential_values
from ..storage.format import FORMAT_VERSION, StorageFormat, read_format_plan
from ..storage.plans import lease
from ..storage.plans.interpreters import SyncInterpreter
from ..storage.schema import CollectionNames
from ..storage.thread_summaries import COUNT
from ..storage.visit_keys import KEY, ROOT_PATH
from .effects import effect_view, holder, mapping, number, text
from .plans import MAX_PAGE, TIMELINE_LIMIT, require_text, thread_page_plan, thread_plan
from .runs import thread_runs
from .states import checkpoint_tasks_of, due_names, effect_counts, replayed, state_named, thread_state
from .stops import Namer, settle_commands, stop_writes_plan, why_stopped
from .tree import operation_tree
from .values import MAX_FULL_CHARS, full_text, redacted_values, shown


def require_our_format(db: Any, names: CollectionNames, *, upgrade: bool = True) -> None:
    """Refuse a database of a foreign format before reading it (MongoDBSaver's steps would show as msgpack), and
    upgrade one of an older version of ours (``storage.format.MIGRATIONS``: the lists read its thread summaries),
    or, read-only (``upgrade=False``), refuse it with the command that upgrades it: nothing is written.

    Args:
        db: the database.
        names: its collection names.
        upgrade: upgrade an older format (else refuse it).

    Raises:
        IncompatibleStorageError: the database holds a foreign format; the message names the fix
            (``import-mongodbsaver`` for MongoDBSaver's), as ``doctor`` and the library do. Or, read-only, an
            older format of ours: the message names ``upgrade_command``.
    """
    stored = SyncInterpreter(db).run(read_format_plan(names))
    if stored.foreign is not None:
        message = StorageFormat(db.name, names).foreign_message(stored).replace("nothing was written. ", "")
        raise IncompatibleStorageError(message, db_name=db.name, found=stored.describe())
    if stored.foreign is None and stored.has_data and (stored.version or 0) < FORMAT_VERSION:  # older: upgrade it first
        if not upgrade:
            raise IncompatibleStorageError(
                f"database {db.name!r} holds {stored.describe()}, older than version {FORMAT_VERSION}, and the "
                f"read-only inspector writes nothing: upgrade it once with `{upgrade_command(db.name)}` (any run of "
                "the library upgrades it too), then reload", db_name=db.name, found=stored.describe(),
            )
        SyncInterpreter(db).run(StorageFormat(db.name, names).check_plan())


def upgrade_command(db_name: str) -> str:
    """The command that upgrades ``db_name`` to this version's format and serves it: ``ui --allow-writes``.

    Args:
        db_name: the database.

    Returns:
        The command line, ``--db`` quoted for a shell.
    """
    return f"langgraph-durable-mongodb --db {shlex.quote(db_name)} ui --allow-writes"


def _nodes(writes: list[Mapping[str, Any]], namer: Namer) -> list[str]:
    """The nodes whose tasks wrote these writes, as the graph names them (``stops.Namer``)."""
    return sorted({namer.task(w)[0] for w in writes if w.get("task_path")})


def _sent(entries: list[Mapping[str, Any]]) -> dict[tuple[str, int], str]:
    """``{(root checkpoint id, Send index): node}`` of the root-level ``Send`` visits the entries hold (their stored
    occurrence is ``<checkpoint>.<index>``)."""
    sent = {}
    for entry in entries:
        visit = mapping(entry.get("visit")) or entry
        match = KEY.match(text(visit.get("occurrence")) or "")
        if (
            visit.get("path") == ROOT_PATH and match and match["index"] is not None
            and isinstance(entry.get("node"), str)
        ):
            sent[(match["base"], int(match["index"]))] = entry["node"]
    return sent


#: The most threads a list filtered by state judges in one answer.
MAX_SCANNED = 5_000
#: Latest states a reader keeps, decoded and shown (``ThreadViews._latest_state``).
STATES_KEPT = 16


class ThreadViews:
    """Reads threads for people on a sync client: the thread list, one thread, its latest state.

    Args:
        client: a sync client (``MongoClient``, mongomock).
        db_name: the database.
        names: its collection names.
        with_outcomes: also read and show each effect's serialized outcome (decoded; encrypted ones are
            shown as ``encrypted``).
        upgrade: upgrade a database of an older format before reading it; else (read-only, the default) refuse
            it with the command that does (``require_our_format``).
    """

    def __init__(
        self, client: Any, db_name: str, names: CollectionNames | None = None, *, with_outcomes: bool = False,
        upgrade: bool = False,
    ) -> None:
        self.names = names or CollectionNames()
        self.db = client[db_name]
        self.with_outcomes, self.upgrade = with_outcomes, upgrade
        self._io = SyncInterpreter(self.db)
        self._serde = ViewSerializer()  # shows what a document names, never constructs it
        self._states: LRU[tuple[str, Any], Any] = LRU(STATES_KEPT)
        self._lock = threading.Lock()
        self._saver = MongoDBCheckpointer(
            client, db_name=db_name, collections=self.names, auto_setup=False, serde=self._serde
        )

    def threads(
        self, prefix: str = "", after: str | None = None, limit: int = 50, state: str | None = None
    ) -> dict[str, Any]:
        """One page of threads in id order, those in ``state`` only when it is given.

        Args:
            prefix: list only thread ids starting with it.
            after: the last id of the previous page (``next_after`` of its answer).
            limit: threads per page (1 to 500).
            state: list only threads in this state (one of ``states.THREAD_STATES``, or its first word:
                ``unknown``, ``waiting``). The state is judged per thread, so the threads after ``after`` are read
                page by page (of ``limit``, then twice as many each time, up to ``plans.MAX_PAGE``) until ``limit``
                are found or ``MAX_SCANNED`` were judged: ``scanned`` says how many.

        Returns:
            ``{"threads": [{"thread_id", "updated", "step", "checkpoints" (root), "state", "due", "holder",
            "effects": {state: count}}], "more", "next_after", "problems", "scanned"}``.

        Raises:
            InvalidInputError: ``prefix`` or ``after`` is not a string, ``limit`` is out of range, or ``state`` is no
                state.
            IncompatibleStorageError: the database holds another format.
        """
        wanted = state_named(state)
        require_our_format(self.db, self.names, upgrade=self.upgrade)
        found: dict[str, Any] = {"threads": [], "problems": [], "scanned": 0, "more": False, "next_after": None}
        cursor, size = after, limit
        while True:
            page = self._io.run(thread_page_plan(self.names, prefix, cursor, size))
            found["problems"] += page["problems"]
            cursor, full = self._judged(page, wanted, limit, found)
            found["more"] = full or page["more"]
            if full or not page["more"] or wanted is None or found["scanned"] >= MAX_SCANNED:
                break
            size = min(2 * size, MAX_PAGE)  # a rare state: read more threads at a time
        found["next_after"] = cursor if found["more"] else None
        return found

    def _judged(
        self, page: Mapping[str, Any], wanted: str | None, limit: int, found: dict[str, Any]
    ) -> tuple[Any, bool]:
        """Add the rows of ``page`` in ``wanted`` (every row when None) to ``found``, until it holds ``limit``:
        ``(the last thread id judged, whether it is full with threads of the page left)``."""
        now, last = lease.utcnow(), None
        listed = [s for s in page["summaries"] if isinstance(s.get("thread_id"), str)]
        for n, summary in enumerate(listed, 1):
            last = summary["thread_id"]
            found["scanned"] += 1
            row = self._row(last, summary.get(COUNT), page, now)
            if wanted is None or row["state"] == wanted:
                found["threads"].append(row)
            if len(found["threads"]) == limit and wanted is not None:
                return last, n < len(listed) or page["more"]
        return last, False

    def status(self, thread_id: str) -> dict[str, Any] | None:
        """One thread's row of the thread list (its summary, latest checkpoint, lock and effect counts): what a live
        page polls, read in a few small documents whatever the thread's size.

        Args:
            thread_id: the thread.

        Returns:
            The row (``threads``), or None when the thread has no summary (no root checkpoint).

        Raises:
            InvalidInputError: ``thread_id`` is not a non-empty string.
            IncompatibleStorageError: the database holds another format.
        """
        require_text("thread_id", thread_id, allow_empty=False)
        rows = self.threads(prefix=thread_id, limit=1)["threads"]  # the id itself sorts first of those it starts
        return rows[0] if rows and rows[0]["thread_id"] == thread_id else None

    @staticmethod
    def _row(thread_id: str, checkpoints: Any, page: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        latest = page["latest"].get(thread_id, {})
        writes = page["written"].get(thread_id, [])
        # a Send's node: on the thread's page
        tasks = checkpoint_tasks_of(stored_channels(latest, holding=True), None, writes)
        lock = page["locks"].get(thread_id)
        counts = _with_finished(
            effect_counts([e for e in page["entries"] if e.get("thread_id") == thread_id], now),
            page["finished"].get(thread_id, {}),
        )
        state = thread_state(lock, tasks, [w.get("channel") for w in writes], counts, now)
        return {
            "thread_id": thread_id,
            "updated": text(latest.get("ts")),
            "step": number(mapping(latest.get("metadata")).get("step")),
            "checkpoints": number(checkpoints),
            "state": state,
            "due": due_names(tasks),
            "holder": holder(lock, now) if state in ("running", "waiting for a lock") and lock else None,
            "effects": counts,
        }

    def thread(self, thread_id: str, page: int = 1) -> dict[str, Any] | None:
        """One thread: its state, timeline of root checkpoints, one page of its operation tree, in-flight claims
        and values.

        Args:
            thread_id: the thread.
            page: which page of its journal entries (``plans.ENTRIES_PAGE`` each, in the order claimed) the
                operation tree shows, from 1.

        Returns:
            ``{"thread_id", "state", "holder", "due", "timeline", "older", "operations" (this page's), "page",
            "more_entries" (whether a next page exists), "labelled" (whether paths read as numbered labels, as on
            the first page, or as stored keys), "more_open" (whether more entries failed or never finished than
            ``plans.OPEN_SHOWN``: the unfinished among the latest are counted and shown), "claims", "effects"
            (counts by state of all its entries, as the thread list's), "replayed" (how many completed effects of
            this page a replay is proven of: ``states.replayed``), "values", "values_error", "stopped"}``
            (``stops.why_stopped``: its errors, interrupts, outcomes unknown and crashed run), or None when the
            thread has no checkpoint and no journal entry.

        Raises:
            InvalidInputError: ``thread_id`` is not a non-empty string, or ``page`` is not a page number.
            IncompatibleStorageError: the database holds another format.
        """
        require_our_format(self.db, self.names, upgrade=self.upgrade)
        found = self._io.run(thread_plan(self.names, thread_id, with_outcomes=self.with_outcomes, page=page))
        if found is None:
            return None
        now = lease.utcnow()
        checkpoints = found["checkpoints"][:TIMELINE_LIMIT]
        latest = checkpoints[0] if checkpoints else {}
        state_values, values_error, secrets, shown_values = self._latest_state(thread_id, latest.get("checkpoint_id"))
        latest_writes = [w for w in found["writes"] if w.get("checkpoint_id") == latest.get("checkpoint_id")]
        tasks = checkpoint_tasks_of(stored_channels(latest, holding=True), _sends(state_values), latest_writes)
        namer = Namer(tasks, _sent([*found["entries"], *found["unfinished"], *found["failed"]]))
        unfinished = [effect_view(entry, now, secrets) for entry in found["unfinished"]]
        counts = _with_finished(effect_counts(found["unfinished"], now), found["finished"])
        state = thread_state(found["lock"], tasks, [w.get("channel") for w in latest_writes], counts, now)
        timeline = _timeline(checkpoints, found["writes"], namer)
        effects = self._effects(found, timeline, now, secrets)
        stop_writes = self._io.run(
            stop_writes_plan(self.names, thread_id, latest.get("checkpoint_id"), found["writes"])
        )
        stopped = why_stopped(
            state, stop_writes, [*reversed([effect_view(e, now, secrets) for e in found["failed"]]), *unfinished],
            found["lock"], self._decode, namer, secrets=secrets, step_at=_when(latest.get("ts")),
            settle=settle_commands(self.db.name),
        )
        return {
            "thread_id": thread_id,
            "state": state,
            "holder": holder(found["lock"], now) if state in ("running", "waiting for a lock") else None,
            "due": due_names(tasks),
            "tasks": tasks,
            "runs": thread_runs(found["lock"], _once(effects, unfinished), timeline, state, now),
            "timeline": timeline,
            "older": len(found["checkpoints"]) > TIMELINE_LIMIT,
            "operations": operation_tree(effects, lambda e: e),
            "page": page,
            "more_entries": found["more_entries"],
            "labelled": found["labelled"],
            "more_open": found["more_open"],
            "claims": [e for e in unfinished if e["state"] == "in flight"],
            "effects": counts,
            "replayed": sum(1 for e in effects if e["replayed"]),
            "values": shown_values,
            "values_error": values_error,
            "stopped": stopped,
        }

    def _effects(
        self, found: Mapping[str, Any], timeline: list[dict[str, Any]], now: datetime, secrets: frozenset[str] | None
    ) -> list[dict[str, Any]]:
        """The thread's journal entries as its page shows them, each saying whether it was replayed."""
        effects = []
        for entry in found["entries"]:
            effect = effect_view(entry, now, secrets)
            effect["replayed"] = replayed(entry, found["lock"], timeline)
            effect["outcome"] = self._outcome(entry.get("outcome"), secrets) if self.with_outcomes else None
            effects.append(effect)
        return effects

    def _decode(self, write: Mapping[str, Any]) -> Any:
        """A pending write's value (one chunk), decoded; raises for an encrypted, chunked or unreadable one."""
        if "+" in str(write.get("type")) or write.get("n", 1) != 1:
            raise ValueError(f"stored as {write.get('type')!r} in {write.get('n', 1)} chunks")
        return self._serde.loads_typed((str(write.get("type")), bytes(write.get("data") or b"")))

    def _outcome(self, outcome: Any, secrets: frozenset[str] | None) -> dict[str, Any] | None:
        """The recorded outcome decoded (``with_outcomes``), or why it is not shown."""
        if not isinstance(outcome, Mapping) or not isinstance(outcome.get("data"), bytes):
            return None
        kind = str(outcome.get("type"))
        if "+" in kind:  # EncryptedSerializer's type: "<type>+<cipher>"
            return {"text": f"encrypted ({kind})", "folded": False, "summary": f"encrypted ({kind})"}
        if outcome.get("chunks", 1) != 1:
            note = f"large outcome in {outcome['chunks']} documents: read it with `journal THREAD --with-outcomes`"
            return {"text": note, "folded": False, "summary": note}
        try:
            return shown(self._serde.loads_typed((kind, outcome["data"])), secrets)
        except Exception as error:
            return {"text": f"unreadable ({type(error).__name__})", "folded": False, "summary": "unreadable"}

    def value(self, thread_id: str, channel: str) -> dict[str, Any] | None:
        """One channel value of a thread's latest state whole (the page shows it cut past ``MAX_SHOWN_CHARS``),
        redacted as the page's unless ``with_outcomes``, and refused past ``MAX_FULL_CHARS``.

        Args:
            thread_id: the thread.
            channel: the channel, as the page names it.

        Returns:
            ``{"thread_id", "channel", "chars", "text"}``, or None when the thread has no such value.

        Raises:
            InvalidInputError: ``thread_id`` or ``channel`` is not a non-empty string, or the value is longer
                than ``MAX_FULL_CHARS`` (read it with the library then).
            IncompatibleStorageError: the database holds another format.
        """
        require_text("thread_id", thread_id, allow_empty=False)
        require_text("channel", channel, allow_empty=False)
        require_our_format(self.db, self.names, upgrade=self.upgrade)
        values, _ = self._channel_values(thread_id)
        values.pop(TASKS, None)
        if channel not in values:
            return None
        text = full_text(values, channel, redacted=not self.with_outcomes)
        if len(text) > MAX_FULL_CHARS:
            raise InvalidInputError(
                f"the value of {channel!r} is {len(text)} characters, more than the inspector sends "
                f"({MAX_FULL_CHARS}): read it with the library (graph.get_state(config).values)"
            )
        return {"thread_id": thread_id, "channel": channel, "chars": len(text), "text": text}

    def _channel_values(self, thread_id: str) -> tuple[dict[str, Any], str | None]:
        """The latest root checkpoint's channel values (its ``Send`` packets included, LangGraph's other channels
        left out), or why they cannot be read."""
        try:
            found = self._saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        except Exception as error:
            return {}, (
                f"the latest state cannot be read here ({type(error).__name__}): encrypted, or written by another serde"
            )
        stored = found.checkpoint.get("channel_values", {}) if found else {}
        return {name: v for name, v in sorted(stored.items()) if name == TASKS or not _reserved(name)}, None

    def _latest_state(
        self, thread_id: str, checkpoint_id: Any
    ) -> tuple[dict[str, Any], str | None, frozenset[str] | None, dict[str, Any]]:
        """``(values, why they cannot be read, the credential values to scrub, the values as shown)`` of the thread's
        latest root checkpoint (``checkpoint_id``), kept for the checkpoints read last: a checkpoint never changes,
        and a page polled or opened again costs no decoding, walking or redaction of its state."""
        key = (thread_id, checkpoint_id)
        with self._lock:
            known = self._states.get(key)
        if known is None:
            values, error = self._channel_values(thread_id) if checkpoint_id is not None else ({}, None)
            secrets = None if self.with_outcomes else credential_values(values)
            known = (values, error, secrets, self._shown_values(values, secrets))
            with self._lock:
                self._states.put(key, known)
        return known

    def _shown_values(self, values: Mapping[str, Any], secrets: frozenset[str] | None) -> dict[str, Any]:
        """The state's values as the page shows them: whole (``with_outcomes``), or redacted as journal previews are
        and scrubbed of the thread's credential values."""
        values = {name: v for name, v in values.items() if name != TASKS}
        if secrets is None:
            return {name: shown(v) for name, v in values.items()}
        return redacted_values(values, secrets)


def _with_finished(counts: dict[str, int], finished: Mapping[str, int]) -> dict[str, int]:
    """``counts`` of the unfinished entries, with the server's counts of the finished ones (by status) added."""
    return {state: n + finished.get(state, 0) for state, n in counts.items()}


def _timeline(
    checkpoints: list[Mapping[str, Any]], writes: list[Mapping[str, Any]], namer: Namer
) -> list[dict[str, Any]]:
    """Root checkpoints, latest first: step, source, time, the nodes whose writes made it, what is due, whether it
    holds an interrupt, and whether it is a fork (its parent has more than one child)."""
    by_checkpoint: dict[Any, list[Mapping[str, Any]]] = {}
    for write in writes:
        by_checkpoint.setdefault(write.get("checkpoint_id"), []).append(write)
    children: dict[Any, int] = {}
    for doc in checkpoints:
        children[doc.get("parent_checkpoint_id")] = children.get(doc.get("parent_checkpoint_id"), 0) + 1
    rows = []
    for doc in checkpoints:
        own = by_checkpoint.get(doc.get("checkpoint_id"), [])
        metadata = mapping(doc.get("metadata"))
        rows.append({
            "checkpoint_id": text(doc.get("checkpoint_id")),
            "parent": text(doc.get("parent_checkpoint_id")),
            "step": number(metadata.get("step")),
            "source": text(metadata.get("source")),
            "ts": text(doc.get("ts")),
            "at": _when(doc.get("ts")),
            "wrote": _nodes(by_checkpoint.get(doc.get("parent_checkpoint_id"), []), namer),
            "due": _named_sends(due_names(checkpoint_tasks_of(stored_channels(doc, holding=True), None, own)),
                                namer.sent_to(doc.get("checkpoint_id"))),
            "interrupted": any(w.get("channel") == INTERRUPT for w in own),
            "fork": doc.get("parent_checkpoint_id") is not None and children[doc.get("parent_checkpoint_id")] > 1,
        })
    return rows


def _once(*effects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The effects of the lists, each position once (an entry of the page may be among those not completed too)."""
    seen, out = set(), []
    for effect in (e for listed in effects for e in listed):
        if effect["position"] is None or effect["position"] not in seen:
            seen.add(effect["position"])
            out.append(effect)
    return out


def _named_sends(due: list[str], sent: list[str]) -> list[str]:
    """What a checkpoint has yet to run, its ``Send`` packets (not read here) named by the nodes the journal saw them
    run, when it saw any."""
    return [name for name in due if name != "Send"] + sorted(set(sent)) if sent and "Send" in due else due


def _when(value: Any) -> datetime | None:
    """A checkpoint's ``ts`` (ISO text) as naive UTC, or None."""
    try:
        return lease.naive(datetime.fromisoformat(value)) if isinstance(value, str) else lease.naive(value)
    except ValueError:
        return None


def _reserved(channel: str) -> bool:
    """Whether a channel is LangGraph's own (``__start__``, ``branch:to:<node>``, ``__pregel_tasks``, ...)."""
    return channel.startswith(("__", DUE_PREFIX))


def _sends(values: Mapping[str, Any]) -> list[Any] | None:
    """The latest checkpoint's ``Send`` packets as read, or None when it holds none, or they could not be read."""
    sends = values.get(TASKS)
    return list(sends) if isinstance(sends, (list, tuple)) else None
