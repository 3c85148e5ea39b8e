"""What a node visit costs in positions: no command; the journal reads a visit's entries only when another run
may have met it.

A visit is keyed by LangGraph's identity of the work (``resolver/visit.py``): the root checkpoint its task was
prepared from, and its steps inside compiled children. Naming it costs nothing. The journal reads the visit's
entries (one ``find``) unless the visit is new: its root checkpoint was written by this process's run and read by
no other since, and no task on its path is past its first attempt. Offline, the requests the journal's
interpreters execute on its collection are counted; on the real servers, pymongo command monitoring counts the
commands on the wire.
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

JOURNAL = "activity_journal"


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]
    turns: int


@pytest.fixture(params=["embedded", *on_servers("server")])
def counted(request: pytest.FixtureRequest) -> Any:
    """``make(db=None) -> (platform, commands)``: a platform (on database ``db`` when given, so a second one plays
    another process on the same data) and the commands it sends to the journal's collection, named."""
    made: list[Any] = []
    shared: dict[str, Any] = {}

    def make(db: str | None = None) -> tuple[DurablePlatform, list[str]]:
        names: list[str]
        if request.param == "embedded":
            if db is not None:
                platform = DurablePlatform(shared[db][0], async_client=shared[db][1], db_name=db)
            else:
                platform = DurablePlatform.embedded(db_name="costs")
                shared["costs"] = (platform.checkpointer.client, platform.checkpointer.async_client)
            platform.setup()
            names = []
            count_requests(platform.journal, JOURNAL, names)
        else:
            uri, db_name = tier_uri(request), db or f"t_{uuid.uuid4().hex[:12]}"
            listener = CollectionCommands(db_name, JOURNAL)
            client, async_client = MongoClient(uri, event_listeners=[listener]), AsyncMongoClient(uri, event_listeners=[listener])
            platform = DurablePlatform(client, async_client=async_client, db_name=db_name)
            platform.setup()
            made.append((client, db_name))
            names = listener.names
        return platform, names

    yield make
    for client, db_name in made:
        client.drop_database(db_name)
        client.close()


def finds(commands: list[str]) -> list[str]:
    """The reads among the commands sent to the journal's collection."""
    return [name for name in commands if name == "find"]


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


def raw_entries(platform: DurablePlatform, thread: str) -> list[dict[str, Any]]:
    return list(platform.checkpointer.client[platform.checkpointer.db_name][JOURNAL].find({"thread_id": thread, "chunk": 0}))


def test_a_new_visit_costs_no_command_and_is_keyed_by_its_root_checkpoint(counted: Any) -> None:
    platform, commands = counted()
    graph = platform.compile(looping_graph())
    config = {"configurable": {"thread_id": "loop"}}
    graph.invoke({"turns": 0}, config)
    assert finds(commands) == []  # act/1, act/2, act/3: each visit's checkpoint was written by this run
    graph.invoke({"turns": 0}, config)  # a second run: new checkpoints, new visits
    assert finds(commands) == []
    assert occurrences(platform, "loop") == [str(n) for n in range(1, 7)]
    checkpoints = platform.checkpointer.client[platform.checkpointer.db_name]["checkpoints"]
    roots = {d["checkpoint_id"] for d in checkpoints.find({"thread_id": "loop", "checkpoint_ns": ""})}
    # raw: a root-level visit's occurrence is the root checkpoint its task was prepared from, which a keep_latest
    # sweep prunes its entries with (root_key)
    entries = raw_entries(platform, "loop")
    assert len({e["occurrence"] for e in entries}) == 6
    assert all(e["path"] == "agent/1" and e["occurrence"] == e["root_key"] and e["root_key"] in roots for e in entries)


async def test_async_a_new_visit_costs_no_command(counted: Any) -> None:
    platform, commands = counted()
    await platform.asetup()
    graph = platform.compile(looping_graph())
    await graph.ainvoke({"turns": 0}, {"configurable": {"thread_id": "aloop"}})
    await graph.ainvoke({"turns": 0}, {"configurable": {"thread_id": "aloop"}})
    assert finds(commands) == []
    assert occurrences(platform, "aloop") == [str(n) for n in range(1, 7)]


