"""A resume follows the recorded history: a failure the node handled is raised again, not run again.

Each test runs a real graph on both forms (``platform.compile(builder)`` and
``builder.compile(checkpointer=platform.checkpointer)``), embedded and on the
server tier, and counts the real executions of the effect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.types import RetryPolicy

from langgraph_durable_mongodb import RecordedFailureError
from langgraph_durable_mongodb.journal import SecureLLM, SecureTool, effect
from langgraph_durable_mongodb.platform import DurablePlatform

from .graphs import Notes

#: Every test runs on ``platform.compile(builder)`` and on ``builder.compile(checkpointer=platform.checkpointer)``.
pytestmark = pytest.mark.both_compile_forms


class PSPTimeout(Exception):
    """The payment provider did not answer in time (whether it charged is unknown to the caller)."""


class Crash(Exception):
    """The worker dies after the node handled the timeout."""


def config(thread: str = "pay-1") -> dict:
    return {"configurable": {"thread_id": thread}}


class PSP:
    """A payment provider whose first call times out; every real call is counted and gets a fresh charge id."""

    def __init__(self, failures: int = 1) -> None:
        self.calls, self.failures = 0, failures

    def charge(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise PSPTimeout(f"no answer to call {self.calls}")
        return f"ch_{self.calls - self.failures}"


class FlakyModel(GenericFakeChatModel):
    """A chat model calling the PSP: its first call raises ``PSPTimeout``."""

    psp: Any = None

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.psp.charge()))])


def charger(kind: str, psp: PSP, at_most_once: bool, is_async: bool) -> Callable[[], Any]:
    """A zero-argument call of the PSP through ``kind`` (``effect``, ``tool`` or ``llm``), sync or async."""
    if kind == "effect":
        if is_async:

            @effect(kind="payment", name="charge", at_most_once=at_most_once)
            async def acharge() -> str:
                return psp.charge()

            return acharge

        @effect(kind="payment", name="charge", at_most_once=at_most_once)
        def charge() -> str:
            return psp.charge()

        return charge
    if kind == "tool":

        @tool("charge")
        def charge_tool(amount: int) -> str:
            """Charge the card."""
            return psp.charge()

        secure = SecureTool(charge_tool, at_most_once=at_most_once)
        return (lambda: secure.ainvoke({"amount": 5})) if is_async else (lambda: secure.invoke({"amount": 5}))
    llm = SecureLLM(FlakyModel(messages=iter([]), psp=psp))

    async def ask() -> str:
        return (await llm.ainvoke("charge 5")).content

    return ask if is_async else (lambda: llm.invoke("charge 5").content)


def handling_graph(call: Callable[[], Any], is_async: bool, crash: list[bool]) -> StateGraph:
    """A node that catches ``PSPTimeout`` and charges again, then crashes once (``crash``)."""

    def pay(state: Notes) -> Notes:
        try:
            receipt = call()
        except PSPTimeout:
            receipt = "retried " + call()
        if crash:
            crash.clear()
            raise Crash("worker lost")
        return {"notes": [receipt]}

    async def apay(state: Notes) -> Notes:
        try:
            receipt = await call()
        except PSPTimeout:
            receipt = "retried " + await call()
        if crash:
            crash.clear()
            raise Crash("worker lost")
        return {"notes": [receipt]}

    graph = StateGraph(Notes)
    graph.add_node("pay", apay if is_async else pay)
    graph.add_edge(START, "pay")
    return graph


async def run(graph: Any, inputs: Any, is_async: bool) -> Any:
    return await graph.ainvoke(inputs, config()) if is_async else graph.invoke(inputs, config())


KINDS = [("effect", True), ("effect", False), ("tool", True), ("tool", False), ("llm", False)]


@pytest.mark.parametrize("face", ["sync", "async"])
@pytest.mark.parametrize(("kind", "at_most_once"), KINDS)
async def test_a_handled_failure_is_raised_again_on_resume(
    platform: DurablePlatform, kind: str, at_most_once: bool, face: str
) -> None:
    is_async = face == "async"
    psp = PSP()
    graph = platform.compile(handling_graph(charger(kind, psp, at_most_once, is_async), is_async, [True]))
    with pytest.raises(Crash):
        await run(graph, {"notes": []}, is_async)
    assert psp.calls == 2  # the timeout, then the charge the node made after handling it
    result = await run(graph, None, is_async)
    assert result["notes"] == ["retried ch_1"]  # the same path: the node caught the same PSPTimeout again
    assert psp.calls == 2  # nothing ran again: no second charge under another key
    entries = sorted(platform.journal.entries("pay-1"), key=lambda e: e["effect_key"])
    assert [(e["effect_key"], e["status"]) for e in entries] == [("1", "failed"), ("2", "completed")]
    assert entries[0]["error"]["type"] == "PSPTimeout" and entries[0]["error"]["issued"] == 1


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_failure_that_ended_the_attempt_runs_again(platform: DurablePlatform, face: str) -> None:
    """Handled, then a second timeout the node did not catch: a resume raises the first again and runs the second."""
    is_async = face == "async"
    psp = PSP(failures=2)
    graph = platform.compile(handling_graph(charger("effect", psp, False, is_async), is_async, []))
    with pytest.raises(PSPTimeout):
        await run(graph, {"notes": []}, is_async)
    assert psp.calls == 2
    assert (await run(graph, None, is_async))["notes"] == ["retried ch_1"]
    assert psp.calls == 3  # effect #1 replayed its failure; effect #2, which ended the attempt, ran again


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_retry_policy_attempt_runs_a_failed_effect_again(platform: DurablePlatform, face: str) -> None:
    is_async = face == "async"
    psp = PSP(failures=1)
    call = charger("effect", psp, True, is_async)

    def pay(state: Notes) -> Notes:
        return {"notes": [call()]}

    async def apay(state: Notes) -> Notes:
        return {"notes": [await call()]}

    builder = StateGraph(Notes)
    retry = RetryPolicy(max_attempts=3, initial_interval=0.01, jitter=False, retry_on=PSPTimeout)
    builder.add_node("pay", apay if is_async else pay, retry_policy=retry)
    builder.add_edge(START, "pay")
    result = await run(platform.compile(builder), {"notes": []}, is_async)
    assert result["notes"] == ["ch_1"] and psp.calls == 2


class _Local(Exception):
    pass


async def test_a_handled_failure_whose_type_cannot_be_rebuilt_raises_a_typed_error(
    platform: DurablePlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    local = _Local  # the node keeps the class; the module loses it below

    @effect(kind="payment", name="charge")
    def charge() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise local("no answer")
        return "ch_1"

    crash = [True]

    def pay(state: Notes) -> Notes:
        try:
            receipt = charge()
        except local:
            receipt = charge()
        if crash:
            crash.clear()
            raise Crash("worker lost")
        return {"notes": [receipt]}

    builder = StateGraph(Notes)
    builder.add_node("pay", pay)
    builder.add_edge(START, "pay")
    graph = platform.compile(builder)
    with pytest.raises(Crash):
        graph.invoke({"notes": []}, config())
    monkeypatch.delattr(f"{__name__}._Local")  # the recorded type no longer imports
    with pytest.raises(RecordedFailureError) as raised:
        graph.invoke(None, config())
    assert raised.value.error_type == f"{__name__}._Local" and raised.value.position.effect_key == "1"
    assert len(calls) == 2
