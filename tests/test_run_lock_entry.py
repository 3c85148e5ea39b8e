"""Which thread a run locks, through every entry point (``DurableGraph``, ``run_lock.thread_id_of``).

LangGraph runs a call on the thread of its config merged over the graph's bound
config (``with_config``), a top-level ``{"thread_id": t}`` included (moved into
``configurable`` by langchain_core's ``ensure_config``). The run lock must name
that same thread, or two concurrent runs of it fork it. Offline and on the
real-server tier (``make_platform``).
"""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import DurableGraph, ThreadBusyError
from langgraph_durable_mongodb.runs.run_lock import batch_rounds, thread_id_of, thread_ids_of

from .checkout import FINAL, Effects, build
from .graphs import config

APIS = ["invoke", "ainvoke", "stream", "astream", "batch", "abatch"]


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]


def live_locks(platform: Any) -> list[str]:
    """The threads whose run lock is held right now (once this process's background releases are done)."""
    if platform.run_locks is not None:
        platform.run_locks.wait_releases(10)
    runs = platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"]
    return sorted(d["thread_id"] for d in runs.find({"owner": {"$ne": None}}))


def observing(platform: Any, seen: list[list[str]]) -> DurableGraph:
    """A one-node graph whose node records which threads are locked while it runs."""

    def node(s: State) -> State:
        seen.append(live_locks(platform))
        return {"notes": ["x"]}

    builder = StateGraph(State)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    return platform.compile(builder)


async def run(graph: Any, api: str, config: Any, inputs: Any = None) -> Any:
    """One run of ``inputs`` through entry point ``api`` (a one-input batch for ``batch``/``abatch``)."""
    inputs = {"notes": []} if inputs is None else inputs
    if api == "invoke":
        return graph.invoke(inputs, config)
    if api == "ainvoke":
        return await graph.ainvoke(inputs, config)
    if api == "stream":
        return list(graph.stream(inputs, config))
    if api == "astream":
        return [chunk async for chunk in graph.astream(inputs, config)]
    if api == "batch":
        return graph.batch([inputs], config)
    return await graph.abatch([inputs], config)


def stored_threads(platform: Any) -> list[str]:
    return sorted({c.config["configurable"]["thread_id"] for c in platform.checkpointer.list(None)})


@pytest.mark.parametrize("api", APIS)
async def test_a_top_level_thread_id_takes_the_run_lock(make_platform: Any, api: str) -> None:
    platform = make_platform(run_wait_seconds=0)
    seen: list[list[str]] = []
    await run(observing(platform, seen), api, {"thread_id": "top"})
    assert seen == [["top"]]  # held while the node ran
    assert stored_threads(platform) == ["top"]  # the thread LangGraph wrote is the one locked
    assert live_locks(platform) == []


@pytest.mark.parametrize("api", APIS)
async def test_a_thread_bound_with_with_config_takes_the_run_lock(make_platform: Any, api: str) -> None:
    platform = make_platform(run_wait_seconds=0)
    seen: list[list[str]] = []
    bound = observing(platform, seen).with_config(configurable={"thread_id": "bound"})
    assert isinstance(bound, DurableGraph)  # not the bare Pregel: its runs stay durable
    await run(bound, api, None)
    assert seen == [["bound"]]
    assert stored_threads(platform) == ["bound"]


@pytest.mark.parametrize("api", APIS)
async def test_the_call_s_thread_wins_over_the_bound_one(make_platform: Any, api: str) -> None:
    platform = make_platform(run_wait_seconds=0)
    seen: list[list[str]] = []
    bound = observing(platform, seen).with_config(thread_id="bound")  # a top-level key, bound
    await run(bound, api, config("call"))
    assert seen == [["call"]]
    assert stored_threads(platform) == ["call"]


