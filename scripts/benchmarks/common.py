"""What the bench's sections share: settings, command counters, the chat graph, the saver under test,
timing and formatting helpers, the async throughput loop and the toxiproxy URI helpers."""

from __future__ import annotations

import asyncio
import os
import random
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict
from urllib.parse import urlsplit

import bson
from bson.codec_options import CodecOptions
from bson.raw_bson import RawBSONDocument
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from pymongo import MongoClient, monitoring
from roundtrips import CommandCounter  # scripts/roundtrips.py


WRITE_COMMANDS = {"insert", "update", "delete", "findAndModify"}
DB_PREFIX = "bench_"


@dataclass
class Settings:
    add_sizes: tuple[int, ...] = (25, 50)  # add_messages: storage is quadratic in turns (see docs/history/benchmarks-log.md)
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
    ui_records: int = 20_000  # credential-bearing records in one thread's state (section ``ui``, issue 45)
    ui_react_turns: int = 500  # turns of one ReAct thread (section ``ui``, issue 45)
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
                   ui_records=2_000, ui_react_turns=50, quick_mode=True)


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


def thread_bytes(stats_client: MongoClient, side: Side, thread_id: str) -> dict[str, int]:
    """Sum of BSON document sizes of one thread, per collection of the saver."""
    db = stats_client.get_database(side.db_name, codec_options=CodecOptions(document_class=RawBSONDocument))
    return {c: sum(len(d.raw) for d in db[c].find({"thread_id": thread_id})) for c in side.collections}


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



EFFECTS = 10


class _Crash(Exception):
    """Raised by the benchmark node after its effects, so the next invoke re-runs (replays) it."""



def _f(v: Any, fmt: str = "{:.2f}") -> str:
    if v is None:
        return "n/a"
    return fmt.format(v)


def _kb(v: float) -> str:
    return f"{v / 1024:,.1f}"



def host_port(uri: str) -> tuple[str, int]:
    """The single ``host:port`` of a ``mongodb://`` URI (toxiproxy proxies one address).

    Raises:
        ValueError: a ``mongodb+srv://`` URI or one naming several hosts.
    """
    parts = urlsplit(uri)
    if parts.scheme != "mongodb" or "," in parts.netloc:
        raise ValueError(f"the rtt section proxies one mongodb://host:port server, not {uri!r}")
    return parts.hostname or "127.0.0.1", parts.port or 27017


def proxied_uri(uri: str, host: str, port: int) -> str:
    parts = urlsplit(uri)
    auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return parts._replace(netloc=f"{auth}{host}:{port}").geturl()


# --------------------------------------------------------------------------------------------
# the ReAct turn: a scripted model and a tool (sections rtt and otel)


class ScriptedModel(BaseChatModel):
    """Asks for ``lookup`` when the last message is the user's, answers once the tool replied."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            message = AIMessage(content=f"The answer is {last.content}.")
        else:
            call_id = f"call_{uuid.uuid4().hex[:12]}"
            message = AIMessage(content="", tool_calls=[{"name": "lookup", "args": {"query": str(last.content)[:40]},
                                                         "id": call_id, "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tool_names=[getattr(t, "name", str(t)) for t in tools], **kwargs)


@tool
def lookup(query: str) -> str:
    """Look up a policy."""
    return f"policy for {query}: covered"


def react_builder(call: Callable[[list], Any], acall: Callable[[list], Any], tools: Any) -> Any:
    """agent -> tools -> agent, ``tools_condition`` deciding.

    ``call`` / ``acall`` ask the model (sync / async: ``ainvoke`` runs the async one, so the CPU line measures
    the async path); ``tools`` is the tools node (a ``ToolNode``, or a runnable).
    """
    from langchain_core.runnables import RunnableLambda
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import tools_condition

    def agent(state: dict) -> dict:
        return {"messages": [call(state["messages"])]}

    async def aagent(state: dict) -> dict:
        return {"messages": [await acall(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("agent", RunnableLambda(agent, afunc=aagent, name="agent"))
    g.add_node("tools", tools)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition)
    g.add_edge("tools", "agent")
    return g


def secure_builder(at_most_once: bool = False) -> Any:
    from langgraph.prebuilt import ToolNode

    from langgraph_durable_mongodb import SecureLLM, SecureTool

    model = SecureLLM(ScriptedModel()).bind_tools([lookup])
    return react_builder(model.invoke, model.ainvoke, ToolNode([SecureTool(lookup, at_most_once=at_most_once)]))


