"""What the journal, the run locks and the checkpointer call to be seen: spans and measures, or nothing.

Each factory (``effect_watch``, ``lock_take_watch``, ``store_watch``, ``wait_stored_watch``) answers ``UNWATCHED``,
a shared object whose methods do nothing, until the application configured a tracer or a meter provider
(``instruments.py``): then it builds no attribute, reads no clock. A watch used as a ``with`` block makes its span
the current one for the block, so what runs inside (the effect's own instrumented calls, the driver's commands,
a nested effect) nests under it, and the span itself nests under the caller's current span, on a sync caller, a
coroutine or a pool thread alike. A plan that runs elsewhere (a record in the background) is handed its parent
explicitly (``EffectWatch.recording``).

An exception that ends a watched block marks its span ``ERROR`` with ``error.type`` (its class), never its message
(which may quote an input): ``record_exception`` is never called.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping
from typing import Any, cast

from ..errors import EffectOutcomeUnknownError
from . import instruments as names
from .instruments import metrics, tracer

Plan = Generator[Any, Any, Any]


def error_type(error: BaseException) -> str:
    """``error.type`` of an exception: its class's module and qualified name (never its message)."""
    cls = type(error)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def outcome_of(error: BaseException | None) -> str:
    """The outcome state an effect ended in: ``completed``, ``failed`` (it, or the journal, raised), ``unknown`` (an
    at-most-once effect whose worker died mid-call) or ``cancelled`` (a cancellation or an interrupt: the journal
    freed its position)."""
    if error is None:
        return "completed"
    if isinstance(error, EffectOutcomeUnknownError):
        return "unknown"
    return "failed" if isinstance(error, Exception) else "cancelled"


def _failed(span: Any, error: BaseException) -> None:
    otel = cast(names.Api, names.api())  # a span was made: the API is imported
    span.set_attribute(names.ERROR_TYPE, error_type(error))
    span.set_status(otel.trace.Status(otel.trace.StatusCode.ERROR))


class _Unwatched:
    """What every factory answers while nothing is configured: each method does nothing, or hands back what it
    was given."""

    def __enter__(self) -> _Unwatched:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def over(self, plan: Plan) -> Plan:
        return plan

    def claiming(self) -> None:
        return None

    def placed(self, pos: Any, attempt: int, recorded_key: str | None) -> None:
        return None

    def recording(self, plan: Plan, result: Any) -> Plan:
        return plan

    def around(self, context: Callable[[], Any]) -> Callable[[], Any]:
        return context

    def waited(self) -> None:
        return None

    def taken(self, fence: int, taken_over: bool) -> None:
        return None

    @property
    def context(self) -> Any:
        return None


UNWATCHED: Any = _Unwatched()


class _Span:
    """One span over a ``with`` block, current for the block."""

    __slots__ = ("_attributes", "_name", "_token", "_tracer", "span")

    def __init__(self, tracer_: Any, name: str, attributes: dict[str, Any]) -> None:
        self._tracer, self._name, self._attributes = tracer_, name, attributes
        self.span: Any = None
        self._token: Any = None

    def __enter__(self) -> _Span:
        otel = cast(names.Api, names.api())
        self.span = self._tracer.start_span(self._name, attributes=self._attributes)
        self._token = otel.context.attach(otel.trace.set_span_in_context(self.span))
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        cast(names.Api, names.api()).context.detach(self._token)
        if error is not None:
            _failed(self.span, error)
        self.span.end()


# -- effects ------------------------------------------------------------------------------------------------------


def effect_watch(kind: str, name: str, at_most_once: bool, tool_call_id: str | None = None) -> Any:
    """The watch of one journaled effect: ``UNWATCHED`` while neither a tracer nor a meter provider is configured."""
    found_tracer, found_metrics = tracer(), metrics()
    if found_tracer is None and found_metrics is None:
        return UNWATCHED
    return EffectWatch(found_tracer, found_metrics, kind, name, at_most_once, tool_call_id)


