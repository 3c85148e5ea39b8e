"""The OpenTelemetry objects the library emits through, made lazily, and the names of what it emits.

Nothing here imports ``opentelemetry`` when this module is imported: ``api()`` does, once, when the first span or
measure is asked for, and remembers that it is missing (no ``otel`` extra) so that it never tries again. The
tracer is taken only once the application configured a tracer provider (``trace.set_tracer_provider``, or the
``OTEL_PYTHON_TRACER_PROVIDER`` variable), and the instruments once it configured a meter provider: until then
``tracer()`` and ``metrics()`` answer None after reading the global provider, and the callers emit nothing (no
span object, no attribute dictionary). A provider cannot be replaced once set, so what they found is kept.

Names follow the OpenTelemetry semantic-conventions registry where it has one (``gen_ai.conversation.id`` for the
thread, ``gen_ai.tool.call.id``, ``error.type``); the rest are this library's, under ``langgraph_durable_mongodb.``.
MongoDB commands (``db.*``) are the driver's instrumentation's, never ours. No attribute ever holds an input, an
outcome or an error message: ids, keys, names, counts and states only.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, Meter, UpDownCounter
    from opentelemetry.trace import Tracer

#: The instrumentation scope: the tracer's and the meter's name.
SCOPE = "langgraph_durable_mongodb"
_NS = SCOPE + "."

# -- attributes ------------------------------------------------------------------------------------------------
THREAD = "gen_ai.conversation.id"  # the registry's "conversation (session, thread)": LangGraph's thread_id
TOOL_CALL_ID = "gen_ai.tool.call.id"
ERROR_TYPE = "error.type"
KIND = _NS + "effect.kind"
NAME = _NS + "effect.name"
PATH = _NS + "effect.path"
NODE = _NS + "effect.node"
VISIT = _NS + "effect.visit"
EFFECT_KEY = _NS + "effect.key"
IDEMPOTENCY_KEY = _NS + "effect.idempotency_key"
EXECUTION = _NS + "effect.execution"  # executed | replayed
AT_MOST_ONCE = _NS + "effect.at_most_once"
ATTEMPT = _NS + "effect.attempt"
OUTCOME = _NS + "effect.outcome"  # completed | failed | unknown | cancelled
REASON = _NS + "nondeterminism.reason"  # effect_changed | input_changed
ACTION = _NS + "nondeterminism.action"  # raised | warned | rerun
DECISION = _NS + "outcome.decision"  # resolved | discarded
CHECKPOINT_NS = _NS + "checkpoint.ns"
CHECKPOINT_ID = _NS + "checkpoint.id"
FENCE = _NS + "run_lock.fence"
TAKEN_OVER = _NS + "run_lock.taken_over"
WAITS = _NS + "run_lock.waits"

# -- span names: "<kind> <name>" for an effect ----------------------------------------------------------------------
CLAIM_SPAN = "journal claim"
RECORD_SPAN = "journal record"
TAKE_SPAN = "run_lock take"
LOST_SPAN = "run_lock lost"
STORE_SPAN = "checkpoint store"
WAIT_STORED_SPAN = "checkpoint wait_stored"


@dataclass(frozen=True)
class Api:
    """The parts of ``opentelemetry`` the library uses, imported once.

    ``trace_set`` and ``meter_set`` answer False while no provider is configured: the API keeps the provider it
    was given in a module global (``_TRACER_PROVIDER``, ``_METER_PROVIDER``), None until then, and loads one named
    by ``OTEL_PYTHON_TRACER_PROVIDER`` / ``OTEL_PYTHON_METER_PROVIDER`` on its first ``get_*_provider()``. Reading
    the global costs tens of nanoseconds where ``get_tracer_provider()`` costs a microsecond (it looks the
    variable up in ``os.environ``). A layout without the global answers True: the API's placeholder provider is
    then taken, whose tracer and meter hand over to the real ones once configured (no-op spans until then).
    """

    trace: ModuleType
    context: ModuleType
    metrics: ModuleType
    metrics_module: ModuleType | None  # where the API keeps the meter provider it was given (``trace`` the tracer's)
    named_by_environment: bool  # a provider is named by the environment: ask the API every time until it is found

    def trace_set(self) -> bool:
        return self.named_by_environment or getattr(self.trace, "_TRACER_PROVIDER", True) is not None

    def meter_set(self) -> bool:
        return self.named_by_environment or getattr(self.metrics_module, "_METER_PROVIDER", True) is not None


def _imported() -> Api | None:
    try:
        from opentelemetry import context, metrics, trace
    except ImportError:
        return None
    metrics_module: ModuleType | None
    try:
        from opentelemetry.metrics import _internal as metrics_module
    except ImportError:  # another layout: take any provider for a configured one, asking the API each time
        metrics_module = None
    named = any(name in os.environ for name in ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER"))
    return Api(trace, context, metrics, metrics_module, named)


class _Found:
    """What has been found so far: whether the API is installed, then the tracer and the instruments once a
    provider is configured."""

    api: Api | None = None
    missing = False
    tracer: Tracer | None = None
    metrics: Metrics | None = None
    lock = threading.Lock()


def api() -> Api | None:
    """``opentelemetry``'s API, imported at the first call; None when it is not installed (never tried again)."""
    if _Found.api is None and not _Found.missing:
        with _Found.lock:
            if _Found.api is None and not _Found.missing:
                _Found.api = _imported()
                _Found.missing = _Found.api is None
    return _Found.api


