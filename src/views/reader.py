"""``ThreadViews``: the thread list and one thread's page, read through the views' plans and shaped for people.

Everything returned is plain data (strings, numbers, lists, dicts, None), ready for JSON and for templates.
Text stored by the library (previews, error messages) is returned as stored: redacted when it was written.
A serialized outcome is read only with ``with_outcomes``; one the serde encrypted is shown as ``encrypted``.
The latest state's values are redacted as journal previews are (``redacted_values``), unless ``with_outcomes``:
the inspector never shows more than the CLI.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ..storage.plans import lease
from ..storage.plans.interpreters import SyncInterpreter
from ..checkpointer import MongoDBCheckpointer
from ..checkpointer.documents import stored_channels
from ..errors import IncompatibleStorageError, InvalidInputError
from ..journal.position import EffectPosition
from ..storage.schema import CollectionNames
from ..storage.format import FORMAT_VERSION, StorageFormat, read_format_plan
from ..storage.thread_summaries import COUNT
from .plans import TIMELINE_LIMIT, require_text, thread_page_plan, thread_plan
from .._langgraph import DUE_PREFIX, START, task_node
from .states import due_nodes, effect_counts, effect_state, lease_live, replayed, thread_state
from .stops import stop_writes_plan, why_stopped
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
                f"database {db.name!r} holds {stored.describe()}, older than version {FORMAT_VERSION}, and the read-only "
                f"inspector writes nothing: upgrade it once with `{upgrade_command(db.name)}` (any run of the library "
                "upgrades it too), then reload", db_name=db.name, found=stored.describe(),
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


def _seconds_left(until: Any, now: datetime) -> float | None:
    until = lease.naive(until)
    return None if until is None else round((until - now).total_seconds(), 1)


def _holder(doc: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """Who holds a claim or a run lock, and for how long yet."""
    return {
        "owner": doc.get("owner"), "host": doc.get("owner_host"), "pid": doc.get("owner_pid"),
        "started_at": doc.get("started_at"), "lease_left_s": _seconds_left(doc.get("lease_until"), now),
    }


def _nodes(writes: list[Mapping[str, Any]]) -> list[str]:
    """The nodes whose tasks wrote these writes (pulled tasks by name, others by their task path)."""
    return sorted({task_node(w.get("task_path")) for w in writes if w.get("task_path")})


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
        self, client: Any, db_name: str, names: CollectionNames | None = None, *, with_outcomes: bool = False, upgrade: bool = False,
    ) -> None:
        self.names = names or CollectionNames()
        self.db = client[db_name]
        self.with_outcomes, self.upgrade = with_outcomes, upgrade
        self._io = SyncInterpreter(self.db)
        self._saver = MongoDBCheckpointer(client, db_name=db_name, collections=self.names, auto_setup=False)
        self._serde = JsonPlusSerializer()

    def threads(self, prefix: str = "", after: str | None = None, limit: int = 50) -> dict[str, Any]:
        """One page of threads in id order.

        Args:
            prefix: list only thread ids starting with it.
            after: the last id of the previous page (``next_after`` of its answer).
            limit: threads per page (1 to 500).

        Returns:
            ``{"threads": [{"thread_id", "updated", "step", "checkpoints" (root), "state", "due", "holder",
            "effects": {state: count}}], "more", "next_after", "problems"}``.

        Raises:
            InvalidInputError: ``prefix`` or ``after`` is not a string, or ``limit`` is out of range.
            IncompatibleStorageError: the database holds another format.
        """
        require_our_format(self.db, self.names, upgrade=self.upgrade)
        page = self._io.run(thread_page_plan(self.names, prefix, after, limit))
        now = lease.utcnow()
        rows, problems = [], []
        for summary in page["summaries"]:
            thread_id = summary.get("thread_id")
            if not isinstance(thread_id, str):
                problems.append(f"{self.names.checkpoints}: a thread summary's thread_id is {thread_id!r}, not a string")
                continue
            rows.append(self._row(thread_id, summary.get(COUNT), page, now))
        next_after = rows[-1]["thread_id"] if page["more"] and rows else None
        return {"threads": rows, "more": page["more"], "next_after": next_after, "problems": problems}

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
    def _row(thread_id: str, checkpoints: int, page: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        latest = page["latest"].get(thread_id, {})
        due = due_nodes(stored_channels(latest))
        lock = page["locks"].get(thread_id)
        state = thread_state(lock, due, page["written"].get(thread_id, ()), now)
        return {
            "thread_id": thread_id,
            "updated": latest.get("ts"),
            "step": (latest.get("metadata") or {}).get("step"),
            "checkpoints": checkpoints,
            "state": state,
            "due": due,
            "holder": _holder(lock, now) if state == "running" and lock else None,
            "effects": _with_finished(
                effect_counts([e for e in page["entries"] if e.get("thread_id") == thread_id], now), page["finished"].get(thread_id, {})
            ),
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
            (counts by state of all its entries,
            as the thread list's), "replayed" (how many completed effects of this page a replay is proven of:
            ``states.replayed``), "values", "values_error", "stopped"}`` (``stops.why_stopped``: its errors, interrupts, outcomes unknown
            and crashed run), or None when the thread has no checkpoint and no journal entry.

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
        due = due_nodes(stored_channels(latest))
        written = [w["channel"] for w in found["writes"] if w.get("checkpoint_id") == latest.get("checkpoint_id")]
        state = thread_state(found["lock"], due, written, now)
        timeline = _timeline(checkpoints, found["writes"])
        effects = self._effects(found, timeline, now)
        unfinished = [self._effect(entry, now) for entry in found["unfinished"]]
        stop_writes = self._io.run(stop_writes_plan(self.names, thread_id, latest.get("checkpoint_id"), found["writes"]))
        stopped = why_stopped(state, stop_writes, [*reversed([self._effect(e, now) for e in found["failed"]]), *unfinished],
                              found["lock"], self._decode, with_outcomes=self.with_outcomes, step_at=latest.get("ts"))
        counts = _with_finished(effect_counts(found["unfinished"], now), found["finished"])
        values, values_error = self._values(thread_id) if checkpoints else ({}, None)
        return {
            "thread_id": thread_id,
            "state": state,
            "holder": _holder(found["lock"], now) if state == "running" else None,
            "due": due,
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
            "values": values,
            "values_error": values_error,
            "stopped": stopped,
        }

    def _effects(self, found: Mapping[str, Any], timeline: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
        """The thread's journal entries as its page shows them, each saying whether it was replayed."""
        effects = [self._effect(entry, now) for entry in found["entries"]]
        for effect, entry in zip(effects, found["entries"]):
            effect["replayed"] = replayed(entry, found["lock"], timeline)
        return effects

    def _effect(self, entry: Mapping[str, Any], now: datetime) -> dict[str, Any]:
        """One journal entry as the thread page shows it."""
        error = entry.get("error") if isinstance(entry.get("error"), Mapping) else None
        position = {f: entry.get(f) for f in ("thread_id", "path", "node", "occurrence", "effect_key")}
        stored = {**position, **entry.get("visit", {})}  # what resolve and discard find at once, whatever the labels
        started = entry.get("status") == "started"
        return {
            **position,
            "position": str(EffectPosition(*map(str, stored.values()))),
            "kind": entry.get("kind"), "name": entry.get("name"), "status": entry.get("status"),
            "state": effect_state(entry, now), "started_at": entry.get("started_at"), "finished_at": entry.get("finished_at"),
            "updated_at": entry.get("updated_at"),
            "attempts": entry.get("attempts", 0),
            "duration_ms": entry.get("duration_ms"), "idempotency_key": entry.get("idempotency_key"),
            "at_most_once": bool(entry.get("at_most_once")),
            "input_preview": (entry.get("input") or {}).get("preview"),
            "outcome_preview": (entry.get("outcome") or {}).get("preview"),
            "outcome": self._outcome(entry.get("outcome")) if self.with_outcomes else None,
            "error": {"type": error.get("type"), "message": error.get("message")} if error else None,
            "holder": _holder(entry, now) if started and lease_live(entry, now) else None,
        }

    def _decode(self, write: Mapping[str, Any]) -> Any:
        """A pending write's value (one chunk), decoded; raises for an encrypted, chunked or unreadable one."""
        if "+" in str(write.get("type")) or write.get("n", 1) != 1:
            raise ValueError(f"stored as {write.get('type')!r} in {write.get('n', 1)} chunks")
        return self._serde.loads_typed((str(write.get("type")), bytes(write.get("data") or b"")))

    def _outcome(self, outcome: Any) -> dict[str, Any] | None:
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
            return shown(self._serde.loads_typed((kind, outcome["data"])))
        except Exception as error:  # noqa: BLE001 - whatever the serde raises for bytes it cannot read
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
        if channel not in values:
            return None
        text = full_text(values, channel, redacted=not self.with_outcomes)
        if len(text) > MAX_FULL_CHARS:
            raise InvalidInputError(
                f"the value of {channel!r} is {len(text)} characters, more than the inspector sends ({MAX_FULL_CHARS}): "
                "read it with the library (graph.get_state(config).values)"
            )
        return {"thread_id": thread_id, "channel": channel, "chars": len(text), "text": text}

    def _channel_values(self, thread_id: str) -> tuple[dict[str, Any], str | None]:
        """The latest root checkpoint's channel values (LangGraph's own channels left out), or why they cannot be
        read."""
        try:
            found = self._saver.get_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
        except Exception as error:  # noqa: BLE001 - an encrypted or damaged checkpoint: say so, show the rest
            return {}, f"the latest state cannot be read here ({type(error).__name__}): encrypted, or written by another serde"
        stored = found.checkpoint.get("channel_values", {}) if found else {}
        return {name: v for name, v in sorted(stored.items()) if not name.startswith((DUE_PREFIX, START))}, None

    def _values(self, thread_id: str) -> tuple[dict[str, Any], str | None]:
        """The latest root checkpoint's channel values (LangGraph's own channels left out), redacted as journal
        previews are unless ``with_outcomes``; or why they cannot be read."""
        values, error = self._channel_values(thread_id)
        if error is not None:
            return {}, error
        if self.with_outcomes:
            return {name: shown(v) for name, v in values.items()}, None
        return redacted_values(values), None


