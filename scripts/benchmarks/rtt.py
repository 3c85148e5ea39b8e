"""scripts/bench's ``rtt`` section (issue 20): a ReAct turn at a 1 ms round trip, ours against LangGraph's ``@task``.

toxiproxy (tests/servers/toxiproxy.py) stands between the client and the server and delays every reply by
1 ms, about a same-region Atlas round trip. On 4 conversation threads, one turn after another, sync, each
variant runs the same turn in turn (the order rotates every round, so drift hits all alike):

- ``saver``:   a hand-built ReAct graph (agent node, ``ToolNode``) on langgraph-checkpoint-mongodb's ``MongoDBSaver``;
- ``task``:    the same, the model and tool calls wrapped in LangGraph's ``@task`` inside the nodes (the 1.00
               reference: LangGraph's own durable execution);
- ``compile``: ours, ``platform.compile(builder)`` with ``SecureLLM`` and ``SecureTool`` (run lock on);
- ``plain``:   ours, ``builder.compile(checkpointer=platform.checkpointer)``, ``exclusive_runs=False``;
- ``once``:    ``compile`` with the tool declared ``at_most_once`` (its outcome recorded before it returns: what
               that costs a turn);
- ``chat_ours`` / ``chat_saver``: a plain ``add_messages`` chat turn, our ``MongoDBCheckpointer`` against
               ``MongoDBSaver`` (its reference).

A turn: the user asks, the model asks for the tool, the tool runs, the model answers (a scripted chat model,
no network). Reported: commands per turn (pymongo command monitoring, by collection and command name),
median wall time and client CPU per turn, their ratios to the reference. Also, without the proxy: client CPU per
turn of a durable turn against the ``@task`` variant, async at 32 concurrent (the async section's ``_throughput``),
and the Python calls a turn makes, by package (``benchmarks.calls``).
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks import calls
from benchmarks import common as core
from benchmarks.common import ScriptedModel, host_port, lookup, proxied_uri, react_builder, secure_builder
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pymongo import AsyncMongoClient, MongoClient

REACT = ("saver", "task", "compile", "plain", "once")
CHAT = ("chat_ours", "chat_saver")
REFERENCE = {"saver": "task", "task": "task", "compile": "task", "plain": "task", "once": "task",
             "chat_ours": "chat_saver", "chat_saver": "chat_saver"}
LABELS = {
    "saver": "`MongoDBSaver`, plain model and tool",
    "task": "`MongoDBSaver`, the LLM and tool calls wrapped in `@task`",
    "compile": "ours: `platform.compile`, `SecureLLM`, `SecureTool`",
    "plain": "ours, plain form: `builder.compile(checkpointer=platform.checkpointer)`, `exclusive_runs=False`",
    "once": "ours: `platform.compile`, the tool `at_most_once`",
    "chat_ours": "plain `add_messages` chat turn, ours (`MongoDBCheckpointer`)",
    "chat_saver": "plain `add_messages` chat turn, `MongoDBSaver`",
}


@dataclass
class RttSettings:
    threads: int = 4
    turns: int = 16  # per thread: a durable turn's CPU target holds over turns 1-16
    runs: int = 3  # the turns measured again from fresh databases: each figure's spread is over these runs
    latency_ms: int = 1  # toxiproxy takes whole milliseconds
    cpu_concurrency: int = 32
    cpu_steps: int = 96
    cpu_reps: int = 3

    @classmethod
    def quick(cls) -> RttSettings:
        return cls(turns=3, cpu_steps=64, cpu_reps=3)


#: A figure whose repeated runs differ by more than this (highest / lowest - 1) is too noisy to compare.
NOISY = 0.15
#: The figures the docs quote (docs/numbers.json), as (their key there, label, how to read them from an rtt run).
QUOTED = (
    ("ratio.compile", "wall time, `platform.compile` / `@task`", ("variants", "compile", "ratio")),
    ("ratio.plain", "wall time, plain form / `@task`", ("variants", "plain", "ratio")),
    ("ratio.chat_ours", "wall time, chat turn / `MongoDBSaver`", ("variants", "chat_ours", "ratio")),
    ("cpu_ratio_sync", "client CPU, sync durable turn / `@task`", ("variants", "compile", "cpu_ratio")),
    ("cpu_ratio", "client CPU, async durable turn / `@task`", ("cpu",)),
)


def task_builder() -> Any:
    """The ReAct graph with the model and tool calls as LangGraph ``@task`` s inside the nodes."""
    from langchain_core.runnables import RunnableLambda
    from langgraph.func import task

    model = ScriptedModel().bind_tools([lookup])

    @task
    def call_model(messages: list[BaseMessage]) -> BaseMessage:
        return model.invoke(messages)

    @task
    async def acall_model(messages: list[BaseMessage]) -> BaseMessage:
        return await model.ainvoke(messages)

    @task
    def call_tool(call: dict) -> ToolMessage:
        return lookup.invoke(call)

    @task
    async def acall_tool(call: dict) -> ToolMessage:
        return await lookup.ainvoke(call)

    def tools(state: dict) -> dict:
        futures = [call_tool(c) for c in state["messages"][-1].tool_calls]
        return {"messages": [f.result() for f in futures]}

    async def atools(state: dict) -> dict:
        return {"messages": list(await asyncio.gather(*(acall_tool(c) for c in state["messages"][-1].tool_calls)))}

    async def ask(messages: list[BaseMessage]) -> BaseMessage:
        return await acall_model(messages)

    return react_builder(lambda m: call_model(m).result(), ask, RunnableLambda(tools, afunc=atools, name="tools"))


def plain_builder() -> Any:
    from langgraph.prebuilt import ToolNode

    model = ScriptedModel().bind_tools([lookup])
    return react_builder(model.invoke, model.ainvoke, ToolNode([lookup]))


# --------------------------------------------------------------------------------------------
# the variants, each with its own client, counter and database


@dataclass
class Variant:
    name: str
    client: MongoClient
    counter: core.CollectionCounter
    db_name: str
    graph: Any
    inputs: Callable[[int], dict[str, Any]]
    closers: list[Callable[[], None]] = field(default_factory=list)
    #: Waits for what a run sends after it returned (the run lock's release), so its commands count in its turn.
    settle: Callable[[], None] = lambda: None
    walls: list[float] = field(default_factory=list)
    #: Process CPU time per turn (every thread, the settle included): what the client spent on it.
    cpus: list[float] = field(default_factory=list)
    commands: list[int] = field(default_factory=list)
    first_turn_commands: list[int] = field(default_factory=list)  # a thread's first turn reads no earlier writes
    targets: Counter = field(default_factory=Counter)

    def turn(self, thread: str, turn: int, measured: bool) -> None:
        config = {"configurable": {"thread_id": thread}}
        with self.counter.window() as seen:
            c0, t0 = time.process_time(), time.perf_counter()
            out = self.graph.invoke(self.inputs(turn), config)
            wall = time.perf_counter() - t0
            self.settle()
            cpu = time.process_time() - c0
        if not isinstance(out["messages"][-1], AIMessage) or out["messages"][-1].tool_calls:
            raise RuntimeError(f"{self.name}: the turn did not end with the model's answer: {out['messages'][-1]!r}")
        if measured:
            self.walls.append(wall)
            self.cpus.append(cpu)
            (self.first_turn_commands if turn == 0 else self.commands).append(seen["commands"])
            self.targets.update(f"{collection} {command}" for command, collection in seen["targets"])

    def close(self) -> None:
        for close in self.closers:
            close()
        self.client.drop_database(self.db_name)
        self.client.close()


def react_inputs(turn: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=f"is claim {turn} covered?", id=f"u{turn}")]}


def make_variant(name: str, uri: str, s: core.Settings) -> Variant:
    """One variant on a fresh database of ``uri``."""
    from langgraph.checkpoint.mongodb import MongoDBSaver

    from langgraph_durable_mongodb import DurablePlatform, MongoDBCheckpointer

    counter = core.CollectionCounter()
    client: MongoClient = MongoClient(uri, event_listeners=[counter])
    db_name = f"{core.DB_PREFIX}rtt_{name}_{uuid.uuid4().hex[:8]}"
    closers: list[Callable[[], None]] = []
    settle: Callable[[], None] = lambda: None
    inputs: Callable[[int], dict[str, Any]] = react_inputs
    if name in ("saver", "task", "chat_saver"):
        saver: Any = MongoDBSaver(client, db_name=db_name)
        builder = {"saver": plain_builder, "task": task_builder}.get(name, lambda: core.chat_builder("add_messages", s))()
        graph = builder.compile(checkpointer=saver)
    elif name == "chat_ours":
        saver = MongoDBCheckpointer(client, db_name=db_name)
        saver.setup()
        closers.append(saver.close)
        graph = core.chat_builder("add_messages", s).compile(checkpointer=saver)
    else:
        platform = DurablePlatform(client, db_name=db_name, exclusive_runs=name != "plain")
        platform.setup()
        closers.append(platform.close)
        if platform.run_locks is not None:
            settle = platform.run_locks.wait_releases
        builder = secure_builder(at_most_once=name == "once")
        graph = builder.compile(checkpointer=platform.checkpointer) if name == "plain" else platform.compile(builder)
    if name.startswith("chat"):
        inputs = core.TurnInputs(s)
    return Variant(name, client, counter, db_name, graph, inputs, closers, settle)


def run_turns(uri: str, names: Sequence[str], s: core.Settings, rs: RttSettings,
              log: Callable[[str], None]) -> dict[str, Variant]:
    """Every variant runs ``rs.turns`` turns on ``rs.threads`` threads, interleaved turn by turn.

    A warm-up thread of 2 turns per variant comes first (imports, pools, indexes), unmeasured.
    """
    variants = {n: make_variant(n, uri, s) for n in names}
    try:
        for v in variants.values():
            for turn in range(2):
                v.turn("warm-up", turn, measured=False)
        order = list(names)
        for turn in range(rs.turns):
            for thread in range(rs.threads):
                order = order[1:] + order[:1]  # rotate: no variant always runs first or last
                for name in order:
                    variants[name].turn(f"thread-{thread}", turn, measured=True)
            log(f"  rtt turn {turn + 1}/{rs.turns}: " + ", ".join(
                f"{n} {statistics.median(v.walls) * 1000:.0f} ms" for n, v in variants.items()))
    finally:
        for v in variants.values():
            v.close()
    return variants


def summarize(variants: dict[str, Variant]) -> dict[str, Any]:
    rows: dict[str, Any] = {}
    for name, v in variants.items():
        turns = len(v.walls)
        rows[name] = {
            "turns": turns,
            "commands_per_turn": sum(v.commands + v.first_turn_commands) / turns,
            "commands_later_turns": statistics.mean(v.commands) if v.commands else None,
            "commands_later_min_max": [min(v.commands), max(v.commands)] if v.commands else None,
            "commands_first_turn": statistics.mean(v.first_turn_commands),
            "wall_ms_median": statistics.median(v.walls) * 1000,
            "wall_ms_quartiles": [q * 1000 for q in statistics.quantiles(v.walls, n=4)] if turns > 1 else None,
            "cpu_ms_median": statistics.median(v.cpus) * 1000,
            "by_target": {k: c / turns for k, c in sorted(v.targets.items())},
        }
    for name, row in rows.items():
        ref = rows.get(REFERENCE[name])
        row["ratio"] = core.ratio(row["wall_ms_median"], ref["wall_ms_median"]) if ref else None
        row["cpu_ratio"] = core.ratio(row["cpu_ms_median"], ref["cpu_ms_median"]) if ref else None
    return rows


def combine(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One row per variant from the rows of repeated runs (``summarize``'s): each time and ratio the median of the
    runs', with its spread (lowest, highest); commands and their breakdown from the first run, which the others
    repeat (commands do not vary with the machine), their min-max over every run."""
    rows: dict[str, Any] = {}
    for name, first in runs[0].items():
        row = dict(first)
        for key in ("wall_ms_median", "cpu_ms_median", "ratio", "cpu_ratio"):
            values = [r[name][key] for r in runs if r[name][key] is not None]
            row[key] = statistics.median(values) if values else None
            row[f"{key}_spread"] = [min(values), max(values)] if values else None
        later = [r[name]["commands_later_min_max"] for r in runs if r[name]["commands_later_min_max"]]
        row["commands_later_min_max"] = [min(m[0] for m in later), max(m[1] for m in later)] if later else None
        rows[name] = row
    return rows