class EffectWatch:
    """One effect's span (``<kind> <name>``), its ``journal claim`` and ``journal record`` child spans, and its
    measures: executed or replayed, how long it ran, and the journal's own time (claim plus record).

    Used as a ``with`` block around a whole effect (``ActivityJournal.run``/``arun``: its span is current there),
    or over a stream's plan (``over``: not current, since the stream's items go to its caller between reads; the
    stream's own calls nest under it through ``around``). The plan says when it starts claiming (``claiming``),
    where the effect is and whether it runs (``placed``), and hands over its record (``recording``).
    """

    __slots__ = (
        "_claim", "_claim_seconds", "_kind_attributes", "_metrics", "_placed_at", "_recorded",
        "_token", "_tracer", "at_most_once", "kind", "name", "span", "tool_call_id",
    )

    def __init__(
        self, tracer_: Any, metrics_: names.Metrics | None, kind: str, name: str, at_most_once: bool,
        tool_call_id: str | None,
    ) -> None:
        self._tracer, self._metrics = tracer_, metrics_
        self.kind, self.name, self.at_most_once, self.tool_call_id = kind, name, at_most_once, tool_call_id
        self.span: Any = None
        self._claim: Any = None
        self._token: Any = None
        self._placed_at = 0.0  # when the claim began, then when the effect began (perf_counter)
        self._claim_seconds: float | None = None
        self._recorded = False  # a record was handed over: it measures the journal's time when it ends
        self._kind_attributes = {names.KIND: kind}

    # -- the effect's life, as a block or over a plan --

    def _start(self) -> None:
        if self._tracer is not None:
            attributes: dict[str, Any] = {
                names.KIND: self.kind, names.NAME: self.name, names.AT_MOST_ONCE: self.at_most_once,
            }
            if self.tool_call_id is not None:
                attributes[names.TOOL_CALL_ID] = self.tool_call_id
            self.span = self._tracer.start_span(f"{self.kind} {self.name}", attributes=attributes)

    def __enter__(self) -> EffectWatch:
        self._start()
        if self.span is not None:
            otel = cast(names.Api, names.api())
            self._token = otel.context.attach(otel.trace.set_span_in_context(self.span))
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        if self._token is not None:
            cast(names.Api, names.api()).context.detach(self._token)
        self._end(error)

    def over(self, plan: Plan) -> Plan:
        """``plan`` (a stream's), watched from its first step to its end; its span is not made current."""
        self._start()
        try:
            value = yield from plan
        except BaseException as error:
            self._end(error)
            raise
        self._end(None)
        return value

    def _end(self, error: BaseException | None) -> None:
        outcome = outcome_of(error)
        if self._claim is not None:  # ended before it was placed: the claim raised
            self._claim_ended(error)
        if self.span is not None:
            self.span.set_attribute(names.OUTCOME, outcome)
            if outcome in ("failed", "unknown", "cancelled") and error is not None:
                _failed(self.span, error)
            self.span.end()
        if self._metrics is not None and not self._recorded and self._placed_at:  # the plan started, unrecorded
            claimed = self._claim_seconds if self._claim_seconds is not None else time.perf_counter() - self._placed_at
            self._metrics.journal_duration.record(claimed, self._kind_attributes)

    # -- what the plan tells --

    def claiming(self) -> None:
        """The plan starts: the claim (or the wait for the task's earlier records, then the claim) begins."""
        self._placed_at = time.perf_counter()
        if self.span is not None:
            claim_context = cast(names.Api, names.api()).trace.set_span_in_context(self.span)
            self._claim = self._tracer.start_span(names.CLAIM_SPAN, context=claim_context)

    def _claim_ended(self, error: BaseException | None) -> None:
        if error is not None:
            _failed(self._claim, error)
        self._claim.end()
        self._claim = None

    def placed(self, pos: Any, attempt: int, recorded_key: str | None) -> None:
        """The claim decided: the effect at ``pos`` (an ``EffectPosition``) runs as execution ``attempt``, or is
        replayed (``attempt`` 0). ``recorded_key``: the idempotency key its entry was first claimed under."""
        now = time.perf_counter()
        self._claim_seconds = now - self._placed_at
        self._placed_at = now
        replayed = attempt == 0
        if self._metrics is not None:
            (self._metrics.replayed if replayed else self._metrics.executed).add(1, self._kind_attributes)
        if self._claim is not None:
            self._claim_ended(None)
        if self.span is not None:
            self.span.set_attributes({
                names.THREAD: pos.thread_id,
                names.PATH: pos.path,
                names.NODE: pos.node,
                names.VISIT: pos.occurrence,
                names.EFFECT_KEY: pos.effect_key,
                names.IDEMPOTENCY_KEY: recorded_key or pos.idempotency_key,
                names.EXECUTION: "replayed" if replayed else "executed",
                names.ATTEMPT: attempt,
            })

    def around(self, context: Callable[[], Any]) -> Callable[[], Any]:
        """``context`` (what a stream's calls run in), with this effect's span made current there too."""
        if self.span is None:
            return context
        otel = cast(names.Api, names.api())

        def both() -> Any:
            return _Both(context(), otel.trace.use_span(
                self.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ))

        return both

    def recording(self, plan: Plan, result: Any) -> Plan:
        """``plan``, the record of the effect's ``result`` (a ``Returned`` or ``Raised``), watched: the effect has
        just ended. A record run in the background (``Defer``) gets its parent span here, not from its context."""
        ran = time.perf_counter() - self._placed_at
        error = getattr(result, "error", None)
        if self._metrics is not None:
            self._recorded = True
            self._metrics.effect_duration.record(ran, {names.KIND: self.kind, names.OUTCOME: outcome_of(error)})
        return self._recorded_plan(plan, error)

    def _recorded_plan(self, plan: Plan, effect_error: BaseException | None) -> Plan:
        started = time.perf_counter()
        otel = cast(names.Api, names.api())  # a watch was made: the API is imported
        span = token = None
        if self.span is not None:
            span = self._tracer.start_span(names.RECORD_SPAN, context=otel.trace.set_span_in_context(self.span))
            token = otel.context.attach(otel.trace.set_span_in_context(span))  # within one interpreter run
        try:
            return (yield from plan)
        except BaseException as error:
            if span is not None and error is not effect_error:  # the record raises the effect's error once written
                _failed(span, error)
            raise
        finally:
            if span is not None:
                otel.context.detach(token)
                span.end()
            if self._metrics is not None:
                spent = (self._claim_seconds or 0.0) + time.perf_counter() - started
                self._metrics.journal_duration.record(spent, self._kind_attributes)


