"""A graph that runs with no checkpointer at all: its effects run for real, unjournaled, when the run says so
(Agent Server's stateless runs carry its mark; any other run opts in), and raise ``NoDurableScopeError`` otherwise:
most often a graph a durable node started from a bare thread pool, which lost the node's context (issue 32 item 4).
A graph on a saver that is not the platform's is still refused (issue 22 item 2)."""

from __future__ import annotations

import asyncio
import logging
import operator
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import NoDurableScopeError
from langgraph_durable_mongodb.journal import SecureLLM, SecureTool, current_effect, effect, unjournaled

from .journal_helpers import Counter, scripted


class State(TypedDict, total=False):
    notes: Annotated[list, operator.add]


def effects_graph(
    charges: Counter, lookups: Counter, model: Any, keys: list[str], saver: Any = None, use_async: bool = False
) -> Any:
    @effect(kind="payment", name="charge", at_most_once=True)
    def charge(cents: int) -> str:
        charges()
        keys.append(current_effect().idempotency_key)
        return f"charged {cents}"

    @tool
    def lookup(ref: str) -> str:
        """Look a reference up."""
        lookups()
        return f"found {ref}"

    llm, secure_lookup = SecureLLM(model), SecureTool(lookup)

    def work(state: State) -> State:
        return {"notes": [charge(100), secure_lookup.invoke({"ref": "P-7"}), llm.invoke("assess").content]}

    async def awork(state: State) -> State:
        reply = await llm.ainvoke("assess")
        return {"notes": [charge(100), await secure_lookup.ainvoke({"ref": "P-7"}), reply.content]}

    graph = StateGraph(State)
    graph.add_node("work", awork if use_async else work)
    graph.add_edge(START, "work")
    return graph.compile(checkpointer=saver, name="stateless-agent")


#: The configs of runs without a checkpointer that mean to run unjournaled.
MEANT = {
    "agent server": {"metadata": {"langgraph_api_version": "0.16.7", "graph_id": "stateless-agent"}},
    "opted in": {"configurable": {"unjournaled": True}},
}


