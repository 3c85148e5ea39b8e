"""The ``chat`` section: a chat thread grows one turn per ``graph.invoke`` (user message in, one reply node appends an
assistant message), with ``add_messages`` and with LangGraph's ``DeltaChannel``; at 50, 100 and 200 turns
(add_messages: 25 and 50 by default, its storage is quadratic in turns): bytes stored per thread, bytes written and
MongoDB commands per turn, median ``put`` / ``put_writes`` / ``get_tuple`` / load (``get_tuple`` +
``get_delta_channel_history``) / ``list(limit=100)``, with the client CPU of each call.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

from benchmarks.common import (
    DB_PREFIX,
    ByteCounter,
    Settings,
    Side,
    TurnInputs,
    _f,
    _kb,
    chat_builder,
    interleaved,
    med_ms,
    ratio,
    thread_bytes,
)
from pymongo import MongoClient


class _OverCap(Exception):
    """A reference call ran past ``Settings.call_cap``: its time and commands are lower bounds."""


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


def _ge(d: dict[str, Any], op: str) -> str:
    """"≥ " when the reference's call was stopped at the cap (its figures are lower bounds)."""
    key = "load_stopped_after_get_tuples" if op == "load" else "list_stopped_after"
    return "≥ " if d.get(key) else ""


def _le(p: dict[str, Any], op: str) -> str:
    return "≤ " if any(_ge(d, op) for d in p["sides"].values()) else ""



def render_chat(chat: dict[str, Any]) -> list[str]:
    lines: list[str] = []
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
    return lines
