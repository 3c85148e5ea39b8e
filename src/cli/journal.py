"""The journal from the shell: a thread's raw entries (settling a position a person has checked: ``views.commands``)."""

from __future__ import annotations

from typing import Any

from ..views.commands import require_thread
from ..views.stored import ThreadDocuments


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


