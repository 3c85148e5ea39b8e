"""docs/images/trace-resumed-turn.svg: the trace of a real ReAct turn that crashed, then resumed, as the OpenTelemetry
SDK exported it, drawn as a waterfall (one row per span, indented under its parent, a bar from its start to its end).

Run it with ``scripts/trace-picture [PATH]``. The turn runs on the embedded platform (mongomock): ``agent``
(``SecureLLM``) asks for a tool, ``tools`` (``SecureTool``) runs it and then dies (``ConnectionError``: the worker
is lost) before LangGraph saves its writes; ``invoke(None, config)`` resumes the thread. The model takes 40 ms a
call and the tool 25 ms (sleeps), so their bars can be told from the journal's own spans. Every span drawn is one
the SDK's in-memory exporter received: nothing is made up but the sleeps.
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT / "docs" / "images" / "trace-resumed-turn.svg"
NS = "langgraph_durable_mongodb."

# -- the run ----------------------------------------------------------------------------------------------------------


def _exporter() -> Any:
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def _graph(platform: Any, crashes: list[str]) -> Any:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import tools_condition

    from langgraph_durable_mongodb import SecureLLM, SecureTool

    class Model(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "support-model"

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            time.sleep(0.04)
            if isinstance(messages[-1], ToolMessage):
                return ChatResult(generations=[ChatGeneration(message=AIMessage(f"Covered: {messages[-1].content}."))])
            call = {"name": "lookup_policy", "args": {"claim": "7731"}, "id": f"call_{uuid.uuid4().hex[:6]}", "type": "tool_call"}
            return ChatResult(generations=[ChatGeneration(message=AIMessage("", tool_calls=[call]))])

    @tool
    def lookup_policy(claim: str) -> str:
        """Look the claim's policy up."""
        time.sleep(0.025)
        return "water damage, up to 5,000 EUR"

    llm, lookup = SecureLLM(Model()), SecureTool(lookup_policy)

    def agent(state: MessagesState) -> dict:
        return {"messages": [llm.invoke(state["messages"])]}

    def tools(state: MessagesState) -> dict:
        message = lookup.invoke(state["messages"][-1].tool_calls[0])
        if crashes:
            raise ConnectionError(crashes.pop())
        return {"messages": [message]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", RunnableLambda(agent, name="agent"))
    builder.add_node("tools", RunnableLambda(tools, name="tools"))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return platform.compile(builder)


def run_turn() -> list[Any]:
    """The crashed and the resumed call, each under an application span; the finished spans, in the order they ended."""
    from langchain_core.messages import HumanMessage
    from opentelemetry import trace

    from langgraph_durable_mongodb import DurablePlatform

    exporter = _exporter()
    app = trace.get_tracer("support-app")
    config = {"configurable": {"thread_id": "claim-7731"}}
    with DurablePlatform.embedded() as platform:
        graph = _graph(platform, ["worker lost"])
        try:
            with app.start_as_current_span("POST /claims/7731/ask (crashed)"):
                graph.invoke({"messages": [HumanMessage("Is my water damage covered?")]}, config)
        except ConnectionError:
            pass
        with app.start_as_current_span("POST /claims/7731/resume"):
            graph.invoke(None, config)
        platform.run_locks.wait_releases(10)
    return list(exporter.get_finished_spans())


# -- the picture ------------------------------------------------------------------------------------------------------

LABEL_WIDTH, BAR_WIDTH, ROW, TOP = 470, 600, 20, 54
COLOURS = {
    "executed": "#3b7dd8", "replayed": "#2f9e62", "journal": "#9aa3ad", "run_lock": "#8a63d2",
    "checkpoint": "#e08a2c", "app": "#4a4f57",
}


def _colour(span: Any) -> str:
    attributes = span.attributes or {}
    if NS + "effect.execution" in attributes:
        return COLOURS[attributes[NS + "effect.execution"]]
    head = span.name.split(" ", 1)[0]
    return COLOURS.get(head, COLOURS["app"])


def _note(span: Any) -> str:
    """What a row says after the span's name: the attributes a reader looks for."""
    a = span.attributes or {}
    if NS + "effect.execution" in a:
        attempt = f", attempt {a[NS + 'effect.attempt']}" if a[NS + "effect.execution"] == "executed" else ""
        return f"{a[NS + 'effect.execution']}{attempt}, node {a[NS + 'effect.node']}, key {str(a[NS + 'effect.idempotency_key'])[:11]}…"
    if span.name == "run_lock take":
        return f"fence {a.get(NS + 'run_lock.fence')}" + (", taken over" if a.get(NS + "run_lock.taken_over") else "")
    if "error.type" in a:
        return str(a["error.type"]).rsplit(".", 1)[-1]
    raised = [e.attributes.get("exception.type") for e in span.events if e.name == "exception"]  # the SDK's, on app spans
    return f"raised {raised[0]}" if raised else ""


def _rows(spans: Sequence[Any], root: Any) -> list[tuple[int, Any]]:
    """``(depth, span)`` under ``root``, depth first, children by start time."""
    by_parent: dict[int, list[Any]] = {}
    for span in spans:
        if span.parent is not None:
            by_parent.setdefault(span.parent.span_id, []).append(span)
    rows: list[tuple[int, Any]] = []

    def visit(span: Any, depth: int) -> None:
        rows.append((depth, span))
        for child in sorted(by_parent.get(span.context.span_id, []), key=lambda s: s.start_time):
            visit(child, depth + 1)

    visit(root, 0)
    return rows


def _panel(rows: list[tuple[int, Any]], y: int, title: str) -> tuple[list[str], int]:
    """One call's rows at ``y``, on a time axis from its root span's start to the last end beneath it."""
    start = rows[0][1].start_time
    end = max(span.end_time for _, span in rows)
    scale = BAR_WIDTH / max(end - start, 1)
    out = [f'<text x="8" y="{y + 14}" class="title">{escape(title)}</text>']
    y += 24
    for ms in range(0, int((end - start) / 1e6) + 1, 25):
        x = LABEL_WIDTH + ms * 1e6 * scale
        out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + ROW * len(rows)}" class="tick"/>')
        out.append(f'<text x="{x:.1f}" y="{y - 3}" class="axis">{ms} ms</text>')
    for depth, span in rows:
        x, width = LABEL_WIDTH + (span.start_time - start) * scale, max((span.end_time - span.start_time) * scale, 1.5)
        failed = span.status.status_code.name == "ERROR"
        note = _note(span)
        label = escape(span.name) + (f' <tspan class="note">{escape(note)}</tspan>' if note else "")
        out.append(f'<text x="{8 + depth * 14}" y="{y + 14}">{label}</text>')
        out.append(
            f'<rect x="{x:.1f}" y="{y + 4}" width="{width:.1f}" height="{ROW - 8}" fill="{_colour(span)}"'
            + (' stroke="#d62d20" stroke-width="2"' if failed else "") + "/>"
        )
        out.append(f'<text x="{x + width + 4:.1f}" y="{y + 14}" class="ms">{(span.end_time - span.start_time) / 1e6:.1f} ms</text>')
        y += ROW
    return out, y + 16