def test_a_second_sync_run_on_a_top_level_thread_id_waits_instead_of_forking(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0.1)
    fx = Effects(seconds=1.0)
    graph = build(platform, fx)
    graph.invoke({"notes": []}, {"thread_id": "case-42"})
    first = threading.Thread(target=graph.invoke, args=(None, {"thread_id": "case-42"}))
    first.start()
    assert fx.paying.wait(10)  # the first run holds the thread and is inside pay
    with pytest.raises(ThreadBusyError, match="case-42"):
        graph.invoke(None, {"thread_id": "case-42"})
    first.join(30)
    assert fx.counts == {"pay": 1, "ship": 1}
    assert graph.invoke(None, {"thread_id": "case-42"}) == FINAL


async def test_a_second_async_run_on_a_top_level_thread_id_waits_instead_of_forking(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0.1)
    fx = Effects(seconds=1.0)
    graph = build(platform, fx, use_async=True)
    await graph.ainvoke({"notes": []}, {"thread_id": "case-42"})
    first = asyncio.create_task(graph.ainvoke(None, {"thread_id": "case-42"}))
    while not fx.paying.is_set():
        await asyncio.sleep(0.01)
    with pytest.raises(ThreadBusyError, match="case-42"):
        await graph.ainvoke(None, {"thread_id": "case-42"})
    assert await first == FINAL
    assert fx.counts == {"pay": 1, "ship": 1}


CONFIG_SHAPES = [
    ({"thread_id": "top"}, None),
    ({"thread_id": 7}, None),
    ({"thread_id": "top", "configurable": {"thread_id": "conf"}}, None),
    (None, {"configurable": {"thread_id": "bound"}}),
    ({"configurable": {"thread_id": "call"}}, {"configurable": {"thread_id": "bound"}}),
    ({"configurable": {"thread_id": "call"}}, {"thread_id": "bound"}),
    (None, {"thread_id": "bound"}),
    ({"thread_id": "call"}, {"configurable": {"thread_id": "bound"}}),
    ({"recursion_limit": 5}, {"configurable": {"thread_id": "bound"}}),
]


@pytest.mark.parametrize(("call", "bound"), CONFIG_SHAPES)
def test_thread_id_of_names_the_thread_langgraph_stores_under(call: Any, bound: Any) -> None:
    saver = InMemorySaver()
    builder = StateGraph(State)
    builder.add_node("n", lambda s: {"notes": ["x"]})
    builder.add_edge(START, "n")
    graph = builder.compile(checkpointer=saver)
    graph = graph.with_config(bound) if bound is not None else graph
    graph.invoke({"notes": []}, call)
    assert [thread_id_of(call, graph.config)] == sorted({c.config["configurable"]["thread_id"] for c in saver.list(None)})


def test_a_run_started_inside_another_graph_s_node_locks_its_own_thread(make_platform: Any) -> None:
    platform = make_platform(run_wait_seconds=0)
    seen: list[list[str]] = []
    inner = observing(platform, seen).with_config(configurable={"thread_id": "bound"})

    def outer_node(s: State) -> State:  # runs under the outer run's config (thread "outer"), LangGraph's ambient one
        return {"notes": inner.invoke({"notes": []}, {"recursion_limit": 50})["notes"]}

    builder = StateGraph(State)
    builder.add_node("o", outer_node)
    builder.add_edge(START, "o")
    builder.compile(checkpointer=InMemorySaver()).invoke({"notes": []}, config("outer"))
    assert seen == [["bound"]]  # not the outer node's thread: LangGraph ran the inner graph on "bound"
    assert stored_threads(platform) == ["bound"]


def test_thread_ids_of_configs() -> None:
    assert thread_ids_of(None) == [] and thread_id_of(None) is None and thread_id_of({}) is None
    assert thread_ids_of({"configurable": {"thread_id": 7}}) == ["7"]
    assert thread_ids_of([config("b"), {"thread_id": "a"}, config("b"), {}]) == ["a", "b"]
    assert thread_ids_of([None, {}], {"configurable": {"thread_id": "bound"}}) == ["bound"]


class Noted(TypedDict, total=False):
    note: str
    notes: Annotated[list, operator.add]