def spread_of(rtt: dict[str, Any], where: tuple[str, ...]) -> tuple[float | None, list[float] | None]:
    """A quoted figure of an rtt run (``QUOTED``) and its spread over the run's repeats."""
    if where == ("cpu",):
        cpu = rtt.get("cpu") or {}
        return cpu.get("ratio"), cpu.get("ratio_spread")
    row = ((rtt.get(where[0]) or {}).get(where[1])) or {}
    return row.get(where[2]), row.get(f"{where[2]}_spread")


def _width(spread: list[float]) -> float:
    """How far apart a figure's runs are: the highest over the lowest, less 1."""
    return spread[1] / spread[0] - 1 if spread[0] else float("inf")


def noisy_figures(rtt: dict[str, Any]) -> list[str]:
    """The quoted figures (``QUOTED``) whose runs are more than ``NOISY`` apart."""
    spreads = (spread_of(rtt, where)[1] for _, _, where in QUOTED)
    return [key for (key, _, _), spread in zip(QUOTED, spreads) if spread and _width(spread) > NOISY]


def verdict(rtt: dict[str, Any]) -> str:
    """The run's judgement of itself, in a few words (``docs/numbers.json`` keeps it beside the figures)."""
    noisy = noisy_figures(rtt)
    if noisy:
        return f"too noisy to compare: {', '.join(noisy)} spread more than {NOISY:.0%} over its runs"
    return f"quiet enough to compare: every figure within {NOISY:.0%} over its runs"