def draw(spans: Sequence[Any]) -> str:
    """The SVG of every application root span among ``spans`` and what ran beneath it."""
    roots = sorted((s for s in spans if s.parent is None), key=lambda s: s.start_time)
    body: list[str] = []
    y = TOP
    for root in roots:
        lines, y = _panel(_rows(spans, root), y, root.name)
        body += lines
    legend = " ".join(
        f'<rect x="{8 + i * 150}" y="{y + 4}" width="12" height="12" fill="{c}"/>'
        f'<text x="{24 + i * 150}" y="{y + 14}">{name}</text>'
        for i, (name, c) in enumerate([
            ("effect executed", COLOURS["executed"]), ("effect replayed", COLOURS["replayed"]),
            ("journal claim, record", COLOURS["journal"]), ("run lock", COLOURS["run_lock"]),
            ("checkpoint", COLOURS["checkpoint"]), ("application", COLOURS["app"]),
        ])
    )
    height = y + 48
    width = LABEL_WIDTH + BAR_WIDTH + 90
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        "<style>text{font:12px 'DejaVu Sans',sans-serif;fill:#222}.title{font-weight:bold;font-size:13px}"
        ".note{fill:#666}.axis,.ms{fill:#777;font-size:10px}.tick{stroke:#e4e6e9}</style>",
        f'<rect width="{width}" height="{height}" fill="#fff"/>',
        '<text x="8" y="20" class="title">A ReAct turn that crashed in its tools node, then resumed: the spans the '
        "OpenTelemetry SDK exported</text>",
        '<text x="8" y="38" class="note">drawn by scripts/trace-picture; red outline: the span ended in error; a bar '
        "past its parent's end: a record written in the background</text>",
        *body,
        legend,
        "</svg>",
    ]) + "\n"


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else DEFAULT
    target.write_text(draw(run_turn()))
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