class Clock:
    """Records, per thread, the runs of a node: when each started and ended, and the locks held meanwhile."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, float, float]] = []
        self.locked: list[list[str]] = []
        self.lock = threading.Lock()


def timed(platform: Any, clock: Clock, seconds: float = 0.2) -> DurableGraph:
    """A one-node graph: the node appends its input's ``note``, takes ``seconds`` and fails on ``"boom"``."""

    def node(s: Noted, config: RunnableConfig) -> Noted:
        started = time.monotonic()
        clock.locked.append(live_locks(platform))
        time.sleep(seconds)
        with clock.lock:
            clock.spans.append((config["configurable"]["thread_id"], started, time.monotonic()))
        if s["note"] == "boom":
            raise ValueError("boom")
        return {"notes": [s["note"]]}

    builder = StateGraph(Noted)
    builder.add_node("n", node)
    builder.add_edge(START, "n")
    return platform.compile(builder)


def overlapping(spans: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """Runs of one thread that overlapped in time."""
    return [a for a in spans for b in spans if a is not b and a[0] == b[0] and a[1] < b[2] and b[1] < a[2]]


async def batch(graph: Any, api: str, inputs: list[Any], configs: Any, **kwargs: Any) -> list[Any]:
    if api == "batch":
        return graph.batch(inputs, configs, **kwargs)
    return await graph.abatch(inputs, configs, **kwargs)


@pytest.mark.parametrize("api", ["batch", "abatch"])
async def test_a_batch_runs_one_thread_s_inputs_one_after_the_other(make_platform: Any, api: str) -> None:
    platform = make_platform(run_wait_seconds=0)
    clock = Clock()
    graph = timed(platform, clock)
    inputs = [{"note": n} for n in "abcd"]
    out = await batch(graph, api, inputs, [config("t"), config("t"), {"thread_id": "u"}, config("t")])
    # In input order, each the thread's state after that input: t's three runs saw each other, no fork.
    assert [o["notes"] for o in out] == [["a"], ["a", "b"], ["c"], ["a", "b", "d"]]
    assert overlapping(clock.spans) == []
    assert sorted(t for t, _, _ in clock.spans[:2]) == ["t", "u"]  # distinct threads still run together
    assert all(len(held) == len(set(held)) and held for held in clock.locked)  # every run under its lock
    assert live_locks(platform) == []


@pytest.mark.parametrize("api", ["batch", "abatch"])
async def test_a_batch_on_one_thread_returns_exceptions_in_place(make_platform: Any, api: str) -> None:
    platform = make_platform(run_wait_seconds=0)
    clock = Clock()
    graph = timed(platform, clock, seconds=0)
    out = await batch(graph, api, [{"note": "a"}, {"note": "boom"}, {"note": "c"}], config("t"), return_exceptions=True)
    assert out[0] == {"note": "a", "notes": ["a"]}
    assert isinstance(out[1], ValueError) and str(out[1]) == "boom"
    assert out[2]["notes"] == ["a", "c"]
    assert live_locks(platform) == []


@pytest.mark.parametrize("api", ["batch", "abatch"])
async def test_a_failed_round_raises_and_later_rounds_do_not_run(make_platform: Any, api: str) -> None:
    platform = make_platform(run_wait_seconds=0)
    clock = Clock()
    graph = timed(platform, clock, seconds=0)
    with pytest.raises(ValueError, match="boom"):
        await batch(graph, api, [{"note": "boom"}, {"note": "c"}], config("t"))
    assert len(clock.spans) == 1
    assert live_locks(platform) == []


@pytest.mark.parametrize("api", ["batch", "abatch"])
async def test_without_exclusive_runs_a_batch_is_langgraph_s(make_platform: Any, api: str) -> None:
    platform = make_platform(exclusive_runs=False)
    clock = Clock()
    out = await batch(timed(platform, clock), api, [{"note": "a"}, {"note": "b"}], config("t"))
    assert len(out) == 2 and overlapping(clock.spans)  # one round, run together as LangGraph does


def test_batch_rounds() -> None:
    assert batch_rounds([]) == []
    assert batch_rounds(["a", "b"]) == [[0, 1]]
    assert batch_rounds(["t", "t", "u", "t", None, None]) == [[0, 2, 4, 5], [1], [3]]
