"""The ways a graph becomes durable: the plain ``compile(checkpointer=platform.checkpointer)``, ``platform.compile``,
and a ``DurableGraph`` used as a node of another graph. Each test counts real executions.

(The replay matrix, ``test_platform_replay.py``, runs every row on both forms.)
"""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.pregel import Pregel

from langgraph_durable_mongodb import DurableGraph, NoDurableScopeError
from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.resolver import durable_subgraphs


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]


def config(thread: str = "t1") -> dict:
    return {"configurable": {"thread_id": thread}}


class Calls:
    def __init__(self) -> None:
        self.n = 0


def reviewing(calls: Calls, crash: list[bool]) -> StateGraph:
    """A child graph whose node journals one effect, then fails once (``crash``)."""

    @effect(kind="tool", name="lookup")
    def lookup(ref: str) -> str:
        calls.n += 1
        return f"found {ref}"

    def review(state: State) -> State:
        found = lookup("P-7")
        if crash:
            crash.clear()
            raise ConnectionError("worker lost")
        return {"notes": [found]}

    graph = StateGraph(State)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    return graph


def test_a_durable_graph_is_a_pregel_and_can_be_a_node_of_another_graph(platform: DurablePlatform) -> None:
    calls, crash = Calls(), [True]
    child = platform.compile(reviewing(calls, crash))
    assert isinstance(child, Pregel) and isinstance(child, DurableGraph)
    root = StateGraph(State)
    root.add_node("case", child)  # a DurableGraph as a node: it inherits the root's checkpointer
    root.add_edge(START, "case")
    graph = platform.compile(root)
    with pytest.raises(ConnectionError):
        graph.invoke({"notes": []}, config())
    assert graph.invoke(None, config())["notes"] == ["found P-7"]
    assert calls.n == 1
    [entry] = platform.journal.entries("t1")
    assert (entry["path"], entry["node"], entry["status"]) == ("agent/1/case/1", "review", "completed")


async def test_an_async_run_of_the_plain_form_journals_and_replays(platform: DurablePlatform) -> None:
    calls, crash = Calls(), [True]

    @effect(kind="tool", name="lookup")
    async def lookup(ref: str) -> str:
        calls.n += 1
        return f"found {ref}"

    async def review(state: State) -> State:
        found = await lookup("P-7")
        if crash:
            crash.clear()
            raise ConnectionError("worker lost")
        return {"notes": [found]}

    child = StateGraph(State)
    child.add_node("review", review)
    child.add_edge(START, "review")
    root = StateGraph(State)
    root.add_node("case", child.compile())
    root.add_edge(START, "case")
    graph = root.compile(checkpointer=platform.checkpointer)
    with pytest.raises(ConnectionError):
        await graph.ainvoke({"notes": []}, config())
    assert (await graph.ainvoke(None, config()))["notes"] == ["found P-7"]
    assert calls.n == 1


