"""An effect cancelled while its work still runs in a thread keeps its position until that work ends.

A cancelled ``await`` does not stop work already running in a thread: a sync tool LangChain runs in an
executor, ``asyncio.to_thread``, ``run_in_executor``. Here a parallel node fails while node ``mail``'s
effect runs in a thread, so LangGraph cancels ``mail``, and a resume follows at once. The effect must never
run beside itself: the resume waits for it and replays its outcome (or raises ``EffectInProgressError``
naming the position). Both forms, embedded and on the server tier; real executions and their overlap are
counted.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb import EffectInProgressError
from langgraph_durable_mongodb.journal import SecureTool, effect
from langgraph_durable_mongodb.platform import DurablePlatform

from .graphs import Notes

#: Every test runs on ``platform.compile(builder)`` and on ``builder.compile(checkpointer=platform.checkpointer)``.
pytestmark = pytest.mark.both_compile_forms

WORK = 1.0  # seconds the effect's thread works
FAIL_AFTER = 0.2


def config() -> dict:
    return {"configurable": {"thread_id": "mail-1"}}


class Mailer:
    """Sends mail from a thread, taking ``WORK`` seconds; records each execution's start and end."""

    def __init__(self) -> None:
        self.runs: list[list[float]] = []
        self.lock = threading.Lock()

    def send(self, to: str) -> str:
        with self.lock:
            run = [time.monotonic(), 0.0]
            self.runs.append(run)
        time.sleep(WORK)
        run[1] = time.monotonic()
        return f"sent to {to}"

    def overlapping(self) -> bool:
        spans = sorted(self.runs)
        return any(later[0] < earlier[1] or earlier[1] == 0.0 for earlier, later in zip(spans, spans[1:]))


def sender(how: str, mailer: Mailer) -> Callable[[], Any]:
    """An async call whose work runs in a thread: a SecureTool around a sync tool, or an @effect using
    ``asyncio.to_thread`` or ``run_in_executor``."""
    if how == "sync tool":

        @tool("send_mail")
        def send_mail(to: str) -> str:
            """Send a mail."""
            return mailer.send(to)

        secure = SecureTool(send_mail)
        return lambda: secure.ainvoke({"to": "ada"})
    if how == "to_thread":

        @effect(kind="tool", name="send_mail")
        async def send_to_thread(to: str) -> str:
            return await asyncio.to_thread(mailer.send, to)

        return lambda: send_to_thread("ada")

    @effect(kind="tool", name="send_mail")
    async def send_in_executor(to: str) -> str:
        return await asyncio.get_running_loop().run_in_executor(None, mailer.send, to)

    return lambda: send_in_executor("ada")


def racing_graph(send: Callable[[], Any], mailer: Mailer, fail: list[bool]) -> StateGraph:
    """``mail`` sends; ``check``, in parallel, fails ``FAIL_AFTER`` seconds after the sending started, while
    ``fail`` is set."""

    async def mail(state: Notes) -> Notes:
        return {"notes": [await send()]}

    async def check(state: Notes) -> Notes:
        while fail and not mailer.runs:
            await asyncio.sleep(0.01)
        await asyncio.sleep(FAIL_AFTER)
        if fail:
            raise RuntimeError("the parallel check failed")
        return {"notes": ["checked"]}

    builder = StateGraph(Notes)
    builder.add_node("mail", mail)
    builder.add_node("check", check)
    builder.add_edge(START, "mail")
    builder.add_edge(START, "check")
    return builder


@pytest.mark.parametrize("how", ["sync tool", "to_thread", "run_in_executor"])
async def test_a_cancelled_effect_still_running_in_a_thread_never_runs_beside_itself(
    platform: DurablePlatform, how: str
) -> None:
    mailer, fail = Mailer(), [True]
    graph = platform.compile(racing_graph(sender(how, mailer), mailer, fail))
    first = asyncio.ensure_future(graph.ainvoke({"notes": []}, config()))
    while not mailer.runs and not first.done():
        await asyncio.sleep(0.01)
    await asyncio.sleep(FAIL_AFTER + 0.3)  # mail was cancelled; its thread still sends
    assert len(mailer.runs) == 1 and mailer.runs[0][1] == 0.0
    [held] = platform.journal.entries("mail-1")  # its position is held (claimed, under the run lock too)
    assert (held["node"], held["status"]) == ("mail", "started")
    with pytest.raises(RuntimeError, match="parallel check failed"):
        await first
    assert mailer.runs[0][1] > 0.0  # the cancelled node waited for its effect's work to end
    fail.clear()
    try:  # at once, while the cancelled mail may still be sending
        result = await graph.ainvoke(None, config())
    except EffectInProgressError as error:  # waited too long: names the position, never runs it
        assert error.position is not None and error.position.node == "mail"
        await asyncio.sleep(WORK)
        result = await graph.ainvoke(None, config())
    assert len(mailer.runs) == 1 and not mailer.overlapping()
    assert sorted(result["notes"]) == ["checked", "sent to ada"]
    [entry] = [e for e in platform.journal.entries("mail-1") if e["node"] == "mail"]
    assert entry["status"] == "completed"
