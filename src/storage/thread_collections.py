"""``ThreadCollections``: the collections holding a thread's documents, as their owners declare them.

A thread's lifecycle (``delete_thread``, ``copy_thread``, ``prune(strategy="delete")``, its TTL expiry, a
``keep_latest`` sweep clearing expiries) applies to every document of the thread, in every collection that
holds some. Each storage class declares its own when built (``register``): the checkpointer its checkpoints,
blobs and writes, the activity journal its entries. The checkpointer's lifecycle then deletes, copies and
expires what is declared, without knowing what the others hold.

The declarations are kept in the database's storage format document (``storage/format.py``), so a saver in a
process that built no journal (the CLI, the web inspector, a service reading threads) still deletes and
expires a thread's journal entries with its checkpoints: a thread id used again after ``delete_thread`` must
never be handed the old thread's recorded effects. A database stamped before declarations existed holds
what this package's collections held then, so it is read as declaring them all
(``CollectionNames.held_before_declarations``).

The stamp declares; the library decides. A declared name is data, never an instruction: it is honoured
only when this library could have made the collection (``trusted``): one of its default names, a name this
process's storage classes were given (``collections=``, ``journal_options``), or a collection holding the
unique key index this library's setup gives a per-thread collection (``schema.THREAD_KEY_INDEXES``: so a
process with default names still reaches a journal another process renamed). Anything else (an
application's ``orders``, ``system.*``, a ``$``-name, an empty name, a NUL) is refused before any write
(``storage.format.StorageFormat`` raises ``IncompatibleStorageError``), unless no collection of that name
exists: it holds no thread, so it is skipped (``learn``'s ``absent``). The ordinals collection of format 3
and older, which format 4 no longer writes, is one of the default names.

A copy (``copy``) is a document of the source with the target's ``thread_id``, rewritten as its collection's
role says (``COPY_REWRITES``): a journal entry takes the idempotency key of its position on the target. The role
of a collection is known as its trust is: by name (this process's and the default names of each role), or by the
key index it holds. The rewrites are declared here, beneath every storage class, and not by the classes built in
a process: a process that built no journal (a service with a bare checkpointer, whose stamp names the journal's
collection) copies a thread's entries as the journal's own process would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from typing import Any

from .schema import PER_THREAD_ROLES, CollectionNames
from .visit_keys import rekeyed_entry

#: How a copied document of a role is rewritten beyond its ``thread_id`` (the roles not named copy as they are).
COPY_REWRITES: dict[str, Callable[[MutableMapping[str, Any]], None]] = {"journal": rekeyed_entry}
#: The roles of the per-thread collections: those of ``CollectionNames.held_before_declarations``.
_ROLES = (*PER_THREAD_ROLES, "ordinals")


def _roles_of(names: CollectionNames) -> dict[str, str]:
    return {getattr(names, role): role for role in _ROLES}


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be a collection this library makes (None when it can): not a string, empty, holding
    a NUL or a ``$``, or a ``system.`` collection of the server."""
    if not isinstance(name, str):
        return f"{name!r:.80} is a {type(name).__name__}, not a collection name"
    if not name:
        return "an empty name is no collection"
    if "\x00" in name or "$" in name:
        return f"{name!r:.80} holds {'a NUL' if chr(0) in name else 'a $'}, which no collection name of ours does"
    if name.startswith("system."):
        return f"{name!r:.80} is one of the server's system collections"
    return None


def declared_problem(listed: Any) -> str | None:
    """Why a stamp's ``thread_collections`` field (``listed``; None when absent) cannot be read as
    declarations (None when it can): it must be a list of names ``name_problem`` finds nothing wrong with."""
    if listed is None:
        return None
    if not isinstance(listed, list):
        return f"its thread_collections is a {type(listed).__name__}, not a list of collection names"
    return next((f"its thread_collections names {problem}" for n in listed if (problem := name_problem(n))), None)


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
        #: The names this library could have made without looking, and their roles: the defaults and this process's own.
        self._roles = {**_roles_of(CollectionNames()), **_roles_of(names)}
        self._trusted = frozenset(self._roles)

    @property
    def names(self) -> tuple[str, ...]:
        """Every per-thread collection declared here or read from the database, in the order first known."""
        return self._names

    def register(self, name: str, role: str) -> None:
        """Declare ``name`` a collection of per-thread documents of ``role`` (one of ``schema.PER_THREAD_ROLES``):
        each has a ``thread_id``, and is deleted, copied (as its role's documents are) and expired with its thread.
        Stored in the database before this process's next first plan (``StorageFormat.check_plan``)."""
        self._trusted = self._trusted | {name}
        self._roles[name] = role
        self._add((name,))

    def untrusted(self, declared: Sequence[str] | None) -> list[str]:
        """The names among ``declared`` this process does not trust yet: each is honoured only once its
        collection is seen to hold one of ``schema.THREAD_KEY_INDEXES`` (``trust``)."""
        return [n for n in dict.fromkeys(declared or ()) if n not in self._trusted]

    def trust(self, name: str, role: str) -> None:
        """Note that ``name`` holds the per-thread key index this library gives ``role``: its declaration is honoured,
        and its documents are copied as that role's."""
        self._trusted = self._trusted | {name}
        self._roles.setdefault(name, role)

    def copy(self, name: str, doc: Mapping[str, Any], target_thread_id: str) -> dict[str, Any]:
        """A copy of ``doc``, a document of collection ``name``, for thread ``target_thread_id``: its ``thread_id``
        the target's, and rewritten as its role's documents are (``COPY_REWRITES``)."""
        copied = {**doc, "thread_id": target_thread_id}
        rewrite = COPY_REWRITES.get(self._roles.get(name, ""))
        if rewrite is not None:
            rewrite(copied)
        return copied

    def learn(self, declared: Sequence[str] | None, absent: Iterable[str] = ()) -> None:
        """Add what the database's storage format document declares, once each name is checked and trusted
        (``untrusted``), but the collections ``absent`` from the database (they hold no thread, and are looked up
        again when the stamp is next read: they stay untrusted). None: stamped before declarations, so it holds
        every collection of ``CollectionNames.held_before_declarations``, none of them stored as declared."""
        skipped = frozenset(absent)
        self._add(self._assumed if declared is None else [n for n in declared if n not in skipped])
        self._stored = self._stored | frozenset(declared or ())

    def unstored(self) -> list[str]:
        """The known collections the database does not declare yet."""
        return [n for n in self._names if n not in self._stored]

    def stored(self, names: Iterable[str]) -> None:
        """Note that the database now declares ``names``."""
        self._stored = self._stored | frozenset(names)

    def _add(self, names: Iterable[str]) -> None:
        self._names = tuple(dict.fromkeys((*self._names, *names)))
