"""What the journal sends per effect in a real run, counted as wire commands on its collection.

Under the run lock (a ``DurableGraph``) no other run can meet a position, so an
at-least-once effect is not claimed first: its entry is written once, when it
ends (1 command), and a re-run node replays from the entries it read at once
(1 command per node attempt, 0 per effect). An ``at_most_once`` effect keeps its
claim (2 commands), and so does every effect of a run that does not hold the
run lock (``exclusive_runs=False``, or the plain ``compile(checkpointer=...)``).
Offline, the requests the journal's interpreters execute are counted; on the real
servers, pymongo command monitoring counts the commands on the wire.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langgraph.graph import START, StateGraph
from pymongo import AsyncMongoClient, MongoClient

from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.platform import DurablePlatform

from .clients import CollectionCommands, count_requests, on_servers, tier_uri
from .graphs import EFFECTS, Notes, three_effects


@pytest.fixture(params=["embedded", *on_servers("server")])
def counted(request: pytest.FixtureRequest) -> Any:
    """``make(**options) -> (platform, names)``: a platform and the journal commands it sends, counted."""
    made: list[Any] = []

    def make(**options: Any) -> tuple[DurablePlatform, list[str]]:
        if request.param == "embedded":
            platform = DurablePlatform.embedded(**options)
            platform.setup()
            names: list[str] = []
            count_requests(platform.journal, "activity_journal", names)
            return platform, names
        uri, db_name = tier_uri(request), f"t_{uuid.uuid4().hex[:12]}"
        listener = CollectionCommands(db_name, "activity_journal")
        client, async_client = MongoClient(uri, event_listeners=[listener]), AsyncMongoClient(uri, event_listeners=[listener])
        platform = DurablePlatform(client, async_client=async_client, db_name=db_name, **options)
        platform.setup()
        made.append((client, db_name))
        listener.names.clear()
        return platform, listener.names

    yield make
    for client, db_name in made:
        client.drop_database(db_name)
        client.close()


def run_twice(platform: DurablePlatform, graph: Any, names: list[str]) -> tuple[list[str], list[str]]:
    """The journal commands of a first run that fails after its effects, and of the resume that replays them."""
    config = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:6]}"}}
    with pytest.raises(ConnectionError):
        graph.invoke({"notes": []}, config)
    first = list(names)
    names.clear()
    assert graph.invoke(None, config)["notes"] == ["found 0", "found 1", "found 2"]
    return first, list(names)


def test_under_the_run_lock_an_effect_costs_one_command_and_a_replay_none(counted: Any) -> None:
    platform, names = counted()
    first, resume = run_twice(platform, platform.compile(three_effects(fail_once=[True])), names)
    assert first == ["findAndModify"] * EFFECTS  # each entry written once, when its effect ended
    assert resume == ["find"]  # the node attempt's entries, read at once; every effect replayed from them


async def test_async_under_the_run_lock_an_effect_costs_one_command(counted: Any) -> None:
    platform, names = counted()
    await platform.asetup()  # the async face's indexes, created on its first use otherwise
    names.clear()

    @effect(kind="tool", name="lookup")
    async def lookup(ref: str) -> str:
        return f"found {ref}"

    async def node(state: Notes) -> Notes:
        return {"notes": [await lookup(str(i)) for i in range(EFFECTS)]}

    graph = StateGraph(Notes)
    graph.add_node("work", node)
    graph.add_edge(START, "work")
    await platform.compile(graph).ainvoke({"notes": []}, {"configurable": {"thread_id": "async"}})
    assert names == ["findAndModify"] * EFFECTS


def test_an_at_most_once_effect_keeps_its_claim(counted: Any) -> None:
    platform, names = counted()
    first, resume = run_twice(platform, platform.compile(three_effects(at_most_once=True, fail_once=[True])), names)
    assert first == ["findAndModify", "update"] * EFFECTS  # claim, then the fenced record
    assert resume == ["find"] + ["findAndModify"] * EFFECTS  # a visit each: the claim path replays


def test_claim_always_claims_under_the_run_lock_too(counted: Any) -> None:
    """``claim_always``: the claim the run lock lets an at-least-once effect skip is sent, one command more each."""
    platform, names = counted(journal_options={"claim_always": True})
    first, resume = run_twice(platform, platform.compile(three_effects(fail_once=[True])), names)
    assert first == ["findAndModify", "update"] * EFFECTS
    assert resume == ["find"] + ["findAndModify"] * EFFECTS


@pytest.mark.parametrize("form", ["exclusive_runs=False", "plain compile"])
def test_without_the_run_lock_every_effect_is_claimed(counted: Any, form: str) -> None:
    if form == "plain compile":
        platform, names = counted()
        graph = three_effects(fail_once=[True]).compile(checkpointer=platform.checkpointer)
    else:
        platform, names = counted(exclusive_runs=False)
        graph = platform.compile(three_effects(fail_once=[True]))
    first, resume = run_twice(platform, graph, names)
    assert first == ["findAndModify", "update"] * EFFECTS
    assert resume == ["find"] + ["findAndModify"] * EFFECTS
