"""The OpenTelemetry SDK the telemetry tests read spans and metrics from (``otel``), and a ReAct turn to read.

OpenTelemetry lets a process set its tracer and meter providers once: ``otel`` sets them the first time a test asks
for it, with an in-memory span exporter and metric reader, and keeps spans only while a test that asked for it
runs (the other tests of the session emit into a processor that drops them).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class Telemetry:
    """What the library emitted during one test: finished spans, and the metrics' points read now."""

    def __init__(self, spans: list[Any], reader: Any) -> None:
        self._spans, self._reader = spans, reader
        self._before: dict[tuple[str, frozenset[tuple[str, Any]]], float] = {}

    def start(self) -> None:
        self._spans.clear()
        self._before = self.points()

    def spans(self, name: str | None = None) -> list[Any]:
        """The finished spans in the order they ended (those named ``name``)."""
        return [s for s in list(self._spans) if name is None or s.name == name]

    def points(self) -> dict[tuple[str, frozenset[tuple[str, Any]]], float]:
        """Every metric point as ``(metric, attributes) -> value`` (a sum's value, a histogram's count)."""
        found: dict[tuple[str, frozenset[tuple[str, Any]]], float] = {}
        data = self._reader.get_metrics_data()
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        value = point.count if hasattr(point, "count") else point.value
                        found[(metric.name, frozenset(point.attributes.items()))] = value
        return found

    def added(self, metric: str, **attributes: Any) -> float:
        """How much ``metric`` (short name, under ``langgraph_durable_mongodb.``) grew in this test, summed over the
        points whose attributes include ``attributes`` (short keys: ``kind`` for ``...effect.kind``)."""
        wanted = {_attribute(k): v for k, v in attributes.items()}
        name = "langgraph_durable_mongodb." + metric
        now = self.points()
        return sum(
            value - self._before.get(key, 0)
            for key, value in now.items()
            if key[0] == name and wanted.items() <= dict(key[1]).items()
        )


def _attribute(short: str) -> str:
    return {
        "kind": "langgraph_durable_mongodb.effect.kind",
        "reason": "langgraph_durable_mongodb.nondeterminism.reason",
        "action": "langgraph_durable_mongodb.nondeterminism.action",
        "decision": "langgraph_durable_mongodb.outcome.decision",
        "outcome": "langgraph_durable_mongodb.effect.outcome",
    }.get(short, short)


class _Spans(list):
    """The finished spans a ``_keeping`` processor kept; ``keeping`` says whether it keeps them now."""

    keeping = False


def _keeping(spans: _Spans) -> Any:
    """A span processor that keeps finished spans in ``spans`` only while a telemetry test runs."""
    from opentelemetry.sdk.trace import SpanProcessor

    lock = threading.Lock()

    class Keeping(SpanProcessor):
        def on_end(self, span: Any) -> None:
            if spans.keeping:
                with lock:
                    spans.append(span)

    return Keeping()


_SDK: dict[str, Any] = {}


def _sdk() -> dict[str, Any]:
    """The process's providers, set once."""
    if not _SDK:
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider

        spans = _Spans()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(_keeping(spans))
        trace.set_tracer_provider(tracer_provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _SDK.update(spans=spans, reader=reader, tracer=trace.get_tracer("tests"))
    return _SDK


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    """The SDK's spans and metrics, as this test emits them."""
    sdk = _sdk()
    telemetry = Telemetry(sdk["spans"], sdk["reader"])
    telemetry.start()
    sdk["spans"].keeping = True
    try:
        yield telemetry
    finally:
        sdk["spans"].keeping = False
        sdk["spans"].clear()


def app_tracer() -> Any:
    """A tracer of the application's own, for the spans a test opens around its calls."""
    return _sdk()["tracer"]


# -- a ReAct turn: agent (SecureLLM) -> tools (SecureTool) -> agent ----------------------------------------------------


class ToolAsker(BaseChatModel):
    """Asks for ``lookup`` when the last message is the user's, answers once the tool replied; counts its calls."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "tool-asker"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls += 1
        if isinstance(messages[-1], ToolMessage):
            message = AIMessage(content=f"The answer is {messages[-1].content}.")
        else:
            call = {"name": "lookup", "args": {"query": str(messages[-1].content)}, "id": f"call_{uuid.uuid4().hex[:8]}",
                    "type": "tool_call"}
            message = AIMessage(content="", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self


def effect_spans(spans: list[Any]) -> list[Any]:
    """The effect spans among ``spans`` (those with an effect kind)."""
    return [s for s in spans if "langgraph_durable_mongodb.effect.kind" in (s.attributes or {})]


def attribute(span: Any, short: str) -> Any:
    """The span's attribute ``short`` (``execution`` for ``langgraph_durable_mongodb.effect.execution``)."""
    return (span.attributes or {}).get(short if "." in short else f"langgraph_durable_mongodb.effect.{short}")