def _version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("langgraph-durable-mongodb")
    except PackageNotFoundError:
        return None


def tracer() -> Tracer | None:
    """The library's tracer, once the application configured a tracer provider; None before, and without the API."""
    if _Found.tracer is not None:
        return _Found.tracer
    otel = api()
    if otel is None or not otel.trace_set():
        return None  # nothing configured yet: a span would be a no-op one
    _Found.tracer = otel.trace.get_tracer_provider().get_tracer(SCOPE, _version())
    return _Found.tracer


#: Every instrument: (the ``Metrics`` attribute, its kind, its name under ``langgraph_durable_mongodb.``, unit,
#: description). docs/observability.md lists them, with their attributes.
INSTRUMENTS = (
    ("executed", "counter", "effects.executed", "{effect}", "Effects run (not replayed), by kind"),
    ("replayed", "counter", "effects.replayed", "{effect}", "Effects whose recorded outcome was returned"),
    ("unknown", "counter", "outcomes.unknown", "{outcome}",
     "At-most-once effects found with their outcome unknown (each once)"),
    ("resolved", "counter", "outcomes.resolved", "{outcome}", "Outcomes unknown that a person resolved or discarded"),
    ("awaiting", "up_down_counter", "outcomes.awaiting", "{outcome}", "Outcomes unknown that wait for a person"),
    ("taken_over", "counter", "run_locks.taken_over", "{lock}", "Run locks taken from a dead or expired run"),
    ("lost", "counter", "run_locks.lost", "{lock}", "Run locks a run lost (its lease ran out)"),
    ("records_lost", "counter", "records.lost", "{record}",
     "Effect records fenced out: another worker held the position"),
    ("nondeterminism", "counter", "nondeterminism.detected", "{warning}", "Replays that met another effect or input"),
    ("effect_duration", "histogram", "effect.duration", "s", "How long an executed effect ran"),
    ("journal_duration", "histogram", "journal.duration", "s",
     "The journal's own time per effect: its claim plus its record"),
    ("lock_wait", "histogram", "run_lock.wait.duration", "s", "How long taking a run lock took"),
)


class Metrics:
    """The library's instruments (``INSTRUMENTS``), on the configured meter provider's meter (``metrics()``)."""

    executed: Counter
    replayed: Counter
    unknown: Counter
    resolved: Counter
    awaiting: UpDownCounter
    taken_over: Counter
    lost: Counter
    records_lost: Counter
    nondeterminism: Counter
    effect_duration: Histogram
    journal_duration: Histogram
    lock_wait: Histogram

    def __init__(self, meter: Meter) -> None:
        for attribute, kind, name, unit, description in INSTRUMENTS:
            setattr(self, attribute, getattr(meter, f"create_{kind}")(_NS + name, unit, description))


def metrics() -> Metrics | None:
    """The library's instruments, once the application configured a meter provider; None before, and without
    the API."""
    if _Found.metrics is not None:
        return _Found.metrics
    otel = api()
    if otel is None or not otel.meter_set():
        return None
    with _Found.lock:
        if _Found.metrics is None:
            _Found.metrics = Metrics(otel.metrics.get_meter_provider().get_meter(SCOPE, _version()))
    return _Found.metrics
