#!/usr/bin/env python3
"""Benchmarks of issues 8, 14, 20 and 24: our MongoDBCheckpointer against langgraph-checkpoint-mongodb's MongoDBSaver.

Run it with ``scripts/bench`` (which prepares .venv and builds the servers); directly::

    .venv/bin/python scripts/bench.py [--quick] [--server both|ferretdb|mongo_java_server] [--json out.json]
                                      [--markdown out.md] [--only chat,async,steps,journal,resolver,wide,rtt,ui,codec]

Both savers run on the same server, in the same process, interleaved call by call
(ours, reference, reference, ours, ...) so drift hits both alike. The server is
``MONGODB_URI`` when set; else the script starts a throwaway mongo-java-server and a throwaway
FerretDB with tests/servers' launchers (as the test tier does) and runs every section on each,
one server after the other.

Sections:

``chat``     a chat thread grows one turn per ``graph.invoke`` (user message in, one reply
             node appends an assistant message), with ``add_messages`` and with LangGraph's
             ``DeltaChannel``; at 50, 100 and 200 turns (add_messages: 25 and 50 by default,
             its storage is quadratic in turns): bytes stored per thread, bytes written and
             MongoDB commands per turn, median ``put`` / ``put_writes`` / ``get_tuple`` / load
             (``get_tuple`` + ``get_delta_channel_history``) / ``list(limit=100)``, with the
             client CPU of each call.
``async``    1, 8 and 32 coroutines running ``ainvoke`` turns at once: steps per second,
             client CPU per step (and the server's, when we started it).
``steps``    sync ``invoke`` turns one after another: client CPU per step of the sync face; with
             the chat section, the modelled MongoDB time per operation (commands x RTT + client CPU).
``journal``  the activity journal's cost per effect.
``resolver`` the resolver's cost per effect.
``wide``     one node calling 1,000 and 10,000 journaled effects (``--wide-sizes``) under ``platform.compile``,
             then crashing once; the next ``invoke`` replays them: seconds and µs per effect, first run and
             replay. Linear replay keeps µs per effect flat as the node grows (issue 25 item 6).
``ui``       issue 23: the web inspector's thread list over a database of 10,000 threads (``--ui-threads``), each
             a copy of the demo's crashed and resumed ``case-42``: the first page, a later page, a prefix
             search, as JSON and as the HTML page, through the app (Starlette's TestClient, in process);
             target 300 ms on mongo-java-server.
``rtt``      issue 20: a ReAct turn through toxiproxy at 1 ms per round trip, ours against LangGraph's
             ``@task`` and ``MongoDBSaver``, and a plain chat turn; client CPU of a durable turn, async
             (scripts/bench_rtt.py).
``codec``    issue 24: the stored-value codec, our saver with ``k`` references (as shipped) against the same saver
             laid out like langgraph-checkpoint-postgres (every value in blobs keyed by channel and version), on an
             ``add_messages`` chat with a 50 KB value in state: commands per turn, wall direct and at 1 ms
             (toxiproxy), ``get_tuple``, ``list``, bytes stored, ``prune`` (scripts/bench_codec.py).

Ratios are ours / reference, measured in the same run: below 1.0 means ours is faster
or smaller. Absolute times depend on the server and the machine; on FerretDB's SQLite
backend every query but ``{_id: x}`` scans its whole collection (see BENCHMARKS.md), so
there a command costs in proportion to the collection it touches. ``--quick`` takes about
2-3 minutes for both servers on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import platform
import random
import statistics
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Annotated, Any, TypedDict

import bson
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from pymongo import AsyncMongoClient, MongoClient, monitoring

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # the repository root, for tests.servers

from roundtrips import CommandCounter  # noqa: E402  (scripts/roundtrips.py)

WRITE_COMMANDS = {"insert", "update", "delete", "findAndModify"}
DB_PREFIX = "bench_"


# --------------------------------------------------------------------------------------------
# settings


@dataclass
class Settings:
    add_sizes: tuple[int, ...] = (25, 50)  # add_messages: storage is quadratic in turns (see BENCHMARKS.md)
    delta_sizes: tuple[int, ...] = (50, 100, 200)
    wide_sizes: tuple[int, ...] = (1000, 10000)  # effects in one node (section ``wide``)
    reps: int = 15  # timed repetitions per saver of each operation, at most ...
    op_budget: float = 5.0  # ... and at most this many seconds per operation and point (at least 1 repetition)
    call_cap: float = 15.0  # a reference load / list taking longer is stopped there: its time is then a lower bound
    window: int = 10  # turns averaged for "per turn" figures, the last ones before each size
    snapshot_frequency: int = 1000
    list_limit: int = 100
    ui_threads: int = 10_000  # threads in the inspector's database (section ``ui``)
    ui_reps: int = 7
    async_levels: tuple[int, ...] = (1, 8, 32)
    async_steps: int = 96  # ainvoke steps per run, the same work at every concurrency
    async_reps: int = 3
    turns_per_thread: int = 2  # async: turns of each conversation thread
    user_chars: int = 120
    reply_chars: int = 480
    context_chars: int = 1000
    quick_mode: bool = False

    @classmethod
    def quick(cls) -> "Settings":
        return cls(add_sizes=(10, 20), delta_sizes=(10, 25), reps=5, op_budget=2.0, call_cap=4.0, window=5, async_steps=64, async_reps=3,
                   quick_mode=True)


# --------------------------------------------------------------------------------------------
# command monitoring


class ByteCounter(CommandCounter):
    """roundtrips.CommandCounter plus the BSON size of every write command (when ``sizing``)."""

    def __init__(self) -> None:
        super().__init__()
        self.sizing = False
        self.write_bytes = 0

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        super().started(event)
        if self.sizing and event.command_name in WRITE_COMMANDS:
            self.write_bytes += len(bson.encode(event.command))

    @contextmanager
    def window(self) -> Iterator[dict[str, Any]]:
        """Commands and write bytes sent inside the block."""
        out: dict[str, Any] = {}
        start, start_bytes = len(self.names), self.write_bytes
        yield out
        out["names"] = self.names[start:]
        out["commands"] = len(out["names"])
        out["write_bytes"] = self.write_bytes - start_bytes


class CollectionCounter(ByteCounter):
    """Also records the collection each command targets."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[tuple[str, str]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        super().started(event)
        if event.command_name not in self.IGNORED:
            self.targets.append((event.command_name, str(event.command.get(event.command_name, ""))))

    @contextmanager
    def window(self) -> Iterator[dict[str, Any]]:
        start = len(self.targets)
        with super().window() as out:
            yield out
        out["targets"] = self.targets[start:]