def noise(rtt: dict[str, Any], documented: dict[str, Any] | None = None) -> list[str]:
    """Whether this run can be compared with the docs' figures: each quoted figure's spread over the run's repeats,
    the run called too noisy when one spreads wider than ``NOISY``, else each figure set against the documented
    one and its spread (``docs/numbers.json``)."""
    lines = []
    for key, label, where in QUOTED:
        value, spread = spread_of(rtt, where)
        if value is None or not spread:
            continue
        doc = _documented(documented or {}, key)
        said = f"; the docs: {doc}" if doc else ""
        lines.append(f"- {label}: {value:.2f}x ({spread[0]:.2f}-{spread[1]:.2f}x over its runs, {_width(spread):.0%} apart){said}")
    noisy = noisy_figures(rtt)
    if noisy:
        head = (f"**Too noisy to compare**: {', '.join(noisy)} spread more than {NOISY:.0%} over this run's repeats "
                "(another process took CPU, or the machine throttled). Run again on a quiet machine, or the full "
                "`scripts/bench --only rtt`, before comparing with the docs' figures.")
    else:
        head = (f"Quiet enough to compare: every figure within {NOISY:.0%} over this run's repeats. A figure outside "
                "the docs' spread is a change, or another machine.")
    return [head, "", *lines, ""] if lines else []


