"""What a person does to threads, from the CLI or the web inspector, with the CLI's semantics: settle an effect's
journal position a person has checked (``resolve``, ``discard``); ``delete``, ``prune`` and ``sweep`` threads, each
through the saver, each asked for first. Errors are ``CliError`` with the CLI's exit codes (``exits``), which the
web inspector answers with an HTTP status."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from typing import Any

from ..checkpointer import MongoDBCheckpointer
from ..journal import ActivityJournal, EffectPosition
from ..storage.schema import POSITION_FIELDS, CollectionNames
from .exits import EXIT_UNKNOWN_THREAD, EXIT_USAGE, CliError
from .stored import ThreadDocuments

_QUOTED = r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
#: A position as ``EffectPosition.__str__`` prints it (in ``EffectOutcomeUnknownError`` and the other errors).
_POSITION = re.compile(rf"thread {_QUOTED} path {_QUOTED} node {_QUOTED}#(\S+) effect {_QUOTED}")
_EXAMPLE = "\"thread 'case-42' path 'agent/1' node 'charge'#1 effect '1'\""



def require_thread(stored: ThreadDocuments, thread_id: str) -> None:
    """Raise ``CliError`` (``EXIT_UNKNOWN_THREAD``) unless the thread has a checkpoint or a journal entry."""
    if not stored.exists(thread_id):
        raise unknown_thread(thread_id)



def unknown_thread(thread_id: str) -> CliError:
    return CliError(f"unknown thread {thread_id!r}: no checkpoints and no journal entries", EXIT_UNKNOWN_THREAD)



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
            f"cannot read a journal position from {text!r}: pass it as the error printed it, e.g. {_EXAMPLE}",
            EXIT_USAGE,
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
        raise CliError(
            f"the outcome must be JSON, e.g. '\"charged\"' or '{{\"id\": \"ch_1\"}}': {error}", EXIT_USAGE
        ) from None



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
        raise CliError(
            f"no journal entry at {pos}: look at the thread with `journal {pos.thread_id}`", EXIT_UNKNOWN_THREAD
        )
    return {"position": entry["position"], "kind": entry["kind"], "name": entry["name"], "was": entry["status"]}



def _journal(client: Any, db_name: str, names: CollectionNames) -> ActivityJournal:
    return ActivityJournal(
        client, db_name=db_name, collection=names.journal, metadata_collection=names.metadata, auto_setup=False
    )



def delete(
    saver: MongoDBCheckpointer, names: CollectionNames, thread_ids: list[str], ask: Callable[[str], bool]
) -> dict[str, Any]:
    """Delete the threads whole (``MongoDBCheckpointer.delete_thread``), if ``ask(question)`` agrees.

    Args:
        saver: a saver on the database.
        names: its collection names.
        thread_ids: the threads; each must exist.
        ask: ``confirm`` with its other arguments bound.

    Returns:
        ``{"deleted": [...]}`` (empty when declined).

    Raises:
        CliError: a thread has no checkpoints and no journal entries (``EXIT_UNKNOWN_THREAD``), or nobody
            can be asked (``EXIT_USAGE``); nothing was deleted.
    """
    _known(saver, names, thread_ids)
    question = (
        f"Delete {_threads(thread_ids)} from database {saver.db_name!r}: "
        "every checkpoint, write, journal entry and ordinal?"
    )
    if not ask(question):
        return {"deleted": []}
    for thread_id in thread_ids:
        saver.delete_thread(thread_id)
    return {"deleted": thread_ids}



def prune(
    saver: MongoDBCheckpointer, names: CollectionNames, thread_ids: list[str], ask: Callable[[str], bool]
) -> dict[str, Any]:
    """Keep each namespace's latest checkpoint of the threads (``MongoDBCheckpointer.prune``, ``keep_latest``),
    if ``ask(question)`` agrees. Arguments and errors as for ``delete``.

    Returns:
        ``{"pruned": [...], "checkpoints": {thread_id: {"before": n, "after": m}}}`` (``pruned`` empty when declined).
    """
    stored = _known(saver, names, thread_ids)
    before = stored.checkpoint_counts(thread_ids)
    question = (
        f"Prune {_threads(thread_ids)} in database {saver.db_name!r} to each namespace's latest checkpoint "
        "(older checkpoints and their writes go; the journal stays)?"
    )
    if not ask(question):
        return {"pruned": [], "checkpoints": {t: {"before": n, "after": n} for t, n in before.items()}}
    saver.prune(thread_ids, strategy="keep_latest")
    after = stored.checkpoint_counts(thread_ids)
    return {"pruned": thread_ids, "checkpoints": {t: {"before": before[t], "after": after[t]} for t in thread_ids}}



def sweep(saver: MongoDBCheckpointer, ask: Callable[[str], bool]) -> dict[str, Any]:
    """Delete every thread past its TTL (``MongoDBCheckpointer.sweep_expired``), if ``ask(question)`` agrees.

    Args:
        saver: a saver on the database.
        ask: ``confirm`` with its other arguments bound.

    Returns:
        ``{"deleted": [...]}``: the expired threads deleted (empty when declined).

    Raises:
        CliError: nobody can be asked (``EXIT_USAGE``); nothing was deleted.
    """
    if not ask(f"Delete every thread past its TTL from database {saver.db_name!r}?"):
        return {"deleted": []}
    return {"deleted": saver.sweep_expired()}



def _known(saver: MongoDBCheckpointer, names: CollectionNames, thread_ids: list[str]) -> ThreadDocuments:
    """The saver's database's documents, once each thread is known to have some."""
    stored = ThreadDocuments(saver.client, saver.db_name, names)
    for thread_id in thread_ids:
        require_thread(stored, thread_id)
    return stored



def _threads(thread_ids: list[str]) -> str:
    if len(thread_ids) == 1:
        return f"thread {thread_ids[0]!r}"
    return f"{len(thread_ids)} threads ({', '.join(map(repr, thread_ids))})"
