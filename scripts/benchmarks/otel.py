"""scripts/bench's ``otel`` section (issue 46): what OpenTelemetry costs, side by side: without it, with the API and
no SDK (the no-op tracer), and with the SDK and a batch exporter.

OpenTelemetry lets a process set its providers once, so every round runs two child processes (this file, run as a
script):

- one where ``opentelemetry`` cannot be imported (the extra absent; LangSmith, which imports it too, does
  without): the time to import ``langgraph_durable_mongodb`` and one effect's instrumentation there;
- one with the API: its import time, then, before any provider is configured, durable ReAct turns with the API
  (``noop``) interleaved turn by turn with turns where the library takes the path it takes without the API
  (``none``: its found API forgotten, ``api_absent``); then the SDK is configured (a ``BatchSpanProcessor`` in front
  of an exporter that drops what it is handed, a ``MeterProvider`` whose reader exports every 60 s) and ``sdk``
  turns are interleaved with ``none`` turns the same way. Pairs in one process see the same memory, caches and
  neighbours: on a busy machine the ratio of paired medians holds where separate processes' do not.

A turn: ``platform.compile``, ``SecureLLM`` and ``SecureTool`` on the server (two LLM calls and one tool call),
client CPU by ``time.process_time`` (every thread, the run lock's background release included). One effect's
instrumentation: ``effect_watch`` and every call an effect makes on it, alone, µs of CPU. The target (issue 46): a
turn's CPU changes by less than 2 % with the no-op tracer.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CASES = ("none", "noop", "sdk")
LABELS = {
    "none": "without `opentelemetry` (the extra absent)",
    "noop": "API installed, no SDK configured (the no-op tracer)",
    "sdk": "SDK, `BatchSpanProcessor`, dropping exporter; metrics aggregated",
}


@dataclass
class OtelSettings:
    rounds: int = 3  # rounds of two children
    turns: int = 40  # measured turns per case per child, each paired with a ``none`` turn, after 3 warm-up turns
    watches: int = 20_000  # effect_watch lifecycles timed per case

    @classmethod
    def quick(cls) -> OtelSettings:
        return cls(rounds=1, turns=12, watches=5_000)


def bench_otel(uri: str, quick: bool, log: Callable[[str], None], settings: OtelSettings | None = None) -> dict[str, Any]:
    """``rounds`` rounds of the two children; medians per case, and each case's turn CPU against its paired ``none``
    turns."""
    os_ = settings or (OtelSettings.quick() if quick else OtelSettings())
    _compiled()
    absent, present = [], []
    for number in range(os_.rounds):
        absent.append(_child("absent", uri, os_))
        present.append(_child("present", uri, os_))
        last = present[-1]
        log(f"  otel round {number + 1}/{os_.rounds}: noop {last['noop']['ratio']:.3f}x, sdk {last['sdk']['ratio']:.3f}x "
            "the paired turns without it")
    cases: dict[str, Any] = {"none": {
        "import_ms": statistics.median(r["import_ms"] for r in absent),
        "watch_us": statistics.median(r["watch_us"] for r in absent),
        "turn_cpu_ms": statistics.median(r[case]["none_cpu_ms"] for r in present for case in ("noop", "sdk")),
        "ratio": 1.0,
        "spans_per_turn": 0,
    }}
    watched = statistics.median(r["watched_per_turn"] for r in present)
    for case in ("noop", "sdk"):
        cases[case] = {
            "import_ms": statistics.median(r["import_ms"] for r in present),
            "watch_us": statistics.median(r[case]["watch_us"] for r in present),
            "turn_cpu_ms": statistics.median(r[case]["cpu_ms"] for r in present),
            "ratio": statistics.median(r[case]["ratio"] for r in present),
            "ratio_each_child": [round(r[case]["ratio"], 4) for r in present],
            "spans_per_turn": statistics.median(r[case]["spans_per_turn"] for r in present),
        }
        # at most: every watch a turn asks for costing as much as a whole effect's (the paired ratio's noise on a
        # busy machine is wider than what it measures here)
        cases[case]["bound_share"] = watched * cases[case]["watch_us"] / (cases["none"]["turn_cpu_ms"] * 1000)
    cases["none"]["bound_share"] = 0.0
    return {"cases": cases, "watched_per_turn": watched, "settings": os_.__dict__}


def _environment() -> dict[str, str]:
    """The children's environment: bytecode cached (a machine that sets ``PYTHONDONTWRITEBYTECODE`` would otherwise
    time the compilation of every module in the import)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _compiled() -> None:
    """Import what the children import once, unmeasured, so that each child's import reads cached bytecode."""
    subprocess.run(
        [sys.executable, "-c", "import langgraph_durable_mongodb, langgraph_durable_mongodb.platform, opentelemetry.sdk.trace"],
        env=_environment(), check=True, timeout=600,
    )