def _documented(numbers: dict[str, Any], key: str) -> str:
    value: Any = numbers
    for part in key.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    spread: Any = numbers.get("spread", {})
    for part in key.split("."):
        spread = spread.get(part) if isinstance(spread, dict) else None
    if value is None:
        return ""
    return f"{value:.2f}x" + (f" ({spread[0]:.2f}-{spread[1]:.2f}x)" if spread else "")


# --------------------------------------------------------------------------------------------
# client CPU, async, without the proxy


async def _cpu_line(uri: str, rs: RttSettings, server: core.ServerCPU, log: Callable[[str], None]) -> dict[str, Any]:
    """Client CPU per turn: a durable ReAct turn (``platform.compile``) against the ``@task`` variant, async."""
    from langgraph.checkpoint.mongodb import MongoDBSaver

    from langgraph_durable_mongodb import DurablePlatform

    async_client: AsyncMongoClient = AsyncMongoClient(uri)
    sync_client: MongoClient = MongoClient(uri)
    throughput_settings = core.Settings(turns_per_thread=2)

    async def run(name: str, level: int, steps: int) -> dict[str, Any]:
        db_name = f"{core.DB_PREFIX}rtt_cpu_{name}_{uuid.uuid4().hex[:8]}"
        platform = None
        if name == "compile":
            platform = DurablePlatform(async_client=async_client, db_name=db_name)
            await platform.asetup()
            graph = platform.compile(secure_builder())
        else:
            graph = task_builder().compile(checkpointer=MongoDBSaver(sync_client, db_name=db_name))
        try:
            return await core._throughput(graph, level, steps, throughput_settings, react_inputs, server)
        finally:
            if platform is not None:
                await platform.aclose()
            sync_client.drop_database(db_name)

    runs: dict[str, list[dict[str, Any]]] = {"compile": [], "task": []}
    try:
        for name in runs:  # warm-up
            await run(name, 2, 4)
        for rep in range(rs.cpu_reps):
            for name in (("compile", "task") if rep % 2 == 0 else ("task", "compile")):
                runs[name].append(await run(name, rs.cpu_concurrency, rs.cpu_steps))
            log(f"  rtt cpu rep {rep + 1}: " + ", ".join(
                f"{n} {runs[n][-1]['client_cpu_ms_per_step']:.1f} ms CPU/turn" for n in runs))
    finally:
        sync_client.close()
        await async_client.close()
    sides = {n: {k: statistics.median(r[k] for r in rs_) for k in ("client_cpu_ms_per_step", "steps_per_second")}
             | {"errors": sum(r["errors"] for r in rs_), "first_error": next((r["first_error"] for r in rs_ if r["first_error"]), None)}
             for n, rs_ in runs.items()}
    per_rep = [core.ratio(c["client_cpu_ms_per_step"], t["client_cpu_ms_per_step"]) for c, t in zip(runs["compile"], runs["task"])]
    return {"concurrency": rs.cpu_concurrency, "steps": rs.cpu_steps, "reps": rs.cpu_reps, "sides": sides,
            "ratio": core.ratio(sides["compile"]["client_cpu_ms_per_step"], sides["task"]["client_cpu_ms_per_step"]),
            "ratio_spread": [min(per_rep), max(per_rep)] if all(r is not None for r in per_rep) else None}


