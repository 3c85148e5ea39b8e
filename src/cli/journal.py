"""The journal from the shell: a thread's raw entries, and settling a position a person has checked."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

from ..journal import ActivityJournal, EffectPosition
from ..storage.schema import POSITION_FIELDS, CollectionNames
from ..views.stored import ThreadDocuments
from .exits import EXIT_UNKNOWN_THREAD, EXIT_USAGE, CliError
from .threads import require_thread

_QUOTED = r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
#: A position as ``EffectPosition.__str__`` prints it (in ``EffectOutcomeUnknownError`` and the other errors).
_POSITION = re.compile(rf"thread {_QUOTED} path {_QUOTED} node {_QUOTED}#(\S+) effect {_QUOTED}")
_EXAMPLE = "\"thread 'case-42' path 'agent/1' node 'charge'#1 effect '1'\""


def journal_documents(stored: ThreadDocuments, thread_id: str, with_outcomes: bool) -> list[dict[str, Any]]:
    """The thread's raw journal documents, by path then creation (``views.stored.journal_documents_plan``).

    Args:
        stored: the database's documents.
        thread_id: the thread.
        with_outcomes: keep the serialized outcomes (``outcome.data`` and the chunk documents of large
            ones); without it, each entry keeps its outcome's type, digest and preview only.

    Returns:
        The documents, without ``_id``.

    Raises:
        CliError: the thread has no checkpoints and no journal entries (``EXIT_UNKNOWN_THREAD``).
    """
    docs = stored.journal_documents(thread_id, with_outcomes)
    if not docs:
        require_thread(stored, thread_id)
    return docs


def parse_position(text: str) -> EffectPosition:
    """The position in ``text``, written as the journal's errors print it.

    Args:
        text: e.g. ``thread 'case-42' path 'agent/1' node 'charge'#1 effect '1'`` (the error's whole
            message will do: the position is found in it).

    Returns:
        The position.

    Raises:
        CliError: no position in ``text`` (``EXIT_USAGE``).
    """
    found = _POSITION.search(text)
    if found is None:
        raise CliError(
            f"cannot read a journal position from {text!r}: pass it as the error printed it, e.g. {_EXAMPLE}", EXIT_USAGE
        )
    thread_id, path, node, occurrence, effect_key = found.groups()
    literal = ast.literal_eval
    return EffectPosition(literal(thread_id), literal(path), literal(node), occurrence, literal(effect_key))


def parse_outcome(text: str) -> Any:
    """The outcome to record, from JSON (``'"charged"'``, ``'{"id": "ch_1"}'``).

    Raises:
        CliError: ``text`` is not JSON (``EXIT_USAGE``).
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise CliError(f"the outcome must be JSON, e.g. '\"charged\"' or '{{\"id\": \"ch_1\"}}': {error}", EXIT_USAGE) from None


def resolve(client: Any, db_name: str, names: CollectionNames, pos: EffectPosition, outcome: Any) -> dict[str, Any]:
    """Record ``outcome`` at the position (``ActivityJournal.resolve``): the next run replays it.

    Args:
        client: a sync client.
        db_name: the database.
        names: its collection names.
        pos: the position.
        outcome: what the effect returned.

    Returns:
        ``{"position": {...}, "kind", "name", "was": the status before, "now": "completed"}``.

    Raises:
        CliError: no entry at the position (``EXIT_UNKNOWN_THREAD``).
        DurableMongoError: the entry changed while it was being resolved.
    """
    settled = _entry(ThreadDocuments(client, db_name, names), pos)
    _journal(client, db_name, names).resolve(EffectPosition(**settled["position"]), outcome)
    return {**settled, "now": "completed"}


def discard(client: Any, db_name: str, names: CollectionNames, pos: EffectPosition) -> dict[str, Any]:
    """Delete the position's entry (``ActivityJournal.discard``): the next run executes the effect again.

    Args:
        client: a sync client.
        db_name: the database.
        names: its collection names.
        pos: the position.

    Returns:
        ``{"position": {...}, "kind", "name", "was": the status before, "now": "discarded"}``.

    Raises:
        CliError: no entry at the position (``EXIT_UNKNOWN_THREAD``).
    """
    settled = _entry(ThreadDocuments(client, db_name, names), pos)
    _journal(client, db_name, names).discard(EffectPosition(**settled["position"]))
    return {**settled, "now": "discarded"}


def _entry(stored: ThreadDocuments, pos: EffectPosition) -> dict[str, Any]:
    """The entry at ``pos``, written as stored (an error's position) or as its labels read (``inspect``'s)."""
    entry = stored.entry({field: getattr(pos, field) for field in POSITION_FIELDS})
    if entry is None:
        raise CliError(f"no journal entry at {pos}: look at the thread with `journal {pos.thread_id}`", EXIT_UNKNOWN_THREAD)
    return {"position": entry["position"], "kind": entry["kind"], "name": entry["name"], "was": entry["status"]}


def _journal(client: Any, db_name: str, names: CollectionNames) -> ActivityJournal:
    return ActivityJournal(
        client, db_name=db_name, collection=names.journal, metadata_collection=names.metadata, auto_setup=False
    )
