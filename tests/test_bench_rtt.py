"""The rtt bench section's own machinery (scripts/benchmarks/rtt.py, tests/servers/toxiproxy.py), on the server tier.

No timing is asserted but toxiproxy's floor: a reply delayed by the latency toxic cannot arrive sooner.
What the numbers are is the bench's business (``scripts/bench --only rtt``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import uuid
from pathlib import Path

import pytest
from pymongo import MongoClient, monitoring

from tests.servers import toxiproxy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchmarks import common as bench  # noqa: E402  (scripts/benchmarks/common.py)
from benchmarks import rtt as bench_rtt  # noqa: E402  (scripts/benchmarks/rtt.py)
from benchmarks import __main__ as bench_main  # noqa: E402  (scripts/benchmarks/__main__.py)


class Durations(monitoring.CommandListener):
    def __init__(self) -> None:
        self.micros: dict[str, list[int]] = {}

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        pass

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        self.micros.setdefault(event.command_name, []).append(event.duration_micros)

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


def test_toxiproxy_delays_every_reply_by_its_latency(mongodb_uri: str, toxiproxy_server: toxiproxy.Toxiproxy) -> None:
    name = f"rtt_{uuid.uuid4().hex[:8]}"
    host, port = toxiproxy_server.proxy(*bench_rtt.host_port(mongodb_uri), latency_ms=2, name=name)
    toxics = toxiproxy_server.call("GET", f"/proxies/{name}/toxics")
    assert [(t["type"], t["stream"], t["attributes"]["latency"]) for t in toxics] == [("latency", "downstream", 2)]
    db_name = f"rtt_{uuid.uuid4().hex[:8]}"
    durations = Durations()
    with MongoClient(mongodb_uri) as direct, MongoClient(bench_rtt.proxied_uri(mongodb_uri, host, port),
                                                         event_listeners=[durations]) as proxied:
        direct[db_name].docs.insert_one({"_id": "seen", "through": "direct"})
        try:
            # the proxy forwards to the same server: what was written directly is read through it
            assert proxied[db_name].docs.find_one({"_id": "seen"}) == {"_id": "seen", "through": "direct"}
            for _ in range(5):
                proxied.admin.command("ping")
        finally:
            direct.drop_database(db_name)
    assert len(durations.micros["ping"]) == 5
    # each reply waits for the toxic: 2 ms is a floor, whatever the machine's load
    assert min(durations.micros["ping"] + durations.micros["find"]) >= 2000, durations.micros


def test_rtt_variants_run_their_turns_and_count_by_collection(mongodb_uri: str, monkeypatch: pytest.MonkeyPatch) -> None:
    executed: list[str] = []
    original = bench_rtt.lookup.func

    def counted(query: str) -> str:
        executed.append(query)
        return original(query)

    monkeypatch.setattr(bench_rtt.lookup, "func", counted)
    names = (*bench_rtt.REACT, *bench_rtt.CHAT)
    variants = bench_rtt.run_turns(mongodb_uri, names, bench.Settings(), bench_rtt.RttSettings(threads=2, turns=2),
                                   lambda _: None)
    # every ReAct variant ran its tool once per turn: 2 warm-up turns, then 2 threads x 2 turns
    assert len(executed) == len(bench_rtt.REACT) * (2 + 2 * 2)
    rows = bench_rtt.summarize(variants)
    for name in names:
        v = variants[name]
        assert len(v.walls) == 4 and len(v.first_turn_commands) == 2 and len(v.commands) == 2
        # the breakdown accounts for every command counted
        assert sum(v.targets.values()) == sum(v.commands) + sum(v.first_turn_commands) > 0
        assert rows[name]["by_target"] and rows[name]["ratio"] is not None
    assert rows["task"]["ratio"] == rows["chat_saver"]["ratio"] == 1.0
    # each measured turn's client CPU, and its ratio to the reference's, as the summary line reports it
    for name in names:
        assert len(variants[name].cpus) == 4 and min(variants[name].cpus) > 0
        assert rows[name]["cpu_ratio"] == pytest.approx(rows[name]["cpu_ms_median"] / rows[bench_rtt.REFERENCE[name]]["cpu_ms_median"])
    summary = bench_main.cpu_summary({"rtt": {"variants": rows}})
    assert summary is not None and f"durable ReAct turn, sync, {rows['compile']['cpu_ratio']:.2f}x `@task`" in summary

    def journal(name: str) -> int:
        return sum(c for k, c in variants[name].targets.items() if k.startswith("activity_journal "))

    assert journal("compile") > 0 and journal("plain") > 0
    assert journal("saver") == journal("task") == 0

    def writes(name: str) -> int:
        return sum(c for k, c in variants[name].targets.items() if k == "checkpoint_writes update")

    # @task saves each call's result as a pending write: the task variant is durable, the plain one is not
    assert writes("task") > writes("saver")
    assert "## 7. Round trips at 1 ms" in "\n".join(bench_rtt.render_rtt({"settings": {"threads": 2, "turns": 2, "latency_ms": 1},
                                                                           "variants": rows}))


def test_rtt_cpu_line_runs_both_variants_async(mongodb_uri: str) -> None:
    rs = bench_rtt.RttSettings(cpu_concurrency=2, cpu_steps=4, cpu_reps=1)
    cpu = asyncio.run(bench_rtt._cpu_line(mongodb_uri, rs, bench.ServerCPU(None), lambda _: None))
    for side in cpu["sides"].values():
        assert side["errors"] == 0, side["first_error"]
        assert side["client_cpu_ms_per_step"] > 0
    assert cpu["ratio"] == pytest.approx(cpu["sides"]["compile"]["client_cpu_ms_per_step"]
                                         / cpu["sides"]["task"]["client_cpu_ms_per_step"])
    summary = bench_main.cpu_summary({"rtt": {"cpu": cpu}})
    assert summary is not None and f"durable ReAct turn, async at 2 concurrent, {cpu['ratio']:.2f}x `@task`" in summary


def test_the_summary_line_carries_the_async_chat_s_cpu_ratio(mongodb_uri: str) -> None:
    """The async section's client CPU ratio against ``MongoDBSaver`` reaches ``scripts/bench``'s summary line."""
    from benchmarks.async_ import bench_async  # scripts/benchmarks/async_.py

    s = dataclasses.replace(bench.Settings(), async_levels=(2,), async_steps=4, async_reps=1)
    asy = bench_async(mongodb_uri, s, bench.ServerCPU(None), lambda _: None)
    level = asy["levels"][0]
    assert all(side["errors"] == 0 and side["client_cpu_ms_per_step"] > 0 for side in level["sides"].values())
    ratio = level["ratios"]["client_cpu_ms_per_step"]
    assert ratio == pytest.approx(level["sides"]["ours"]["client_cpu_ms_per_step"]
                                  / level["sides"]["reference"]["client_cpu_ms_per_step"])
    summary = bench_main.cpu_summary({"async": asy})
    assert summary is not None and f"async chat at 2 concurrent {ratio:.2f}x `MongoDBSaver`" in summary


def test_the_call_count_counts_each_variant_s_turns_by_package(mongodb_uri: str) -> None:
    """``rtt.count_calls``: the Python calls of a turn, every thread, ours only in our variants, each variant's total
    against its reference's."""
    from benchmarks import calls as bench_calls  # scripts/benchmarks/calls.py

    counted = bench_rtt.count_calls(mongodb_uri, threads=1, turns=3)
    variants = counted["variants"]
    assert set(variants) == set(bench_rtt.COUNTED)
    for name, groups in variants.items():
        assert groups["all"] == pytest.approx(sum(n for g, n in groups.items() if g != "all"))
        assert groups.get("pymongo and bson", 0) > 0 and groups.get("LangGraph", 0) > 0
        assert (groups.get("ours", 0) > 0) == (name in ("compile", "chat_ours")), (name, groups)
        assert counted["ratio"][name] == pytest.approx(groups["all"] / variants[bench_rtt.REFERENCE[name]]["all"])
    # our background release is counted in its turn: a durable turn calls into ours and sends more commands
    assert variants["compile"]["pymongo and bson"] > variants["task"]["pymongo and bson"]
    table = "\n".join(bench_calls.render_calls(counted, bench_rtt.LABELS))
    assert "| **all** |" in table and "ratio to the reference" in table