# --------------------------------------------------------------------------------------------
# Python calls per turn, without the proxy

#: The variants whose calls are counted, each against its reference.
COUNTED = ("task", "compile", "chat_saver", "chat_ours")


def count_calls(uri: str, threads: int = 2, turns: int = 8) -> dict[str, Any]:
    """The Python calls per turn of each counted variant (turns 3 to ``turns`` of ``threads`` threads, sync, one turn
    after another), by package and in all, with each total's ratio to its reference's; counted in a fresh process."""
    return calls.counted_in_child("benchmarks.rtt", uri, threads, turns)


def _count_here(uri: str, threads: int, turns: int) -> dict[str, Any]:
    counted: dict[str, dict[str, float]] = {}
    for name in COUNTED:
        counter = calls.CallCounter()
        with calls.profiling(counter):
            variant = make_variant(name, uri, core.Settings())
            try:
                measured = calls.count_turns(variant.turn, counter, threads, turns)  # a turn waits for its release
            finally:
                variant.close()
        counted[name] = calls.per_turn(counter, measured)
    return {"threads": threads, "turns": turns, "variants": counted,
            "ratio": {name: core.ratio(counted[name]["all"], counted[REFERENCE[name]]["all"]) for name in COUNTED}}


# --------------------------------------------------------------------------------------------
# the section


