"""Storage logic of the activity journal, written once as plans (generators of ``storage.plans.requests``, run by
``ActivityJournal``'s sync or async face: see ``storage.plans``).

Record and replay, per position:

1. *claim*: one upsert (the *visit*) inserts the entry if the position is free
   (``status: started``, a fresh ``owner``, ``lease_until``) and counts the
   visit in ``replays``. Our owner in the returned entry: we inserted it, run
   the effect. Another entry instead:

   - ``completed``: replay its outcome, never running the effect;
   - ``failed``: run again (a retry), unless its error type is terminal, or
     the node handled it (``_handled``: an effect of its attempt started
     after the failure is journaled), which is raised again as the same type;
   - ``started`` under a live lease: wait (``wait_seconds``, plain finds) for
     the other worker, then ``EffectInProgressError``;
   - ``started`` under an expired lease, or a live one whose owner's process
     on this host has exited: the worker died; run again with the same
     idempotency key (take-over), or ``EffectOutcomeUnknownError`` for an
     ``at_most_once`` effect.

   A take-over is a conditional update on the claim it replaces (its
   ``fence``, its status and, for a started entry, its lease), so two workers
   cannot both take one position over.
2. *run* the effect, renewing the lease every ``lease_seconds / 3`` (a
   ``Heartbeat``, fenced like the record) until it ends.
3. *record*: a conditional update on the claim's ``fence`` and ``status:
   started``: a worker whose lease expired and whose position was taken over
   cannot overwrite the new owner's result. It also takes back the visit's
   count in ``replays`` (that visit ran the effect), or the take-over does for
   an owner that never recorded: ``replays`` counts the visits that did not run
   the effect. So a recorded effect costs 2 commands, a replayed one 1.

An entry the journal never writes (edited by hand, damaged: ``entry_problem``)
or an outcome whose bytes no longer match ``outcome.digest`` raises
``CorruptJournalEntryError`` and the effect is not run. The text stored for
people (previews, error messages) has the values of the input's
credential-looking keys scrubbed; ``store_messages=False`` (the default under
``EncryptedSerializer``) stores no error message at all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import sys
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, ClassVar, NoReturn, TypeGuard, cast

from langgraph.checkpoint.serde.base import SerializerProtocol
from pymongo.errors import ConnectionFailure

from ..errors import (
    CorruptDocumentError,
    CorruptJournalEntryError,
    DurableMongoError,
    EffectInProgressError,
    EffectOutcomeUnknownError,
    EffectRecordLostError,
    EncryptionKeyError,
    InputChangedError,
    InputChangedWarning,
    InvalidInputError,
    NondeterminismError,
    OutcomeNotSerializableError,
    RecordedFailureError,
)
from ..resolver.position import NodePosition
from ..storage.liveness import owner_gone
from ..storage.plans import lease
from ..storage.plans.requests import (
    Await,
    CreateIndexes,
    Defer,
    DeleteMany,
    Detach,
    Emit,
    End,
    FencedUpdate,
    Find,
    FindOneAndUpdate,
    Gather,
    Heartbeat,
    InsertMany,
    Invoke,
    Join,
    Next,
    Plan,
    Raised,
    Returned,
    Sleep,
    Try,
    ask,
)
from ..storage.schema import INDEXES
from ..storage.serde import StoredAt, load_stored
from ..telemetry import watches
from .attempt import Attempt
from .canonical import digest
from .context import EffectInfo, Slot, running
from .documents import (
    ONLY_VISIT,
    EffectCall,
    call_signatures,
    chunk_key,
    claim_fields,
    completed_update,
    entry_filter,
    entry_problem,
    error_record,
    failed_update,
    first_record,
    held_fence,
    input_key_upsert,
    live_fence,
    new_entry,
    node_entries_filter,
    outcome_digest,
    outcome_documents,
    outcome_typed,
    released_update,
    renewal_update,
    takeover_fence,
    takeover_update,
    uncount_visit,
    unknown_mark,
    unknown_unmark,
    visit_update,
)
from .labels import LABEL_FIELDS, labelled, sequence_filter
from .position import EffectPosition, at
from .redaction import Redactor, credential_values, preview, scrub, storable

logger = logging.getLogger("langgraph_durable_mongodb.journal")

#: First and longest pause while waiting for another worker's outcome.
_POLL_FIRST, _POLL_MAX = 0.05, 1.0


@dataclass(frozen=True)
class _Claimed:
    owner: str
    fence: int  # the claim's token: renewals and the record hold only while the entry carries it
    attempt: int
    started: float  # time.monotonic() when the claim was won
    secrets: frozenset[str]  # the input's credential values, scrubbed from stored text
    #: An exclusive run's effect, not claimed: its entry is written once, when it ends (these fields first).
    unclaimed: Mapping[str, Any] | None = None
    #: The node attempt that runs it (None for a position given explicitly, or a nested effect).
    node_attempt: Attempt | None = None
    #: The idempotency key its entry was first claimed under (a take-over keeps it); None: the position's.
    recorded_key: str | None = None


@dataclass(frozen=True)
class _RecordedOutcome:
    """What a claim found recorded at the position: the effect's outcome, deserialized, to return or replay, and the
    idempotency key its entry was claimed under."""

    value: Any
    recorded_key: str | None = None
    attempt: ClassVar[int] = 0  # as ``EffectInfo.attempt`` while replayed: no execution started here


@dataclass(frozen=True)
class _Ended:
    """When an effect ended (a record written later still says so), and its value serialized."""

    now: datetime
    duration_ms: int
    typed: tuple[str, bytes] | None = None


def _under_way(where: EffectPosition | Slot) -> contextlib.AbstractContextManager[None]:
    """While an effect of a task with a ``Trail`` runs and its record is written: its writes and its run's end wait."""
    trail = where.attempt.trail if isinstance(where, Slot) else None
    return trail.under_way() if trail is not None else contextlib.nullcontext()


def _duration_ms(claimed: _Claimed) -> int:
    return int((time.monotonic() - claimed.started) * 1000)


