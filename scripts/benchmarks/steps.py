"""The ``steps`` section: sync ``invoke`` turns one after another: client CPU per step of the sync face; with the chat
section, the modelled MongoDB time per operation (commands x RTT + client CPU).
"""

from __future__ import annotations

import statistics
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks.common import DB_PREFIX, ServerCPU, Settings, TurnInputs, _f, chat_builder, ratio
from pymongo import MongoClient


class ChecksumClock:
    """Time spent computing the CRC-32 checksums kept with values (issue 25), in the module that computes them:
    ``checkpointer.documents.checksum`` calls ``zlib.crc32`` through this object while it is installed."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def crc32(self, data: bytes, value: int = 0) -> int:
        t0 = time.perf_counter()
        try:
            return zlib.crc32(data, value)
        finally:
            self.seconds += time.perf_counter() - t0

    @contextmanager
    def installed(self) -> Iterator["ChecksumClock"]:
        from langgraph_durable_mongodb.checkpointer import documents

        documents.zlib, self.seconds = self, 0.0  # type: ignore[assignment]
        try:
            yield self
        finally:
            documents.zlib = zlib


def bench_steps(uri: str, s: Settings, server: ServerCPU, log: Callable[[str], None]) -> dict[str, Any]:
    """Sync ``invoke`` steps one after another (the sync face): client CPU and wall time per step.

    The same add_messages chat as the async section (threads of ``turns_per_thread`` turns), each run on
    a fresh database, ours and the reference alternating; client CPU is the whole process's, LangGraph's
    background threads included.
    """
    from langgraph.checkpoint.mongodb import MongoDBSaver

    from langgraph_durable_mongodb import MongoDBCheckpointer

    inputs = TurnInputs(s)
    client: MongoClient = MongoClient(uri)

    def run(name: str, steps: int) -> dict[str, Any]:
        db_name = f"{DB_PREFIX}{name[:3]}_steps_{uuid.uuid4().hex[:8]}"
        saver: Any = MongoDBCheckpointer(client, db_name=db_name) if name == "ours" else MongoDBSaver(client, db_name=db_name)
        if name == "ours":
            saver.setup()
        graph = chat_builder("add_messages", s).compile(checkpointer=saver)
        try:
            with ChecksumClock().installed() as checksums:
                cpu0, srv0, t0 = time.process_time(), server.seconds(), time.perf_counter()
                for _ in range(max(1, steps // s.turns_per_thread)):
                    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
                    for turn in range(s.turns_per_thread):
                        graph.invoke(inputs(turn), config)
                done = max(1, steps // s.turns_per_thread) * s.turns_per_thread
                elapsed, cpu, srv1 = time.perf_counter() - t0, time.process_time() - cpu0, server.seconds()
            return {
                "steps_per_second": done / elapsed,
                "client_cpu_ms_per_step": cpu / done * 1000,
                "server_cpu_ms_per_step": (srv1 - srv0) / done * 1000 if srv0 is not None and srv1 is not None else None,
                # ours only: the CPU of the checksums kept with values (their share of a step: under 3% is the target)
                "checksum_cpu_ms_per_step": checksums.seconds / done * 1000 if name == "ours" else None,
            }
        finally:
            client.drop_database(db_name)

    try:
        for name in ("ours", "reference"):
            run(name, 4)  # warm up
        runs: dict[str, list[dict[str, Any]]] = {"ours": [], "reference": []}
        for rep_ in range(s.async_reps):
            for name in (("ours", "reference") if rep_ % 2 == 0 else ("reference", "ours")):
                runs[name].append(run(name, s.async_steps))
            log(f"  steps rep {rep_ + 1}: " + ", ".join(f"{n} {runs[n][-1]['client_cpu_ms_per_step']:.2f} ms CPU/step" for n in runs)
                + f" (checksums {runs['ours'][-1]['checksum_cpu_ms_per_step']:.4f} ms)")
    finally:
        client.close()
    sides = {
        name: {k: (statistics.median([r[k] for r in rs]) if rs[0][k] is not None else None)
               for k in ("steps_per_second", "client_cpu_ms_per_step", "server_cpu_ms_per_step", "checksum_cpu_ms_per_step")}
        for name, rs in runs.items()
    }
    o, r = sides["ours"], sides["reference"]
    share = o["checksum_cpu_ms_per_step"] / o["client_cpu_ms_per_step"]
    log(f"  value checksums: {o['checksum_cpu_ms_per_step']:.4f} ms of {o['client_cpu_ms_per_step']:.2f} ms CPU per step ({share:.2%})")
    return {"settings": {"steps": s.async_steps, "reps": s.async_reps, "turns_per_thread": s.turns_per_thread},
            "sides": sides, "runs": runs, "checksum_share_of_client_cpu": share,
            "ratios": {k: ratio(o[k], r[k]) for k in ("steps_per_second", "client_cpu_ms_per_step", "server_cpu_ms_per_step")}}



def render_steps(st: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    lines += ["## 3. Sync steps: client CPU", "",
              f"{st['settings']['steps']} sync `invoke` turns per run (add_messages chat, threads of "
              f"{st['settings']['turns_per_thread']} turns), one after another, each run on a fresh database; median of "
              f"{st['settings']['reps']} interleaved runs. Client CPU: the whole process (LangGraph's background threads "
              "included).", "",
              "| saver | steps/s | client CPU ms/step | server CPU ms/step |", "|---|---|---|---|"]
    for name in ("ours", "reference"):
        d = st["sides"][name]
        lines.append(f"| {name} | {d['steps_per_second']:.1f} | {d['client_cpu_ms_per_step']:.2f} "
                     f"| {_f(d['server_cpu_ms_per_step'], '{:.2f}')} |")
    r = st["ratios"]
    lines += [f"| **ratio** | **{_f(r['steps_per_second'])}** | **{_f(r['client_cpu_ms_per_step'])}** "
              f"| {_f(r['server_cpu_ms_per_step'])} |", ""]
    return lines


#: Round-trip times for the modelled MongoDB time: the same host, and a same-region Atlas cluster.
RTTS_MS = (0.2, 1.0)


def render_modelled(res: dict[str, Any]) -> list[str]:
    """Per operation: commands x RTT + measured client CPU, both savers side by side."""
    chat = res.get("chat")
    points = [p for p in (chat or {}).get("points", []) if p["kind"] == "add_messages"]
    if not points:
        return []
    p = points[-1]
    lines = ["### Modelled MongoDB time", "",
             f"What an operation would cost on a MongoDB answering each command in one round trip: commands x RTT "
             f"(0.2 ms: the same host; 1 ms: a same-region Atlas cluster) + the client CPU measured here (median "
             f"`time.process_time()` of the call; add_messages thread of {p['turns']} turns; the server's own work is "
             f"left out: on MongoDB each of these commands is an index lookup). A step = one `invoke` turn "
             f"(`get_tuple`, 3 `put`, 2 `put_writes`): its commands, and the sync client CPU per step of section 3.", "",
             "| operation | saver | commands | client CPU ms | @0.2 ms RTT | @1 ms RTT | ratio @0.2 | ratio @1 |",
             "|---|---|---|---|---|---|---|---|"]
    rows = [(op, op) for op in ("get_tuple", "put", "put_writes", "list")]
    for label, op in rows:
        modelled = {}
        for name in ("ours", "reference"):
            d = p["sides"][name]
            cmds, cpu = d[f"{op}_commands"], d[f"{op}_cpu_ms"]
            modelled[name] = [cmds * rtt + cpu for rtt in RTTS_MS]
        for name in ("ours", "reference"):
            d = p["sides"][name]
            label_ = "list 100" if op == "list" else op
            lines.append(f"| {label_} | {name} | {d[f'{op}_commands']} | {d[f'{op}_cpu_ms']:.2f} | {modelled[name][0]:.2f} "
                         f"| {modelled[name][1]:.2f} | " + (" | ".join(f"**{a / b:.2f}**" for a, b in zip(modelled['ours'], modelled['reference']))
                                                        if name == "ours" else " | ") + " |")
    steps = res.get("steps")
    if steps:
        modelled = {}
        for name in ("ours", "reference"):
            cmds = p["sides"][name]["turn_commands"]
            cpu = steps["sides"][name]["client_cpu_ms_per_step"]
            modelled[name] = (cmds, cpu, [cmds * rtt + cpu for rtt in RTTS_MS])
        for name in ("ours", "reference"):
            cmds, cpu, m = modelled[name]
            ratios = (" | ".join(f"**{a / b:.2f}**" for a, b in zip(m, modelled["reference"][2])) if name == "ours" else " | ")
            lines.append(f"| step (sync) | {name} | {cmds:.1f} | {cpu:.2f} | {m[0]:.2f} | {m[1]:.2f} | {ratios} |")
    return lines + [""]

