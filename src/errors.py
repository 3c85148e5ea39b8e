"""Typed errors. Each says what went wrong and what to do about it."""

from __future__ import annotations

from typing import Any


class DurableMongoError(Exception):
    """Base class of every error this library raises on purpose."""


class InvalidInputError(DurableMongoError, ValueError):
    """An argument cannot be used safely (wrong type, operator-like key, ...).

    Raised before any query runs, so nothing stored is read or changed.
    """


class ClientConfigurationError(DurableMongoError, RuntimeError):
    """The call needs a client kind (sync or async) that was not given."""


class DeltaChainError(DurableMongoError, RuntimeError):
    """An operation would cut the write chain a DeltaChannel needs to rebuild its value."""


class TopologyError(DurableMongoError):
    """The compiled graph has a shape whose operations cannot be identified durably."""


class NamespaceError(DurableMongoError):
    """A runtime checkpoint namespace cannot be explained by the discovered topology."""


class NoDurableScopeError(DurableMongoError, RuntimeError):
    """A durable effect ran outside a durable scope (a graph compiled or attached by DurablePlatform)."""


class EffectInProgressError(DurableMongoError, RuntimeError):
    """Another worker holds a live lease on this journal position and did not finish in time.

    Attributes: ``position`` (an ``EffectPosition``) and ``lease_until`` (UTC).
    """

    def __init__(self, message: str, *, position: object = None, lease_until: object = None) -> None:
        super().__init__(message)
        self.position, self.lease_until = position, lease_until


class EffectOutcomeUnknownError(DurableMongoError, RuntimeError):
    """An ``at_most_once`` effect was started by a worker that died before recording its outcome.

    It is not run again. Check the external system for ``idempotency_key``, then
    record what happened with ``ActivityJournal.resolve`` or let it run again
    with ``ActivityJournal.discard``.
    """

    def __init__(self, message: str, *, position: object = None, idempotency_key: str | None = None) -> None:
        super().__init__(message)
        self.position, self.idempotency_key = position, idempotency_key


class NondeterminismError(DurableMongoError, RuntimeError):
    """The effect recorded at a journal position is not the one the code calls there now."""


class InputChangedError(DurableMongoError, RuntimeError):
    """The input of an effect differs from the one recorded at its position (``on_input_change="raise"``)."""


class InputChangedWarning(UserWarning):
    """The input of a replayed effect differs from the recorded one (``on_input_change="warn"``)."""


class OutcomeNotSerializableError(DurableMongoError, TypeError):
    """An effect ran, but the journal's serde cannot serialize what it returned, so nothing replays it.

    The entry is recorded ``failed`` with this error. An ``at_most_once`` effect raises it again on every
    later attempt until a person settles the position (``ActivityJournal.resolve``/``discard``); any other
    effect runs again. Attribute: ``position``.
    """

    def __init__(self, message: str, *, position: object = None) -> None:
        super().__init__(message)
        self.position = position


class RecordedFailureError(DurableMongoError, RuntimeError):
    """A journaled failure that the node handled is replayed, but its exception type cannot be rebuilt here.

    When an effect failed and its node went on (later effects of the same node attempt were journaled), a
    resume raises the recorded error again as its own type, so the node's ``except`` takes the same path. The type
    is looked up among the modules this process has imported and the declared ``terminal_errors``, never imported
    because a journal entry names it: a type found nowhere (a class defined inside a function, or in a module not
    imported yet) or not an ``Exception`` is raised as this error instead. Attributes: ``position`` and
    ``error_type`` (``module.qualname`` as recorded).
    """

    def __init__(self, message: str, *, position: object = None, error_type: str | None = None) -> None:
        super().__init__(message)
        self.position, self.error_type = position, error_type


class ThreadBusyError(DurableMongoError, RuntimeError):
    """Another run holds this thread (``DurablePlatform(exclusive_runs=True)``) and did not end in time.

    Attributes: ``thread_id`` and ``holder`` (the lock document: ``owner_host``,
    ``owner_pid``, ``started_at``, ``lease_until``).
    """

    def __init__(self, message: str, *, thread_id: str | None = None, holder: object = None) -> None:
        super().__init__(message)
        self.thread_id, self.holder = thread_id, holder