def _with_finished(counts: dict[str, int], finished: Mapping[str, int]) -> dict[str, int]:
    """``counts`` of the unfinished entries, with the server's counts of the finished ones (by status) added."""
    return {state: n + finished.get(state, 0) for state, n in counts.items()}


def _timeline(checkpoints: list[Mapping[str, Any]], writes: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Root checkpoints, latest first: step, source, time, the nodes whose writes made it, what is due,
    and whether it is a fork (its parent has more than one child)."""
    by_checkpoint: dict[str, list[Mapping[str, Any]]] = {}
    for write in writes:
        by_checkpoint.setdefault(write.get("checkpoint_id"), []).append(write)
    children: dict[Any, int] = {}
    for doc in checkpoints:
        children[doc.get("parent_checkpoint_id")] = children.get(doc.get("parent_checkpoint_id"), 0) + 1
    return [
        {
            "checkpoint_id": doc["checkpoint_id"],
            "parent": doc.get("parent_checkpoint_id"),
            "step": (doc.get("metadata") or {}).get("step"),
            "source": (doc.get("metadata") or {}).get("source"),
            "ts": doc.get("ts"),
            "wrote": _nodes(by_checkpoint.get(doc.get("parent_checkpoint_id"), [])),
            "due": due_nodes(stored_channels(doc)),
            "fork": doc.get("parent_checkpoint_id") is not None and children[doc.get("parent_checkpoint_id")] > 1,
        }
        for doc in checkpoints
    ]