def test_another_process_s_new_visits_read_their_node_s_entries_once_to_number_them(counted: Any) -> None:
    """A process taking up a thread another process ran last cannot know how many visits of ``act`` came before:
    the first of its visits reads the entries of ``act`` once (their labels), the others cost no command; each
    stores its label, numbered after the first process's."""
    first, _ = counted()
    graph = first.compile(looping_graph())
    config = {"configurable": {"thread_id": "moved"}}
    graph.invoke({"turns": 0}, config)
    second, commands = counted(db=first.checkpointer.db_name)  # a new process: nothing in memory
    second.compile(looping_graph()).invoke({"turns": 0}, config)
    assert finds(commands) == ["find"]  # its run wrote the checkpoints its visits were prepared from: no visit read
    second.compile(looping_graph()).invoke({"turns": 0}, config)  # its own thread now: its labels are known
    assert finds(commands) == ["find"]
    assert sorted(int(e["label"]["occurrence"]) for e in raw_entries(second, "moved")) == list(range(1, 10))
    assert occurrences(second, "moved") == [str(n) for n in range(1, 10)]


def test_a_visit_resumed_in_another_process_reads_its_entries_once_and_replays(counted: Any) -> None:
    """The interrupted visit's checkpoint was written by the first process: its resume in another one reads the
    visit's entries and, to number it, those of its node (two finds, side by side: one round trip on the async
    face) and replays its effect."""
    first, _ = counted()
    config, ran = {"configurable": {"thread_id": "taken"}}, []
    assert first.compile(looping_graph(stop_at=2, ask=True, ran=ran)).invoke({"turns": 0}, config)["__interrupt__"]
    second, commands = counted(db=first.checkpointer.db_name)
    result = second.compile(looping_graph(stop_at=2, ask=True, ran=ran)).invoke(Command(resume="ok"), config)
    assert result["turns"] == 2
    assert finds(commands) == ["find", "find"]
    assert occurrences(second, "taken") == ["1", "2"]
    assert ran == [1, 2]  # the resumed visit replayed its effect


def test_a_visit_in_a_new_child_costs_no_command(counted: Any) -> None:
    @effect(kind="tool", name="inspect")
    def inspect(turn: int) -> str:
        return f"inspected {turn}"

    inner = StateGraph(State)
    inner.add_node("review", lambda s: {"notes": [inspect(s.get("turns", 0))]})
    inner.add_edge(START, "review")
    root = StateGraph(State)
    root.add_node("case", inner.compile())
    root.add_edge(START, "case")
    platform, commands = counted()
    platform.compile(root).invoke({"turns": 0}, {"configurable": {"thread_id": "nested"}})
    assert finds(commands) == []
    assert [(d["path"], d["occurrence"]) for d in platform.journal.entries("nested")] == [("agent/1/case/1", "1")]
    (raw,) = raw_entries(platform, "nested")
    assert (raw["path"], raw["occurrence"]) == (f"agent/1/case/{raw['root_key']}", "s1")  # the child's step 1


def test_a_thread_reused_after_delete_gets_new_visits_though_this_process_remembers_it(counted: Any) -> None:
    """Nothing a process remembers names a visit: the thread deleted (here by another process) and run again
    meets only new visits, whose effects run."""
    platform, _ = counted()
    ran: list[int] = []
    graph = platform.compile(looping_graph(ran=ran))
    config = {"configurable": {"thread_id": "rewritten"}}
    graph.invoke({"turns": 0}, config)
    before = {e["occurrence"] for e in raw_entries(platform, "rewritten")}
    type(platform.checkpointer)(platform.checkpointer.client, db_name=platform.checkpointer.db_name).delete_thread("rewritten")
    graph.invoke({"turns": 0}, config)
    assert ran == [1, 2, 3, 1, 2, 3]
    assert occurrences(platform, "rewritten") == ["1", "2", "3"]
    assert not before & {e["occurrence"] for e in raw_entries(platform, "rewritten")}


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_an_edit_in_another_process_as_the_interrupted_node_makes_its_next_visit_new(counted: Any, face: str) -> None:
    """The edit made as ``act`` at its interrupt completes that visit: ``act``'s next visit is a new one, prepared
    from the edit's checkpoint, and its effect runs instead of replaying the first visit's."""
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