def bench_rtt(uri: str, s: core.Settings, server: core.ServerCPU, log: Callable[[str], None],
              cpu_line: bool = True) -> dict[str, Any]:
    """The rtt section on the server at ``uri``: the variants through a 1 ms toxiproxy, then the CPU line direct."""
    from tests.servers import toxiproxy

    rs = RttSettings.quick() if s.quick_mode else RttSettings()
    runs = []
    with toxiproxy.latency_proxy(*host_port(uri), latency_ms=rs.latency_ms) as (host, port):
        for run in range(rs.runs):
            log(f"  rtt run {run + 1}/{rs.runs}")
            runs.append(summarize(run_turns(proxied_uri(uri, host, port), (*REACT, *CHAT), s, rs, log)))
    out: dict[str, Any] = {"settings": {"threads": rs.threads, "turns": rs.turns, "runs": rs.runs, "latency_ms": rs.latency_ms},
                           "variants": combine(runs), "runs": runs}
    if cpu_line:
        out["cpu"] = asyncio.run(_cpu_line(uri, rs, server, log))
        out["calls"] = count_calls(uri)
    return out


def _spread(row: dict[str, Any], key: str, fmt: str = "{:.2f}") -> str:
    spread = row.get(f"{key}_spread")
    return f" ({fmt.format(spread[0])}–{fmt.format(spread[1])})" if spread and spread[0] != spread[1] else ""