def test_the_topology_is_discovered_once_per_compiled_graph(platform: DurablePlatform, monkeypatch: pytest.MonkeyPatch) -> None:
    discovered: list[Any] = []
    original = durable_subgraphs.discover_topology

    def counting(compiled: Any, root_saver: Any = None) -> Any:
        discovered.append(compiled)
        return original(compiled, root_saver)

    monkeypatch.setattr(durable_subgraphs, "discover_topology", counting)
    plain = reviewing(Calls(), []).compile(checkpointer=platform.checkpointer)
    plain.invoke({"notes": []}, config("a"))  # validated as its first run starts (a run resolves its nodes alone)
    plain.invoke({"notes": []}, config("a2"))
    assert discovered == [plain]
    graph = platform.compile(reviewing(Calls(), []))
    assert len(discovered) == 2
    graph.invoke({"notes": []}, config("b"))
    graph.with_config(tags=["copy"]).invoke({"notes": []}, config("c"))  # a copy shares the compiled nodes
    assert len(discovered) == 2 and graph.with_config(tags=["copy"]).resolver is graph.resolver


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_an_effect_of_a_graph_on_another_checkpointer_finds_no_scope(platform: DurablePlatform, face: str) -> None:
    durable = reviewing(Calls(), []).compile(checkpointer=platform.checkpointer)
    other_calls = Calls()
    other = reviewing(other_calls, []).compile(checkpointer=InMemorySaver())
    if face == "sync":
        durable.invoke({"notes": []}, config())  # a run of the thread on the platform before it
        with pytest.raises(NoDurableScopeError, match="runs on InMemorySaver, not on the platform's checkpointer"):
            other.invoke({"notes": []}, config())
    else:
        await durable.ainvoke({"notes": []}, config())
        with pytest.raises(NoDurableScopeError, match="runs on InMemorySaver, not on the platform's checkpointer"):
            await other.ainvoke({"notes": []}, config())
    assert other_calls.n == 0


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_scope_bound_with_the_platform_locator_refuses_a_graph_on_another_checkpointer(
    platform: DurablePlatform, face: str
) -> None:
    """``effect_scope(journal, platform.locator)`` binds the platform's journal whatever saver a graph runs on: its
    locator still refuses a node whose checkpoints live elsewhere, since its effects would be keyed by them."""
    from langgraph_durable_mongodb.journal import effect_scope

    calls = Calls()
    other = reviewing(calls, []).compile(checkpointer=InMemorySaver())
    with effect_scope(platform.journal, platform.locator):
        with pytest.raises(NoDurableScopeError, match="runs on InMemorySaver, not on the platform's checkpointer"):
            if face == "sync":
                other.invoke({"notes": []}, config())
            else:
                await other.ainvoke({"notes": []}, config())
    assert calls.n == 0 and platform.journal.entries("t1") == []


def test_only_durable_graphs_take_the_run_lock(make_platform: Any) -> None:
    platform = make_platform()
    runs = platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"]
    reviewing(Calls(), []).compile(checkpointer=platform.checkpointer).invoke({"notes": []}, config("plain"))
    platform.compile(reviewing(Calls(), [])).invoke({"notes": []}, config("durable"))
    assert sorted(d["thread_id"] for d in runs.find({})) == ["durable"]


def test_a_platform_gone_leaves_nothing_served() -> None:
    """A node finds its platform through its checkpointer (``SaverHooks.effect_scopes``) without that keeping either alive: a
    process opening a platform per request does not accumulate them."""
    import gc
    import weakref

    platform = DurablePlatform.embedded()
    graph = reviewing(Calls(), []).compile(checkpointer=platform.checkpointer)
    graph.invoke({"notes": []}, config())
    gone = weakref.ref(platform)
    del platform, graph
    # A pool thread that just finished a background write (LangGraph's put, the run lock's release) may hold
    # it a moment longer: the reference it keeps until it takes its next work item.
    for _ in range(100):
        gc.collect()
        if gone() is None:
            break
        time.sleep(0.02)
    assert gone() is None



#: A program that opens a platform at module level, as a script does, and leaves it to the interpreter's exit.
QUIET_EXIT = """
import sys
import mongomock
from mongomock_motor import AsyncMongoMockClient
from langgraph_durable_mongodb.platform import DurablePlatform

client = mongomock.MongoClient()
if sys.argv[1] == "sync":
    platform = DurablePlatform(client)
else:
    platform = DurablePlatform(async_client=AsyncMongoMockClient(mock_mongo_client=client))
print("opened")
"""


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_program_that_opened_a_platform_exits_without_noise(face: str) -> None:
    """The platform is served to its nodes without keeping it alive; collected at interpreter exit, that leaves
    nothing on stderr (``weakref.WeakMethod``'s callback printed "Exception ignored" at such an exit)."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", QUIET_EXIT, face], cwd=root, capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "opened\n", "")
