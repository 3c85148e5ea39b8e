"""Commands that delete: ``delete``, ``prune`` and ``sweep``, each through the saver, each asked for first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TextIO

from ..checkpointer import MongoDBCheckpointer
from ..storage.schema import CollectionNames
from ..views.stored import ThreadDocuments
from .exits import EXIT_USAGE, CliError
from .terminal import escaped
from .threads import require_thread


def confirm(question: str, yes: bool, stdin: TextIO, prompt: TextIO) -> bool:
    """Whether to go ahead: ``--yes``, or a person's ``y`` on a terminal.

    Args:
        question: what is about to happen, as a question.
        yes: ``--yes`` was given.
        stdin: where the answer comes from.
        prompt: where the question goes (stderr: stdout stays for the command's output).

    Returns:
        True to go ahead.

    Raises:
        CliError: no ``--yes`` and ``stdin`` is not a terminal, so nobody can answer (``EXIT_USAGE``).
    """
    if yes:
        return True
    if not stdin.isatty():
        raise CliError(f"{question} Nobody can answer (stdin is not a terminal): pass --yes to go ahead", EXIT_USAGE)
    prompt.write(f"{question} [y/N] ")
    prompt.flush()
    return stdin.readline().strip().lower() in ("y", "yes")


def delete(saver: MongoDBCheckpointer, names: CollectionNames, thread_ids: list[str], ask: Callable[[str], bool]) -> dict[str, Any]:
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
        f"Delete {_threads(thread_ids)} from database {saver.db_name!r}: every checkpoint, write, journal entry and ordinal?"
    )
    if not ask(question):
        return {"deleted": []}
    for thread_id in thread_ids:
        saver.delete_thread(thread_id)
    return {"deleted": thread_ids}


def prune(saver: MongoDBCheckpointer, names: CollectionNames, thread_ids: list[str], ask: Callable[[str], bool]) -> dict[str, Any]:
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
    return f"thread {thread_ids[0]!r}" if len(thread_ids) == 1 else f"{len(thread_ids)} threads ({', '.join(map(repr, thread_ids))})"


def render_maintenance(report: dict[str, Any], out: TextIO) -> None:
    """``delete``/``sweep``: the threads deleted; ``prune``: each thread's checkpoints before and after (escaped)."""
    report = escaped(report)
    if "pruned" in report:
        pruned = [f"pruned {t}: {report['checkpoints'][t]['before']} -> {report['checkpoints'][t]['after']} checkpoints\n"
                  for t in report["pruned"]]
        out.write("".join(pruned) or "nothing pruned\n")
        return
    out.write("".join(f"deleted {thread_id}\n" for thread_id in report["deleted"]) or "nothing deleted\n")
