"""What a node visit costs in positions, counted as commands on the ordinals collection.

A new occurrence is inserted under the next ordinal of its sequence at once (one
command, no read) whenever that ordinal is known without a query: under an occurrence
allocated by the same lookup (nothing can be beneath it yet), and at the root from
the high water the thread's latest root checkpoint carries (``ordinals``), raised
by what the allocator took since. A guess that turns out taken goes the long way
(read, then insert), so labels stay those of the first-come allocation.
Offline, the requests the allocator's interpreters execute are counted; on the real
servers, pymongo command monitoring counts the commands on the wire.
"""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from pymongo import AsyncMongoClient, MongoClient

from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.platform import DurablePlatform

from .clients import CollectionCommands, count_requests, on_servers, tier_uri

ORDINALS = "operation_ordinals"


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]
    turns: int


@pytest.fixture(params=["embedded", *on_servers("server")])
def counted(request: pytest.FixtureRequest) -> Any:
    """``make(db=None) -> (platform, names)``: a platform (on database ``db`` when given, so a second one plays
    another process on the same data) and the ordinal commands it sends, counted."""
    made: list[Any] = []
    shared: dict[str, Any] = {}

    def make(db: str | None = None) -> tuple[DurablePlatform, list[str]]:
        if request.param == "embedded":
            if db is not None:
                platform = DurablePlatform(shared[db][0], async_client=shared[db][1], db_name=db)
            else:
                platform = DurablePlatform.embedded(db_name="costs")
                shared["costs"] = (platform.checkpointer.client, platform.checkpointer.async_client)
            platform.setup()
            names: list[str] = []
            count_requests(platform.allocator, ORDINALS, names)
            return platform, names
        uri, db_name = tier_uri(request), db or f"t_{uuid.uuid4().hex[:12]}"
        listener = CollectionCommands(db_name, ORDINALS)
        client, async_client = MongoClient(uri, event_listeners=[listener]), AsyncMongoClient(uri, event_listeners=[listener])
        platform = DurablePlatform(client, async_client=async_client, db_name=db_name)
        platform.setup()
        made.append((client, db_name))
        listener.names.clear()
        return platform, listener.names

    yield make
    for client, db_name in made:
        client.drop_database(db_name)
        client.close()


def looping_graph(stop_at: int = 3, ask: bool = False, ran: list[int] | None = None) -> StateGraph:
    """``act`` records an effect each visit and loops back to itself until ``turns`` reaches ``stop_at``; the turns
    the effect really ran for go to ``ran``."""

    @effect(kind="tool", name="act")
    def act(turn: int) -> str:
        if ran is not None:
            ran.append(turn)
        return f"acted {turn}"

    def node(state: State) -> State:
        turn = state.get("turns", 0) + 1
        done = act(turn)
        if ask and turn == stop_at:
            interrupt("confirm")
        return {"notes": [done], "turns": turn}

    graph = StateGraph(State)
    graph.add_node("act", node)
    graph.add_edge(START, "act")
    graph.add_conditional_edges("act", lambda s: "act" if s["turns"] < stop_at else "__end__")
    return graph


def occurrences(platform: DurablePlatform, thread: str) -> list[str]:
    return sorted((d["occurrence"] for d in platform.journal.entries(thread)), key=int)


def test_a_new_visit_costs_one_insert_and_the_latest_checkpoint_carries_the_high_water(counted: Any) -> None:
    platform, names = counted()
    graph = platform.compile(looping_graph())
    config = {"configurable": {"thread_id": "loop"}}
    graph.invoke({"turns": 0}, config)
    assert names == ["insert"] * 3  # a fresh thread: act/1, act/2, act/3, each inserted at once
    latest = platform.checkpointer.client[platform.checkpointer.db_name]["checkpoints"].find_one(
        {"thread_id": "loop", "checkpoint_ns": ""}, sort=[("checkpoint_id", -1)]
    )
    assert latest["ordinals"] == [{"name": "act", "ordinal": 3}]  # raw: names are values, never field names
    names.clear()
    graph.invoke({"turns": 0}, config)  # a second run: the high water comes back with the latest checkpoint
    assert names == ["insert"] * 3
    assert occurrences(platform, "loop") == [str(n) for n in range(1, 7)]


