"""The ``async`` section: 1, 8 and 32 coroutines running ``ainvoke`` turns at once: steps per second, client CPU per
step (and the server's, when we started it).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.common import DB_PREFIX, ServerCPU, Settings, TurnInputs, _f, _throughput, chat_builder, ratio
from pymongo import AsyncMongoClient, MongoClient

async def _bench_async(uri: str, s: Settings, server: ServerCPU, log: Callable[[str], None]) -> dict[str, Any]:
    from langgraph.checkpoint.mongodb import MongoDBSaver

    from langgraph_durable_mongodb import MongoDBCheckpointer

    inputs = TurnInputs(s)
    async_client: AsyncMongoClient = AsyncMongoClient(uri)
    sync_client: MongoClient = MongoClient(uri)

    async def run(name: str, level: int, steps: int) -> dict[str, Any]:
        """One run on a fresh database, dropped afterwards (so no run scans another's data)."""
        db_name = f"{DB_PREFIX}{name[:3]}_async_{uuid.uuid4().hex[:8]}"
        if name == "ours":
            saver: Any = MongoDBCheckpointer(async_client=async_client, db_name=db_name)
            await saver.asetup()
        else:
            saver = MongoDBSaver(sync_client, db_name=db_name)
        graph = chat_builder("add_messages", s).compile(checkpointer=saver)
        try:
            return await _throughput(graph, level, steps, s, inputs, server)
        finally:
            sync_client.drop_database(db_name)

    try:
        for name in ("ours", "reference"):  # warm up pools and imports
            await run(name, 2, 4)
        runs: dict[int, dict[str, list[dict[str, Any]]]] = {lvl: {"ours": [], "reference": []} for lvl in s.async_levels}
        for rep in range(s.async_reps):
            for i, level in enumerate(s.async_levels):
                names = ["ours", "reference"] if (rep + i) % 2 == 0 else ["reference", "ours"]
                for name in names:
                    runs[level][name].append(await run(name, level, s.async_steps))
                log(f"  async {level:3d} concurrent, rep {rep + 1}: "
                    + ", ".join(f"{n} {runs[level][n][-1]['steps_per_second']:.1f}/s" for n in ("ours", "reference")))
    finally:
        sync_client.close()
        await async_client.close()
    levels = []
    for level in s.async_levels:
        entry: dict[str, Any] = {"concurrency": level, "sides": {}, "runs": runs[level]}
        for name in ("ours", "reference"):
            rs = runs[level][name]
            entry["sides"][name] = {
                k: (statistics.median([r[k] for r in rs]) if rs[0][k] is not None else None)
                for k in ("steps_per_second", "client_cpu_ms_per_step", "server_cpu_ms_per_step", "cpu_busy")
            }
            entry["sides"][name]["errors"] = sum(r["errors"] for r in rs)
            entry["sides"][name]["first_error"] = next((r["first_error"] for r in rs if r["first_error"]), None)
        o, r = entry["sides"]["ours"], entry["sides"]["reference"]
        entry["ratios"] = {k: ratio(o[k], r[k]) for k in ("steps_per_second", "client_cpu_ms_per_step", "server_cpu_ms_per_step")}
        levels.append(entry)
    return {
        "settings": {"levels": s.async_levels, "steps": s.async_steps, "reps": s.async_reps,
                     "turns_per_thread": s.turns_per_thread,
                     "reference_executor_threads": min(32, (os.cpu_count() or 1) + 4)},
        "levels": levels,
    }


def bench_async(uri: str, s: Settings, server: ServerCPU, log: Callable[[str], None]) -> dict[str, Any]:
    return asyncio.run(_bench_async(uri, s, server, log))



def render_async(asy: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    st = asy["settings"]
    lines += ["## 2. Async concurrency", "",
              f"{st['steps']} `ainvoke` turns per run (add_messages chat, threads of {st['turns_per_thread']} turns "
              f"taken from a queue), N at a time; each run on a fresh database; median of {st['reps']} interleaved "
              f"runs. Ours: native `AsyncMongoClient`. Reference: its async methods run the sync saver on asyncio's "
              f"default executor ({st['reference_executor_threads']} threads here). cpu busy = (client + server CPU) / "
              f"(wall x cores).", "",
              "| concurrency | saver | steps/s | client CPU ms/step | server CPU ms/step | cpu busy | failed steps |",
              "|---|---|---|---|---|---|---|"]
    for e in asy["levels"]:
        for name in ("ours", "reference"):
            d = e["sides"][name]
            lines.append(f"| {e['concurrency']} | {name} | {d['steps_per_second']:.1f} | {_f(d['client_cpu_ms_per_step'], '{:.1f}')} "
                         f"| {_f(d['server_cpu_ms_per_step'], '{:.1f}')} | {_f(d['cpu_busy'], '{:.0%}')} | {d['errors']} |")
        r = e["ratios"]
        lines.append(f"| {e['concurrency']} | **ratio** | **{_f(r['steps_per_second'])}** | {_f(r['client_cpu_ms_per_step'])} "
                     f"| {_f(r['server_cpu_ms_per_step'])} | | |")
    lines.append("")
    errs = [f"{e['concurrency']} concurrent, {n}: {d['first_error']}" for e in asy["levels"]
            for n, d in e["sides"].items() if d.get("first_error")]
    if errs:
        lines += ["Failed steps (the step's thread is abandoned, the run goes on; steps/s counts completed steps): "
                  + "; ".join(errs), ""]
    return lines
