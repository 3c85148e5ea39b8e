"""The ``resolver`` section: the resolver's cost per effect."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypedDict

from benchmarks.common import EFFECTS, CollectionCounter, Settings
from pymongo import MongoClient


def bench_resolver(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """Resolver cost per effect (microbenchmark)."""
    from langgraph_durable_mongodb import resolver

    return run_resolver_bench(resolver, uri, s, log)


def run_resolver_bench(module: Any, uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """Inside a node of a subgraph: the cost of resolving the running node and of naming its visit.

    The journal asks once per node attempt (``ResolverLocator``) and numbers the node's effects in memory, so a
    node's resolver cost is ``resolve_current`` + ``visit_position``, spread over its effects. A position is named
    by LangGraph's identity of the work (issue 32): it costs no command, which the bench counts.
    """
    from langgraph.config import get_config
    from langgraph.graph import START, StateGraph

    from langgraph_durable_mongodb.resolver.visit import visit_position

    counter = CollectionCounter()
    client: MongoClient = MongoClient(uri, event_listeners=[counter])
    calls = 2000 if not s.quick_mode else 300
    result: dict[str, Any] = {}
    try:
        def inner(st: dict) -> dict:
            config = get_config()
            scope = module.current_durable_scope()
            thread = config["configurable"]["thread_id"]
            t0 = time.perf_counter()
            for _ in range(calls):
                resolved = scope.resolve_current(config)
            result["resolve_us"] = (time.perf_counter() - t0) / calls * 1e6
            with counter.window() as w:
                t0 = time.perf_counter()
                for _ in range(calls):
                    position = visit_position(thread, resolved)
                result["position_us"] = (time.perf_counter() - t0) / calls * 1e6
            result["position_commands"] = w["commands"]
            result["operation_path"] = f"{position.path} {position.node}#{position.occurrence}"
            return {"n": st["n"] + 1}

        S = TypedDict("ResolverState", {"n": int})  # noqa: UP013, N806
        child = StateGraph(S)
        child.add_node("inner", inner)
        child.add_edge(START, "inner")
        parent = StateGraph(S)
        parent.add_node("case", child.compile())
        parent.add_edge(START, "case")
        graph = parent.compile()
        resolver = module.DurableSubgraphResolver.from_graph(graph)
        with module.durable_scope(resolver):
            graph.invoke({"n": 0}, {"configurable": {"thread_id": "r1"}})
        result["per_effect_us"] = (result["resolve_us"] + result["position_us"]) / EFFECTS
        result["calls"] = calls
        log("  resolver measured")
        return result
    finally:
        client.close()


def render_resolver(rr: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    lines += ["## 5. Resolver cost", ""]
    lines += [f"Inside a node of a compiled subgraph (`{rr['operation_path']}`), {rr['calls']} calls each. The "
              f"journal asks once per node attempt; per effect = per node / {EFFECTS} effects.", "",
              "| resolve_current µs | visit_position µs (cmds) | per effect µs |",
              "|---|---|---|",
              f"| {rr['resolve_us']:.1f} | {rr['position_us']:.1f} ({rr['position_commands']}) "
              f"| {rr['per_effect_us']:.1f} |", ""]
    return lines
