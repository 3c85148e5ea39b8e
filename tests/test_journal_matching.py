"""Effects started concurrently get their own outcomes on replay, whatever order they start in.

Within a node attempt an effect without a key of its own (not a tool call)
takes the next ordinal when it starts. Effects started from threads or tasks
(``batch``, a pool under ``contextvars.copy_context()``, ``asyncio.gather``)
start in another order on the next run, so the journal matches each one to the
entry recorded for its own input first. Each test counts real executions.
"""

from __future__ import annotations

import asyncio
import contextvars
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from langgraph_durable_mongodb import NoDurableScopeError
from langgraph_durable_mongodb.journal import NodePosition, SecureLLM, effect
from langgraph_durable_mongodb.journal.attempt import Attempt, CallSignature
from langgraph_durable_mongodb.platform import DurablePlatform


class Prices(TypedDict, total=False):
    order: list[str]
    prices: dict[str, str]


def config(thread: str = "quote-1") -> dict:
    return {"configurable": {"thread_id": thread}}


class Priced:
    """Counts real executions of ``price`` per item."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, item: str) -> str:
        self.calls.append(item)
        return f"price of {item}"


def one_node_graph(node: Any) -> StateGraph:
    graph = StateGraph(Prices)
    graph.add_node("quote", node)
    graph.add_edge(START, "quote")
    return graph


def in_threads(order: list[str], run: Any) -> dict[str, str]:
    """``run(item)`` for each item on a pool thread under a copy of the node's context, in ``order``."""
    with ThreadPoolExecutor(max_workers=len(order)) as pool:
        return {item: pool.submit(contextvars.copy_context().run, run, item).result() for item in order}


def test_effects_started_from_threads_in_another_order_replay_their_own_outcomes(platform: DurablePlatform) -> None:
    priced, runs = Priced(), []

    @effect(kind="quote", name="price")
    def price(item: str) -> str:
        return priced(item)

    def quote(state: Prices) -> Prices:
        runs.append(1)
        order = ["A", "B"] if len(runs) == 1 else ["B", "A"]  # the threads start the other way round on resume
        prices = in_threads(order, price)
        if len(runs) == 1:
            raise ConnectionError("worker lost after both quotes")
        return {"prices": prices}

    graph = platform.compile(one_node_graph(quote))
    with pytest.raises(ConnectionError):
        graph.invoke({}, config())
    assert graph.invoke(None, config())["prices"] == {"A": "price of A", "B": "price of B"}
    assert priced.calls == ["A", "B"]


def test_effects_called_in_another_order_on_resume_replay_their_own_outcomes(platform: DurablePlatform) -> None:
    priced, runs = Priced(), []

    @effect(kind="quote", name="price")
    def price(item: str) -> str:
        return priced(item)

    def quote(state: Prices) -> Prices:
        runs.append(1)
        order = ["A", "B"] if len(runs) == 1 else ["B", "A"]  # the threads happened to start the other way round
        prices = {item: price(item) for item in order}
        if len(runs) == 1:
            raise ConnectionError("worker lost after both quotes")
        return {"prices": prices}

    graph = platform.compile(one_node_graph(quote))
    with pytest.raises(ConnectionError):
        graph.invoke({}, config())
    assert graph.invoke(None, config())["prices"] == {"A": "price of A", "B": "price of B"}
    assert priced.calls == ["A", "B"]
    entries = platform.journal.entries("quote-1")
    assert [(e["effect_key"], e["input"]["preview"]) for e in entries] == [("1", '{"item": "A"}'), ("2", '{"item": "B"}')]


async def test_async_effects_gathered_in_another_order_replay_their_own_outcomes(platform: DurablePlatform) -> None:
    priced, runs = Priced(), []

    @effect(kind="quote", name="price")
    async def price(item: str, gate: asyncio.Event) -> str:
        await gate.wait()
        return priced(item)

    async def quote(state: Prices) -> Prices:
        runs.append(1)
        order = ["A", "B"] if len(runs) == 1 else ["B", "A"]
        gate, tasks = asyncio.Event(), {}
        for item in order:
            tasks[item] = asyncio.ensure_future(price(item, gate))
            await asyncio.sleep(0)  # its first step takes its ordinal before the next task starts
        gate.set()
        prices = {item: await task for item, task in tasks.items()}
        if len(runs) == 1:
            raise ConnectionError("worker lost after both quotes")
        return {"prices": prices}

    graph = platform.compile(one_node_graph(quote))
    with pytest.raises(ConnectionError):
        await graph.ainvoke({}, config())
    assert (await graph.ainvoke(None, config()))["prices"] == {"A": "price of A", "B": "price of B"}
    assert sorted(priced.calls) == ["A", "B"]  # each ran once (in whichever order its I/O allowed)