def render_rtt(rtt: dict[str, Any], documented: dict[str, Any] | None = None) -> list[str]:
    st = rtt["settings"]
    rows = rtt["variants"]
    runs = st.get("runs", 1)
    lines = ["## 7. Round trips at 1 ms (issue 20)", "",
             f"toxiproxy in front of the server delays every reply by {st['latency_ms']:g} ms. Sync, {st['threads']} "
             f"threads x {st['turns']} turns per variant, one turn after another, the variants interleaved turn by turn, "
             f"{runs} runs from fresh databases. "
             "A ReAct turn: the model asks for the tool, the tool runs, the model answers. wall = median per turn, "
             "the median of the runs' (lowest–highest run); ratio = wall / the reference's (ReAct: the `@task` "
             "variant; chat: `MongoDBSaver`), the median of the runs' (lowest–highest). commands: a thread's later "
             "turns (min–max over every run), and its first turn, which has no earlier writes to read; the breakdown "
             "below is the mean over all turns. client CPU = median process CPU time per turn (every thread, "
             "background sends included), and its ratio to the reference's.", "",
             "| per turn, 1 ms round trip | commands, later turns (min–max) | first turn | wall ms | ratio "
             "| client CPU ms | CPU ratio |",
             "|---|---|---|---|---|---|---|"]
    for name in (*REACT, *CHAT):
        r = rows[name]
        later = (f"{r['commands_later_turns']:.1f} ({r['commands_later_min_max'][0]}–{r['commands_later_min_max'][1]})"
                 if r["commands_later_turns"] is not None else "")
        lines.append(f"| {LABELS[name]} | {later} | {r['commands_first_turn']:.1f} | {r['wall_ms_median']:.1f}"
                     f"{_spread(r, 'wall_ms_median', '{:.1f}')} | **{core._f(r['ratio'])}**{_spread(r, 'ratio')} "
                     f"| {r['cpu_ms_median']:.2f} | **{core._f(r['cpu_ratio'])}**{_spread(r, 'cpu_ratio')} |")
    lines += ["", "Commands per turn by collection and command:", ""]
    names = [n for n in (*REACT, *CHAT) if n in rows]
    keys = sorted({k for n in names for k in rows[n]["by_target"]})
    lines += ["| collection command | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for k in keys:
        lines.append(f"| {k} | " + " | ".join(f"{rows[n]['by_target'].get(k, 0):.2f}".rstrip("0").rstrip(".")
                                              for n in names) + " |")
    lines.append("")
    cpu = rtt.get("cpu")
    if cpu:
        c, t = cpu["sides"]["compile"], cpu["sides"]["task"]
        lines += [f"Client CPU, without the proxy: async, {cpu['concurrency']} concurrent, {cpu['steps']} ReAct turns per run "
                  f"(threads of 2 turns), median of {cpu['reps']} interleaved runs; process CPU time per turn.", "",
                  "| variant | client CPU ms/turn | turns/s | failed turns |", "|---|---|---|---|",
                  f"| {LABELS['compile']} | {c['client_cpu_ms_per_step']:.2f} | {c['steps_per_second']:.1f} | {c['errors']} |",
                  f"| {LABELS['task']} | {t['client_cpu_ms_per_step']:.2f} | {t['steps_per_second']:.1f} | {t['errors']} |",
                  f"| **ratio** | **{core._f(cpu['ratio'])}**{_spread(cpu, 'ratio')} | | |", ""]
        errs = [f"{n}: {d['first_error']}" for n, d in cpu["sides"].items() if d.get("first_error")]
        if errs:
            lines += ["Failed turns: " + "; ".join(errs), ""]
    if rtt.get("calls"):
        lines += calls.render_calls(rtt["calls"], LABELS)
    return lines + noise(rtt, documented)


def docs_numbers(rtt: dict[str, Any], server: str, day: str) -> dict[str, Any]:
    """The figures the docs and the README quote (``docs/numbers.json``), from a full rtt run on ``server``: commands
    per later turn, the wall-time ratio to each variant's reference, and the durable turn's client CPU ratio (sync,
    through the proxy, and async at the CPU line's concurrency)."""
    rows = rtt["variants"]
    spreads = {name: row["ratio_spread"] for name, row in rows.items() if name != REFERENCE[name]}
    numbers: dict[str, Any] = {
        "measured": day,
        "server": f"{server} behind toxiproxy ({rtt['settings']['latency_ms']} ms)",
        "runs": rtt["settings"].get("runs", 1),
        "verdict": verdict(rtt),
        "commands": {name: round(row["commands_later_turns"]) for name, row in rows.items()},
        "ratio": {name: round(row["ratio"], 2) for name, row in rows.items() if name != REFERENCE[name]},
        "ms": {name: round(row["wall_ms_median"], 1) for name, row in rows.items()},
        "spread": {"ratio": {name: _rounded(s) for name, s in spreads.items()}},
    }
    if rows.get("compile", {}).get("cpu_ratio") is not None:
        numbers["cpu_ratio_sync"] = round(rows["compile"]["cpu_ratio"], 2)
        numbers["spread"]["cpu_ratio_sync"] = _rounded(rows["compile"]["cpu_ratio_spread"])
    if rtt.get("cpu"):
        numbers["cpu_ratio"] = round(rtt["cpu"]["ratio"], 2)
        numbers["spread"]["cpu_ratio"] = _rounded(rtt["cpu"]["ratio_spread"])
    return numbers


def _rounded(spread: list[float] | None) -> list[float] | None:
    return [round(spread[0], 2), round(spread[1], 2)] if spread else None


if __name__ == "__main__":  # calls.counted_in_child runs the count here, in a process of its own
    import json
    import sys

    print(json.dumps(_count_here(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