class _Both:
    """Two context managers as one ``with`` block (``EffectWatch.around``)."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: Any, second: Any) -> None:
        self._first, self._second = first, second

    def __enter__(self) -> None:
        self._first.__enter__()
        self._second.__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._second.__exit__(*exc_info)
        finally:
            self._first.__exit__(*exc_info)


def _event(name: str, attributes: dict[str, Any]) -> None:
    """An event on the current span (the effect's, inside a watched effect), when it records."""
    otel = names.api()
    if otel is not None and tracer() is not None:
        span = otel.trace.get_current_span()
        if span.is_recording():
            span.add_event(name, attributes)


def outcome_unknown(kind: str) -> None:
    """An at-most-once effect's outcome was found unknown, for the first time (the journal marked its entry)."""
    found = metrics()
    if found is not None:
        found.unknown.add(1, {names.KIND: kind})
        found.awaiting.add(1)


def outcome_resolved(decision: str) -> None:
    """A person settled an outcome unknown: ``resolved`` (recorded what happened) or ``discarded`` (run it again)."""
    found = metrics()
    if found is not None:
        found.resolved.add(1, {names.DECISION: decision})
        found.awaiting.add(-1)


def record_lost(kind: str) -> None:
    """An effect's record was fenced out: another worker held or recorded its position."""
    found = metrics()
    if found is not None:
        found.records_lost.add(1, {names.KIND: kind})
    _event("record lost", {names.KIND: kind})


def nondeterminism(reason: str, action: str) -> None:
    """A replay met another effect (``effect_changed``) or another input (``input_changed``) than was recorded, and
    the journal ``raised``, ``warned`` or ran the new effect in the old one's place (``rerun``)."""
    attributes = {names.REASON: reason, names.ACTION: action}
    found = metrics()
    if found is not None:
        found.nondeterminism.add(1, attributes)
    _event("nondeterminism", attributes)


# -- run locks ----------------------------------------------------------------------------------------------------


def lock_take_watch(thread_id: str) -> Any:
    """The watch of taking one thread's run lock (``run_lock take``): its waits, a take-over, the time it took."""
    found_tracer, found_metrics = tracer(), metrics()
    if found_tracer is None and found_metrics is None:
        return UNWATCHED
    return LockTakeWatch(found_tracer, found_metrics, thread_id)


class LockTakeWatch(_Span):
    """``run_lock take``, current for the block; ``waited`` and ``taken`` say what happened."""

    __slots__ = ("_metrics", "_parent", "_started", "_waits")

    def __init__(self, tracer_: Any, metrics_: names.Metrics | None, thread_id: str) -> None:
        super().__init__(tracer_, names.TAKE_SPAN, {names.THREAD: thread_id})
        self._metrics, self._waits, self._started, self._parent = metrics_, 0, 0.0, None

    def __enter__(self) -> LockTakeWatch:
        self._started = time.perf_counter()
        if self._tracer is not None:
            self._parent = cast(names.Api, names.api()).context.get_current()
            super().__enter__()
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        if self._metrics is not None:
            self._metrics.lock_wait.record(time.perf_counter() - self._started)
        if self.span is not None:
            self.span.set_attribute(names.WAITS, self._waits)
            super().__exit__(kind, error, tb)

    def waited(self) -> None:
        """Another live run held the lock: the taker sleeps before it looks again."""
        self._waits += 1
        if self.span is not None:
            self.span.add_event("run_lock wait")

    def taken(self, fence: int, taken_over: bool) -> None:
        """The lock is held under ``fence``; ``taken_over`` from a run that died or whose lease expired."""
        if taken_over and self._metrics is not None:
            self._metrics.taken_over.add(1)
        if self.span is not None:
            self.span.set_attributes({names.FENCE: fence, names.TAKEN_OVER: taken_over})
            if taken_over:
                self.span.add_event("run_lock taken over")

    @property
    def context(self) -> Any:
        """The OpenTelemetry context the lock was taken in (its caller's, the run's): a loss's parent."""
        return self._parent


def lock_lost(thread_id: str, fence: int, parent: Any) -> None:
    """A run lost its thread's lock: counted, and a ``run_lock lost`` span under ``parent`` (the context its take
    ran in, ``LockTakeWatch.context``), wherever the loss was found (a renewal's thread, a release)."""
    found = metrics()
    if found is not None:
        found.lost.add(1)
    found_tracer = tracer()
    if found_tracer is not None and parent is not None:
        span = found_tracer.start_span(
            names.LOST_SPAN, context=parent, attributes={names.THREAD: thread_id, names.FENCE: fence}
        )
        span.end()


# -- checkpoints --------------------------------------------------------------------------------------------------


def _field(mapping: Any, key: str) -> str:
    """A field of a config or a checkpoint as an attribute, read as the store will check it: the store refuses a
    malformed one after the span has started."""
    return str(mapping.get(key, "")) if isinstance(mapping, Mapping) else ""


def store_watch(config: Any, checkpoint: Any) -> Any:
    """``checkpoint store`` over one checkpoint's ``put`` (``config``: its parent's config)."""
    found = tracer()
    if found is None:
        return UNWATCHED
    configurable = config.get("configurable") if isinstance(config, Mapping) else None
    return _Span(found, names.STORE_SPAN, {
        names.THREAD: _field(configurable, "thread_id"),
        names.CHECKPOINT_NS: _field(configurable, "checkpoint_ns"),
        names.CHECKPOINT_ID: _field(checkpoint, "id"),
    })


def wait_stored_watch(thread_id: str, checkpoint_id: str) -> Any:
    """``checkpoint wait_stored`` over an effect's wait for the root checkpoint its visit is keyed by."""
    found = tracer()
    if found is None:
        return UNWATCHED
    return _Span(found, names.WAIT_STORED_SPAN, {names.THREAD: thread_id, names.CHECKPOINT_ID: checkpoint_id})