class EchoModel(GenericFakeChatModel):
    """Answers each prompt with its price, and counts real calls."""

    calls: list[str] = []

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        from langchain_core.outputs import ChatGeneration, ChatResult

        prompt = str(messages[-1].content)
        self.calls.append(prompt)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(f"price of {prompt}"))])


def test_secure_llm_batch_replays_each_prompt_its_own_reply(platform: DurablePlatform) -> None:
    model = EchoModel(messages=iter(()), calls=[])
    llm, runs = SecureLLM(model), []

    def quote(state: Prices) -> Prices:
        runs.append(1)
        replies = llm.batch(state["order"], config={"max_concurrency": 3})
        if len(runs) == 1:
            raise ConnectionError("worker lost after the batch")
        return {"prices": {item: reply.content for item, reply in zip(state["order"], replies)}}

    graph = platform.compile(one_node_graph(quote))
    with pytest.raises(ConnectionError):
        graph.invoke({"order": ["A", "B", "C"]}, config())
    result = graph.invoke(None, config())
    assert result["prices"] == {"A": "price of A", "B": "price of B", "C": "price of C"}
    assert sorted(model.calls) == ["A", "B", "C"]


def test_a_pool_without_the_nodes_context_gets_an_error_naming_contextvars(platform: DurablePlatform) -> None:
    @effect(kind="quote", name="price")
    def price(item: str) -> str:
        return f"price of {item}"

    def quote(state: Prices) -> Prices:
        with ThreadPoolExecutor(max_workers=1) as pool:
            return {"prices": {"A": pool.submit(price, "A").result()}}

    graph = platform.compile(one_node_graph(quote))
    with pytest.raises(NoDurableScopeError, match=r"contextvars\.copy_context\(\)\.run"):
        graph.invoke({}, config())


def attempt_over(recorded: dict[str, tuple[str, str]], continued: bool = False) -> Attempt:
    """An attempt whose node has ``recorded`` entries: key -> (name, input digest)."""
    attempt = Attempt(1, node=NodePosition("t", "agent/1", "quote", "1", continued=continued))
    attempt.learn({key: CallSignature("quote", name, digest) for key, (name, digest) in recorded.items()}, {})
    return attempt


@pytest.mark.parametrize(
    ("recorded", "calls", "keys"),
    [
        ({"1": ("price", "A"), "2": ("price", "B")}, [(1, "B"), (2, "A")], ["2", "1"]),  # started the other way round
        ({"1": ("price", "A"), "2": ("price", "A")}, [(1, "A"), (2, "A")], ["1", "2"]),  # equal inputs: one entry each
        ({"1": ("price", "A")}, [(1, "X")], ["1"]),  # the input changed: on_input_change decides at its ordinal
        ({"1": ("price", "A")}, [(1, "A"), (2, "B"), (3, "A")], ["1", "2", "3"]),  # A's only entry is taken
        ({}, [(1, "A"), (2, "B")], ["1", "2"]),  # a new node: the ordinals
        ({"3": ("price", "A")}, [(1, "B"), (2, "C"), (3, "A")], ["1", "2", "3"]),
    ],
)
def test_each_effect_takes_the_entry_recorded_for_its_input_first(
    recorded: dict[str, tuple[str, str]], calls: list[tuple[int, str]], keys: list[str]
) -> None:
    attempt = attempt_over(recorded)
    assert [attempt.take(ordinal, "quote", "price", digest) for ordinal, digest in calls] == keys


def test_in_a_continued_occurrence_a_changed_input_runs_under_a_new_key() -> None:
    attempt = attempt_over({"1": ("price", "A"), "2": ("price", "B")}, continued=True)
    assert attempt.take(1, "quote", "price", "A-edited") == "3"
    assert attempt.take(2, "quote", "price", "B") == "2"
    assert attempt.take(3, "quote", "price", "C") == "4"  # 3 is taken: the next key nobody holds