def _child(kind: str, uri: str, os_: OtelSettings) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, kind, uri, str(os_.turns), str(os_.watches)],
        capture_output=True, text=True, timeout=1800, check=False, env=_environment(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"the otel child ({kind}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def render_otel(result: dict[str, Any]) -> list[str]:
    cases = result["cases"]
    lines = [
        "## OpenTelemetry: no-op tracer and SDK, side by side (otel)", "",
        f"{result['settings']['rounds']} round(s) of child processes; medians. A durable ReAct turn: two LLM calls and "
        "one tool call, `platform.compile`; each case's turns interleaved with turns taking the path without the API, "
        "in one process (the ratio is against those). A turn asks for "
        f"{result['watched_per_turn']:.0f} watches (effects, the lock's take, checkpoint stores, waits); their share "
        "of the turn is at most that many times one effect's instrumentation.", "",
        "| case | import `langgraph_durable_mongodb` (ms) | one effect's instrumentation (µs CPU) "
        "| instrumentation's share of a turn, at most | durable turn, client CPU (ms) | vs without | spans per turn |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for case in CASES:
        row = cases[case]
        lines.append(
            f"| {LABELS[case]} | {row['import_ms']:.0f} | {row['watch_us']:.2f} | {row['bound_share']:.2%} "
            f"| {row['turn_cpu_ms']:.2f} | {row['ratio']:.3f} | {row['spans_per_turn']:.0f} |"
        )
    return [*lines, ""]


# -- the children -------------------------------------------------------------------------------------------------

_BLOCK = """class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ImportError("opentelemetry is not installed")
"""


def _configure_sdk() -> Any:
    """The SDK with a batch exporter that drops what it is handed, and metrics read every 60 s; returns the span
    processor that counts the spans that end."""
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, PeriodicExportingMetricReader
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropping(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class Counting(SpanProcessor):
        ended = 0

        def on_end(self, span: Any) -> None:
            Counting.ended += 1

    class DroppingMetrics(MetricExporter):
        def export(self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            return None

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropping()))
    provider.add_span_processor(Counting())
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[PeriodicExportingMetricReader(DroppingMetrics(), 60_000)]))
    return Counting


@contextmanager
def api_absent() -> Iterator[None]:
    """The library takes the path it takes without ``opentelemetry`` for the block: what it found is forgotten."""
    from langgraph_durable_mongodb.telemetry.instruments import _Found

    found = (_Found.api, _Found.missing, _Found.tracer, _Found.metrics)
    _Found.api, _Found.missing, _Found.tracer, _Found.metrics = None, True, None, None
    try:
        yield
    finally:
        _Found.api, _Found.missing, _Found.tracer, _Found.metrics = found


def _watch_us(watches: int) -> float:
    """One effect's instrumentation alone: every call ``ActivityJournal.run`` and its plan make on the watch."""
    from langgraph_durable_mongodb.journal.position import EffectPosition
    from langgraph_durable_mongodb.storage.plans.requests import Returned
    from langgraph_durable_mongodb.telemetry.watches import effect_watch

    pos = EffectPosition("t", "agent/1", "tools", "c1", "tool_call:1")
    returned = Returned("covered")

    def record() -> Any:
        return None
        yield  # a plan that writes nothing

    started = time.process_time()  # this process's CPU, the SDK's export thread included
    for _ in range(watches):
        with effect_watch("tool", "lookup", False, "1") as watch:
            watch.claiming()
            watch.placed(pos, 1, None)
            for _ in watch.recording(record(), returned):
                pass
    return (time.process_time() - started) / watches * 1e6


