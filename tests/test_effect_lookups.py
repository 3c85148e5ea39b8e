"""How often one journaled effect looks its run up: ``get_config()`` (the node's config) and
``current_effect_scope()`` (its scope), counted by patching every module of the package that calls them.

Issue 35 gives a task attempt one run context, made at its first effect and kept: these counts are the measure
of that work. The bounds are today's counts; a change that adds a look-up fails here, and the run context lowers
them (then lower the bounds with it)."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb.journal import SecureLLM
from langgraph_durable_mongodb.platform import DurablePlatform

from .graphs import State, config
from .journal_helpers import scripted

LOOKUPS = ("get_config", "current_effect_scope")


def _count_lookups(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    counts: Counter[str] = Counter()
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("langgraph_durable_mongodb"):
            continue
        for name in LOOKUPS:
            original = vars(module).get(name)
            if callable(original):
                monkeypatch.setattr(module, name, _counted(original, name, counts))
    return counts


def _counted(original: Any, name: str, counts: Counter[str]) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return original(*args, **kwargs)

    return counted


def test_a_sync_effect_looks_its_run_up_a_bounded_number_of_times(platform: DurablePlatform, monkeypatch: pytest.MonkeyPatch) -> None:
    model = scripted(AIMessage("first"), AIMessage("second"))
    llm = SecureLLM(model)
    per_call: list[Counter[str]] = []
    counts = _count_lookups(monkeypatch)

    def agent(state: State) -> State:
        replies = []
        for prompt in ("one", "two"):
            before = Counter(counts)
            replies.append(llm.invoke(prompt).content)
            per_call.append(counts - before)
        return {"notes": replies}

    graph = platform.compile(StateGraph(State).add_node("agent", agent).add_edge(START, "agent"))
    assert graph.invoke({"notes": []}, config())["notes"] == ["first", "second"]
    assert len(model.calls) == 2
    _within_bounds(per_call)


async def test_an_async_effect_looks_its_run_up_a_bounded_number_of_times(
    platform: DurablePlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = scripted(AIMessage("first"), AIMessage("second"))
    llm = SecureLLM(model)
    per_call: list[Counter[str]] = []
    counts = _count_lookups(monkeypatch)

    async def agent(state: State) -> State:
        replies = []
        for prompt in ("one", "two"):
            before = Counter(counts)
            replies.append((await llm.ainvoke(prompt)).content)
            per_call.append(counts - before)
        return {"notes": replies}

    graph = platform.compile(StateGraph(State).add_node("agent", agent).add_edge(START, "agent"))
    assert (await graph.ainvoke({"notes": []}, config()))["notes"] == ["first", "second"]
    assert len(model.calls) == 2
    _within_bounds(per_call)


def _within_bounds(per_call: list[Counter[str]]) -> None:
    first, later = per_call
    assert first["get_config"] >= 1 and first["current_effect_scope"] >= 1, "the patch counted nothing"
    assert first["get_config"] <= GET_CONFIG_FIRST_EFFECT and later["get_config"] <= GET_CONFIG_LATER_EFFECT, per_call
    assert max(call["current_effect_scope"] for call in per_call) <= SCOPE_LOOKUPS_PER_CALL, per_call


#: Today's counts (main before issue 35's run context): the wrapper and the journal each look the scope up, and
#: the scope, the attempt's task, the node and its trail each read the node's config.
GET_CONFIG_FIRST_EFFECT = 5
GET_CONFIG_LATER_EFFECT = 3
SCOPE_LOOKUPS_PER_CALL = 2