def _resolve_type(module: str, qualname: str, declared: Iterable[type[BaseException]]) -> type[BaseException] | None:
    """The exception class a failed entry names (``error.module``, ``error.type``): one of ``declared`` (the terminal
    errors), or one found in a module this process has imported already, through its namespace and its classes'
    (never ``getattr``, which a module's ``__getattr__`` may answer by importing). Nothing is imported: a written
    document never decides what the process imports."""
    for cls in declared:
        if (cls.__module__, cls.__qualname__) == (module, qualname):
            return cls
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        namespace = getattr(found, "__dict__", None)
        found = namespace.get(part) if isinstance(namespace, Mapping) else None
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


def _rebuild(cls: type[BaseException], message: str, pos: EffectPosition, why: str) -> BaseException:
    try:
        exc = cls(message)
    except Exception:  # a constructor with other arguments
        exc = cls.__new__(cls)
        exc.args = (message,)
    exc.add_note(f"replayed from the activity journal ({pos}): {why}")
    return exc


def _handled(entry: Mapping[str, Any], keys: Iterable[str]) -> bool:
    """Whether a failed entry's node went on after the failure: an effect of its attempt started after it failed
    (a higher ordinal than those handed out when it failed, ``error.issued``) is journaled at the node."""
    issued = (entry.get("error") or {}).get("issued")
    if not isinstance(issued, int) or isinstance(issued, bool):
        return False  # recorded without it (a position given explicitly, a nested effect, an older entry)
    return any(key.isdigit() and int(key) > issued for key in keys)


def unserializable_outcome(
    call: EffectCall, pos: EffectPosition, value: Any, exc: Exception
) -> OutcomeNotSerializableError:
    kind = type(value)
    return OutcomeNotSerializableError(
        f"{call.kind} {call.name!r} at {pos} ran, but the journal cannot record what it returned: the serde cannot "
        f"serialize {kind.__module__}.{kind.__qualname__} ({exc}). Return a dict, a dataclass or a pydantic model, "
        "or configure a serde that handles this type. "
        + (
            "It is at_most_once, so it is not run again: check its idempotency key in the system it calls, then "
            "record what happened with ActivityJournal.resolve(position, outcome) or run it again with "
            "ActivityJournal.discard(position)"
            if call.at_most_once
            else "It runs again on the next attempt"
        ),
        position=pos,
    )


def _require_position(pos: Any) -> None:
    if not isinstance(pos, EffectPosition):
        raise InvalidInputError(
            f"a journal position is an EffectPosition (an error's .position, or one built from an entry), "
            f"got {type(pos).__name__}"
        )


def _corrupt(pos: EffectPosition, problem: str, collection: str = "", field: str = "") -> CorruptJournalEntryError:
    return CorruptJournalEntryError(
        f"{problem}; the effect was not run. Run it again with journal.discard(position), or record what it "
        "returned with journal.resolve(position, outcome) (the position is this error's .position)",
        position=pos, collection=collection, field=field,
    )


def _recorded_keys(node_attempt: Attempt | None) -> Iterable[str]:
    """The effect keys of the node's ordinal entries as the attempt read them (none without an attempt)."""
    return (node_attempt.recorded or {}) if node_attempt is not None else {}


def _held_by(entry: Any, owner: str) -> TypeGuard[Mapping[str, Any]]:
    """Whether ``entry``, as a claim's upsert returned it, is held under ``owner``: that claim won the position."""
    return isinstance(entry, Mapping) and entry.get("owner") == owner


def _log_replay(call: EffectCall, pos: EffectPosition, entry: Mapping[str, Any]) -> None:
    """Every replay, on every path (a claim's, a run lock holder's read), at DEBUG: the effect, its position and the
    idempotency key its entry was claimed under."""
    key = entry.get("idempotency_key") or pos.idempotency_key
    logger.debug("replaying %s %r at %s (idempotency key %s)", call.kind, call.name, pos, key)


def _issued(claimed: _Claimed) -> int | None:
    """The ordinals the effect's node attempt had handed out when it ended (see ``_handled``)."""
    return claimed.node_attempt.issued if claimed.node_attempt is not None else None