class _Turns:
    """Durable ReAct turns on a fresh database, each timed alone (client CPU, ms)."""

    def __init__(self, uri: str) -> None:
        from pymongo import MongoClient

        from benchmarks.common import DB_PREFIX, secure_builder
        from langgraph_durable_mongodb import DurablePlatform

        self.client: MongoClient = MongoClient(uri)
        self.db_name = f"{DB_PREFIX}otel_{uuid.uuid4().hex[:8]}"
        self.platform = DurablePlatform(self.client, db_name=self.db_name)
        self.platform.setup()
        self.graph = self.platform.compile(secure_builder())
        self.done = 0

    def turn(self) -> float:
        from langchain_core.messages import HumanMessage

        self.done += 1
        config = {"configurable": {"thread_id": f"thread-{self.done % 4}"}}
        started = time.process_time()
        self.graph.invoke({"messages": [HumanMessage(f"is claim {self.done} covered?")]}, config)
        self.platform.run_locks.wait_releases(30)
        return (time.process_time() - started) * 1000

    def paired(self, turns: int) -> tuple[list[float], list[float]]:
        """``turns`` turns as the process is, each paired with one under ``api_absent``, the order alternating."""
        present, absent = [], []
        for number in range(turns):
            for with_api in ((True, False) if number % 2 else (False, True)):
                if with_api:
                    present.append(self.turn())
                else:
                    with api_absent():
                        absent.append(self.turn())
        return present, absent

    def close(self) -> None:
        self.platform.close()
        self.client.drop_database(self.db_name)
        self.client.close()


def _watched_per_turn(turns: _Turns) -> int:
    """How many watches a turn asks for (effects, the lock's take, checkpoint stores, waits): each factory asks for
    the tracer once."""
    from langgraph_durable_mongodb.telemetry import watches

    asked = [0]
    tracer = watches.tracer

    def counted() -> Any:
        asked[0] += 1
        return tracer()

    watches.tracer = counted
    try:
        turns.turn()
    finally:
        watches.tracer = tracer
    return asked[0]


def _case(turns: _Turns, count: int, watches: int, counted: Any = None) -> dict[str, Any]:
    watch_us = _watch_us(watches)
    ended = counted.ended if counted is not None else 0
    present, absent = turns.paired(count)
    cpu, none_cpu = statistics.median(present), statistics.median(absent)
    spans = (counted.ended - ended) / count if counted is not None else 0.0  # the paired turns emit none
    return {"watch_us": watch_us, "cpu_ms": cpu, "none_cpu_ms": none_cpu, "ratio": cpu / none_cpu, "spans_per_turn": spans}


def child(kind: str, uri: str, count: int, watches: int) -> dict[str, Any]:
    if kind == "absent":
        namespace: dict[str, Any] = {}
        exec(_BLOCK, namespace)  # noqa: S102 - a fixed text: a finder that refuses opentelemetry
        sys.meta_path.insert(0, namespace["Blocked"]())
    started = time.perf_counter()
    import langgraph_durable_mongodb  # noqa: F401, PLC0415 - the first import, timed

    found: dict[str, Any] = {"import_ms": (time.perf_counter() - started) * 1000}
    if kind == "absent":
        return {**found, "watch_us": _watch_us(watches)}
    turns = _Turns(uri)
    try:
        for _ in range(3):
            turns.turn()  # warm-up: imports, pools, indexes
        found["watched_per_turn"] = _watched_per_turn(turns)
        found["noop"] = _case(turns, count, watches)
        found["sdk"] = _case(turns, count, watches, _configure_sdk())
    finally:
        turns.close()
    return found


if __name__ == "__main__":
    sys.path[:1] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]
    print(json.dumps(child(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))))
