"""The inspector's writes, with the CLI's semantics (``views.commands``): ``resolve`` and ``discard`` an effect's
position, ``delete`` a thread. The person confirmed on the page, so nothing here asks again."""

from __future__ import annotations

from typing import Any

from ..checkpointer import MongoDBCheckpointer
from ..storage.schema import CollectionNames
from ..views.commands import delete, discard, parse_outcome, parse_position, resolve


class Actions:
    """Acts on one database.

    Args:
        client: a sync client.
        db_name: the database.
        names: its collection names.
    """

    def __init__(self, client: Any, db_name: str, names: CollectionNames) -> None:
        self.client, self.db_name, self.names = client, db_name, names

    def resolve(self, position: str, outcome: str) -> dict[str, Any]:
        """Record ``outcome`` (JSON) at ``position`` (as the error prints it): ``langgraph-durable-mongodb resolve``.

        Returns:
            ``{"position", "kind", "name", "was", "now": "completed"}``.

        Raises:
            CliError: the position or the outcome cannot be read (``EXIT_USAGE``), or no entry is there
                (``EXIT_UNKNOWN_THREAD``); nothing was written.
        """
        pos, value = parse_position(position), parse_outcome(outcome)
        return resolve(self.client, self.db_name, self.names, pos, value)

    def discard(self, position: str) -> dict[str, Any]:
        """Forget the entry at ``position``, so its effect runs again: ``langgraph-durable-mongodb discard``.

        Returns:
            ``{"position", "kind", "name", "was", "now": "discarded"}``.

        Raises:
            CliError: as for ``resolve``.
        """
        return discard(self.client, self.db_name, self.names, parse_position(position))

    def delete(self, thread_id: str) -> dict[str, Any]:
        """Delete the thread whole: ``langgraph-durable-mongodb delete THREAD --yes``.

        Returns:
            ``{"deleted": [thread_id]}``.

        Raises:
            CliError: the thread has no checkpoints and no journal entries (``EXIT_UNKNOWN_THREAD``).
        """
        saver = MongoDBCheckpointer(self.client, db_name=self.db_name, collections=self.names, auto_setup=False)
        return delete(saver, self.names, [thread_id], lambda question: True)
