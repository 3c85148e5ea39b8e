"""The ``wide`` section: one node calling 1,000 and 10,000 journaled effects (``--wide-sizes``) under
``platform.compile``, then crashing once; the next ``invoke`` replays them: seconds and µs per effect, first run and
replay. Linear replay keeps µs per effect flat as the node grows (issue 25 item 6).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any, TypedDict

from benchmarks.common import DB_PREFIX, Settings, _Crash
from pymongo import MongoClient


def bench_wide(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """One node calling thousands of journaled effects: does replay stay linear in them?

    Under ``platform.compile`` (the run lock held: at-least-once effects write their entry once, and a replay
    reads the node's entries in one query, then matches each effect in memory, ``Attempt.take``).
    """
    from langgraph.graph import START, StateGraph

    from langgraph_durable_mongodb import DurablePlatform
    from langgraph_durable_mongodb.journal import effect

    client: MongoClient = MongoClient(uri)
    db_name = f"{DB_PREFIX}wide_{uuid.uuid4().hex[:8]}"
    try:
        durable = DurablePlatform(client, db_name=db_name)
        durable.setup()
        runs = {"n": 0}

        @effect(kind="bench", name="noop")
        def noop(i: int) -> int:
            runs["n"] += 1
            return i

        state = {"crash": True, "size": 0}

        def work(st: dict) -> dict:
            for i in range(state["size"]):
                noop(i)
            if state["crash"]:
                raise _Crash("after the effects")
            return {"n": st["n"] + 1}

        g = StateGraph(TypedDict("WideState", {"n": int}))  # noqa: UP013
        g.add_node("work", work)
        g.add_edge(START, "work")
        graph = durable.compile(g)
        points = []
        for size in s.wide_sizes:
            state["size"], runs["n"] = size, 0
            config = {"configurable": {"thread_id": f"wide-{size}"}}
            seconds = {}
            for phase, crash in (("first", True), ("replay", False)):
                state["crash"] = crash
                t0 = time.perf_counter()
                try:
                    graph.invoke({"n": 0} if crash else None, config)
                except _Crash:
                    pass
                seconds[phase] = time.perf_counter() - t0
            assert runs["n"] == size, f"the replay ran {runs['n'] - size} effects again"
            points.append({"effects": size, "first_s": seconds["first"], "replay_s": seconds["replay"],
                           "first_us_per_effect": seconds["first"] / size * 1e6,
                           "replay_us_per_effect": seconds["replay"] / size * 1e6})
            log(f"  wide: {size} effects: first {seconds['first']:.2f} s, replay {seconds['replay']:.2f} s")
        return {"points": points}
    finally:
        client.drop_database(db_name)
        client.close()



def render_wide(wr: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    lines += ["## 6. Effects per node", "",
              "One node calls N `@effect` functions that do nothing under `platform.compile`, then raises once; "
              "the next `invoke` replays them (one query reads the node's entries, each effect is matched in "
              "memory). Flat µs per effect as N grows = linear.", "",
              "| effects in the node | first run s | replay s | first µs/effect | replay µs/effect |",
              "|---|---|---|---|---|"]
    for pt in wr["points"]:
        lines.append(f"| {pt['effects']:,} | {pt['first_s']:.2f} | {pt['replay_s']:.2f} "
                     f"| {pt['first_us_per_effect']:.0f} | {pt['replay_us_per_effect']:.0f} |")
    lines.append("")
    return lines
