"""No thread started per run in steady state (issue 37): the pools and the lease renewer are per process.

LangGraph's own per-run executor (langchain_core's ``get_executor_for_config``) starts threads on every run, for
``MongoDBSaver`` and ``@task`` alike; what is counted here is a thread whose start this package asked for: the
nearest frame outside ``threading`` and ``concurrent.futures`` is in the package's own source.
"""

from __future__ import annotations

import asyncio
import operator
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph

import langgraph_durable_mongodb
from langgraph_durable_mongodb.journal import effect

SOURCE = str(Path(langgraph_durable_mongodb.__file__).parent)
TURNS = 6


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]


def builder() -> StateGraph:
    @effect(kind="tool", name="lookup")
    def lookup(ref: str) -> str:
        return f"found {ref}"

    def step(state: State) -> State:
        return {"notes": [lookup("P-7")]}

    graph = StateGraph(State)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    return graph


def starter() -> str:
    """The file of the nearest caller of ``Thread.start`` outside the stdlib's thread machinery."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.endswith(("threading.py", "futures/thread.py")):
        frame = frame.f_back
    return "" if frame is None else frame.f_code.co_filename


def count_ours(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """From now on, the threads this package starts (name and starting file)."""
    ours: list[str] = []
    start = threading.Thread.start

    def counting(self: threading.Thread) -> None:
        if (where := starter()).startswith(SOURCE):
            ours.append(f"{self.name} from {where}")
        start(self)

    monkeypatch.setattr(threading.Thread, "start", counting)
    return ours


def config(turn: int) -> dict[str, Any]:
    return {"configurable": {"thread_id": f"t{turn % 2}"}}


def test_steady_state_sync_turns_start_no_thread_of_ours(platform: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = platform.compile(builder())
    for turn in range(2):  # warm-up: the process's pools and renewer start here, once
        graph.invoke({"notes": []}, config(turn))
    ours = count_ours(monkeypatch)
    for turn in range(TURNS):
        assert graph.invoke({"notes": []}, config(turn))["notes"][-1] == "found P-7"
    assert ours == []


def test_steady_state_async_turns_start_no_thread_of_ours(platform: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = platform.compile(builder())

    async def turns() -> list[str]:  # one event loop: an AsyncMongoClient is bound to the loop it first ran on
        for turn in range(2):  # warm-up
            await graph.ainvoke({"notes": []}, config(turn))
        ours = count_ours(monkeypatch)
        for turn in range(TURNS):
            assert (await graph.ainvoke({"notes": []}, config(turn)))["notes"][-1] == "found P-7"
        return ours

    assert asyncio.run(turns()) == []