class ThreadExistsError(DurableMongoError, RuntimeError):
    """``copy_thread`` was asked to copy onto a thread that already has documents; nothing was written.

    A copy onto a thread with its own history would mix both threads. Delete the target first
    (``delete_thread(target)``) or copy to another thread id. Attributes: ``thread_id`` (the target)
    and ``collections`` (the collections holding its documents).
    """

    def __init__(self, message: str, *, thread_id: str | None = None, collections: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.thread_id, self.collections = thread_id, collections


class RunLockLostError(DurableMongoError, RuntimeError):
    """This run lost its thread's run lock mid-run: its lease expired before a renewal, or another run took it.

    Raised by ``run_lock.check_held()`` so that the run stops before more work instead of running beside
    the run that may hold the thread now. Raise ``DurablePlatform(run_lease_seconds=...)`` above the longest
    stall you expect, then resume the thread. Attributes: ``thread_id`` and ``fence`` (the token it held).
    """

    def __init__(self, message: str, *, thread_id: str | None = None, fence: int | None = None) -> None:
        super().__init__(message)
        self.thread_id, self.fence = thread_id, fence


class EffectRecordLostError(DurableMongoError, RuntimeError):
    """Another worker recorded an effect's outcome while this run executed it, and the node had gone on with its
    own outcome (the journal writes a record while the node continues). Raised by the node's next effect or when
    LangGraph saves the node's writes, so that nothing is saved from an outcome the journal does not hold. Run
    the thread again: the node replays the recorded outcome. Attribute: ``position``.
    """

    def __init__(self, message: str, *, position: Any = None) -> None:
        super().__init__(message)
        self.position = position


class CheckpointNotStoredError(DurableMongoError, RuntimeError):
    """A node's first effect waited for the root checkpoint its task was prepared from (``durability="async"``
    stores it in the background), and it will not be stored: its store, or an older one of the run, failed, or
    it took longer than the wait allows. The effect did not run; the run stops, and a resume starts again from the
    checkpoints that are stored."""


class SyncEffectOnEventLoopError(CheckpointNotStoredError):
    """An ``at_most_once`` effect was called sync on the event loop of an async run (a sync
    ``@effect(at_most_once=True)`` inside an ``async def`` node) before the root checkpoint its task was prepared
    from was stored (``durability="async"``): the run stores it on that very loop, which the sync call blocks, so it
    could never wait for it, and run under a checkpoint a crash may lose it could run again under another
    idempotency key: twice. Nothing ran. Await the effect (an async ``@effect``), call it through
    ``await asyncio.to_thread(fn, ...)``, or run with ``durability="sync"``. (An at-least-once effect runs there,
    as under ``durability="exit"``: a crash before that checkpoint is stored runs it again, under a new key.)"""


class IncompatibleStorageError(DurableMongoError, RuntimeError):
    """The database holds data in a format this package does not write: a newer version of it, or a foreign one
    (``langgraph-checkpoint-mongodb``'s ``MongoDBSaver``, say). Raised before anything is written.

    The message names the fix: upgrade the package, import the threads into a new database
    (``langgraph-durable-mongodb --uri URI --db NEW_DB import-mongodbsaver --source-db THIS_DB``), or use
    another ``db_name``. Attributes: ``db_name`` and ``found`` (what the database holds, as ``doctor`` says it).
    """

    def __init__(self, message: str, *, db_name: str | None = None, found: str | None = None) -> None:
        super().__init__(message)
        self.db_name, self.found = db_name, found


class RunsInFlightError(IncompatibleStorageError):
    """The database holds a storage format older than 4 and runs in flight (run locks still held: a process of
    that format still running, or one that crashed). Upgrading now would change the idempotency key of an effect
    such a run started without recording it, so nothing is written until they are drained: the message says how
    (docs/storage.md, "Upgrades with runs in flight"). Attributes: ``db_name``, ``found`` and ``thread_ids`` (the
    threads whose runs are in flight, the first 20).
    """

    def __init__(
        self, message: str, *, db_name: str | None = None, found: str | None = None, thread_ids: tuple[str, ...] = ()
    ) -> None:
        super().__init__(message, db_name=db_name, found=found)
        self.thread_ids = thread_ids


class CorruptDocumentError(DurableMongoError, RuntimeError):
    """A stored document lacks a field it must have, or holds one of the wrong type (edited by hand, or damaged).

    Raised when it is read, before anything runs from it: a resume never goes on from a document it could not
    read. Restore the document from a backup, or delete it (a checkpoint: the thread then resumes from its
    parent) or the thread. Attributes: ``collection``, ``document_id`` (its ``_id``) and ``field``.
    """

    def __init__(self, message: str, *, collection: str = "", document_id: object = None, field: str = "") -> None:
        super().__init__(message)
        self.collection, self.document_id, self.field = collection, document_id, field


class CorruptJournalEntryError(CorruptDocumentError):
    """A journal entry is not in a state the journal writes (edited by hand, or damaged; under ``EncryptedSerializer``,
    an outcome stored in clear): its effect is not run.

    The message names the position and what to do: ``ActivityJournal.discard(position)`` to run the effect
    again, or ``ActivityJournal.resolve(position, outcome)`` to record its outcome. Attributes: ``position``, and
    ``collection``, ``document_id`` (the position) and ``field`` as every ``CorruptDocumentError`` has them.
    """

    def __init__(self, message: str, *, position: object = None, collection: str = "", field: str = "") -> None:
        super().__init__(message, collection=collection, document_id=position, field=field)
        self.position = position


class EncryptionKeyError(DurableMongoError, RuntimeError):
    """A stored value is encrypted, and this process cannot decrypt it: it was written under another key, or this
    saver's serde has no key (it is not an ``EncryptedSerializer``). Nothing was run from it.

    Configure the serde the database was written with (``EncryptedSerializer.from_pycryptodome_aes(key=...)``, or
    ``LANGGRAPH_AES_KEY``), or use another database. Attributes: ``thread_id``, ``collection``, ``document_id``
    (its ``_id``, or the journal position) and ``field``.
    """

    def __init__(
        self, message: str, *, thread_id: str = "", collection: str = "", document_id: object = None, field: str = ""
    ) -> None:
        super().__init__(message)
        self.thread_id, self.collection, self.document_id, self.field = thread_id, collection, document_id, field


class MissingValueError(DurableMongoError, RuntimeError):
    """A checkpoint references a channel value that cannot be loaded: its blob, or one of its chunks, is gone.

    Raised when the checkpoint is read, before anything runs from it (LangGraph's own savers return the state
    without that channel, and a resume then saves the loss for good). Restore the value's documents from a
    backup, or go back to an earlier checkpoint (``get_state_history``) that does not reference it.
    Attributes: ``thread_id``, ``checkpoint_ns``, ``checkpoint_id`` and ``channel``.
    """

    def __init__(
        self, message: str, *, thread_id: str = "", checkpoint_ns: str = "", checkpoint_id: str = "", channel: str = ""
    ) -> None:
        super().__init__(message)
        self.thread_id, self.checkpoint_ns = thread_id, checkpoint_ns
        self.checkpoint_id, self.channel = checkpoint_id, channel


class InvalidURIError(InvalidInputError):
    """The text given as a MongoDB URI is not one pymongo can use; no connection was tried.

    A URI starts with ``mongodb://`` or ``mongodb+srv://`` and names its hosts, e.g.
    ``mongodb://user:password@host:27017/?authSource=admin`` (escape ``@`` and ``:`` in the password).
    The message shows the URI with its password masked.
    """


class ServerUnreachableError(DurableMongoError, ConnectionError):
    """No MongoDB server answered at the URI's hosts in time.

    Check that the server runs, the URI's hosts and ports, and the network between them; the message names
    the URI with its password masked.
    """


class ServerRefusedError(DurableMongoError):
    """The server refused a command; the message carries the server's reason."""


class AccessDeniedError(ServerRefusedError, PermissionError):
    """The server refused the credentials (authentication failed) or the user's rights (not authorized).

    Fix the user, the password, ``authSource`` or the user's roles (``readWrite`` on the database; ``dbAdmin``
    to create indexes); retrying will not help.
    """
