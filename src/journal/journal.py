"""``ActivityJournal``: record each effect's outcome once, replay it on resume."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from typing import Any

from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from .._bson import DEFAULT_CHUNK_BYTES, require_db_name, require_seconds, require_str
from ..errors import InvalidInputError
from ..storage.format import StorageFormat
from ..storage.plans.faces import TwoFaces, split_clients
from ..storage.schema import CollectionNames
from ..telemetry.watches import effect_watch
from .context import Slot, alocate, current_effect_scope, locate
from .documents import EffectCall
from .plans import JournalPlans
from .ports import JournalSaver
from .position import EffectPosition
from .redaction import Redactor, redact


class ActivityJournal(TwoFaces, JournalPlans):
    """The activity journal: one document per effect position, beside the checkpoints.

    Wrappers (``SecureLLM``, ``SecureTool``, ``@effect``) call ``run``/``arun``
    (``run_stream``/``arun_stream`` for streams); each claims the effect's
    position, replays a recorded outcome or runs the effect and records it.
    Build it from the checkpointer so it shares the clients, the database,
    the serde (encryption applies to outcomes) and the thread's TTL::

        saver = MongoDBCheckpointer(MongoClient(uri), db_name="agents", serde=encrypted)
        journal = ActivityJournal.for_checkpointer(saver, terminal_errors=(PaymentDeclined,))

    or from clients: ``ActivityJournal(MongoClient(uri), db_name="agents")``.

    Args:
        client: as for ``MongoDBCheckpointer``: a sync client serves ``run``, an async one ``arun``.
        async_client: an async client, beside a sync ``client`` (as for ``MongoDBCheckpointer``).
        db_name: the database the entries live in.
        collection: the collection they live in (``activity_journal``).
        serde: serializes outcomes; use the checkpointer's.
        lease_seconds: how long a claim holds a position without a heartbeat.
            The owner renews it every ``lease_seconds / 3`` while the effect
            runs, so effects may take longer; it bounds how long a crashed
            worker's position stays blocked (at once when the owner was a
            process on the same host that no longer exists). Workers' clocks
            must agree well within it.
        wait_seconds: how long a worker waits for a position under another's
            live lease before ``EffectInProgressError``.
        on_input_change: ``"warn"`` (``InputChangedWarning``), ``"raise"``
            (``InputChangedError``) or ``"ignore"`` when a replayed effect's
            input digest differs from the recorded one.
        on_nondeterminism: ``"raise"`` (``NondeterminismError``) or ``"rerun"``
            when the code calls another kind or name at a recorded position.
        terminal_errors: exception types replayed (raised again) instead of
            retried when recorded as an effect's failure.
        redactor: makes inputs and outcomes safe for the readable previews.
            The values of the input's credential-looking keys are also scrubbed
            from previews and stored error messages wherever they occur.
        preview_chars: length of previews (0: none). Default 300, but 0 when
            ``serde`` is an ``EncryptedSerializer``, which then also stores
            no error messages (only their type): nothing readable beside the
            encrypted outcome. Passing ``preview_chars`` keeps previews of that
            length and error messages.
        chunk_bytes: serialized bytes per document for large outcomes.
        expiry: ``thread_id -> {"expire_at": ...}`` for new documents (TTL).
        digest_key: keys the input digests (HMAC-SHA256). Without it, under an
            ``EncryptedSerializer``, the journal keys them with a random key it
            stores once per database, encrypted by the serde, in
            ``metadata_collection``; otherwise digests are plain SHA-256 (the
            previews show the inputs anyway).
        auto_setup: create indexes before the first operation of each face.
        storage_format: the database's format check, run before the first operation
            (``for_checkpointer`` shares the saver's); by default one of its own. The journal declares its
            collection a per-thread one there (``thread_collections.py``).
        run_fence: called with the thread id, without I/O, once an effect's claim is held and just before the
            effect starts; it raises to refuse (the claim is then freed as never run). ``for_checkpointer``
            shares the saver's: ``DurablePlatform``'s run locks' ``check_held``, so a run that may have lost its
            thread's lock starts no effect.
        claim_always: claim every effect before it runs, at-least-once ones under the run lock too (one command
            more per such effect, where the run lock lets them record in one): a process that dies mid-effect then
            leaves a ``started`` entry, which ``inspect`` and the web inspector show, and ``current_effect().attempt``
            counts the executions every process started. By default an at-least-once effect under the run lock
            runs unclaimed (see the journal's docs), and a crash mid-effect leaves no entry to count.
    """

    _needs_sync = (
        "a sync effect (invoke, stream, a sync tool or function) cannot be journaled; "
        "call it with ainvoke/astream, or also pass client=MongoClient(uri)"
    )
    _needs_async = (
        "an async effect (ainvoke, astream, an async tool or function) cannot be journaled natively; "
        "also pass async_client=AsyncMongoClient(uri)"
    )

    def __init__(
        self,
        client: Any = None,
        *,
        async_client: Any = None,
        db_name: str = "langgraph",
        collection: str = "activity_journal",
        serde: SerializerProtocol | None = None,
        lease_seconds: float = 30.0,
        wait_seconds: float = 30.0,
        on_input_change: str = "warn",
        on_nondeterminism: str = "raise",
        terminal_errors: Iterable[type[BaseException]] = (),
        redactor: Redactor = redact,
        preview_chars: int | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        expiry: Callable[[str], Mapping[str, Any]] | None = None,
        digest_key: bytes | None = None,
        metadata_collection: str = "durable_metadata",
        auto_setup: bool = True,
        storage_format: StorageFormat | None = None,
        run_fence: Callable[[str], object] | None = None,
        claim_always: bool = False,
    ) -> None:
        client, async_client = split_clients(
            client, async_client, "ActivityJournal", "or build it with ActivityJournal.for_checkpointer(saver)"
        )
        self.on_input_change, self.on_nondeterminism = _checked_policies(on_input_change, on_nondeterminism)
        self.lease_seconds = require_seconds("lease_seconds", lease_seconds)
        self.wait_seconds = require_seconds("wait_seconds", wait_seconds)
        self.terminal_errors = _exception_types(terminal_errors)
        self.client, self.async_client = client, async_client
        self.db_name = require_db_name(db_name)
        self.collection = require_str("collection", collection, allow_empty=False)
        self.serde = serde or JsonPlusSerializer()
        encrypted = isinstance(serde, EncryptedSerializer)
        self.redactor = redactor
        self.preview_chars, self.store_messages = _readable_text(preview_chars, encrypted=encrypted)
        self.chunk_bytes, self.expiry = chunk_bytes, expiry
        self._input_key = _checked_digest_key(digest_key)
        self.metadata_collection = require_str("metadata_collection", metadata_collection, allow_empty=False)
        self.run_fence = run_fence
        if not isinstance(claim_always, bool):
            raise InvalidInputError(f"claim_always must be True or False, got {claim_always!r}")
        self.claim_always = claim_always
        self._keyed_inputs = digest_key is not None or encrypted
        if storage_format is None:
            names = CollectionNames(journal=self.collection, metadata=self.metadata_collection)
            storage_format = StorageFormat(db_name, names)
        # deleted, copied and expired with its thread
        storage_format.thread_collections.register(self.collection, "journal")
        self._init_faces(
            client[db_name] if client is not None else None,
            async_client[db_name] if async_client is not None else None,
            auto_setup,
            storage_format.check_plan,
            role="journal",
        )

    @classmethod
    def for_checkpointer(cls, saver: JournalSaver, **options: Any) -> ActivityJournal:
        """A journal sharing ``saver``'s clients, database, serde, chunk size, collection name and TTL.

        Example::

            journal = ActivityJournal.for_checkpointer(saver, wait_seconds=5)

        Args:
            saver: a ``MongoDBCheckpointer``; under its ``ttl`` new entries carry the thread's expiry
                (``saver.expiry_fields``).
            **options: the other ``ActivityJournal`` arguments (``lease_seconds``, ``wait_seconds``,
                ``terminal_errors``, ...); an explicit ``collection``, ``chunk_bytes``,
                ``metadata_collection``, ``expiry`` or ``run_fence`` wins over the saver's.

        Returns:
            The journal.

        Raises:
            InvalidInputError: an option is invalid (``on_input_change``, ``on_nondeterminism``,
                ``lease_seconds``, ``wait_seconds``, ``terminal_errors``, ``digest_key``, a collection name).
        """
        options.setdefault("collection", saver.collections.journal)
        options.setdefault("chunk_bytes", saver.chunk_bytes)
        options.setdefault("metadata_collection", saver.collections.metadata)
        options.setdefault("storage_format", saver.storage_format)
        options.setdefault("run_fence", saver.run_fence)
        if saver.ttl is not None:
            options.setdefault("expiry", saver.expiry_fields)
        return cls(saver.client, async_client=saver.async_client, db_name=saver.db_name, serde=saver.serde, **options)

    def with_serde(self, serde: SerializerProtocol) -> ActivityJournal:
        """This journal recording and replaying outcomes with ``serde``: the same store and settings.

        ``DurablePlatform`` gives each run the serde of the saver it saves with (under
        ``LANGGRAPH_STRICT_MSGPACK=true``, the clone ``with_allowlist`` made), so a replayed outcome has the
        type the first run returned wherever the checkpoint's values do.

        Args:
            serde: any ``SerializerProtocol``.

        Returns:
            This journal when ``serde`` is already its serde, else a shallow copy using ``serde``.
        """
        if serde is self.serde:
            return self
        journal = copy.copy(self)
        journal.serde = serde
        return journal

    # -- positions ------------------------------------------------------------------

    @staticmethod
    def _position(call: EffectCall, position: EffectPosition | None) -> EffectPosition | Slot:
        return position if position is not None else locate(current_effect_scope(), call.effect_key, call.at_most_once)

    @staticmethod
    async def _aposition(call: EffectCall, position: EffectPosition | None) -> EffectPosition | Slot:
        return position if position is not None else await alocate(current_effect_scope(), call.effect_key)

    # -- effects ----------------------------------------------------------------------

    def run(
        self,
        call: EffectCall,
        fn: Callable[[], Any],
        *,
        position: EffectPosition | None = None,
        replay: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Return ``fn()``'s recorded outcome, or run ``fn`` once and record it.

        The position is claimed first (one upsert): a completed position returns its outcome without
        running ``fn``; otherwise ``fn`` runs inside the claim (``current_effect()`` names it, its
        lease renewed every ``lease_seconds / 3``) and its outcome is recorded under the claim's fence.

        Example::

            reply = journal.run(EffectCall("tool", "search", input=args), lambda: search(**args))

        Args:
            call: what runs: kind, name, input (digested; previewed redacted), ``tool_call_id``,
                ``at_most_once``.
            fn: the effect, called with no arguments.
            position: where to record it; by default the next position of the node running in the
                current durable scope (the ``tool_call_id``'s, when the call has one).
            replay: called with a recorded outcome instead of returning it, where ``current_effect()`` is the
                replayed effect (``replayed=True``): a wrapper shows the replay to its callbacks there. What it
                returns is returned.

        Returns:
            What ``fn`` returned, now or in the run that recorded it (through ``replay`` when given).

        Raises:
            NoDurableScopeError: no ``position`` was given and no durable scope or LangGraph task is running.
            NamespaceError: the running node's checkpoint namespace cannot be explained by the topology.
            RunLockLostError: the platform's run lost its thread's run lock (the scope's guard); not run.
            NondeterminismError: another kind or name is recorded at the position
                (``on_nondeterminism="raise"``).
            InputChangedError: a recorded outcome's input digest differs (``on_input_change="raise"``).
            EffectInProgressError: another worker holds the position under a live lease beyond
                ``wait_seconds``.
            EffectOutcomeUnknownError: an ``at_most_once`` effect was started by a worker that died before
                recording; it is not run again (settle it with ``resolve`` or ``discard``).
            CorruptJournalEntryError: the entry or its recorded outcome is not one the journal writes (under an
                ``EncryptedSerializer``, an outcome stored in clear); not run.
            EffectRecordLostError: under the platform, the record of an earlier effect of the node, written while
                the node went on, found its position recorded by another worker; not run.
            OutcomeNotSerializableError: the effect ran but the serde cannot serialize its result (recorded
                ``failed``); replayed for an ``at_most_once`` effect until a person settles the position.
            ClientConfigurationError: this journal has no sync client.
            EncryptionKeyError: a recorded outcome, or the input-digest key (under an ``EncryptedSerializer``), was
                encrypted under another key (or this serde has none); not run.
            DurableMongoError: under ``durability="async"``, the checkpoint the node's position derives from
                was not stored in time.
            Exception: whatever ``fn`` raises, after it is recorded ``failed``; a recorded failure whose type is
                in ``terminal_errors`` is raised again (same type) instead of running ``fn``.
        """
        with effect_watch(call.kind, call.name, call.at_most_once, call.tool_call_id) as watch:
            pos = self._position(call, position)
            return self._run(self._effect_plan(call, pos, fn, replay, watch))

    async def arun(
        self,
        call: EffectCall,
        fn: Callable[[], Any],
        *,
        position: EffectPosition | None = None,
        replay: Callable[[Any], Any] | None = None,
    ) -> Any:
        """Async ``run`` natively on the async client: same arguments, return and errors; ``fn`` and ``replay`` may
        return an awaitable (awaited inside the claim, or the replay). ``ClientConfigurationError`` when this
        journal has only a sync client."""
        with effect_watch(call.kind, call.name, call.at_most_once, call.tool_call_id) as watch:
            pos = await self._aposition(call, position)
            return await self._arun(self._effect_plan(call, pos, fn, replay, watch))

    def run_stream(
        self,
        call: EffectCall,
        open_stream: Callable[[], Iterator[Any]],
        merge: Callable[[list[Any]], Any],
        replay: Callable[[Any], Iterable[Any]],
        *,
        position: EffectPosition | None = None,
    ) -> Iterator[Any]:
        """Yield ``open_stream()``'s items as they come and record ``merge(items)``.

        A recorded position yields ``replay(outcome)`` without opening the stream. The lease is renewed
        until the stream ends, also while the caller handles an item.

        Args:
            call: what runs (as for ``run``).
            open_stream: opens the stream (the effect), called with no arguments.
            merge: turns the streamed items into the outcome to record.
            replay: turns a recorded outcome into the items to yield; called where ``current_effect()`` is the
                replayed effect (``replayed=True``), as ``run``'s ``replay``.
            position: as for ``run``.

        Returns:
            An iterator of the items. The position, the scope's guard and the client are checked when
            this is called; the claim and the other errors come when iterating.

        Raises:
            NoDurableScopeError: no ``position`` was given and no durable scope or LangGraph task is running.
            NamespaceError: the running node's checkpoint namespace cannot be explained by the topology.
            RunLockLostError: the platform's run lost its thread's run lock (the scope's guard); not run.
            NondeterminismError: another kind or name is recorded at the position
                (``on_nondeterminism="raise"``).
            InputChangedError: a recorded outcome's input digest differs (``on_input_change="raise"``).
            EffectInProgressError: another worker holds the position under a live lease beyond
                ``wait_seconds``.
            EffectOutcomeUnknownError: an ``at_most_once`` effect was started by a worker that died before
                recording; it is not run again (settle it with ``resolve`` or ``discard``).
            CorruptJournalEntryError: the entry or its recorded outcome is not one the journal writes (under an
                ``EncryptedSerializer``, an outcome stored in clear); not run.
            EffectRecordLostError: under the platform, the record of an earlier effect of the node, written while
                the node went on, found its position recorded by another worker; not run.
            OutcomeNotSerializableError: the effect ran but the serde cannot serialize its result (recorded
                ``failed``); replayed for an ``at_most_once`` effect until a person settles the position.
            ClientConfigurationError: this journal has no sync client.
            EncryptionKeyError: a recorded outcome, or the input-digest key (under an ``EncryptedSerializer``), was
                encrypted under another key (or this serde has none); not run.
            DurableMongoError: under ``durability="async"``, the checkpoint the node's position derives from
                was not stored in time.
            Exception: whatever the stream raises, after it is recorded ``failed``; a recorded failure whose type is
                in ``terminal_errors`` is raised again (same type) instead of running the stream.
        """
        pos = self._position(call, position)
        watch = effect_watch(call.kind, call.name, call.at_most_once, call.tool_call_id)
        return self._sync_face().iterate(watch.over(self._stream_plan(call, pos, open_stream, merge, replay, watch)))

    async def arun_stream(
        self,
        call: EffectCall,
        open_stream: Callable[[], AsyncIterator[Any]],
        merge: Callable[[list[Any]], Any],
        replay: Callable[[Any], Iterable[Any] | Awaitable[Iterable[Any]]],
        *,
        position: EffectPosition | None = None,
    ) -> AsyncIterator[Any]:
        """Async ``run_stream`` natively on the async client: same arguments, items and errors (all raised when
        iterating); ``open_stream`` returns an async iterator, ``replay`` an iterable or an awaitable of one.
        ``ClientConfigurationError`` when this journal has only a sync client."""
        pos = await self._aposition(call, position)
        io = await self._async_face()
        watch = effect_watch(call.kind, call.name, call.at_most_once, call.tool_call_id)
        async for item in io.iterate(watch.over(self._stream_plan(call, pos, open_stream, merge, replay, watch))):
            yield item

    # -- for people ---------------------------------------------------------------------

    def entries(self, thread_id: str) -> list[dict[str, Any]]:
        """The thread's entry documents in the order they were first claimed (outcome bytes left out), labelled.

        An entry of a platform run is keyed by its visit (``resolver/visit.py``); here its ``path`` and
        ``occurrence`` are the readable ordinals (``agent/1/case_investigation/1``, ``2``) numbered among the
        thread's entries (``labels.labelled``), and ``visit`` holds the stored key.

        Args:
            thread_id: the thread.

        Returns:
            The entry documents (chunk documents of large outcomes left out), oldest claim first.

        Raises:
            InvalidInputError: ``thread_id`` is not a string.
            ClientConfigurationError: this journal has only an async client.
        """
        return self._run(self._entries_plan(require_str("thread_id", thread_id)))

    async def aentries(self, thread_id: str) -> list[dict[str, Any]]:
        """Async ``entries`` on the async client: same arguments, return and errors."""
        return await self._arun(self._entries_plan(require_str("thread_id", thread_id)))

    def resolve(self, position: EffectPosition, outcome: Any) -> None:
        """Record ``outcome`` for a position a person has checked (after ``EffectOutcomeUnknownError``).

        The entry becomes ``completed`` with ``resolved_by: "operator"``, whatever its status was, and its
        fence moves on, so a claim still running there cannot record over the decision. The next run of
        the node replays ``outcome``.

        Args:
            position: the entry's position (the error's ``.position``).
            outcome: what the effect returned, as the serde can serialize it.

        Raises:
            InvalidInputError: ``position`` is not an ``EffectPosition``.
            DurableMongoError: no entry at ``position``, or the entry changed while it was being resolved
                (nothing recorded; look at it again).
            ClientConfigurationError: this journal has only an async client.
            Exception: whatever the serde raises for an ``outcome`` it cannot serialize (nothing recorded).
        """
        self._run(self._resolve_plan(position, outcome))

    async def aresolve(self, position: EffectPosition, outcome: Any) -> None:
        """Async ``resolve`` on the async client: same arguments and errors."""
        await self._arun(self._resolve_plan(position, outcome))

    def discard(self, position: EffectPosition) -> None:
        """Forget a position's entry, so its effect runs again on the next attempt.

        Deletes the entry and its outcome chunks; a position with no entry is left as it is.

        Args:
            position: the entry's position (e.g. the ``.position`` of ``EffectOutcomeUnknownError`` or
                ``CorruptJournalEntryError``).

        Raises:
            InvalidInputError: ``position`` is not an ``EffectPosition``.
            ClientConfigurationError: this journal has only an async client.
        """
        self._run(self._discard_plan(position))

    async def adiscard(self, position: EffectPosition) -> None:
        """Async ``discard`` on the async client: same arguments and errors."""
        await self._arun(self._discard_plan(position))


# -- the options ``ActivityJournal`` checks, in the order it checks them -----------------


def _checked_policies(on_input_change: Any, on_nondeterminism: Any) -> tuple[str, str]:
    if on_input_change not in ("warn", "raise", "ignore"):
        raise InvalidInputError(f'on_input_change must be "warn", "raise" or "ignore", got {on_input_change!r}')
    if on_nondeterminism not in ("raise", "rerun"):
        raise InvalidInputError(f'on_nondeterminism must be "raise" or "rerun", got {on_nondeterminism!r}')
    return on_input_change, on_nondeterminism


def _exception_types(terminal_errors: Iterable[Any]) -> tuple[type[BaseException], ...]:
    types = tuple(terminal_errors)
    if not all(isinstance(t, type) and issubclass(t, BaseException) for t in types):
        raise InvalidInputError(f"terminal_errors must be exception types, got {types!r}")
    return types


def _readable_text(preview_chars: int | None, *, encrypted: bool) -> tuple[int, bool]:
    """``(preview_chars, store_messages)``: by default 300 and error messages stored, but no readable text at all
    beside an encrypted outcome; ``preview_chars`` given keeps previews of that length and messages."""
    if preview_chars is not None:
        return preview_chars, True
    return (0, False) if encrypted else (300, True)


def _checked_digest_key(digest_key: Any) -> bytes | None:
    if digest_key is not None and (not isinstance(digest_key, bytes) or len(digest_key) < 16):
        raise InvalidInputError("digest_key must be at least 16 random bytes")
    return digest_key
