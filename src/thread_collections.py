"""``ThreadCollections``: the collections holding a thread's documents, as their owners declare them.

A thread's lifecycle (``delete_thread``, ``copy_thread``, ``prune(strategy="delete")``, its TTL expiry, a
``keep_latest`` sweep clearing expiries) applies to every document of the thread, in every collection that
holds some. Each storage class declares its own when built (``register``): the checkpointer its checkpoints,
blobs and writes, the activity journal its entries. The checkpointer's lifecycle then deletes, copies and
expires what is declared, without knowing what the others hold.

The declarations are kept in the database's storage format document (``storage_format.py``), so a saver in a
process that built no journal (the CLI, the web inspector, a service reading threads) still deletes and
expires a thread's journal entries with its checkpoints: a thread id used again after ``delete_thread`` must
never be handed the old thread's recorded effects. A database stamped before declarations existed holds
what this package's collections held then, so it is read as declaring them all
(``CollectionNames.held_before_declarations``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .schema import CollectionNames


class ThreadCollections:
    """The per-thread collections of one database known to this process, and which of them it has stored.

    Args:
        names: the collection names of the storage class that built it; their ``held_before_declarations``
            are what a database without declarations holds (``learn(None)``).
    """

    def __init__(self, names: CollectionNames) -> None:
        self._assumed = names.held_before_declarations
        self._names: tuple[str, ...] = ()
        self._stored: frozenset[str] = frozenset()

    @property
    def names(self) -> tuple[str, ...]:
        """Every per-thread collection declared here or read from the database, in the order first known."""
        return self._names

    def register(self, name: str) -> None:
        """Declare ``name`` a collection of per-thread documents: each has a ``thread_id``, and is deleted,
        copied and expired with its thread. Stored in the database before this process's next first plan
        (``StorageFormat.check_plan``)."""
        self._add((name,))

    def learn(self, declared: Sequence[str] | None) -> None:
        """Add what the database's storage format document declares (None: stamped before declarations,
        so it holds every collection of ``CollectionNames.held_before_declarations``, none of them stored as
        declared)."""
        self._add(self._assumed if declared is None else declared)
        self._stored = self._stored | frozenset(declared or ())

    def unstored(self) -> list[str]:
        """The known collections the database does not declare yet."""
        return [n for n in self._names if n not in self._stored]

    def stored(self, names: Iterable[str]) -> None:
        """Note that the database now declares ``names``."""
        self._stored = self._stored | frozenset(names)

    def _add(self, names: Iterable[str]) -> None:
        self._names = tuple(dict.fromkeys((*self._names, *names)))
