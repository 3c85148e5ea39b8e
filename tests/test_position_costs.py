"""What a node visit costs in positions, counted as commands on the ordinals collection.

A root-level occurrence costs none: its ordinal is one more than the high water the
root checkpoint its task was prepared from carries (``ordinals``), and it is new when
this process wrote that checkpoint in the run (the journal then reads nothing either).
Beneath it, a new occurrence is inserted under the next ordinal of its sequence at once
(one command, no read) when that ordinal is known without a query: under an occurrence
new in the same lookup (nothing can be beneath it yet). A checkpoint carrying no high
water (written without the platform) sends root allocation the long way (read, then
insert). Offline, the requests the allocator's interpreters execute are counted; on the
real servers, pymongo command monitoring counts the commands on the wire.
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


def test_a_new_visit_costs_no_command_and_the_latest_checkpoint_carries_the_high_water(counted: Any) -> None:
    platform, names = counted()
    graph = platform.compile(looping_graph())
    config = {"configurable": {"thread_id": "loop"}}
    graph.invoke({"turns": 0}, config)
    assert names == []  # a fresh thread: act/1, act/2, act/3, each numbered from its checkpoint
    latest = platform.checkpointer.client[platform.checkpointer.db_name]["checkpoints"].find_one(
        {"thread_id": "loop", "checkpoint_ns": ""}, sort=[("checkpoint_id", -1)]
    )
    assert latest["ordinals"] == [{"name": "act", "ordinal": 3}]  # raw: names are values, never field names
    names.clear()
    graph.invoke({"turns": 0}, config)  # a second run: the high water comes back with the latest checkpoint
    assert names == []
    assert occurrences(platform, "loop") == [str(n) for n in range(1, 7)]
    checkpoints = platform.checkpointer.client[platform.checkpointer.db_name]["checkpoints"]
    roots = {d["checkpoint_id"] for d in checkpoints.find({"thread_id": "loop", "checkpoint_ns": ""})}
    # raw: each entry names the root checkpoint its occurrence is keyed by, which a keep_latest sweep prunes with
    assert all(e["root_key"] in roots for e in platform.journal.entries("loop"))


async def test_async_a_new_visit_costs_no_command(counted: Any) -> None:
    platform, names = counted()
    await platform.asetup()
    names.clear()
    graph = platform.compile(looping_graph())
    await graph.ainvoke({"turns": 0}, {"configurable": {"thread_id": "aloop"}})
    await graph.ainvoke({"turns": 0}, {"configurable": {"thread_id": "aloop"}})
    assert names == []
    assert occurrences(platform, "aloop") == [str(n) for n in range(1, 7)]


def test_another_process_continues_from_the_carried_high_water(counted: Any) -> None:
    first, _ = counted()
    graph = first.compile(looping_graph())
    config = {"configurable": {"thread_id": "moved"}}
    graph.invoke({"turns": 0}, config)
    second, names = counted(db=first.checkpointer.db_name)  # a new process: nothing in memory
    second.compile(looping_graph()).invoke({"turns": 0}, config)
    assert names == []
    assert occurrences(second, "moved") == [str(n) for n in range(1, 7)]


def test_a_visit_resumed_in_another_process_takes_its_ordinal_from_its_checkpoint_and_replays(counted: Any) -> None:
    """The interrupted visit's ordinal was taken after the latest checkpoint was written: its resume in another
    process numbers it from that checkpoint again, and replays its effect."""
    first, _ = counted()
    config, ran = {"configurable": {"thread_id": "taken"}}, []
    assert first.compile(looping_graph(stop_at=2, ask=True, ran=ran)).invoke({"turns": 0}, config)["__interrupt__"]
    second, names = counted(db=first.checkpointer.db_name)
    result = second.compile(looping_graph(stop_at=2, ask=True, ran=ran)).invoke(Command(resume="ok"), config)
    assert result["turns"] == 2
    assert names == []  # act/2 again, from the checkpoint it was prepared from
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
    assert names == ["insert"]  # case/1 from its checkpoint, review/1 inserted beneath it (nothing there yet)
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


def test_a_checkpoint_carries_what_was_taken_before_it_and_never_what_its_own_tasks_took() -> None:
    """LangGraph may store a checkpoint after its tasks (and later steps) took their ordinals (``durability="async"``,
    a sync node on an event loop): what it carries must not count them, or a resume from it would number its tasks'
    occurrences one further and run their effects again."""
    from langgraph_durable_mongodb.resolver.high_water import RootHighWater

    water = RootHighWater()
    water.learn("t", [{"name": "agent", "ordinal": 2}])
    water.took("t", "cp-3", "agent", 3)  # agent/3, keyed by cp-3
    water.took("t", "cp-5", "tools", 1)  # a later step ran before cp-4 was stored
    assert water.stamp("t", "cp-3") == [{"name": "agent", "ordinal": 2}]  # its own task's take does not count
    assert water.stamp("t", "cp-4") == [{"name": "agent", "ordinal": 3}]  # nor a later step's
    assert water.stamp("t", "cp-6") == [{"name": "agent", "ordinal": 3}, {"name": "tools", "ordinal": 1}]
    water.learn("t", None, fresh=True)  # the thread was deleted and starts again: nothing of its earlier life
    assert water.stamp("t", "cp-9") == []


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_an_edit_in_another_process_as_the_interrupted_node_makes_its_next_visit_new(counted: Any, face: str) -> None:
    """The interrupted ``act/1`` took its ordinal in the first process only; the edit made as ``act`` in a second
    one still counts it taken (from what the edited checkpoint carries), so ``act``'s next visit is ``act/2`` and
    its effect runs, instead of replaying the first visit's."""
    first, _ = counted()
    config, ran = {"configurable": {"thread_id": f"edited-{face}"}}, []
    graph = first.compile(looping_graph(stop_at=1, ask=True, ran=ran))
    second, _ = counted(db=first.checkpointer.db_name)
    again = second.compile(looping_graph(stop_at=2, ask=True, ran=ran))
    if face == "sync":
        assert graph.invoke({"turns": 0}, config)["__interrupt__"]
        again.update_state(config, {"turns": 1}, as_node="act")
        assert again.invoke(None, config)["__interrupt__"]
    else:
        assert (await graph.ainvoke({"turns": 0}, config))["__interrupt__"]
        await again.aupdate_state(config, {"turns": 1}, as_node="act")
        assert (await again.ainvoke(None, config))["__interrupt__"]
    assert ran == [1, 2]
    assert occurrences(second, config["configurable"]["thread_id"]) == ["1", "2"]
