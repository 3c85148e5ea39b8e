"""scripts/bench's ``otel`` section (issue 46): what OpenTelemetry costs, side by side, in three child processes.

OpenTelemetry lets a process set its providers once, so each case runs in a fresh child process (this file, run as
a script), the cases interleaved round by round:

- ``none``: ``opentelemetry`` cannot be imported (the extra absent; LangSmith, which imports it too, does without);
- ``noop``: the API installed, no provider configured (the no-op tracer): what every user without an SDK runs;
- ``sdk``:  the SDK configured, a ``BatchSpanProcessor`` in front of an exporter that drops what it is handed,
            and a ``MeterProvider`` whose periodic reader exports every 60 s (so the instruments aggregate).

Each child reports: the time to import ``langgraph_durable_mongodb`` (the process's first import of it), the
instrumentation of one effect alone (``effect_watch`` and every call an effect makes on it, µs), and the client
CPU of a durable ReAct turn (``platform.compile``, ``SecureLLM`` and ``SecureTool``: two LLM calls and one tool
call; ``time.process_time`` per turn, every thread). The target (issue 46): ``noop`` changes a turn's CPU by less
than 2 % against ``none``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
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
    rounds: int = 5  # children per case, the cases interleaved round by round
    turns: int = 40  # measured turns per child, after 3 warm-up turns
    watches: int = 20_000  # effect_watch lifecycles timed per child

    @classmethod
    def quick(cls) -> OtelSettings:
        return cls(rounds=2, turns=10, watches=5_000)


def bench_otel(uri: str, quick: bool, log: Callable[[str], None], settings: OtelSettings | None = None) -> dict[str, Any]:
    """Every case ``rounds`` times, in child processes, interleaved; medians per case and ratios to ``none``."""
    os_ = settings or (OtelSettings.quick() if quick else OtelSettings())
    runs: dict[str, list[dict[str, Any]]] = {case: [] for case in CASES}
    _compiled()
    order = list(CASES)
    for number in range(os_.rounds):
        order = order[1:] + order[:1]  # rotate: no case always runs first or last
        for case in order:
            runs[case].append(_child(case, uri, os_))
        log(f"  otel round {number + 1}/{os_.rounds}: " + ", ".join(
            f"{c} {statistics.median(r['turn_cpu_ms'] for r in runs[c]):.2f} ms" for c in CASES))
    cases = {case: _summary(found) for case, found in runs.items()}
    base = cases["none"]["turn_cpu_ms"]
    for row in cases.values():
        row["turn_cpu_ratio"] = row["turn_cpu_ms"] / base if base else None
    return {"cases": cases, "settings": os_.__dict__}


def _summary(found: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "import_ms": statistics.median(r["import_ms"] for r in found),
        "watch_us": statistics.median(r["watch_us"] for r in found),
        "turn_cpu_ms": statistics.median(r["turn_cpu_ms"] for r in found),
        "turn_cpu_ms_each_child": [round(r["turn_cpu_ms"], 3) for r in found],
        "spans_per_turn": statistics.median(r["spans_per_turn"] for r in found),
    }


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


def _child(case: str, uri: str, os_: OtelSettings) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, case, uri, str(os_.turns), str(os_.watches)],
        capture_output=True, text=True, timeout=900, check=False, env=_environment(),
    )
    if done.returncode != 0:
        raise RuntimeError(f"the otel child ({case}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def render_otel(result: dict[str, Any]) -> list[str]:
    cases = result["cases"]
    lines = [
        "## OpenTelemetry: no-op tracer and SDK, side by side (otel)", "",
        f"{result['settings']['rounds']} child processes per case, interleaved; medians. A durable ReAct turn: two "
        "LLM calls and one tool call, `platform.compile`.", "",
        "| case | import `langgraph_durable_mongodb` (ms) | one effect's instrumentation (µs) | durable turn, client CPU (ms) "
        "| vs none | spans per turn |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for case in CASES:
        row = cases[case]
        lines.append(
            f"| {LABELS[case]} | {row['import_ms']:.0f} | {row['watch_us']:.2f} | {row['turn_cpu_ms']:.2f} "
            f"| {row['turn_cpu_ratio']:.3f} | {row['spans_per_turn']:.0f} |"
        )
    return [*lines, ""]


# -- the child ----------------------------------------------------------------------------------------------------

_BLOCK = """class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            raise ImportError("opentelemetry is not installed")
"""


def _configure_sdk() -> Any:
    """The SDK with a batch exporter that drops what it is handed, and metrics read every 60 s: counts the spans."""
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


def _turns(uri: str, turns: int) -> float:
    """Client CPU per durable ReAct turn (ms), over ``turns`` turns after 3 unmeasured ones."""
    from langchain_core.messages import HumanMessage
    from pymongo import MongoClient

    from benchmarks.common import DB_PREFIX, secure_builder
    from langgraph_durable_mongodb import DurablePlatform

    client: MongoClient = MongoClient(uri)
    db_name = f"{DB_PREFIX}otel_{uuid.uuid4().hex[:8]}"
    platform = DurablePlatform(client, db_name=db_name)
    platform.setup()
    graph = platform.compile(secure_builder())
    try:
        for turn in range(3):
            graph.invoke({"messages": [HumanMessage(f"is claim {turn} covered?")]}, {"configurable": {"thread_id": "warm-up"}})
        platform.run_locks.wait_releases(30)
        started = time.process_time()
        for turn in range(turns):
            config = {"configurable": {"thread_id": f"thread-{turn % 4}"}}
            graph.invoke({"messages": [HumanMessage(f"is claim {turn} covered?")]}, config)
        platform.run_locks.wait_releases(30)
        return (time.process_time() - started) / turns * 1000
    finally:
        platform.close()
        client.drop_database(db_name)
        client.close()


def child(case: str, uri: str, turns: int, watches: int) -> dict[str, Any]:
    if case == "none":
        namespace: dict[str, Any] = {}
        exec(_BLOCK, namespace)  # noqa: S102 - a fixed text: a finder that refuses opentelemetry
        sys.meta_path.insert(0, namespace["Blocked"]())
    started = time.perf_counter()
    import langgraph_durable_mongodb  # noqa: F401, PLC0415 - the first import, timed

    imported = time.perf_counter() - started
    counted = _configure_sdk() if case == "sdk" else None
    watch_us = _watch_us(watches)
    ended_before = counted.ended if counted is not None else 0
    turn_cpu_ms = _turns(uri, turns)
    spans_per_turn = (counted.ended - ended_before) / (turns + 3) if counted is not None else 0.0  # warm-up turns too
    return {"import_ms": imported * 1000, "watch_us": watch_us, "turn_cpu_ms": turn_cpu_ms, "spans_per_turn": spans_per_turn}


if __name__ == "__main__":
    sys.path[:1] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]
    found = child(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    print(json.dumps(found))