class JournalPlans:
    """The journal's storage logic; mixed into ``ActivityJournal``."""

    collection: str
    serde: SerializerProtocol
    chunk_bytes: int
    lease_seconds: float
    wait_seconds: float
    on_input_change: str
    on_nondeterminism: str
    terminal_errors: tuple[type[BaseException], ...]
    redactor: Redactor
    preview_chars: int
    store_messages: bool
    expiry: Callable[[str], Mapping[str, Any]] | None
    metadata_collection: str
    run_fence: Callable[[str], object] | None
    claim_always: bool
    _input_key: bytes | None
    _keyed_inputs: bool

    def _expiry(self, thread_id: str) -> Mapping[str, Any]:
        return self.expiry(thread_id) if self.expiry is not None else {}

    def _setup_plan(self) -> Plan[None]:
        yield CreateIndexes(self.collection, list(INDEXES["journal"]))

    def forget_entries_plan(self, thread_id: str, positions: Mapping[str, Any]) -> Plan[None]:
        """Delete the thread's entries (and outcome chunks) matching ``positions``, a filter on position fields.

        A plan (run by a storage face: the platform runs it after a ``keep_latest`` TTL sweep pruned the thread,
        with a filter on the ``root_key`` of the tasks that finished, ``DurablePlatform._forget_finished``).

        Args:
            thread_id: the thread.
            positions: a filter on ``path``, ``node``, ``occurrence``.
        """
        yield DeleteMany(self.collection, {"thread_id": thread_id, **positions})

    def _input_key_plan(self, thread_id: str) -> Plan[bytes | None]:
        """The key of input digests: ``digest_key``, or under an ``EncryptedSerializer`` a random key stored once
        per database, encrypted by the serde (so only holders of the encryption key can test guesses; one stored in
        clear, planted, is refused). ``thread_id``: the thread whose effect needs it, named by an error."""
        if self._input_key is not None or not self._keyed_inputs:
            return self._input_key
        fresh = self.serde.dumps_typed(os.urandom(32))
        doc = yield from ask(FindOneAndUpdate(self.metadata_collection, *input_key_upsert(fresh), upsert=True))
        doc = cast("dict[str, Any]", doc)  # an upsert answers with the document after it, never None
        at = StoredAt(thread_id, self.metadata_collection, doc["_id"], "data")
        self._input_key = bytes(load_stored(self.serde, (doc["type"], bytes(doc["data"])), at))
        return self._input_key

    # -- the effect's life ----------------------------------------------------------

    def _effect_plan(
        self,
        call: EffectCall,
        where: EffectPosition | Slot,
        fn: Callable[[], Any],
        replay: Callable[[Any], Any] | None = None,
        watch: Any = watches.UNWATCHED,
    ) -> Plan[Any]:  # what the effect returned
        """Run ``fn`` once and record its outcome; a recorded outcome is returned, through ``replay`` when given.

        In a task with a ``Trail``, a value an at-least-once ``fn`` returned is recorded while the node goes on
        (``Defer``): the task's next effect starts, and its writes are saved, only once that record is written. An
        ``at_most_once`` effect's value, a failure, and a value the serde cannot write are recorded before the
        effect's caller hears of them: a crash after an ``at_most_once`` effect returned never leaves its outcome
        unknown. ``watch``: what the effect tells OpenTelemetry (``telemetry/watches.py``).
        """
        with _under_way(where):  # first: a run that ends from now on waits for it, or refuses it at its fence
            watch.claiming()
            yield from self._after_trailing_records(where)
            pos, claimed = yield from self._claim(call, where)
            watch.placed(pos, claimed.attempt, claimed.recorded_key)
            if isinstance(claimed, _RecordedOutcome):
                return claimed.value if replay is None else (yield from self._replay(call, pos, replay, claimed.value))
            return (yield from self._run_and_record(call, where, pos, claimed, fn, watch))

    def _run_and_record(
        self,
        call: EffectCall,
        where: EffectPosition | Slot,
        pos: EffectPosition,
        claimed: _Claimed,
        fn: Callable[[], Any],
        watch: Any,
    ) -> Plan[Any]:
        """``_effect_plan``'s run of a claimed effect: run ``fn``, then record its outcome, trailing or before it
        returns."""
        yield from self._fence(pos, claimed)
        with (yield from ask(self._heartbeat(pos, claimed))):
            result = yield from ask(Invoke(fn, self._running(call, pos, claimed)))
        if isinstance(result, Raised) and result.pending is not None:
            yield from self._outlive(call, pos, claimed, result)
        trail = where.attempt.trail if isinstance(where, Slot) and not call.at_most_once else None
        if trail is not None and isinstance(result, Returned) and (typed := self._serialized(result.value)) is not None:
            ended = _Ended(lease.utcnow(), _duration_ms(claimed), typed)
            recording = watch.recording(self._record(call, pos, claimed, result, ended, trailing=True), result)
            record = yield from ask(Defer(recording))
            trail.add(record)
            return result.value
        return (yield from watch.recording(self._record(call, pos, claimed, result), result))

    @staticmethod
    def _after_trailing_records(where: EffectPosition | Slot) -> Plan[None]:
        """Wait until the records of the task's earlier effects are written; raise the error of one that failed."""
        if isinstance(where, Slot) and where.attempt.trail is not None and (pending := where.attempt.trail.pending()):
            yield Join(pending)

    def _serialized(self, value: Any) -> tuple[str, bytes] | None:
        """The serde's form of an outcome, or None when it cannot write it (the record then says so)."""
        try:
            return self.serde.dumps_typed(value)
        except Exception:  # whatever the serde raises for a type it cannot write
            return None

    def _stream_plan(
        self,
        call: EffectCall,
        where: EffectPosition | Slot,
        open_stream: Callable[[], Any],
        merge: Callable[[list[Any]], Any],
        replay: Callable[[Any], Iterable[Any] | Awaitable[Iterable[Any]]],  # awaited on the async face
        watch: Any = watches.UNWATCHED,
    ) -> Plan[None]:
        """Emit the streamed items as they come and record ``merge(items)``; a replay emits ``replay(outcome)``.

        The lease is renewed until the stream ends, including while the caller handles an item.
        """
        watch.claiming()
        yield from self._after_trailing_records(where)
        pos, claimed = yield from self._claim(call, where)
        watch.placed(pos, claimed.attempt, claimed.recorded_key)
        if isinstance(claimed, _RecordedOutcome):
            for item in (yield from self._replay(call, pos, replay, claimed.value)):
                yield Emit(item)
            return
        yield from self._fence(pos, claimed)
        context = watch.around(self._running(call, pos, claimed))
        with (yield from ask(self._heartbeat(pos, claimed))):
            result: Returned | Raised | End
            result = yield from ask(Invoke(open_stream, context))
            if isinstance(result, Returned):
                stream, items = result.value, []
                while isinstance(result := (yield from ask(Next(stream, context))), Returned):  # until END or Raised
                    items.append(result.value)
                    yield Emit(result.value)
                if isinstance(result, End):
                    result = Returned(merge(items))
        yield from watch.recording(self._record(call, pos, claimed, result), result)

    def _fence(self, pos: EffectPosition, claimed: _Claimed) -> Plan[None]:
        """Refuse to start the effect once the run's lock may be lost (``run_fence``, no I/O: see ``run_lock``),
        freeing its claim as one that never ran (``not_run``), so a take-over runs it even when at_most_once."""
        try:
            if self.run_fence is not None:
                self.run_fence(pos.thread_id)
        except BaseException:
            if claimed.unclaimed is None:
                released = released_update(lease.utcnow(), not_run=True)
                yield FencedUpdate(self.collection, held_fence(pos, claimed.fence), released)
            raise

    def _outlive(self, call: EffectCall, pos: EffectPosition, claimed: _Claimed, cancelled: Raised) -> Plan[NoReturn]:
        """The node was cancelled while the effect's work goes on (in a thread an ``await`` cannot stop: a sync
        tool LangChain runs in an executor, ``asyncio.to_thread``, ``run_in_executor``): hold the position until
        the work ends, record its outcome, then raise the cancellation. An exclusive run's unclaimed effect is
        claimed first, so a resume after the run ended waits for it too. Cancelled again while waiting: the
        claim is left to its lease."""
        yield Detach(self._hold_plan(call, pos, claimed, cancelled.pending))
        raise cancelled.error

    def _hold_plan(self, call: EffectCall, pos: EffectPosition, claimed: _Claimed, work: Any) -> Plan[None]:
        """``_outlive``'s part that no further cancellation of the node may cut short (run ``Detach``-ed)."""
        if claimed.unclaimed is not None:
            claimed = yield from self._claim_late(pos, claimed)
        with (yield from ask(self._heartbeat(pos, claimed))):
            outcome = yield from ask(Await(work))
        if not (isinstance(outcome, Raised) and outcome.pending is not None):
            with contextlib.suppress(Exception):  # the effect's own error is recorded; the cancellation goes on
                yield from self._record(call, pos, claimed, outcome)

    def _claim_late(self, pos: EffectPosition, claimed: _Claimed) -> Plan[_Claimed]:
        """Claim an exclusive run's effect that has been running unclaimed (one upsert); unchanged if an entry
        is there already (its record then writes nothing over it)."""
        now = lease.utcnow()
        lease_until = now + timedelta(seconds=self.lease_seconds)
        claim = {**(claimed.unclaimed or {}), "lease_until": lease_until, "updated_at": now}
        visit = visit_update(pos, new_entry(pos, claim, self._expiry(pos.thread_id)), now=now)
        entry = yield from ask(FindOneAndUpdate(self.collection, entry_filter(pos), visit, upsert=True))
        if _held_by(entry, claimed.owner):
            return replace(claimed, fence=entry["fence"], unclaimed=None)
        return claimed

    @staticmethod
    def _running(call: EffectCall, pos: EffectPosition, claimed: _Claimed) -> Callable[[], Any]:
        """The context the effect runs in: it is ``current_effect()`` there."""
        info = EffectInfo(
            pos, call.kind, call.name, claimed.attempt, call.at_most_once, recorded_key=claimed.recorded_key
        )
        return lambda: running(info)

    @staticmethod
    def _replay(call: EffectCall, pos: EffectPosition, replay: Callable[[Any], Any], value: Any) -> Plan[Any]:
        """``replay(value)``, called where ``current_effect()`` is the replayed effect (``replayed``), so a wrapper
        can show the replay to its callbacks; awaited on the async face if it returns an awaitable."""
        info = EffectInfo(pos, call.kind, call.name, 0, call.at_most_once, replayed=True)
        result = yield from ask(Invoke(lambda: replay(value), lambda: running(info)))
        if isinstance(result, Raised):
            raise result.error
        return result.value

    # -- heartbeat ------------------------------------------------------------------

    def _heartbeat(self, pos: EffectPosition, claimed: _Claimed) -> Heartbeat:
        every = 0.0 if claimed.unclaimed is not None else self.lease_seconds / lease.RENEWALS_PER_LEASE
        return Heartbeat(lambda: self._renew_plan(pos, claimed.fence), every)

    def _renew_plan(self, pos: EffectPosition, fence: int) -> Plan[bool]:
        """Push a live lease forward; False once it expired or another worker took the position over."""
        now = lease.utcnow()
        update = renewal_update(now=now, lease_until=now + timedelta(seconds=self.lease_seconds))
        return (yield from ask(FencedUpdate(self.collection, live_fence(pos, fence, now), update)))

    # -- claim ----------------------------------------------------------------------

    def _place(
        self, call: EffectCall, where: EffectPosition | Slot, input_digest: str
    ) -> Plan[tuple[EffectPosition, Mapping[str, Any] | None, bool, Attempt | None]]:
        """``(position, its entry as read, exclusive, node attempt)``: the position given, or the slot's, matched among
        the node's entries (read once per attempt, in one query; none for a visit no other run can have met,
        ``NodePosition.new``)."""
        if isinstance(where, EffectPosition):
            return where, None, False, None
        attempt, node = where.attempt, where.node
        if attempt.recorded is None:
            docs = yield from self._node_entries(attempt, node)
            entries: dict[str, Mapping[str, Any]] = {
                d["effect_key"]: d for d in docs if isinstance(d.get("effect_key"), str)
            }
            attempt.learn(call_signatures(docs), entries)
        if where.key is not None:
            attempt.reserve(where.key)
            key = where.key
        else:
            key = attempt.take(where.ordinal, call.kind, call.name, input_digest)
        return at(node, key, attempt.label), attempt.entries.get(key), where.exclusive, attempt

    def _node_entries(self, attempt: Attempt, node: NodePosition) -> Plan[list[dict[str, Any]]]:
        """The node's entries (none for a visit no other run can have met), and the visit's label: from the ranks the
        thread's labels know, else from its sequence, read whole beside the node's entries (``labels.ThreadLabels``)."""
        visit = {"path": node.path, "node": node.node, "occurrence": node.occurrence, "root_key": node.root_key}
        labels = attempt.labels
        label = labels.label(visit) if labels is not None else None
        sequence = sequence_filter(visit) if labels is not None and label is None else None
        reads = [] if node.new else [Find(self.collection, node_entries_filter(node), {"_id": 0})]
        if sequence is not None:
            reads.append(Find(self.collection, {"thread_id": node.thread_id, "chunk": 0, **sequence}, LABEL_FIELDS))
        found: list[list[dict[str, Any]]] = (
            [(yield from ask(reads[0]))] if len(reads) == 1 else (yield from ask(Gather(tuple(reads)))) if reads else []
        )
        if labels is not None and sequence is not None:
            labels.learn(visit, found[-1])
            label = labels.label(visit)
        attempt.label = (label["path"], label["occurrence"]) if label is not None else None
        return found[0] if not node.new else []

    def _unclaimed(
        self, call: EffectCall, pos: EffectPosition, known: Mapping[str, Any] | None, fingerprint: Mapping[str, str],
        owner: str, secrets: frozenset[str], node_attempt: Attempt | None,
    ) -> Plan[_Claimed | _RecordedOutcome | None]:
        """An exclusive run's at-least-once effect, without a claim: ``_Claimed`` (run it, then write its entry:
        one command) for a position with no entry, ``_RecordedOutcome`` (no command) for a completed entry of this
        effect, or None: anything else goes through a claim."""
        if known is None:
            now = lease.utcnow()
            claim = claim_fields(call, pos, owner=owner, now=now, lease_until=now, input=fingerprint)
            return _Claimed(owner, 1, 1, time.monotonic(), secrets, unclaimed=claim, node_attempt=node_attempt)
        if known.get("status") != "completed" or entry_problem(known) is not None:
            return None
        if (known.get("kind"), known.get("name")) != (call.kind, call.name):
            return None  # the claim path judges non-determinism
        self._check_input(known, call, pos, fingerprint)
        _log_replay(call, pos, known)
        return _RecordedOutcome((yield from self._load_outcome(known, pos)), known.get("idempotency_key"))

    def _claim(
        self, call: EffectCall, where: EffectPosition | Slot
    ) -> Plan[tuple[EffectPosition, _Claimed | _RecordedOutcome]]:
        """Returns ``(position, _Claimed)`` (run the effect) or ``(position, _RecordedOutcome)`` (its outcome); raises
        a recorded terminal error.

        Every visit is counted in ``replays``, also one that raises (waited too long, non-determinism, a
        changed input under ``"raise"``, an at_most_once outcome unknown): it did not run the effect.
        """
        owner = uuid.uuid4().hex
        secrets = credential_values([call.input, call.preview_source])
        thread_id = where.thread_id if isinstance(where, EffectPosition) else where.node.thread_id
        key = yield from self._input_key_plan(thread_id)
        fingerprint = {"digest": digest(call.input, key), "preview": self._preview(call.preview_source, secrets)}
        pos, known, exclusive, node_attempt = yield from self._place(call, where, fingerprint["digest"])
        if exclusive and not call.at_most_once and not self.claim_always:
            settled = yield from self._unclaimed(call, pos, known, fingerprint, owner, secrets, node_attempt)
            if settled is not None:
                return pos, settled
        return pos, (yield from self._contend(call, pos, fingerprint, owner, secrets, node_attempt))

    def _contend(
        self,
        call: EffectCall,
        pos: EffectPosition,
        fingerprint: Mapping[str, str],
        owner: str,
        secrets: frozenset[str],
        node_attempt: Attempt | None,
    ) -> Plan[_Claimed | _RecordedOutcome]:
        """Visit the position and act on the entry found, until ``owner`` holds it (``_Claimed``) or its outcome is
        replayed (``_RecordedOutcome``); waits for a live lease, takes over a dead or failed claim."""
        keys = _recorded_keys(node_attempt)
        deadline = time.monotonic() + self.wait_seconds
        pause = lease.Backoff(_POLL_FIRST, _POLL_MAX)
        entry = None
        while True:
            now = lease.utcnow()
            lease_until = now + timedelta(seconds=self.lease_seconds)
            claim = claim_fields(call, pos, owner=owner, now=now, lease_until=lease_until, input=fingerprint)
            if entry is None:  # the visit; again only if the entry was discarded meanwhile
                visit = visit_update(pos, new_entry(pos, claim, self._expiry(pos.thread_id)), now=now)
                entry = yield from self._visit(pos, visit)
                if _held_by(entry, owner):
                    return _Claimed(owner, entry["fence"], 1, time.monotonic(), secrets, node_attempt=node_attempt)
            self._check_entry(entry, pos)
            try:
                action = self._judge(entry, call, pos, fingerprint, now, keys)
            except EffectOutcomeUnknownError:
                yield from self._mark_unknown(call, pos, entry)
                raise
            if action == "raise":
                raise self._recorded_error(entry, pos)
            if action == "replay":
                _log_replay(call, pos, entry)
                return _RecordedOutcome((yield from self._load_outcome(entry, pos)), entry.get("idempotency_key"))
            if action == "wait":
                yield Sleep(self._pause(call, pos, entry, deadline, pause))
            else:
                recorded_key = entry.get("idempotency_key") or pos.idempotency_key  # a re-execution keeps its key
                orphaned = entry["status"] == "started"
                update = takeover_update({**claim, "idempotency_key": recorded_key}, orphaned=orphaned)
                if (yield from ask(FencedUpdate(self.collection, takeover_fence(pos, entry), update))):
                    attempts = entry.get("attempts", 0) + 1
                    return _Claimed(
                        owner, entry["fence"] + 1, attempts, time.monotonic(), secrets, node_attempt=node_attempt,
                        recorded_key=recorded_key,
                    )
                # another worker took it over first: judge its entry
            found = yield from ask(Find(self.collection, entry_filter(pos), {"_id": 0}, limit=1))
            entry = found[0] if found else None

    def _mark_unknown(self, call: EffectCall, pos: EffectPosition, entry: Mapping[str, Any]) -> Plan[None]:
        """Mark an entry whose outcome is unknown, once: the run that marks it counts it among the outcomes awaiting a
        person (``resolve``/``discard`` take the count off). A mark that fails to be written is given up: the next
        run that meets the entry marks it."""
        if entry.get("unknown_since") is None:
            marked = yield from ask(Try(FencedUpdate(self.collection, *unknown_mark(pos, entry, lease.utcnow()))))
            if isinstance(marked, Returned) and marked.value:
                watches.outcome_unknown(call.kind)

    def _pause(
        self, call: EffectCall, pos: EffectPosition, entry: Mapping[str, Any], deadline: float, pause: lease.Backoff
    ) -> float:
        """How long to sleep before looking at an entry under another worker's live lease again;
        ``EffectInProgressError`` once ``wait_seconds`` have passed."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise EffectInProgressError(
                f"{call.kind} {call.name!r} at {pos} is running in another worker (lease until "
                f"{entry['lease_until']:%Y-%m-%d %H:%M:%S} UTC) and did not finish within {self.wait_seconds:g} s; "
                "retry later, or give the journal a longer wait_seconds",
                position=pos,
                lease_until=entry["lease_until"],
            )
        return pause.next(remaining)

    def _visit(self, pos: EffectPosition, visit: dict[str, Any]) -> Plan[dict[str, Any]]:
        """The visit's upsert. A reply lost to a connection failure (the server may have applied it) is sent once
        more: the same visit, under the same owner, returns the entry, ours when our claim was applied, and the
        effect, which we know never started, runs now instead of raising ``EffectOutcomeUnknownError`` later.
        (A replica set's retryable writes do this in the driver; a standalone server's replies are not retried.)"""
        request = FindOneAndUpdate(self.collection, entry_filter(pos), visit, upsert=True)
        answer = yield from ask(Try(request))
        if isinstance(answer, Returned):
            return cast("dict[str, Any]", answer.value)  # an upsert answers with the document after it, never None
        if not isinstance(answer.error, ConnectionFailure):
            raise answer.error
        logger.warning("the claim of %s got no reply (%s): sending it once more", pos, answer.error)
        return cast("dict[str, Any]", (yield from ask(request)))

    def _judge(
        self,
        entry: Mapping[str, Any],
        call: EffectCall,
        pos: EffectPosition,
        fingerprint: Mapping[str, str],
        now: datetime,
        keys: Iterable[str],
    ) -> str:
        """What to do with an existing entry: ``replay`` (its outcome), ``raise`` (its recorded error: terminal, or
        handled by the node, see ``_handled``), ``wait`` (for its live lease) or ``takeover``; or raise what stops
        the effect. ``keys``: the node attempt's ordinal entries as read."""
        status = entry.get("status")
        terminal = status == "failed" and (self._terminal_type(entry) is not None or _handled(entry, keys))
        if self._rerun_in_place(entry, call, pos, terminal) and status != "started":
            return "takeover"  # "rerun": run the new effect in the old one's place
        if status == "completed" or terminal:
            self._check_input(entry, call, pos, fingerprint)
            return "raise" if terminal else "replay"
        if status == "failed":
            return "takeover"
        return self._judge_started(entry, call, pos, now)

    def _rerun_in_place(self, entry: Mapping[str, Any], call: EffectCall, pos: EffectPosition, terminal: bool) -> bool:
        """Whether the entry records another effect than ``call`` that ``call`` replaces
        (``on_nondeterminism="rerun"``); ``NondeterminismError`` under ``"raise"``. A failure that is run again anyway
        is not compared."""
        recorded = (entry.get("kind"), entry.get("name"))
        if recorded == (call.kind, call.name) or (entry.get("status") == "failed" and not terminal):
            return False
        watches.nondeterminism("effect_changed", "raised" if self.on_nondeterminism == "raise" else "rerun")
        if self.on_nondeterminism == "raise":
            raise NondeterminismError(
                f"the journal recorded {recorded[0]} {recorded[1]!r} at {pos}, but the code now calls "
                f"{call.kind} {call.name!r} there: the code changed between the run and this resume. Resume "
                "with the code that started the run, discard the node's entries (ActivityJournal.discard) to "
                'run them again, or set on_nondeterminism="rerun"'
            )
        return True

    def _judge_started(self, entry: Mapping[str, Any], call: EffectCall, pos: EffectPosition, now: datetime) -> str:
        """``wait`` for a started entry under a live lease, else ``takeover`` (its worker died); an at_most_once
        effect that may have started raises ``EffectOutcomeUnknownError`` instead."""
        expired = cast(datetime, lease.naive(entry["lease_until"])) <= now  # a started entry's is a date (_check_entry)
        if not expired and not owner_gone(entry):
            return "wait"
        died = (
            f"whose lease expired ({entry['lease_until']:%Y-%m-%d %H:%M:%S} UTC)"
            if expired
            else f"whose process ({entry.get('owner_pid')} on {entry.get('owner_host')}) exited"
        )
        if (call.at_most_once or entry.get("at_most_once")) and entry.get("not_run") is not True:
            key = entry.get("idempotency_key") or pos.idempotency_key  # the one the system it calls saw
            logger.warning(
                "%s %r at %s: outcome unknown (at_most_once, started by a worker %s); idempotency key %s",
                call.kind, call.name, pos, died, key,
            )
            raise EffectOutcomeUnknownError(
                f"{call.kind} {call.name!r} at {pos} is at_most_once and was started by a worker {died} before "
                f"it recorded an outcome, so it may or may not have happened. Look up idempotency key "
                f"{key} in the system it calls, then record what happened with "
                "ActivityJournal.resolve(position, outcome), or let it run again with "
                "ActivityJournal.discard(position); from a shell (with --uri and --db of this database): "
                f"langgraph-durable-mongodb resolve {shlex.quote(str(pos))} '<what it returned, as JSON>', or "
                f"langgraph-durable-mongodb discard {shlex.quote(str(pos))}",
                position=pos,
                idempotency_key=key,
            )
        logger.info("%s %r at %s was started by a worker %s: running it again", call.kind, call.name, pos, died)
        return "takeover"

    @staticmethod
    def _check_entry(entry: Any, pos: EffectPosition) -> None:
        """Raise ``CorruptJournalEntryError`` for an entry the journal never writes (edited by hand, damaged)."""
        problem = entry_problem(entry)
        if problem is not None:
            raise _corrupt(pos, f"the journal entry at {pos} is invalid: {problem}")

    def _recorded_error(self, entry: Mapping[str, Any], pos: EffectPosition) -> BaseException:
        """The recorded failure, raised again: its terminal type, or the type a node handled (rebuilt from its
        module and name, found among the modules imported already; ``RecordedFailureError`` when it is not there, or
        not an ``Exception``)."""
        error = entry["error"]
        message = error.get("message", "")
        terminal = self._terminal_type(entry)
        if terminal is not None:
            return _rebuild(terminal, message, pos, "a terminal failure is not run again")
        why = "the node went on after this failure when it ran, so it is raised again rather than run again"
        cls = _resolve_type(error.get("module", ""), error.get("type", ""), self.terminal_errors)
        if cls is not None and issubclass(cls, Exception):
            return _rebuild(cls, message, pos, why)
        return RecordedFailureError(
            f"{entry.get('kind')} {entry.get('name')!r} at {pos} failed with {error.get('module')}.{error.get('type')} "
            f"({message!r}) and the node went on after it, so the failure is raised again, but that type is not in "
            "a module this process has imported (nothing is imported because a journal entry names it), so it cannot "
            "be raised as itself. Define the exception class at module level in a module the graph's code imports, "
            "or declare it in terminal_errors, or run the effect again with ActivityJournal.discard(position)",
            position=pos,
            error_type=f"{error.get('module')}.{error.get('type')}",
        )

    def _terminal_type(self, entry: Mapping[str, Any]) -> type[BaseException] | None:
        """The recorded error's type if it was terminal and still is under ``terminal_errors``."""
        error = entry.get("error") or {}
        if not error.get("terminal"):
            return None
        # OutcomeNotSerializableError is recorded terminal only when at_most_once
        terminal = (*self.terminal_errors, OutcomeNotSerializableError)
        cls = _resolve_type(error.get("module", ""), error.get("type", ""), terminal)
        return cls if cls is not None and issubclass(cls, terminal) else None

    def _check_input(
        self, entry: Mapping[str, Any], call: EffectCall, pos: EffectPosition, fingerprint: Mapping[str, str]
    ) -> None:
        recorded = (entry.get("input") or {}).get("digest")
        if recorded in (None, fingerprint["digest"]) or self.on_input_change == "ignore":
            return
        message = (
            f"{call.kind} {call.name!r} at {pos} is replayed from the journal, but its input changed since it was "
            f"recorded (was {(entry.get('input') or {}).get('preview', '')!r}, now {fingerprint['preview']!r})"
        )
        watches.nondeterminism("input_changed", "raised" if self.on_input_change == "raise" else "warned")
        if self.on_input_change == "raise":
            raise InputChangedError(
                message + "; resume with the inputs of the original run, or discard the entry to run it again"
            )
        warnings.warn(message, InputChangedWarning, stacklevel=2)

    def _load_outcome(self, entry: Mapping[str, Any], pos: EffectPosition) -> Plan[Any]:
        chunks: list[dict[str, Any]] = []
        if entry["outcome"].get("chunks", 1) > 1:
            chunks = yield from ask(
                Find(self.collection, {**chunk_key(pos, entry["owner"]), "chunk": {"$gt": 0}}, {"_id": 0})
            )
        typed = outcome_typed(entry, chunks)
        if typed is None:
            raise _corrupt(pos, f"the recorded outcome at {pos} is missing some of its chunk documents")
        recorded = entry["outcome"].get("digest")  # absent on entries recorded before digests were stored
        if recorded is not None and recorded != outcome_digest(typed):
            raise _corrupt(pos, f"the recorded outcome at {pos} does not match its digest (its bytes or type changed)")
        try:
            return load_stored(self.serde, typed, StoredAt(pos.thread_id, self.collection, str(pos), "outcome.data"))
        except EncryptionKeyError:
            raise
        except CorruptDocumentError as exc:  # in clear under an EncryptedSerializer: planted, or from before it
            problem = (
                f"the recorded outcome at {pos} is stored in clear (serde type {typed[0]!r}) though the journal's "
                "serde encrypts every outcome: it was written by someone who can write the database, or before "
                "encryption was turned on"
            )
            raise _corrupt(pos, problem, self.collection, "outcome.data") from exc
        except Exception as exc:  # whatever the serde raises for bytes it cannot read
            problem = f"the recorded outcome at {pos} cannot be deserialized ({type(exc).__name__})"
            raise _corrupt(pos, problem, self.collection, "outcome.data") from exc

    # -- record -----------------------------------------------------------------------

    def _record(
        self,
        call: EffectCall,
        pos: EffectPosition,
        claimed: _Claimed,
        result: Returned | Raised,
        ended: _Ended | None = None,
        trailing: bool = False,
    ) -> Plan[Any]:  # the effect's value
        """Record the outcome under the fence and return the value (or raise the effect's error).

        ``ended``: when the effect ended, and its serialized value. ``trailing``: the node went on with the value
        already, so a position another worker recorded meanwhile raises ``EffectRecordLostError`` instead of
        handing back that worker's outcome.
        """
        ended = ended or _Ended(lease.utcnow(), _duration_ms(claimed))
        if isinstance(result, Raised):
            yield from self._record_failure(pos, claimed, result.error, ended)
            raise result.error
        typed = yield from self._serialized_or_failed(call, pos, claimed, result.value, ended)
        outcome, chunks = outcome_documents(
            pos,
            claimed.owner,
            typed,
            self._preview(result.value, claimed.secrets),
            self.chunk_bytes,
            self._expiry(pos.thread_id),
        )
        if chunks:
            yield InsertMany(self.collection, chunks)
        completed = completed_update(outcome, now=ended.now, duration_ms=ended.duration_ms)
        if (yield from self._end_claim(pos, claimed, completed)):
            return result.value
        return (yield from self._fenced_out(call, pos, claimed, result.value, bool(chunks), trailing))

    def _record_failure(self, pos: EffectPosition, claimed: _Claimed, exc: BaseException, ended: _Ended) -> Plan[None]:
        """Record the effect's error as its outcome (``failed``); a cancellation or an interrupt, whose outcome is
        unknown, frees the claimed position instead."""
        if isinstance(exc, Exception):
            terminal = isinstance(exc, self.terminal_errors)
            error = error_record(exc, terminal=terminal, message=self._message(exc, claimed), issued=_issued(claimed))
            yield from self._end_claim(pos, claimed, failed_update(error, now=ended.now, duration_ms=ended.duration_ms))
        elif claimed.unclaimed is None:
            yield FencedUpdate(self.collection, held_fence(pos, claimed.fence), released_update(ended.now))

    def _serialized_or_failed(
        self, call: EffectCall, pos: EffectPosition, claimed: _Claimed, value: Any, ended: _Ended
    ) -> Plan[tuple[str, bytes]]:
        """The serde's form of the value the effect returned; ``OutcomeNotSerializableError``, recorded, when the serde
        cannot write it."""
        try:
            return ended.typed or self.serde.dumps_typed(value)
        except Exception as exc:  # whatever the serde raises for a type it cannot write
            # The effect happened and its outcome cannot be kept: say so in the entry and to the caller. An
            # at_most_once effect replays this error (a person settles it); another one runs again next time.
            error = unserializable_outcome(call, pos, value, exc)
            # Its message names types and the position, never values: kept even when store_messages is off.
            stored = error_record(
                error, terminal=call.at_most_once, message=scrub(str(error), claimed.secrets), issued=_issued(claimed)
            )
            failed = failed_update(stored, now=ended.now, duration_ms=ended.duration_ms)
            yield from self._end_claim(pos, claimed, failed)
            raise error from exc

    def _fenced_out(
        self, call: EffectCall, pos: EffectPosition, claimed: _Claimed, value: Any, chunked: bool, trailing: bool
    ) -> Plan[Any]:
        """Our lease expired and another worker took the position over before our record: drop our chunks, and
        return the outcome that worker recorded, or ``value`` when it recorded none."""
        watches.record_lost(call.kind)
        if chunked:
            yield DeleteMany(self.collection, chunk_key(pos, claimed.owner))
        found = yield from ask(Find(self.collection, entry_filter(pos), {"_id": 0}, limit=1))
        if found and found[0].get("status") == "completed":
            self._check_entry(found[0], pos)
            if trailing:
                raise EffectRecordLostError(
                    f"{call.kind} {call.name!r} at {pos}: another worker recorded its outcome while this run executed "
                    "it, and the node had gone on with this run's outcome; its writes are not saved. Run the thread "
                    "again: the node replays the recorded outcome",
                    position=pos,
                )
            logger.warning(
                "%s %r at %s: lease lost; returning the outcome the new owner recorded", call.kind, call.name, pos
            )
            return (yield from self._load_outcome(found[0], pos))
        logger.warning(
            "%s %r at %s: lease lost before recording; the outcome was not recorded", call.kind, call.name, pos
        )
        return value

    def _preview(self, value: Any, secrets: frozenset[str]) -> str:
        """The preview stored for people; none ("") when it cannot be made (a redactor of the user's that fails, a
        value whose ``str`` raises): a preview never stops a claim or a record."""
        try:
            return preview(value, limit=self.preview_chars, redactor=self.redactor, secrets=secrets)
        except Exception as exc:  # whatever the redactor or the value raises
            # Only the type: the message may quote the value, which the preview was to redact.
            logger.warning("a journal preview could not be made (%s): stored without one", type(exc).__name__)
            return ""

    def _message(self, exc: BaseException, claimed: _Claimed) -> str:
        """The error message stored for people: none under ``store_messages=False``, else with secrets scrubbed."""
        return storable(scrub(str(exc), claimed.secrets)) if self.store_messages else ""

    def _end_claim(self, pos: EffectPosition, claimed: _Claimed, update: dict[str, Any]) -> Plan[bool]:
        """Write how the effect ended: under the claim's fence (``_settle``), or, for an exclusive run's
        unclaimed effect, as the entry itself, inserted if the position is still free (one command).
        False when another worker holds or recorded the position."""
        if claimed.unclaimed is None:
            return (yield from self._settle(held_fence(pos, claimed.fence), update))
        record = first_record(pos, claimed.unclaimed, self._expiry(pos.thread_id), update)
        found = yield from ask(FindOneAndUpdate(self.collection, entry_filter(pos), record, upsert=True))
        return _held_by(found, claimed.owner)

    def _settle(self, fence: dict[str, Any], update: dict[str, Any]) -> Plan[bool]:
        """Apply ``update``, which ends a claim, under ``fence``, taking back the count of the visit that ran
        the effect; False when fenced out. One command, two if other visits were counted meanwhile."""
        if (yield from ask(FencedUpdate(self.collection, {**fence, **ONLY_VISIT}, uncount_visit(update, alone=True)))):
            return True
        return bool((yield from ask(FencedUpdate(self.collection, fence, uncount_visit(update, alone=False)))))

    # -- for people -----------------------------------------------------------------

    def _entries_plan(self, thread_id: str) -> Plan[list[dict[str, Any]]]:
        docs = yield from ask(
            Find(
                self.collection,
                {"thread_id": thread_id, "chunk": 0},
                {"_id": 0, "outcome.data": 0},
                [("created_at", 1), ("path", 1), ("node", 1), ("occurrence", 1), ("effect_key", 1)],
            )
        )
        return labelled(docs)

    def _resolve_plan(self, pos: EffectPosition, value: Any) -> Plan[None]:
        """Record ``value`` as the outcome of the position's entry (a person's decision)."""
        _require_position(pos)
        yield from self._settled_unknown(pos, "resolved")
        found = yield from ask(Find(self.collection, entry_filter(pos), {"_id": 0, "fence": 1, "status": 1}, limit=1))
        if not found:
            raise DurableMongoError(f"no journal entry at {pos}")
        owner = uuid.uuid4().hex
        now = lease.utcnow()
        outcome, chunks = outcome_documents(
            pos,
            owner,
            self.serde.dumps_typed(value),
            self._preview(value, frozenset()),
            self.chunk_bytes,
            self._expiry(pos.thread_id),
        )
        if chunks:
            yield InsertMany(self.collection, chunks)
        update = completed_update(outcome, now=now, duration_ms=0)
        update["$set"].update(owner=owner, resolved_by="operator")
        update["$inc"] = {"fence": 1}  # a claim still running there can no longer record over the decision
        fence = entry_filter(pos, fence=found[0].get("fence"), status=found[0].get("status"))
        if found[0].get("status") == "started":  # its owner never recorded: take back that visit's count
            settled = yield from self._settle(fence, update)
        else:
            settled = yield from ask(FencedUpdate(self.collection, fence, update))
        if not settled:
            if chunks:
                yield DeleteMany(self.collection, chunk_key(pos, owner))
            raise DurableMongoError(f"the journal entry at {pos} changed while it was being resolved; look at it again")

    def _settled_unknown(self, pos: EffectPosition, decision: str) -> Plan[None]:
        """A person settles the position: if its outcome was marked unknown, unmark it and take it off the outcomes
        awaiting a person, once (a decision that then fails leaves it unmarked: the next run that meets it marks
        it again)."""
        if (yield from ask(FencedUpdate(self.collection, *unknown_unmark(pos)))):
            watches.outcome_resolved(decision)

    def _discard_plan(self, pos: EffectPosition) -> Plan[None]:
        """Delete the position's entry and chunks, so the effect runs again."""
        _require_position(pos)
        yield from self._settled_unknown(pos, "discarded")
        yield DeleteMany(self.collection, entry_filter(pos))
        chunks = {**entry_filter(pos), "effect_key": {"$regex": "^" + re.escape(pos.effect_key) + "#"}}
        chunks.pop("chunk")
        yield DeleteMany(self.collection, chunks)