# --------------------------------------------------------------------------------------------
# machine and server facts


def machine_facts(uri: str, started_server: bool) -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    with MongoClient(uri) as client:
        info = client.admin.command("buildInfo")
    server = f"MongoDB {info.get('version')}"
    if "ferretdbVersion" in info:
        server = f"FerretDB {info['ferretdbVersion']} (SQLite backend; reports MongoDB {info.get('version')})"
    versions = {}
    for dist in ("langgraph", "langgraph-checkpoint", "langgraph-checkpoint-mongodb", "pymongo", "langchain-core"):
        try:
            versions[dist] = importlib_metadata.version(dist)
        except importlib_metadata.PackageNotFoundError:
            versions[dist] = None
    return {
        "nproc": os.cpu_count(),
        "cpu_model": model or platform.processor(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "server": server,
        "server_started_by_bench": started_server,
        "packages": versions,
    }


class ServerCPU:
    """CPU seconds of the server process, when we started it (Linux /proc)."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def seconds(self) -> float | None:
        if self.pid is None:
            return None
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / self.tick  # utime + stime


# --------------------------------------------------------------------------------------------
# the chat graph


def _text(rng: random.Random, chars: int) -> str:
    words = ("agent", "mongo", "graph", "state", "reply", "token", "thread", "tool", "query", "plan", "step", "model")
    out: list[str] = []
    size = 0
    while size < chars:
        w = rng.choice(words)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:chars]


def chat_builder(kind: str, s: Settings):
    """StateGraph(messages, context) with one node appending an assistant reply."""
    from langchain_core.messages import AIMessage
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages

    if kind == "add_messages":
        messages_type = Annotated[list, add_messages]
    else:
        from langgraph.channels.delta import DeltaChannel
        from langgraph.graph.message import _messages_delta_reducer

        messages_type = Annotated[list, DeltaChannel(_messages_delta_reducer, snapshot_frequency=s.snapshot_frequency)]
    ChatState = TypedDict("ChatState", {"messages": messages_type, "context": dict})  # noqa: UP013
    rng = random.Random(7)
    replies = [_text(rng, s.reply_chars) for _ in range(64)]

    def reply(state: dict) -> dict:
        turn = len(state["messages"]) // 2
        return {"messages": [AIMessage(content=replies[turn % 64], id=f"a{turn}")]}

    g = StateGraph(ChatState)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    return g


class TurnInputs:
    def __init__(self, s: Settings) -> None:
        rng = random.Random(11)
        self.users = [_text(rng, s.user_chars) for _ in range(64)]
        self.context = {"system_prompt": _text(rng, s.context_chars), "user": {"name": "bench", "locale": "en"}}

    def __call__(self, turn: int) -> dict[str, Any]:
        from langchain_core.messages import HumanMessage

        update: dict[str, Any] = {"messages": [HumanMessage(content=self.users[turn % 64], id=f"u{turn}")]}
        if turn == 0:
            update["context"] = self.context
        return update


# --------------------------------------------------------------------------------------------
# savers


@dataclass
class Side:
    """One saver under test, with its own client, counter and database."""

    name: str  # "ours" | "reference"
    saver: Any
    client: MongoClient
    counter: ByteCounter
    db_name: str
    collections: tuple[str, ...]
    graph_saver: Any = None  # what the graph runs on: the saver, or a TeeSaver around it
    last_put: Any = None
    last_put_writes: Any = None
    turns: list[dict[str, Any]] = field(default_factory=list)

    def capture_puts(self) -> None:
        original, original_writes = self.saver.put, self.saver.put_writes

        def put(config, checkpoint, metadata, new_versions):  # noqa: ANN001
            self.last_put = (config, checkpoint, metadata, new_versions)
            return original(config, checkpoint, metadata, new_versions)

        def put_writes(config, writes, task_id, task_path=""):  # noqa: ANN001
            self.last_put_writes = (config, writes, task_id, task_path)
            return original_writes(config, writes, task_id, task_path)

        self.saver.put, self.saver.put_writes = put, put_writes
        self._original_put, self._original_put_writes = original, original_writes

    def raw_put(self, *args: Any) -> Any:
        return self._original_put(*args)

    def raw_put_writes(self, *args: Any) -> Any:
        return self._original_put_writes(*args)


def make_ours(uri: str, tag: str) -> Side:
    from langgraph_durable_mongodb import MongoDBCheckpointer

    counter = ByteCounter()
    client: MongoClient = MongoClient(uri, event_listeners=[counter])
    db_name = f"{DB_PREFIX}ours_{tag}_{uuid.uuid4().hex[:8]}"
    saver = MongoDBCheckpointer(client, db_name=db_name)
    saver.setup()
    cols = (saver.collections.checkpoints, saver.collections.blobs, saver.collections.writes)
    return Side("ours", saver, client, counter, db_name, cols)


def make_reference(uri: str, tag: str) -> Side:
    from langgraph.checkpoint.mongodb import MongoDBSaver

    counter = ByteCounter()
    client: MongoClient = MongoClient(uri, event_listeners=[counter])
    db_name = f"{DB_PREFIX}ref_{tag}_{uuid.uuid4().hex[:8]}"
    saver = MongoDBSaver(client, db_name=db_name)
    cols = (saver.checkpoint_collection.name, saver.writes_collection.name)
    return Side("reference", saver, client, counter, db_name, cols)


def tee_saver(target: Any) -> Any:
    """A saver that writes to ``target`` and to an in-memory mirror, and reads from the mirror.

    The graph then sends ``target`` exactly the puts and writes it would send anyway (same
    checkpoints, same versions: ``get_next_version`` is the target's), but no reads. Used
    to grow the reference's DeltaChannel thread: its real reads walk one ``get_tuple`` per
    ancestor on every turn, which makes growing a 200-turn thread cubic in time on a server
    that scans whole collections. Its reads are measured directly at each size instead.
    """
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.checkpoint.memory import InMemorySaver

    class TeeSaver(BaseCheckpointSaver):
        def __init__(self) -> None:
            super().__init__(serde=target.serde)
            self.mirror = InMemorySaver()

        def get_tuple(self, config):  # noqa: ANN001, ANN202
            return self.mirror.get_tuple(config)

        def list(self, config, **kwargs):  # noqa: ANN001, ANN003, ANN202
            return self.mirror.list(config, **kwargs)

        def get_delta_channel_history(self, *, config, channels):  # noqa: ANN001, ANN202
            return self.mirror.get_delta_channel_history(config=config, channels=channels)

        def put(self, config, checkpoint, metadata, new_versions):  # noqa: ANN001, ANN202
            target.put(config, checkpoint, metadata, new_versions)
            return self.mirror.put(config, checkpoint, metadata, new_versions)

        def put_writes(self, config, writes, task_id, task_path=""):  # noqa: ANN001, ANN202
            target.put_writes(config, writes, task_id, task_path)
            self.mirror.put_writes(config, writes, task_id, task_path)

        def get_next_version(self, current, channel=None):  # noqa: ANN001, ANN202
            return target.get_next_version(current, channel)

    return TeeSaver()


def thread_bytes(stats_client: MongoClient, side: Side, thread_id: str) -> dict[str, int]:
    """Sum of BSON document sizes of one thread, per collection of the saver."""
    db = stats_client.get_database(side.db_name, codec_options=CodecOptions(document_class=RawBSONDocument))
    return {c: sum(len(d.raw) for d in db[c].find({"thread_id": thread_id})) for c in side.collections}


# --------------------------------------------------------------------------------------------
# timing helpers


def interleaved(reps: int, budget: float, sides: list[Side], call: Callable[[Side], Any]) -> dict[str, dict[str, Any]]:
    """Time ``call(side)`` per side, alternating the order each repetition (AB BA AB ...).

    At most ``reps`` repetitions, and no more than fit in ``budget`` seconds judging by the
    first one (always at least one). Returns per side the times, the commands the first call
    sent (they do not vary) and its value.
    """
    out: dict[str, dict[str, Any]] = {s.name: {"times": []} for s in sides}
    allowed = reps
    for i in range(reps):
        order = sides if i % 2 == 0 else list(reversed(sides))
        for side in order:
            with side.counter.window() as w:
                c0, t0 = time.process_time(), time.perf_counter()
                value = call(side)
                elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
            out[side.name]["times"].append(elapsed)
            out[side.name].setdefault("cpu", []).append(cpu)
            if i == 0:
                out[side.name].update(commands=w["commands"], value=value)
        if i == 0:
            first = sum(v["times"][0] for v in out.values())
            allowed = max(1, min(reps, int(budget / first))) if first > 0 else reps
        if i + 1 >= allowed:
            break
    return out


def med_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def ratio(ours: float | None, ref: float | None) -> float | None:
    if ours is None or ref is None or ref == 0:
        return None
    return ours / ref


# --------------------------------------------------------------------------------------------
# section 1: a growing chat thread


def _replay_put_args(side: Side, thread_id: str) -> tuple:
    """The thread's last real ``put``, re-aimed at a side thread with a fresh id and fresh versions."""
    from langgraph.checkpoint.base.id import uuid6

    config, checkpoint, metadata, new_versions = side.last_put
    versions = dict(checkpoint["channel_versions"])
    bumped = {channel: side.saver.get_next_version(versions.get(channel), None) for channel in new_versions}
    versions.update(bumped)
    cp = {**checkpoint, "id": str(uuid6(clock_seq=random.getrandbits(14))), "channel_versions": versions}
    conf = {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": "",
            "checkpoint_id": config["configurable"].get("checkpoint_id"),
        }
    }
    return conf, cp, metadata, bumped


def _messages_loaded(kind: str, tup: Any, history: Any) -> int:
    """How many messages the saver's own load reconstructs (a correctness check of both savers)."""
    from langgraph.checkpoint.serde.types import _DeltaSnapshot

    if tup is None:
        return 0
    if kind != "delta":
        return len(tup.checkpoint["channel_values"].get("messages", []))
    entry = history["messages"]
    seed = entry.get("seed", [])
    seed = seed.value if isinstance(seed, _DeltaSnapshot) else seed
    return len(seed or []) + sum(len(v) if isinstance(v, list) else 1 for _, _, v in entry["writes"])


def measure_point(kind: str, turns: int, sides: list[Side], thread: str, stats_client: MongoClient,
                  s: Settings) -> dict[str, Any]:
    base = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    point: dict[str, Any] = {"kind": kind, "turns": turns, "sides": {}}

    def load(side: Side) -> dict[str, Any]:
        """get_tuple (+ get_delta_channel_history); stopped at ``call_cap`` seconds (a walk of get_tuples)."""
        deadline = time.perf_counter() + s.call_cap
        original = side.saver.get_tuple
        walked = [0]

        def capped(config: Any) -> Any:
            if time.perf_counter() > deadline:
                raise _OverCap
            walked[0] += 1
            return original(config)

        side.saver.get_tuple = capped
        try:
            tup = side.saver.get_tuple(base)
            history = None
            if kind == "delta":
                history = side.saver.get_delta_channel_history(config=tup.config, channels=["messages"])
            return {"tup": tup, "history": history, "stopped": None}
        except _OverCap:
            return {"stopped": walked[0]}
        finally:
            del side.saver.get_tuple  # back to the class's method

    def take_list(side: Side) -> dict[str, Any]:
        deadline = time.perf_counter() + s.call_cap
        n = 0
        for _ in side.saver.list(base, limit=s.list_limit):
            n += 1
            if time.perf_counter() > deadline and n < s.list_limit:
                return {"count": n, "stopped": n}
        return {"count": n, "stopped": None}

    for side in sides:
        side.counter.sizing = False
        window = side.turns[-s.window:]
        stored = thread_bytes(stats_client, side, thread)
        point["sides"][side.name] = {
            "stored_bytes": sum(stored.values()),
            "stored_by_collection": stored,
            "checkpoints": stats_client[side.db_name][side.collections[0]].count_documents({"thread_id": thread}),
            "write_bytes_per_turn": statistics.mean(t["write_bytes"] for t in window),
            "turn_commands": statistics.mean(t["commands"] for t in window),
            "turn_ms": statistics.median(t["seconds"] for t in window) * 1000,
            "grown_with_reads": side.graph_saver is side.saver,
        }

    # latencies, interleaved; the first call of each also gives its command count
    prepared = {side.name: iter([_replay_put_args(side, f"{thread}-put") for _ in range(s.reps)]) for side in sides}
    tasks = iter(range(10**9))

    def put_writes(side: Side) -> None:
        """The thread's last real ``put_writes`` (the reply node's message), under a fresh task id."""
        config, writes, _, task_path = side.last_put_writes
        conf = {"configurable": {**config["configurable"], "thread_id": f"{thread}-put"}}
        side.raw_put_writes(conf, writes, f"bench-task-{next(tasks)}", task_path)

    timings = {
        "get_tuple": interleaved(s.reps, s.op_budget, sides, lambda side: side.saver.get_tuple(base)),
        "load": interleaved(s.reps, s.op_budget, sides, load),
        "list": interleaved(s.reps, s.op_budget, sides, take_list),
        "put": interleaved(s.reps, s.op_budget, sides, lambda side: side.raw_put(*next(prepared[side.name]))),
        "put_writes": interleaved(s.reps, s.op_budget, sides, put_writes),
    }
    for side in sides:
        side.saver.delete_thread(f"{thread}-put")
        out = point["sides"][side.name]
        for op, per_side in timings.items():
            mine = per_side[side.name]
            out[f"{op}_ms"] = med_ms(mine["times"])
            out[f"{op}_cpu_ms"] = med_ms(mine["cpu"])
            out[f"{op}_reps"] = len(mine["times"])
            out[f"{op}_commands"] = mine["commands"]
        first_load = timings["load"][side.name]["value"]
        first_list = timings["list"][side.name]["value"]
        out["first_load_ms"] = timings["load"][side.name]["times"][0] * 1000
        out["load_stopped_after_get_tuples"] = first_load["stopped"]
        out["messages"] = None if first_load["stopped"] else _messages_loaded(kind, first_load["tup"], first_load["history"])
        out["list_checkpoints"] = first_list["count"]
        out["list_stopped_after"] = first_list["stopped"]
        # A turn is: load the latest state, then write. Grown through the mirror, the side sent
        # only the writes; its reads are the load measured here.
        out["commands_per_turn"] = out["turn_commands"] + (0 if out["grown_with_reads"] else out["load_commands"])
        side.counter.sizing = True
    o, r = point["sides"]["ours"], point["sides"]["reference"]
    point["ratios"] = {
        k: ratio(o[k], r[k])
        for k in ("stored_bytes", "write_bytes_per_turn", "commands_per_turn", "put_ms", "get_tuple_ms", "load_ms", "list_ms",
                  "put_writes_ms", "put_cpu_ms", "get_tuple_cpu_ms", "put_writes_cpu_ms", "load_cpu_ms", "list_cpu_ms")
    }
    return point


def bench_chat(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    inputs = TurnInputs(s)
    results: list[dict[str, Any]] = []
    stats_client: MongoClient = MongoClient(uri)
    try:
        for kind, sizes in (("add_messages", s.add_sizes), ("delta", s.delta_sizes)):
            if not sizes:
                continue
            sides = [make_ours(uri, kind[:5]), make_reference(uri, kind[:5])]
            try:
                graphs = {}
                for side in sides:
                    side.capture_puts()
                    side.counter.sizing = True
                    # DeltaChannel threads grow through a mirror serving the reads (both savers alike):
                    # the reference's reads walk every ancestor on every turn, cubic time in all.
                    # Each saver's real reads are measured at each size instead.
                    side.graph_saver = tee_saver(side.saver) if kind == "delta" else side.saver
                    graphs[side.name] = chat_builder(kind, s).compile(checkpointer=side.graph_saver)
                thread = f"chat-{kind}"
                config = {"configurable": {"thread_id": thread}}
                started = time.perf_counter()
                for turn in range(max(sizes)):
                    order = sides if turn % 2 == 0 else list(reversed(sides))
                    for side in order:
                        with side.counter.window() as w:
                            t0 = time.perf_counter()
                            graphs[side.name].invoke(inputs(turn), config)
                            w["seconds"] = time.perf_counter() - t0
                        side.turns.append({"seconds": w["seconds"], "commands": w["commands"], "write_bytes": w["write_bytes"]})
                    if turn + 1 in sizes:
                        log(f"  chat {kind:12s} {turn + 1:4d} turns grown ({time.perf_counter() - started:.0f}s)")
                        results.append(measure_point(kind, turn + 1, sides, thread, stats_client, s))
                        log(f"  chat {kind:12s} {turn + 1:4d} turns measured ({time.perf_counter() - started:.0f}s)")
            finally:
                for side in sides:
                    side.client.drop_database(side.db_name)
                    side.client.close()
    finally:
        stats_client.close()
    return {"settings": {"add_sizes": s.add_sizes, "delta_sizes": s.delta_sizes, "reps": s.reps,
                         "op_budget": s.op_budget, "call_cap": s.call_cap, "window": s.window,
                         "snapshot_frequency": s.snapshot_frequency, "list_limit": s.list_limit,
                         "user_chars": s.user_chars, "reply_chars": s.reply_chars, "context_chars": s.context_chars},
            "points": results}


# --------------------------------------------------------------------------------------------
# section 2: async concurrency


async def _throughput(graph: Any, level: int, steps: int, s: Settings, inputs: TurnInputs,
                      server: ServerCPU) -> dict[str, Any]:
    """``steps`` ainvoke turns, ``level`` at a time: threads of ``turns_per_thread`` turns from a queue."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for _ in range(max(1, steps // s.turns_per_thread)):
        queue.put_nowait(uuid.uuid4().hex)

    errors: list[str] = []

    async def worker() -> int:
        done = 0
        while not queue.empty():
            config = {"configurable": {"thread_id": queue.get_nowait()}}
            for turn in range(s.turns_per_thread):
                try:
                    await graph.ainvoke(inputs(turn), config)
                except Exception as exc:  # noqa: BLE001 - a failed step is counted and reported, not fatal
                    errors.append(f"{type(exc).__name__}: {str(exc)[:160]}")
                    break  # this thread's state is now uncertain: go on with the next one
                done += 1
        return done

    cpu0, srv0, t0 = time.process_time(), server.seconds(), time.perf_counter()
    done = sum(await asyncio.gather(*(worker() for _ in range(level))))
    elapsed = time.perf_counter() - t0
    cpu, srv1 = time.process_time() - cpu0, server.seconds()
    srv = (srv1 - srv0) if srv0 is not None and srv1 is not None else None
    return {
        "steps": done,
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "seconds": elapsed,
        "steps_per_second": done / elapsed,
        "client_cpu_ms_per_step": cpu / done * 1000,
        "server_cpu_ms_per_step": srv / done * 1000 if srv is not None else None,
        "cpu_busy": (cpu + (srv or 0)) / (elapsed * (os.cpu_count() or 1)),
    }


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


# --------------------------------------------------------------------------------------------
# sections 3 and 4: the journal and the resolver


def bench_journal(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """A graph with 10 secure effects that cost nothing: extra commands and time per effect, first run and replay."""
    from langgraph_durable_mongodb import journal

    return run_journal_bench(journal, uri, s, log)


def bench_rtt(uri: str, s: Settings, server: ServerCPU, log: Callable[[str], None], cpu_line: bool) -> dict[str, Any]:
    """Issue 20's ReAct turn at a 1 ms round trip (toxiproxy), ours against ``@task``: scripts/bench_rtt.py."""
    import bench_rtt

    return bench_rtt.bench_rtt(uri, s, server, log, cpu_line=cpu_line)


def bench_codec(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """Issue 24's stored-value codec, ``k`` references against the postgres layout: scripts/bench_codec.py."""
    import bench_codec

    return bench_codec.bench_codec(uri, s, log)


def bench_resolver(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """Resolver cost per effect (microbenchmark)."""
    from langgraph_durable_mongodb import resolver

    return run_resolver_bench(resolver, uri, s, log)


EFFECTS = 10


class _OverCap(Exception):
    """A reference call ran past ``Settings.call_cap``: its time and commands are lower bounds."""


class _Crash(Exception):
    """Raised by the benchmark node after its effects, so the next invoke re-runs (replays) it."""


def _by_collection(names: list[tuple[str, str]], collection: str) -> int:
    return sum(1 for _, c in names if c == collection)


def run_journal_bench(module: Any, uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    """A node calling 10 journaled no-op effects, then crashing once; the next invoke replays them.

    Compared with the same node calling the 10 functions unjournaled (same durable scope),
    interleaved. Commands are split by collection: the journal's, the resolver's ordinals
    (one position per node attempt), the checkpointer's.
    """
    from langgraph.graph import START, StateGraph

    from langgraph_durable_mongodb import MongoDBCheckpointer
    from langgraph_durable_mongodb.resolver import DurableSubgraphResolver, OrdinalAllocator, durable_scope

    counter = CollectionCounter()
    client: MongoClient = MongoClient(uri, event_listeners=[counter])
    db_name = f"{DB_PREFIX}journal_{uuid.uuid4().hex[:8]}"
    try:
        saver = MongoDBCheckpointer(client, db_name=db_name)
        saver.setup()
        journal = module.ActivityJournal.for_checkpointer(saver)
        journal.setup()
        allocator = OrdinalAllocator(client[db_name])
        allocator.setup()
        journal_coll, ordinals_coll = saver.collections.journal, allocator._collection  # noqa: SLF001

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
            return g.compile(checkpointer=saver)

        graphs = {"journal": make(journaled), "plain": make(plain)}
        resolvers = {k: DurableSubgraphResolver.from_graph(g) for k, g in graphs.items()}
        locator = module.ResolverLocator(allocator)
        rows: dict[str, dict[str, list[dict[str, Any]]]] = {v: {"first": [], "replay": []} for v in graphs}
        reps = s.reps if not s.quick_mode else 3

        def phase(variant: str, thread: str, first: bool) -> dict[str, Any]:
            state["crash"] = first
            config = {"configurable": {"thread_id": thread}}
            with counter.window() as w:
                t0 = time.perf_counter()
                with durable_scope(resolvers[variant]), module.effect_scope(journal, locator):
                    try:
                        graphs[variant].invoke({"n": 0} if first else None, config)
                    except _Crash:
                        pass
                w["seconds"] = time.perf_counter() - t0
            return {
                "invoke_ms": w["seconds"] * 1000,
                "loop_ms": state["loop"] * 1000,
                "journal_commands": _by_collection(w["targets"], journal_coll),
                "ordinal_commands": _by_collection(w["targets"], ordinals_coll),
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
                "ordinal_commands_per_node": med(j, "ordinal_commands"),
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


# --------------------------------------------------------------------------------------------
# report


def _f(v: Any, fmt: str = "{:.2f}") -> str:
    if v is None:
        return "n/a"
    return fmt.format(v)


def _ge(d: dict[str, Any], op: str) -> str:
    """"≥ " when the reference's call was stopped at the cap (its figures are lower bounds)."""
    key = "load_stopped_after_get_tuples" if op == "load" else "list_stopped_after"
    return "≥ " if d.get(key) else ""


def _le(p: dict[str, Any], op: str) -> str:
    return "≤ " if any(_ge(d, op) for d in p["sides"].values()) else ""


def _kb(v: float) -> str:
    return f"{v / 1024:,.1f}"


#: Round-trip times for the modelled MongoDB time: the same host, and a same-region Atlas cluster.
RTTS_MS = (0.2, 1.0)


def render(results: dict[str, Any]) -> str:
    lines: list[str] = [f"# scripts/bench results ({'quick' if results['quick'] else 'full'} run)", "",
                        f"- command: `{results['command']}`", f"- total time: {results['seconds']:.0f}s", ""]
    for name, res in results["servers"].items():
        m = res["machine"]
        lines += [f"# Server: {name}", "",
                  f"- machine: {m['nproc']} cores, {m['cpu_model']}, Python {m['python']}, {m['platform']}",
                  f"- server: {m['server']}",
                  "- packages: " + ", ".join(f"{k} {v}" for k, v in m["packages"].items()),
                  f"- time on this server: {res['seconds']:.0f}s", ""]
        lines.append(render_server(res))
        if res.get("failed"):
            lines += ["## Failed sections", ""] + [f"- {k}: {v}" for k, v in res["failed"].items()] + [""]
    return "\n".join(lines)


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


def render_server(results: dict[str, Any]) -> str:
    lines: list[str] = []
    chat = results.get("chat")
    if chat:
        cs = chat["settings"]
        lines += ["## 1. Growing chat thread", "",
                  f"One turn = one `graph.invoke`: a user message in, node `reply` appends an assistant message "
                  f"(3 checkpoints: input, `__start__`, `reply`; 2 messages of {cs['user_chars']} / {cs['reply_chars']} chars; a "
                  f"{cs['context_chars']}-char `context` channel written on the first turn only). DeltaChannel: "
                  f"`_messages_delta_reducer`, snapshot_frequency={cs['snapshot_frequency']}. Per-turn figures: mean "
                  f"over the last {cs['window']} turns. Latencies: medians of up to {cs['reps']} interleaved calls "
                  f"(fewer when one takes long: the `n=` column). load = `get_tuple` + `get_delta_channel_history` "
                  f"(`get_tuple` alone for add_messages). ratio = ours / reference.", ""]
        header = ("| channel | turns | saver | stored KiB | written KiB/turn | cmds/turn | put ms (cmds) | get_tuple ms (cmds) "
                  "| load ms (cmds) | list 100 ms (cmds) | n= put/get/load/list |")
        lines += [header, "|" + "---|" * 11]
        for p in chat["points"]:
            for name in ("ours", "reference"):
                d = p["sides"][name]
                star = "" if d["grown_with_reads"] else "\\*"
                lines.append(
                    f"| {p['kind']} | {p['turns']} | {name} | {_kb(d['stored_bytes'])} | {_kb(d['write_bytes_per_turn'])} "
                    f"| {_ge(d, 'load')}{d['commands_per_turn']:.1f}{star} | {d['put_ms']:.1f} ({d['put_commands']}) "
                    f"| {d['get_tuple_ms']:.1f} ({d['get_tuple_commands']}) | {_ge(d, 'load')}{d['load_ms']:.1f} "
                    f"({_ge(d, 'load')}{d['load_commands']}) | {_ge(d, 'list')}{d['list_ms']:.1f} ({_ge(d, 'list')}{d['list_commands']}) "
                    f"| {d['put_reps']}/{d['get_tuple_reps']}/{d['load_reps']}/{d['list_reps']} |")
            r = p["ratios"]
            lines.append(
                f"| {p['kind']} | {p['turns']} | **ratio** | **{_f(r['stored_bytes'])}** | **{_f(r['write_bytes_per_turn'])}** "
                f"| {_le(p, 'load')}{_f(r['commands_per_turn'])} | **{_f(r['put_ms'])}** | **{_f(r['get_tuple_ms'])}** "
                f"| **{_le(p, 'load')}{_f(r['load_ms'])}** | **{_le(p, 'list')}{_f(r['list_ms'])}** | |")
        lines.append("")
        if any(not p["sides"][n]["grown_with_reads"] for p in chat["points"] for n in p["sides"]):
            lines += ["\\* DeltaChannel threads were grown through an in-memory mirror that served the graph's reads "
                      "(both savers alike; the reference's reads walk every ancestor on every turn, which makes growing "
                      "a 200-turn thread cubic in time here), so each saver received exactly its real puts and writes "
                      "and no reads; cmds/turn = the writes it received per turn + one load (`get_tuple` + "
                      "`get_delta_channel_history`, what `invoke` reads), measured at that size.", ""]
        stopped = [f"{p['kind']} {p['turns']} turns: {n} load stopped after {d['load_stopped_after_get_tuples']} get_tuple "
                   f"calls of a {d['checkpoints']}-checkpoint thread"
                   for p in chat["points"] for n, d in p["sides"].items() if d.get("load_stopped_after_get_tuples")]
        stopped += [f"{p['kind']} {p['turns']} turns: {n} list stopped after {d['list_stopped_after']} checkpoints"
                    for p in chat["points"] for n, d in p["sides"].items() if d.get("list_stopped_after")]
        if stopped:
            lines += [f"≥ / ≤: the call was stopped after {cs['call_cap']:.0f} s, so its time and commands are lower "
                      "bounds and the ratio an upper bound (" + "; ".join(stopped) + ").", ""]
        checks = [f"{p['kind']}@{p['turns']}: " + "/".join(str(p["sides"][n]["messages"] if p["sides"][n]["messages"] is not None
                                                              else "stopped") for n in ("ours", "reference"))
                  for p in chat["points"]]
        lines += ["Messages each saver's own load reconstructs (ours/reference; expect 2 x turns): " + ", ".join(checks), ""]
        lines += ["Storage per turn (flat = linear in turns):", ""]
        for kind in ("add_messages", "delta"):
            pts = [p for p in chat["points"] if p["kind"] == kind]
            if not pts:
                continue
            lines += [f"| {kind} | " + " | ".join(f"{p['turns']} turns" for p in pts) + " |", "|---|" + "---|" * len(pts)]
            for name in ("ours", "reference"):
                lines.append(f"| {name} | " + " | ".join(
                    f"{p['sides'][name]['stored_bytes'] / p['turns'] / 1024:,.1f} KiB" for p in pts) + " |")
            lines.append("")
    asy = results.get("async")
    if asy:
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
    st = results.get("steps")
    if st:
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
    lines += render_modelled(results)
    jr = results.get("journal")
    if jr is not None:
        lines += ["## 4. Journal cost", ""]
        lines += [f"A node calls {jr['effects_per_node']} `@effect` functions that do nothing, then raises once; the "
                  f"next `invoke` re-runs it and the journal replays them. Against the same node calling the plain "
                  f"functions (same durable scope), interleaved; medians of {jr['reps']} threads. effect ms = time "
                  f"inside the node per journaled call.", "",
                  "| phase | journal cmds/effect | extra cmds/effect (all collections) | resolver ordinal cmds/node "
                  "| effect ms | plain call ms | extra invoke ms/effect |",
                  "|---|---|---|---|---|---|---|"]
        for ph, d in jr["phases"].items():
            lines.append(f"| {ph} | {d['journal_commands_per_effect']:.2f} | {d['extra_commands_per_effect']:.2f} "
                         f"| {d['ordinal_commands_per_node']:.0f} | {d['effect_ms']:.2f} | {d['plain_call_ms']:.4f} "
                         f"| {d['extra_invoke_ms_per_effect']:.2f} |")
        lines.append("")
    rr = results.get("resolver")
    if rr is not None:
        lines += ["## 5. Resolver cost", ""]
        lines += [f"Inside a node of a compiled subgraph (`{rr['operation_path']}`), {rr['calls']} calls each. The "
                  f"journal asks once per node attempt; per effect = per node / {EFFECTS} effects.", "",
                  "| resolve_current µs | position, first (ms, cmds) | position, cached (µs, cmds) "
                  "| per effect, cached µs | per effect, first µs |",
                  "|---|---|---|---|---|",
                  f"| {rr['resolve_us']:.1f} | {rr['first_position_ms']:.2f} ({rr['first_position_commands']}) "
                  f"| {rr['cached_position_us']:.1f} ({rr['cached_position_commands']}) "
                  f"| {rr['per_effect_us_cached']:.1f} | {rr['per_effect_us_first']:.0f} |", ""]
    wr = results.get("wide")
    if wr is not None:
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
    if results.get("rtt") is not None:
        from bench_rtt import render_rtt

        lines += render_rtt(results["rtt"])
    if results.get("ui") is not None:
        lines += render_ui(results["ui"])
    if results.get("codec") is not None:
        from bench_codec import render_codec

        lines += render_codec(results["codec"])
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# section 8: the web inspector's thread list (issue 23)

UI_TARGET_MS = 300
#: Journal entries of the one big thread of section ``ui`` (issue 33): its page and JSON must stay bounded.
UI_BIG_ENTRIES = 30_000
UI_BIG_THREAD = "case-big"


def _copies(docs: list[dict[str, Any]], thread_ids: list[str], keyed: tuple[str, ...] | None) -> list[dict[str, Any]]:
    """``docs`` of one thread again under each of ``thread_ids``; ``keyed``: the key fields of their ``_id``."""
    from langgraph_durable_mongodb.checkpointer.documents import key_id

    out = []
    for thread_id in thread_ids:
        for doc in docs:
            copy = {k: v for k, v in doc.items() if k != "_id"}
            copy["thread_id"] = thread_id
            if keyed:
                copy["_id"] = key_id(*(copy.get(f) for f in keyed))  # as copy_thread keys them (a summary has no checkpoint_id)
            out.append(copy)
    return out


def bench_ui(uri: str, s: Settings, log: Callable[[str], None]) -> dict[str, Any]:
    from starlette.testclient import TestClient

    from langgraph_durable_mongodb import DurablePlatform, demo
    from langgraph_durable_mongodb.checkpointer.documents import CHECKPOINT_KEY
    from langgraph_durable_mongodb.schema import BLOB_KEY, WRITE_KEY, CollectionNames
    from langgraph_durable_mongodb.ui.actions import Actions
    from langgraph_durable_mongodb.ui.app import create_app
    from langgraph_durable_mongodb.ui.guard import Guard
    from langgraph_durable_mongodb.views.reader import ThreadViews

    db_name, names = f"bench_ui_{uuid.uuid4().hex[:8]}", CollectionNames()
    counter = CommandCounter()
    client = MongoClient(uri, event_listeners=[counter])
    try:
        platform = DurablePlatform(client, db_name=db_name)
        config = {"configurable": {"thread_id": "case-42"}}
        with contextlib.redirect_stdout(io.StringIO()):  # the demo's graph prints what it executes
            try:
                platform.compile(demo.build_graph("raise")).invoke({"case": "claim 7731", "findings": []}, config)
            except demo.SimulatedCrash:
                pass
            platform.compile(demo.build_graph("none")).invoke(None, config)
        db = client[db_name]
        ids = [f"case-{i:05d}" for i in range(s.ui_threads)]
        keys = {names.checkpoints: CHECKPOINT_KEY, names.writes: (*WRITE_KEY, "chunk"), names.blobs: (*BLOB_KEY, "chunk"),
                names.journal: None, names.runs: None}
        docs = 0
        for coll, keyed in keys.items():
            template = list(db[coll].find({"thread_id": "case-42"}))
            for start in range(0, len(ids) + 1 if template else 0, 1000):
                batch = _copies(template, (ids + [UI_BIG_THREAD])[start:start + 1000], keyed)
                db[coll].insert_many(batch)
                docs += len(batch)
        entries = _copies(list(db[names.journal].find({"thread_id": "case-42"})), [UI_BIG_THREAD], None)
        for start in range(0, UI_BIG_ENTRIES, 1000):  # one big thread: each entry at its own occurrence, in order
            db[names.journal].insert_many([{**entries[i % len(entries)], "occurrence": str(i)} for i in range(start, start + 1000)])
        docs += UI_BIG_ENTRIES
        log(f"ui: {s.ui_threads} threads and {UI_BIG_THREAD} of {UI_BIG_ENTRIES} journal entries, {docs} documents")
        app = create_app(ThreadViews(client, db_name, names), Actions(client, db_name, names), Guard())
        http = TestClient(app, base_url="http://127.0.0.1:8765")
        middle = ids[len(ids) // 2]
        queries = {
            "/api/threads (first page, 50)": "/api/threads",
            f"/api/threads?after={middle}": f"/api/threads?after={middle}",
            "/api/threads?prefix=case-09": "/api/threads?prefix=case-09",
            "/ (HTML, first page)": "/",
            f"/threads/{UI_BIG_THREAD} (HTML, {UI_BIG_ENTRIES:,} entries)": f"/threads/{UI_BIG_THREAD}",
            f"/api/thread?id={UI_BIG_THREAD} ({UI_BIG_ENTRIES:,} entries)": f"/api/thread?id={UI_BIG_THREAD}",
            f"/api/thread?id={UI_BIG_THREAD}&page=100": f"/api/thread?id={UI_BIG_THREAD}&page=100",
        }
        rows = []
        for label, path in queries.items():
            times, commands = [], []
            for _ in range(s.ui_reps):
                with counter.counting() as sent:
                    begun = time.perf_counter()
                    answer = http.get(path)
                    times.append((time.perf_counter() - begun) * 1000)
                assert answer.status_code == 200, answer.text
                commands.append(len(sent))
            median = statistics.median(times)
            rows.append({"query": label, "median_ms": median, "first_ms": times[0], "max_ms": max(times), "n": len(times),
                         "commands": statistics.median(commands), "kb": len(answer.content) / 1000})
            log(f"ui: {label}: median {median:.0f} ms, first {times[0]:.0f} ms, {statistics.median(commands):.0f} commands")
        return {"threads": s.ui_threads, "documents": docs, "rows": rows, "target_ms": UI_TARGET_MS}
    finally:
        client.drop_database(db_name)
        client.close()


def render_ui(res: dict[str, Any]) -> list[str]:
    lines = ["## 8. The web inspector's thread list (issue 23)", "",
             f"{res['threads']:,} threads ({res['documents']:,} documents), each a copy of the demo's `case-42` after "
             f"its crash and resume; 50 threads a page. Through the app in process (Starlette's TestClient): the "
             f"query, the shaping and the JSON or HTML. Target: {res['target_ms']} ms.", "",
             f"The thread `{UI_BIG_THREAD}` holds {UI_BIG_ENTRIES:,} journal entries, shown 200 a page (issue 33: "
             "< 300 ms and < 300 KB).", "",
             "| request | median ms | first ms | max ms | n | commands | KB |", "|---|---|---|---|---|---|---|"]
    lines += [f"| `{r['query']}` | {r['median_ms']:.0f} | {r['first_ms']:.0f} | {r['max_ms']:.0f} | {r['n']} | {r['commands']:.0f} "
              f"| {r.get('kb', 0):.0f} |" for r in res["rows"]]
    return lines + [""]


# --------------------------------------------------------------------------------------------
# main


SECTIONS = ("chat", "async", "steps", "journal", "resolver", "wide", "rtt", "ui", "codec")
SERVERS = ("ferretdb", "mongo_java_server")


@contextmanager
def serving(server: str, log: Callable[[str], None]) -> Iterator[tuple[str, int | None]]:
    """``(uri, pid)`` of ``server``: MONGODB_URI (pid unknown), or a throwaway server started by tests/servers."""
    if server == "uri":
        yield os.environ["MONGODB_URI"].strip(), None
        return
    if server == "ferretdb":
        from tests.servers import ferretdb as launcher
    else:
        from tests.servers import mongo_java_server as launcher  # type: ignore[no-redef]
    started = launcher.start()
    log(f"started {server} at {started.uri}")
    try:
        yield started.uri, started.process.pid
    finally:
        launcher.stop(started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and short runs: a smoke test")
    parser.add_argument("--json", metavar="PATH", help="write every measurement as JSON")
    parser.add_argument("--markdown", metavar="PATH", help="write the report tables as Markdown")
    parser.add_argument("--only", metavar="SECTIONS", help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument("--server", default="both", choices=(*SERVERS, "both"),
                        help="the server(s) to start and measure on, one after the other (default both; "
                             "ignored when MONGODB_URI is set)")
    parser.add_argument("--add-sizes", metavar="N,N", help="add_messages thread sizes in turns (default 25,50)")
    parser.add_argument("--delta-sizes", metavar="N,N", help="DeltaChannel thread sizes in turns (default 50,100,200)")
    parser.add_argument("--wide-sizes", metavar="N,N", help="effects per node in section wide (default 1000,10000)")
    parser.add_argument("--snapshot-frequency", type=int, metavar="N", help="DeltaChannel snapshot_frequency (default 1000)")
    args = parser.parse_args(argv)
    s = Settings.quick() if args.quick else Settings()

    def sizes(text: str) -> tuple[int, ...]:
        return tuple(int(x) for x in text.split(",") if x.strip())

    if args.add_sizes is not None:
        s.add_sizes = sizes(args.add_sizes)
    if args.delta_sizes is not None:
        s.delta_sizes = sizes(args.delta_sizes)
    if args.wide_sizes is not None:
        s.wide_sizes = sizes(args.wide_sizes)
    if args.snapshot_frequency is not None:
        s.snapshot_frequency = args.snapshot_frequency
    only = SECTIONS if not args.only else tuple(x.strip() for x in args.only.split(","))
    unknown = set(only) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}; choose from {','.join(SECTIONS)}")
    if os.environ.get("MONGODB_URI", "").strip():
        servers: tuple[str, ...] = ("uri",)
    else:
        servers = SERVERS if args.server == "both" else (args.server,)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    started = time.perf_counter()
    results: dict[str, Any] = {
        "command": "scripts/bench " + " ".join(sys.argv[1:] if argv is None else argv),
        "quick": args.quick,
        "servers": {},
    }
    for server in servers:
        begun = time.perf_counter()
        with serving(server, log) as (uri, pid):
            res: dict[str, Any] = {"machine": machine_facts(uri, pid is not None)}
            cpu = ServerCPU(pid)
            runners = {
                "chat": lambda: bench_chat(uri, s, log),
                "async": lambda: bench_async(uri, s, cpu, log),
                "journal": lambda: bench_journal(uri, s, log),
                "resolver": lambda: bench_resolver(uri, s, log),
                "wide": lambda: bench_wide(uri, s, log),
                "steps": lambda: bench_steps(uri, s, cpu, log),
                # the CPU line is measured on mongo-java-server (or MONGODB_URI) only: FerretDB's scans would swamp it
                "rtt": lambda: bench_rtt(uri, s, cpu, log, cpu_line=server != "ferretdb"),
                "ui": lambda: bench_ui(uri, s, log),
                "codec": lambda: bench_codec(uri, s, log),
            }
            for number, name in enumerate(SECTIONS, 1):
                if name not in only:
                    continue
                log(f"{server}: section {number}: {name}")
                try:
                    res[name] = runners[name]()
                except Exception as exc:  # noqa: BLE001 - keep the other sections' results
                    import traceback

                    traceback.print_exc()
                    res.setdefault("failed", {})[name] = f"{type(exc).__name__}: {exc}"
        res["seconds"] = time.perf_counter() - begun
        results["servers"][server] = res
    results["seconds"] = time.perf_counter() - started
    report = render(results)
    print(report)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(report + "\n")
    write_docs_numbers(results, log)
    return 1 if any(r.get("failed") for r in results["servers"].values()) else 0


#: The one file of figures the docs and the README quote (scripts/mkdocs_hooks.py fills them in; tests/test_docs_numbers.py
#: checks the README's): written by a full run that measured the rtt section on mongo-java-server.
DOCS_NUMBERS = Path(__file__).resolve().parents[1] / "docs" / "numbers.json"


def write_docs_numbers(results: dict[str, Any], log: Callable[[str], None]) -> None:
    rtt = (results["servers"].get("mongo_java_server") or {}).get("rtt")
    if results["quick"] or not rtt:
        return
    from bench_rtt import docs_numbers

    numbers = docs_numbers(rtt, "mongo-java-server", time.strftime("%Y-%m-%d"))
    DOCS_NUMBERS.write_text(json.dumps(numbers, indent=2, sort_keys=True) + "\n")
    log(f"wrote {DOCS_NUMBERS.relative_to(DOCS_NUMBERS.parents[1])}: the figures the docs quote")


if __name__ == "__main__":
    sys.exit(main())
