"""An ``at_most_once`` effect whose claim the server applied but whose reply was lost runs once, at once.

The claim is one upsert under a fresh owner; sent again, it returns the entry, ours if the first was
applied, so the journal knows the effect never started. (Before, the run failed with the network error and
every resume raised ``EffectOutcomeUnknownError``, a person's job, for an effect that never ran.) The fault
is injected in the interpreters: the visit is executed, then its reply is replaced by ``AutoReconnect``.
Both forms, sync and async, embedded and on the server tier; real executions and raw entries are read.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.graph import START, StateGraph
from pymongo.errors import AutoReconnect

from langgraph_durable_mongodb.storage.plans import interpreters
from langgraph_durable_mongodb.storage.plans.requests import FindOneAndUpdate
from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.platform import DurablePlatform

from .graphs import Notes

#: Every test runs on ``platform.compile(builder)`` and on ``builder.compile(checkpointer=platform.checkpointer)``.
pytestmark = pytest.mark.both_compile_forms


def lose_the_first_claim_reply(monkeypatch: pytest.MonkeyPatch, journal_collection: str) -> list[str]:
    """The first visit upsert of the journal is applied by the server, then its reply is lost."""
    lost: list[str] = []

    def is_visit(request: Any) -> bool:
        return request.collection == journal_collection and request.upsert and not lost

    sync_original = interpreters.SyncInterpreter._find_one_and_update
    async_original = interpreters.AsyncInterpreter._find_one_and_update

    def sync_lossy(self: Any, request: Any) -> Any:
        answer = sync_original(self, request)
        if is_visit(request):
            lost.append(request.filter["effect_key"])
            raise AutoReconnect("connection closed (the reply was lost)")
        return answer

    async def async_lossy(self: Any, request: Any) -> Any:
        answer = await async_original(self, request)
        if is_visit(request):
            lost.append(request.filter["effect_key"])
            raise AutoReconnect("connection closed (the reply was lost)")
        return answer

    monkeypatch.setitem(interpreters.SyncInterpreter._HANDLERS, FindOneAndUpdate, sync_lossy)
    monkeypatch.setitem(interpreters.AsyncInterpreter._HANDLERS, FindOneAndUpdate, async_lossy)
    return lost


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_claim_whose_reply_was_lost_runs_its_at_most_once_effect_once(
    platform: DurablePlatform, monkeypatch: pytest.MonkeyPatch, face: str
) -> None:
    charges: list[int] = []

    @effect(kind="payment", name="charge", at_most_once=True)
    def charge(cents: int) -> str:
        charges.append(cents)
        return "ch_1"

    @effect(kind="payment", name="charge", at_most_once=True)
    async def acharge(cents: int) -> str:
        charges.append(cents)
        return "ch_1"

    def pay(state: Notes) -> Notes:
        return {"notes": [charge(500)]}

    async def apay(state: Notes) -> Notes:
        return {"notes": [await acharge(500)]}

    builder = StateGraph(Notes)
    builder.add_node("pay", pay if face == "sync" else apay)
    builder.add_edge(START, "pay")
    graph = platform.compile(builder)
    lost = lose_the_first_claim_reply(monkeypatch, platform.journal.collection)
    conf = {"configurable": {"thread_id": "pay-1"}}
    result = graph.invoke({"notes": []}, conf) if face == "sync" else await graph.ainvoke({"notes": []}, conf)
    assert lost == ["1"]  # the fault happened
    assert result["notes"] == ["ch_1"] and charges == [500]
    [entry] = platform.journal.entries("pay-1")
    assert (entry["status"], entry["attempts"], entry["fence"]) == ("completed", 1, 1)
