"""The ``resolver`` section: the resolver's cost per effect."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypedDict

from benchmarks.common import DB_PREFIX, EFFECTS, CollectionCounter, Settings
from pymongo import MongoClient


def bench_resolver(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """Resolver cost per effect (microbenchmark)."""
    from langgraph_durable_mongodb import resolver

    return run_resolver_bench(resolver, uri, s, log)


def run_resolver_bench(module: Any, uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """Inside a node of a subgraph: cost of resolving the running node and of its position.

    Per effect, the journal asks the resolver once per node attempt (``ResolverLocator``),
    then numbers effects with an in-memory counter; so a node's resolver cost is
    ``resolve_current`` + ``allocator.position`` (DB commands the first time an occurrence is
    seen, cached after), spread over the node's effects.
    """
    from langgraph.config import get_config
    from langgraph.graph import START, StateGraph

    counter = CollectionCounter()
    client: MongoClient = MongoClient(uri, event_listeners=[counter])
    db_name = f"{DB_PREFIX}resolver_{uuid.uuid4().hex[:8]}"
    calls = 2000 if not s.quick_mode else 300
    result: dict[str, Any] = {}
    try:
        allocator = module.OrdinalAllocator(client[db_name])
        allocator.setup()

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
                position = allocator.position(thread, resolved)
                result["first_position_ms"] = (time.perf_counter() - t0) * 1000
            result["first_position_commands"] = w["commands"]
            result["operation_path"] = f"{position.path} {position.node}#{position.occurrence}"
            with counter.window() as w:
                t0 = time.perf_counter()
                for _ in range(calls):
                    allocator.position(thread, resolved)
                result["cached_position_us"] = (time.perf_counter() - t0) / calls * 1e6
            result["cached_position_commands"] = w["commands"]
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
        per_node = result["resolve_us"] + result["cached_position_us"]
        result["per_effect_us_cached"] = per_node / EFFECTS
        result["per_effect_us_first"] = (result["resolve_us"] + result["first_position_ms"] * 1000) / EFFECTS
        result["calls"] = calls
        log("  resolver measured")
        return result
    finally:
        client.drop_database(db_name)
        client.close()



def render_resolver(rr: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    lines += ["## 5. Resolver cost", ""]
    lines += [f"Inside a node of a compiled subgraph (`{rr['operation_path']}`), {rr['calls']} calls each. The "
              f"journal asks once per node attempt; per effect = per node / {EFFECTS} effects.", "",
              "| resolve_current µs | position, first (ms, cmds) | position, cached (µs, cmds) "
              "| per effect, cached µs | per effect, first µs |",
              "|---|---|---|---|---|",
              f"| {rr['resolve_us']:.1f} | {rr['first_position_ms']:.2f} ({rr['first_position_commands']}) "
              f"| {rr['cached_position_us']:.1f} ({rr['cached_position_commands']}) "
              f"| {rr['per_effect_us_cached']:.1f} | {rr['per_effect_us_first']:.0f} |", ""]
    return lines
