"""Long-term memory beside the checkpointer: ``langgraph-store-mongodb``'s ``MongoDBStore`` on the same client.

One graph writes to the store in a node that also runs a journaled effect and
stops at an interrupt; a new platform and a new store (a restarted process) on
the same database resume it. The node runs again on resume: the effect is
replayed (1 real execution), the store write lands once, and the next node
reads it back. On the real-server tier only, sync and async: ``MongoDBStore`` creates its
index with ``create_index(keys=...)``, which mongomock does not accept.
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from langgraph.store.base import BaseStore
from langgraph.store.mongodb import MongoDBStore
from langgraph.types import Command, interrupt

from langgraph_durable_mongodb.journal import effect

from .clients import on_servers
from .journal_helpers import Counter

MEMORIES = "memories"


class State(TypedDict, total=False):
    user: str
    approved: str
    recalled: dict


def builder(charges: Counter) -> StateGraph:
    @effect(kind="payment", name="charge_card")
    def charge(user: str) -> str:
        charges()
        return f"charged {user}"

    def remember(state: State, *, store: BaseStore) -> State:
        receipt = charge(state["user"])
        store.put(("users", state["user"]), "prefs", {"tone": "brief", "receipt": receipt})
        return {"approved": interrupt("approve the charge?")}

    def recall(state: State, *, store: BaseStore) -> State:
        item = store.get(("users", state["user"]), "prefs")
        return {"recalled": item.value}

    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("recall", recall)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "recall")
    return graph


def store_on(platform: Any) -> MongoDBStore:
    """The store on the platform's own sync client and database (a sibling collection)."""
    saver = platform.checkpointer
    return MongoDBStore(saver.client[saver.db_name][MEMORIES])


@pytest.mark.parametrize("make_platform", on_servers("server"), indirect=True)
@pytest.mark.parametrize("form", ["sync", "async"])
async def test_a_store_write_in_a_node_is_read_back_after_a_resume(make_platform: Any, form: str) -> None:
    charges = Counter()
    config = {"configurable": {"thread_id": "user-7"}}

    first = make_platform()
    graph = first.compile(builder(charges), store=store_on(first))
    if form == "sync":
        stopped = graph.invoke({"user": "ann"}, config)
    else:
        stopped = await graph.ainvoke({"user": "ann"}, config)
    assert stopped["__interrupt__"][0].value == "approve the charge?"
    assert charges.n == 1

    # A new process: a new platform and a new store, on the same database.
    second = make_platform()
    graph = second.compile(builder(charges), store=store_on(second))
    if form == "sync":
        final = graph.invoke(Command(resume="yes"), config)
    else:
        final = await graph.ainvoke(Command(resume="yes"), config)

    assert final["approved"] == "yes"
    assert final["recalled"] == {"tone": "brief", "receipt": "charged ann"}
    assert charges.n == 1, "the resumed node replayed the charge instead of running it again"
    saver = second.checkpointer
    stored = list(saver.client[saver.db_name][MEMORIES].find({}, {"_id": 0, "namespace": 1, "key": 1, "value": 1}))
    assert stored == [{"namespace": ["users", "ann"], "key": "prefs", "value": {"tone": "brief", "receipt": "charged ann"}}]