async def test_async_a_new_visit_costs_one_insert(counted: Any) -> None:
    platform, names = counted()
    await platform.asetup()
    names.clear()
    graph = platform.compile(looping_graph())
    await graph.ainvoke({"turns": 0}, {"configurable": {"thread_id": "aloop"}})
    await graph.ainvoke({"turns": 0}, {"configurable": {"thread_id": "aloop"}})
    assert names == ["insert"] * 6
    assert occurrences(platform, "aloop") == [str(n) for n in range(1, 7)]


def test_another_process_continues_from_the_carried_high_water(counted: Any) -> None:
    first, _ = counted()
    graph = first.compile(looping_graph())
    config = {"configurable": {"thread_id": "moved"}}
    graph.invoke({"turns": 0}, config)
    second, names = counted(db=first.checkpointer.db_name)  # a new process: nothing in memory
    second.compile(looping_graph()).invoke({"turns": 0}, config)
    assert names == ["insert"] * 3
    assert occurrences(second, "moved") == [str(n) for n in range(1, 7)]


def test_a_guess_taken_meanwhile_goes_the_long_way_and_keeps_first_come_labels(counted: Any) -> None:
    """The interrupted visit's ordinal was taken after the latest checkpoint was written: its resume in another
    process guesses that ordinal, finds it taken by its own occurrence, and reads it back."""
    first, _ = counted()
    config, ran = {"configurable": {"thread_id": "taken"}}, []
    assert first.compile(looping_graph(stop_at=2, ask=True, ran=ran)).invoke({"turns": 0}, config)["__interrupt__"]
    second, names = counted(db=first.checkpointer.db_name)
    result = second.compile(looping_graph(stop_at=2, ask=True, ran=ran)).invoke(Command(resume="ok"), config)
    assert result["turns"] == 2
    assert names == ["insert", "find"]  # act/2 guessed, taken by this very occurrence: read back, no new label
    assert occurrences(second, "taken") == ["1", "2"]
    assert ran == [1, 2]  # the resumed visit replayed its effect


def test_a_visit_in_a_new_child_occurrence_inserts_each_level_at_once(counted: Any) -> None:
    @effect(kind="tool", name="inspect")
    def inspect(turn: int) -> str:
        return f"inspected {turn}"

    inner = StateGraph(State)
    inner.add_node("review", lambda s: {"notes": [inspect(s.get("turns", 0))]})
    inner.add_edge(START, "review")
    root = StateGraph(State)
    root.add_node("case", inner.compile())
    root.add_edge(START, "case")
    platform, names = counted()
    platform.compile(root).invoke({"turns": 0}, {"configurable": {"thread_id": "nested"}})
    assert names == ["insert", "insert"]  # case/1 (root high water), review/1 beneath it (nothing there yet)
    assert [(d["path"], d["occurrence"]) for d in platform.journal.entries("nested")] == [("agent/1/case/1", "1")]


def test_a_latest_checkpoint_carrying_no_high_water_sends_allocation_the_long_way(counted: Any) -> None:
    """A checkpoint written by a saver without the platform (as import-mongodbsaver writes) carries none: what
    this process remembers of the thread is no longer trusted, so a thread deleted and written again elsewhere
    starts its labels where the database does."""
    platform, names = counted()
    graph = platform.compile(looping_graph())
    config = {"configurable": {"thread_id": "rewritten"}}
    graph.invoke({"turns": 0}, config)  # act/1..3: this process remembers a high water of 3
    elsewhere = type(platform.checkpointer)(platform.checkpointer.client, db_name=platform.checkpointer.db_name)
    platform.allocator.delete_thread("rewritten")
    snapshot = platform.checkpointer.get_tuple(config)  # read here: this process believes a high water of 3
    elsewhere.delete_thread("rewritten")
    elsewhere.put(config, snapshot.checkpoint, snapshot.metadata, {})  # rewritten, carrying nothing
    names.clear()
    graph.invoke({"turns": 0}, config)
    assert occurrences(platform, "rewritten")[-3:] == ["1", "2", "3"]  # not 4, 5, 6
