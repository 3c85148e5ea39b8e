"""Threads of every graph shape, left in every state a run can leave them in, for the views' tests.

Shapes: a node reached by an edge (``edge``), by a ``Send`` (``send``), one item of a ``Send`` fan-out (``fanout``),
a node inside a compiled child (``nested``), LangGraph's prebuilt ReAct agent (``react``: ``create_react_agent``, whose
``ToolNode`` is reached by one ``Send`` per tool call) and LangChain's ``create_agent`` (``agent``), their model a
``SecureLLM``. In each, the step that pays runs ``pay`` through a ``SecureTool`` (``at_most_once`` for an outcome
unknown), which does what the mode says: ``interrupt`` asks for an approval (``interrupt()``), ``fail`` raises,
``crash`` SIGKILLs the process (its claim and its run lock are left as a dead process leaves them), ``unknown``
SIGKILLs it inside an ``at_most_once`` payment, ``done`` pays.

``crash`` and ``unknown`` kill the process they run in: they run in a child of the test suite's fork server, on a
real server (``run_in_child``, tests/workers/harness.py), the other modes in this process on any client; ``resume``
takes a thread up where it stopped.
"""

from __future__ import annotations

import operator
import os
import signal
import warnings
from typing import Annotated, Any, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.types import Send, interrupt

from langgraph_durable_mongodb import DurablePlatform, SecureLLM, SecureTool

SHAPES = ("edge", "send", "fanout", "nested", "react", "agent")
#: The modes, and the state each leaves a thread in.
STATES = {"done": "done", "interrupt": "interrupted", "fail": "failed", "crash": "crashed", "unknown": "outcome unknown"}
#: The modes that kill the process running them.
KILLING = ("crash", "unknown")
#: What an interrupted approval asks.
QUESTION = "approve paying 3 EUR to ACME?"


class _State(TypedDict, total=False):
    item: int
    paid: Annotated[list, operator.add]


def _pay_tool(mode: str) -> SecureTool:
    @tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        if mode in KILLING:
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "interrupt":
            return str(interrupt(QUESTION))
        if mode == "fail":
            raise ValueError("card declined")
        return f"paid {amount}"

    return SecureTool(pay, at_most_once=mode == "unknown")


class _Chat(GenericFakeChatModel):
    """A scripted model: asks for ``pay``, then answers."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self


def _chat(resumed: bool = False) -> SecureLLM:
    """Asks for ``pay`` then answers, each call journaled; ``resumed``: the thread already holds the ask (its tools
    run again), it answers."""
    asks = AIMessage("", tool_calls=[{"name": "pay", "args": {"amount": 3}, "id": "call_pay_1"}])
    return SecureLLM(_Chat(messages=iter([AIMessage("paid, thank you")] if resumed else [asks, AIMessage("paid, thank you")])))


def _work(mode: str, acting: int | None = None) -> Any:
    payer = _pay_tool(mode)

    def work(state: _State) -> dict[str, Any]:
        done = payer.invoke({"amount": 3}) if acting is None or state.get("item") == acting else "skipped"
        return {"paid": [done]}

    return work


def build(shape: str, mode: str, platform: DurablePlatform, resumed: bool = False) -> Any:
    """The graph of ``shape`` whose paying step does what ``mode`` says, compiled durable on ``platform``
    (``resumed``: an agent's model answers at once, its ask being in the thread already)."""
    if shape == "react":
        from langgraph.prebuilt import create_react_agent  # noqa: PLC0415 - deprecated import, only where used

        with warnings.catch_warnings():  # its move to langchain.agents is known: "agent" builds that one
            warnings.simplefilter("ignore", DeprecationWarning)
            agent = create_react_agent(_chat(resumed), [_pay_tool(mode)])
        return platform.attach(agent)
    if shape == "agent":
        from langchain.agents import create_agent  # noqa: PLC0415 - LangChain's, only where used

        return platform.attach(create_agent(_chat(resumed), [_pay_tool(mode)]))
    builder = StateGraph(_State)
    builder.add_node("prepare", lambda s: {"paid": []})
    builder.add_edge(START, "prepare")
    if shape == "edge":
        builder.add_node("work", _work(mode))
        builder.add_edge("prepare", "work")
    elif shape == "nested":
        child = StateGraph(_State)
        child.add_node("work", _work(mode))
        child.add_edge(START, "work")
        builder.add_node("child", child.compile())
        builder.add_edge("prepare", "child")
    else:
        width, acting = (3, 1) if shape == "fanout" else (1, None)
        builder.add_node("work", _work(mode, acting))
        builder.add_conditional_edges("prepare", lambda s: [Send("work", {"item": i}) for i in range(width)], ["work"])
    return platform.compile(builder)


def first_input(shape: str) -> dict[str, Any]:
    return {"messages": [("user", "pay ACME 3 EUR")]} if shape in ("react", "agent") else {"paid": []}


def run(client: Any, db_name: str, thread_id: str, shape: str, mode: str) -> None:
    """Run the thread once in this process (a killing mode kills it)."""
    platform = DurablePlatform(client, db_name=db_name)
    try:
        build(shape, mode, platform).invoke(first_input(shape), {"configurable": {"thread_id": thread_id}})
    except ValueError:
        pass  # fail: the thread keeps the error
    finally:
        if platform.run_locks is not None:
            platform.run_locks.wait_releases(10)


def resume(client: Any, db_name: str, thread_id: str, shape: str) -> Any:
    """Resume the thread where it stopped (``invoke(None)``), its paying step now paying: what it returns."""
    platform = DurablePlatform(client, db_name=db_name)
    try:
        return build(shape, "done", platform, resumed=True).invoke(None, {"configurable": {"thread_id": thread_id}})
    finally:
        if platform.run_locks is not None:
            platform.run_locks.wait_releases(10)


def run_in_child(uri: str, db_name: str, thread_id: str, shape: str, mode: str) -> None:
    """``run`` in a process of its own, on the server at ``uri`` (the fork server's entry)."""
    from pymongo import MongoClient  # noqa: PLC0415 - in the child

    with MongoClient(uri) as client:
        run(client, db_name, thread_id, shape, mode)