@pytest.mark.parametrize("meant", MEANT.values(), ids=MEANT.keys())
def test_a_run_without_a_checkpointer_runs_its_effects_for_real_and_says_so_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, meant: dict
) -> None:
    monkeypatch.setattr(unjournaled, "_logged", set())  # what earlier tests of this process logged
    charges, lookups, model, keys = Counter(), Counter(), scripted(AIMessage("fine")), []
    graph = effects_graph(charges, lookups, model, keys)
    with caplog.at_level(logging.INFO, logger="langgraph_durable_mongodb"):
        for _ in range(2):
            assert graph.invoke({"notes": []}, meant)["notes"] == ["charged 100", "found P-7", "fine"]
    assert (charges.n, lookups.n, len(model.calls)) == (2, 2, 2)  # every call ran: nothing to replay
    assert len(set(keys)) == 2  # each call its own idempotency key
    said = [r for r in caplog.records if "without a checkpointer" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO


@pytest.mark.parametrize("meant", MEANT.values(), ids=MEANT.keys())
async def test_an_async_run_without_a_checkpointer_runs_its_effects_for_real(meant: dict) -> None:
    charges, lookups, model, keys = Counter(), Counter(), scripted(AIMessage("fine")), []
    graph = effects_graph(charges, lookups, model, keys, use_async=True)
    for _ in range(2):
        assert (await graph.ainvoke({"notes": []}, meant))["notes"] == ["charged 100", "found P-7", "fine"]
    assert (charges.n, lookups.n, len(model.calls), len(set(keys))) == (2, 2, 2, 2)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_run_without_a_checkpointer_that_does_not_say_so_is_refused(mode: str) -> None:
    charges, lookups, model, keys = Counter(), Counter(), scripted(AIMessage("fine")), []
    graph = effects_graph(charges, lookups, model, keys, use_async=mode == "async")
    with pytest.raises(NoDurableScopeError, match="contextvars") as refused:
        graph.invoke({"notes": []}) if mode == "sync" else await graph.ainvoke({"notes": []})
    assert "'unjournaled': True" in str(refused.value)
    assert (charges.n, lookups.n, len(model.calls)) == (0, 0, 0)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_graph_a_durable_node_runs_from_a_bare_thread_pool_is_refused(make_platform: Any, mode: str) -> None:
    """The nested graph lost the node's context (a bare ThreadPoolExecutor copies no contextvars): it looks like
    a run without a checkpointer, and its effects would run unjournaled, again on every resume. They raise."""
    charges, lookups, model, keys = Counter(), Counter(), scripted(AIMessage("fine")), []
    nested = effects_graph(charges, lookups, model, keys)
    pool = ThreadPoolExecutor(1)

    def node(state: State) -> State:
        return {"notes": pool.submit(nested.invoke, {"notes": []}).result()["notes"]}

    async def anode(state: State) -> State:
        done = await asyncio.get_running_loop().run_in_executor(pool, nested.invoke, {"notes": []})
        return {"notes": done["notes"]}

    builder = StateGraph(State)
    builder.add_node("outer", node if mode == "sync" else anode)
    builder.add_edge(START, "outer")
    graph = make_platform().compile(builder)
    config = {"configurable": {"thread_id": f"pool-{mode}"}}
    with pytest.raises(NoDurableScopeError, match="contextvars"):
        graph.invoke({"notes": []}, config) if mode == "sync" else await graph.ainvoke({"notes": []}, config)
    pool.shutdown()
    assert (charges.n, lookups.n, len(model.calls)) == (0, 0, 0)


@pytest.mark.parametrize("opt_in", [False, True], ids=["plain", "saying unjournaled"])
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_run_on_a_saver_that_is_not_the_platform_s_is_still_refused(mode: str, opt_in: bool) -> None:
    """The opt-in is for runs without any checkpointer: one that saves elsewhere is refused even when it says so."""
    charges, lookups, model, keys = Counter(), Counter(), scripted(AIMessage("fine")), []
    graph = effects_graph(charges, lookups, model, keys, saver=InMemorySaver(), use_async=mode == "async")
    config = {"configurable": {"thread_id": "elsewhere", **({"unjournaled": True} if opt_in else {})}}
    with pytest.raises(NoDurableScopeError):
        if mode == "sync":
            graph.invoke({"notes": []}, config)
        else:
            await graph.ainvoke({"notes": []}, config)
    assert (charges.n, lookups.n) == (0, 0)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_an_activity_journal_called_without_a_position_in_an_unjournaled_run_is_refused(mode: str) -> None:
    """A journal the node calls itself, in a run that opted out of journaling: it has nowhere to record, and says
    so with the typed error before running the effect (it crashed with an AttributeError on ``None``)."""
    from langgraph_durable_mongodb import DurablePlatform
    from langgraph_durable_mongodb.journal import ActivityJournal, EffectCall

    journal = ActivityJournal.for_checkpointer(DurablePlatform.embedded(db_name="unjournaled_direct").checkpointer)
    charges = Counter()

    def work(state: State) -> State:
        return {"notes": [journal.run(EffectCall("payment", "charge"), lambda: charges() or "charged")]}

    async def awork(state: State) -> State:
        return {"notes": [await journal.arun(EffectCall("payment", "charge"), lambda: charges() or "charged")]}

    graph = StateGraph(State)
    graph.add_node("work", work if mode == "sync" else awork)
    graph.add_edge(START, "work")
    compiled = graph.compile()
    with pytest.raises(NoDurableScopeError, match="pass position="):
        if mode == "sync":
            compiled.invoke({"notes": []}, MEANT["opted in"])
        else:
            await compiled.ainvoke({"notes": []}, MEANT["opted in"])
    assert charges.n == 0
