"""scripts/bench's ``codec`` section (issue 24): the stored-value codec, ``k`` references against the postgres layout.

Every layout is our ``MongoDBCheckpointer``, on the same server, in the same process, interleaved turn by turn
(the order rotates every turn, so drift hits all alike):

- ``references``: the saver as it ships. A value is inline in its checkpoint document while small
  (``inline_value_bytes``, ``inline_document_bytes``); an unchanged value larger than ``copy_value_bytes`` is a
  ``k`` reference to the checkpoint holding it; ``prune`` rehomes the values a kept checkpoint references
  before their holder goes.
- ``postgres``: the same saver with ``inline_value_bytes = copy_value_bytes = 0``: every value with any bytes goes
  to ``checkpoint_blobs``, keyed by (thread, namespace, channel, version) and written once, and a checkpoint's
  entry names only its channel and version, as langgraph-checkpoint-postgres's ``checkpoint_blobs`` table does;
  no checkpoint holds another's value, so ``prune`` has nothing to rehome. The report counts the stored entries
  by kind (inline, ``k``, in blobs) from the raw documents, so the emulation is checked, not assumed.
- ``small_inline``: inline or blob without references: ``inline_value_bytes = copy_value_bytes = 2048``. A value
  of at most 2 KiB is inline (and copied inline again while unchanged); a larger one goes to blobs under its
  channel and version, and an unchanged one is found there by its version: never a ``k`` reference, since no
  value larger than ``copy_value_bytes`` is ever inline.

The thread: an ``add_messages`` chat (common.py's ``chat_builder``: a user message in, one node appends a reply)
whose ``context`` channel, written on the first turn only, is a dict of about ``document_bytes`` (a large unchanged
value; a dict, not a str, since postgres keeps a str inline). Measured: commands and write commands per turn,
wall time per turn direct and through toxiproxy at 1 ms a round trip, ``get_tuple`` and ``list`` (commands,
time), bytes stored (the BSON size of the thread's documents, per collection), ``prune(strategy="keep_latest")``
(commands, time). Ratios are a layout / references: above 1.0 that layout costs more. Each thread's restored
state (``get_state``), its history (``list``) and its state after the prune are compared across the layouts: they
must be equal.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks import common as core
from pymongo import MongoClient

#: Each layout's ``(inline_value_bytes, copy_value_bytes)`` (None: the saver's defaults); the first is the reference.
LAYOUTS: dict[str, tuple[int, int] | None] = {"references": None, "postgres": (0, 0), "small_inline": (2048, 2048)}
LABELS = {
    "references": "`k` references (as shipped)",
    "postgres": "postgres layout (`inline_value_bytes = copy_value_bytes = 0`)",
    "small_inline": "inline while small, else blobs (`inline_value_bytes = copy_value_bytes = 2048`)",
}


@dataclass
class CodecSettings:
    threads: int = 4  # direct threads per layout
    turns: int = 30
    rtt_threads: int = 3  # threads per layout through the 1 ms proxy
    rtt_turns: int = 15
    document_bytes: int = 50_000  # the large unchanged value (the ``context`` channel)
    reps: int = 15  # timed get_tuple / list calls per layout
    latency_ms: int = 1

    @classmethod
    def quick(cls) -> CodecSettings:
        return cls(threads=2, turns=5, rtt_threads=1, rtt_turns=3, reps=3)


@dataclass
class Layout:
    """One layout on one client (direct or proxied): its saver, graph, counter and measured turns."""

    name: str
    client: MongoClient
    counter: core.CollectionCounter
    db_name: str
    saver: Any
    graph: Any
    collections: tuple[str, ...]
    turns: list[dict[str, Any]] = field(default_factory=list)

    def config(self, thread: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": thread}}

    def turn(self, thread: str, turn: int, inputs: Callable[[int], dict[str, Any]]) -> None:
        with self.counter.window() as seen:
            t0 = time.perf_counter()
            out = self.graph.invoke(inputs(turn), self.config(thread))
            wall = time.perf_counter() - t0
        if len(out["messages"]) != 2 * (turn + 1):
            raise RuntimeError(f"{self.name}: {len(out['messages'])} messages after turn {turn} of {thread}")
        self.turns.append({"turn": turn, "wall": wall, "commands": seen["commands"],
                           "writes": sum(1 for n in seen["names"] if n in core.WRITE_COMMANDS),
                           "targets": [f"{collection} {command}" for command, collection in seen["targets"]]})


def make_layout(name: str, uri: str, db_name: str, s: core.Settings) -> Layout:
    from langgraph_durable_mongodb import MongoDBCheckpointer

    counter = core.CollectionCounter()
    client: MongoClient = MongoClient(uri, event_listeners=[counter])
    saver = MongoDBCheckpointer(client, db_name=db_name)
    if LAYOUTS[name] is not None:
        saver.inline_value_bytes, saver.copy_value_bytes = LAYOUTS[name]
    saver.setup()
    cols = (saver.collections.checkpoints, saver.collections.blobs, saver.collections.writes)
    return Layout(name, client, counter, db_name, saver, core.chat_builder("add_messages", s).compile(checkpointer=saver), cols)


def run_turns(layouts: Sequence[Layout], threads: Sequence[str], turns: int, inputs: Callable[[int], dict[str, Any]],
              log: Callable[[str], None], label: str) -> None:
    order = list(layouts)
    for turn in range(turns):
        for thread in threads:
            order = order[1:] + order[:1]  # rotate: no layout always runs first or last
            for layout in order:
                layout.turn(thread, turn, inputs)
        log(f"  codec {label} turn {turn + 1}/{turns}: " + ", ".join(
            f"{x.name} {statistics.median(t['wall'] for t in x.turns) * 1000:.1f} ms" for x in layouts))


def turn_summary(layout: Layout) -> dict[str, Any]:
    later = [t for t in layout.turns if t["turn"] > 0] or layout.turns
    first = [t for t in layout.turns if t["turn"] == 0]
    targets = Counter(k for t in later for k in t["targets"])
    walls = [t["wall"] * 1000 for t in layout.turns]
    return {
        "turns": len(layout.turns),
        "writes_per_turn": statistics.mean(t["writes"] for t in later),
        "commands_per_turn": statistics.mean(t["commands"] for t in later),
        "first_turn_writes": statistics.mean(t["writes"] for t in first),
        "first_turn_commands": statistics.mean(t["commands"] for t in first),
        "wall_ms_median": statistics.median(walls),
        "wall_ms_quartiles": statistics.quantiles(walls, n=4) if len(walls) > 1 else None,
        "by_target": {k: c / len(later) for k, c in sorted(targets.items())},
    }


def timed_reads(layouts: Sequence[Layout], thread: str, reps: int) -> dict[str, dict[str, Any]]:
    """``get_tuple`` and ``list`` of ``thread``, interleaved (common.py's ``interleaved``): commands, median ms."""
    calls = {
        "get_tuple": lambda x: x.saver.get_tuple(x.config(thread)),
        "list": lambda x: len(list(x.saver.list(x.config(thread)))),
    }
    out: dict[str, dict[str, Any]] = {x.name: {} for x in layouts}
    for op, call in calls.items():
        for name, d in core.interleaved(reps, 10.0, list(layouts), call).items():
            out[name][op] = {"commands": d["commands"], "ms": core.med_ms(d["times"]), "n": len(d["times"])}
            if op == "list":
                out[name][op]["checkpoints"] = d["value"]
    return out


def prune_each(layouts: Sequence[Layout], threads: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``prune([thread], strategy="keep_latest")`` once per thread and layout, the order rotating."""
    seen: dict[str, dict[str, list]] = {x.name: {"commands": [], "ms": [], "names": []} for x in layouts}
    order = list(layouts)
    for thread in threads:
        order = order[1:] + order[:1]
        for layout in order:
            with layout.counter.window() as w:
                t0 = time.perf_counter()
                layout.saver.prune([thread], strategy="keep_latest")
                ms = (time.perf_counter() - t0) * 1000
            seen[layout.name]["commands"].append(w["commands"])
            seen[layout.name]["ms"].append(ms)
            seen[layout.name]["names"].append([f"{collection} {command}" for command, collection in w["targets"]])
    return {name: {"commands": statistics.mean(d["commands"]), "commands_min_max": [min(d["commands"]), max(d["commands"])],
                   "ms": statistics.median(d["ms"]), "n": len(d["ms"]), "first": d["names"][0]}
            for name, d in seen.items()}


def _canonical(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump()
    return repr(value)


def digest(values: Any) -> str:
    """A short hash of channel values, stable across processes (messages by their fields)."""
    text = json.dumps(values, sort_keys=True, default=_canonical)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def restored(layout: Layout, threads: Sequence[str], history: bool = True) -> dict[str, Any]:
    """Per thread: the number of messages and the digest of the latest state, and of the whole history."""
    out: dict[str, Any] = {}
    for thread in threads:
        values = layout.graph.get_state(layout.config(thread)).values
        row = {"messages": len(values.get("messages", ())), "state": digest(values)}
        if history:
            row["history"] = digest([t.checkpoint["channel_values"] for t in layout.saver.list(layout.config(thread))])
        out[thread] = row
    return out


def entry_census(layout: Layout, threads: Sequence[str]) -> dict[str, Any]:
    """The stored entries of the threads' checkpoints by kind, read from the raw documents."""
    from langgraph_durable_mongodb.checkpointer.documents import HOLDER, VALUE_DATA, VALUE_TYPE, is_inline

    census = Counter({"inline": 0, "inline_with_bytes": 0, "k_reference": 0, "in_blobs": 0})
    empty_types: set[str] = set()  # the serde types of the inline values without bytes (None: "null")
    for doc in layout.client[layout.db_name][layout.collections[0]].find({"thread_id": {"$in": list(threads)}}):
        for e in doc.get("values", ()):
            if is_inline(e):
                census["inline"] += 1
                census["inline_with_bytes"] += len(e[VALUE_DATA]) > 0
                if not e[VALUE_DATA]:
                    empty_types.add(e[VALUE_TYPE])
            elif HOLDER in e:
                census["k_reference"] += 1
            else:
                census["in_blobs"] += 1
    return {**census, "empty_inline_types": sorted(empty_types)}


def stored_bytes(layout: Layout, threads: Sequence[str]) -> dict[str, float]:
    """Mean BSON bytes per thread, per collection and in total (common.py's ``thread_bytes``)."""
    per = [core.thread_bytes(layout.client, layout, t) for t in threads]  # type: ignore[arg-type]
    out = {c: statistics.mean(p[c] for p in per) for c in layout.collections}
    out["total"] = sum(out.values())
    return out


@contextlib.contextmanager
def latency(uri: str, latency_ms: int, server: Any = None) -> Iterator[str]:
    """The URI of a proxy in front of ``uri`` delaying each reply by ``latency_ms``: on toxiproxy ``server``
    (tests/servers/toxiproxy.py's ``Toxiproxy``), or on one started for the block."""
    from tests.servers import toxiproxy

    if server is not None:
        yield core.proxied_uri(uri, *server.proxy(*core.host_port(uri), latency_ms=latency_ms,
                                                       name=f"codec_{time.time_ns()}"))
        return
    with toxiproxy.latency_proxy(*core.host_port(uri), latency_ms=latency_ms) as (host, port):
        yield core.proxied_uri(uri, host, port)


def bench_codec(uri: str, s: core.Settings, log: Callable[[str], None], toxiproxy_server: Any = None) -> dict[str, Any]:
    """The codec section on the server at ``uri``: direct, then through a 1 ms toxiproxy (``toxiproxy_server``, or
    one started here), then reads and prune."""
    cs = CodecSettings.quick() if s.quick_mode else CodecSettings()
    chat = dataclasses.replace(s, context_chars=cs.document_bytes)
    inputs = core.TurnInputs(chat)
    threads = [f"thread-{i}" for i in range(cs.threads)]
    rtt_threads = [f"rtt-{i}" for i in range(cs.rtt_threads)]
    tag = f"{time.time_ns() % 10**8:08d}"
    direct = [make_layout(name, uri, f"{core.DB_PREFIX}codec_{name}_{tag}", chat) for name in LAYOUTS]
    try:
        for x in direct:  # warm-up: imports, pools, indexes
            x.turn("warm-up", 0, inputs)
            x.turns.clear()
        run_turns(direct, threads, cs.turns, inputs, log, "direct")
        with latency(uri, cs.latency_ms, toxiproxy_server) as proxied_uri:
            proxied = [make_layout(x.name, proxied_uri, x.db_name, chat) for x in direct]
            try:
                run_turns(proxied, rtt_threads, cs.rtt_turns, inputs, log, "1 ms")
                reads_rtt = timed_reads(proxied, rtt_threads[0], cs.reps)
                prune_rtt = prune_each(proxied, rtt_threads)
            finally:
                for x in proxied:
                    x.client.close()
        reads = timed_reads(direct, threads[0], cs.reps)
        result: dict[str, Any] = {"settings": dataclasses.asdict(cs), "layouts": {}}
        for x, p in zip(direct, proxied):
            result["layouts"][x.name] = {
                "direct": turn_summary(x), "rtt": turn_summary(p), "reads": reads[x.name], "reads_rtt": reads_rtt[x.name],
                "bytes": stored_bytes(x, threads), "entries": entry_census(x, threads),
                "restored": restored(x, threads), "restored_rtt": restored(x, rtt_threads, history=False),
            }
        log("  codec: prune")
        prune = prune_each(direct, threads)
        for x in direct:
            row = result["layouts"][x.name]
            row.update(prune=prune[x.name], prune_rtt=prune_rtt[x.name], bytes_after_prune=stored_bytes(x, threads),
                       restored_after_prune=restored(x, threads, history=False))
        result["states_equal"] = states_equal(result["layouts"])
        result["ratios"] = ratios(result["layouts"])
        return result
    finally:
        for x in direct:
            x.client.drop_database(x.db_name)
            x.client.close()


def states_equal(layouts: dict[str, Any]) -> bool:
    """Every restored state (and history) the same under every layout, and the state unchanged by the prune."""
    ref = layouts["references"]
    same = all(ref[k] == row[k] for row in layouts.values() for k in ("restored", "restored_rtt", "restored_after_prune"))
    kept = all(ref["restored"][t]["state"] == ref["restored_after_prune"][t]["state"] for t in ref["restored"])
    return same and kept


#: The figures the ratio table compares: label, path into a layout's row.
FIGURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("write commands per turn", ("direct", "writes_per_turn")),
    ("commands per turn", ("direct", "commands_per_turn")),
    ("commands, first turn", ("direct", "first_turn_commands")),
    ("wall ms per turn, direct", ("direct", "wall_ms_median")),
    ("wall ms per turn, 1 ms RTT", ("rtt", "wall_ms_median")),
    ("`get_tuple` commands", ("reads", "get_tuple", "commands")),
    ("`get_tuple` ms, direct", ("reads", "get_tuple", "ms")),
    ("`get_tuple` ms, 1 ms RTT", ("reads_rtt", "get_tuple", "ms")),
    ("`list` commands", ("reads", "list", "commands")),
    ("`list` ms, direct", ("reads", "list", "ms")),
    ("`list` ms, 1 ms RTT", ("reads_rtt", "list", "ms")),
    ("KiB stored per thread", ("bytes", "total")),
    ("`prune` commands", ("prune", "commands")),
    ("`prune` ms, direct", ("prune", "ms")),
    ("`prune` ms, 1 ms RTT", ("prune_rtt", "ms")),
    ("KiB per thread after prune", ("bytes_after_prune", "total")),
)


def figure(row: dict[str, Any], path: tuple[str, ...]) -> float:
    for key in path:
        row = row[key]
    return row  # type: ignore[return-value]


def ratios(layouts: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    """Per layout but the reference, per figure: its value / the reference's."""
    ref = layouts["references"]
    return {name: {label: core.ratio(figure(row, path), figure(ref, path)) for label, path in FIGURES}
            for name, row in layouts.items() if name != "references"}


def render_codec(res: dict[str, Any]) -> list[str]:
    st, rows = res["settings"], res["layouts"]
    names = list(rows)
    others = names[1:]
    lines = ["## 9. Stored-value codec: references against the postgres layout (issue 24)", "",
             "Our saver once per layout on one server, interleaved turn by turn: " + "; ".join(
                 f"`{n}`: {LABELS[n]}" for n in names) + f". An `add_messages` chat with a "
             f"{st['document_bytes'] / 1000:.0f} KB dict in state, written on the first turn only; {st['threads']} threads "
             f"x {st['turns']} turns direct, {st['rtt_threads']} x {st['rtt_turns']} through toxiproxy at "
             f"{st['latency_ms']} ms a round trip. Per turn: later turns (mean); wall: median over all turns; reads: "
             f"thread 0, median of up to {st['reps']}; prune: `keep_latest`, once per thread. ratio = the layout / "
             "`references`.", "",
             "| per thread or call | " + " | ".join(f"{n}" + (" | ratio" if n in others else "") for n in names) + " |",
             "|---|" + "---|" * (len(names) + len(others))]
    for label, path in FIGURES:
        fmt = core._kb if "KiB" in label else (lambda v: f"{v:.2f}".rstrip("0").rstrip("."))
        cells = [fmt(figure(rows[n], path)) + (f" | **{core._f(res['ratios'][n][label])}**" if n in others else "")
                 for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Stored entries of the direct threads' checkpoints, from the raw documents:", "",
              "| layout | inline (with bytes) | `k` references | in blobs | types inline without bytes |", "|---|---|---|---|---|"]
    for name in names:
        e = rows[name]["entries"]
        lines.append(f"| {name} | {e['inline']} ({e['inline_with_bytes']}) | {e['k_reference']} | {e['in_blobs']} "
                     f"| {', '.join(e['empty_inline_types']) or '-'} |")
    lines += ["", "Commands per later turn, direct, by collection and command:", "",
              "| collection command | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    keys = sorted({k for n in names for k in rows[n]["direct"]["by_target"]})
    lines += [f"| {k} | " + " | ".join(f"{rows[n]['direct']['by_target'].get(k, 0):.2f}" for n in names) + " |" for k in keys]
    lines += ["", "`prune` sends: " + "; ".join(f"{n}: {', '.join(rows[n]['prune']['first'])}" for n in names) + ".", "",
              f"Restored states equal across the layouts (and unchanged by the prune): **{res['states_equal']}**.", ""]
    return lines
