"""The ``journal`` section: the activity journal's cost per effect."""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any, TypedDict

from benchmarks.common import DB_PREFIX, EFFECTS, CollectionCounter, Settings, _Crash
from pymongo import MongoClient


def bench_journal(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """A graph with 10 journaled effects that cost nothing: extra commands and time per effect, first run and replay."""
    from langgraph_durable_mongodb import journal

    return run_journal_bench(journal, uri, s, log)


def _by_collection(names: list[tuple[str, str]], collection: str) -> int:
    return sum(1 for _, c in names if c == collection)


def run_journal_bench(module: Any, uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """A node calling 10 journaled no-op effects, then crashing once; the next invoke replays them.

    Under ``platform.compile`` (the run lock held), compared with the same node calling the 10 functions
    unjournaled, interleaved. Commands are split by collection: the journal's, the run locks', the rest.
    """
    from langgraph.graph import START, StateGraph

    from langgraph_durable_mongodb import DurablePlatform

    counter = CollectionCounter()
    client: MongoClient = MongoClient(uri, event_listeners=[counter])
    db_name = f"{DB_PREFIX}journal_{uuid.uuid4().hex[:8]}"
    try:
        platform = DurablePlatform(client, db_name=db_name)
        platform.setup()
        names = platform.checkpointer.collections
        journal_coll, locks_coll = names.journal, names.runs

        @module.effect(kind="bench", name="noop")
        def journaled(i: int) -> int:
            return i

        def plain(i: int) -> int:
            return i

        state = {"crash": True, "loop": 0.0}

        def make(fn: Callable[[int], int]) -> Any:
            def work(st: dict) -> dict:
                t0 = time.perf_counter()
                for i in range(EFFECTS):
                    fn(i)
                state["loop"] = time.perf_counter() - t0
                if state["crash"]:
                    raise _Crash("after the effects")
                return {"n": st["n"] + 1}

            g = StateGraph(TypedDict("JournalState", {"n": int}))  # noqa: UP013
            g.add_node("work", work)
            g.add_edge(START, "work")
            return platform.compile(g)

        graphs = {"journal": make(journaled), "plain": make(plain)}
        rows: dict[str, dict[str, list[dict[str, Any]]]] = {v: {"first": [], "replay": []} for v in graphs}
        reps = s.reps if not s.quick_mode else 3

        def phase(variant: str, thread: str, first: bool) -> dict[str, Any]:
            state["crash"] = first
            config = {"configurable": {"thread_id": thread}}
            with counter.window() as w:
                t0 = time.perf_counter()
                try:
                    graphs[variant].invoke({"n": 0} if first else None, config)
                except _Crash:
                    pass
                w["seconds"] = time.perf_counter() - t0
            return {
                "invoke_ms": w["seconds"] * 1000,
                "loop_ms": state["loop"] * 1000,
                "journal_commands": _by_collection(w["targets"], journal_coll),
                "lock_commands": _by_collection(w["targets"], locks_coll),
                "commands": w["commands"],
            }

        for i in range(reps + 1):  # the first repetition warms up and is dropped
            order = ["journal", "plain"] if i % 2 == 0 else ["plain", "journal"]
            for variant in order:
                thread = f"j-{variant}-{i}"
                first, replay = phase(variant, thread, True), phase(variant, thread, False)
                if i:
                    rows[variant]["first"].append(first)
                    rows[variant]["replay"].append(replay)
        out: dict[str, Any] = {"effects_per_node": EFFECTS, "reps": reps, "phases": {}}
        for ph in ("first", "replay"):
            j, p = rows["journal"][ph], rows["plain"][ph]
            med = lambda rs, k: statistics.median(r[k] for r in rs)  # noqa: E731
            out["phases"][ph] = {
                "journal_commands_per_effect": med(j, "journal_commands") / EFFECTS,
                "lock_commands_per_run": med(j, "lock_commands"),
                "extra_commands_per_effect": (med(j, "commands") - med(p, "commands")) / EFFECTS,
                "effect_ms": med(j, "loop_ms") / EFFECTS,
                "plain_call_ms": med(p, "loop_ms") / EFFECTS,
                "extra_invoke_ms_per_effect": (med(j, "invoke_ms") - med(p, "invoke_ms")) / EFFECTS,
                "invoke_ms": {"journal": med(j, "invoke_ms"), "plain": med(p, "invoke_ms")},
            }
        log("  journal measured")
        return out
    finally:
        client.drop_database(db_name)
        client.close()


def render_journal(jr: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    lines += ["## 4. Journal cost", ""]
    lines += [f"A node calls {jr['effects_per_node']} `@effect` functions that do nothing, then raises once; the "
              f"next `invoke` re-runs it and the journal replays them, under `platform.compile`. Against the same "
              f"node calling the plain functions, interleaved; medians of {jr['reps']} threads. effect ms = time "
              f"inside the node per journaled call.", "",
              "| phase | journal cmds/effect | extra cmds/effect (all collections) | run lock cmds/run "
              "| effect ms | plain call ms | extra invoke ms/effect |",
              "|---|---|---|---|---|---|---|"]
    for ph, d in jr["phases"].items():
        lines.append(f"| {ph} | {d['journal_commands_per_effect']:.2f} | {d['extra_commands_per_effect']:.2f} "
                     f"| {d['lock_commands_per_run']:.0f} | {d['effect_ms']:.2f} | {d['plain_call_ms']:.4f} "
                     f"| {d['extra_invoke_ms_per_effect']:.2f} |")
    lines.append("")
    return lines
