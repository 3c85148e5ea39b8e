"""The checkout graph the run lock tests share (no tests here): ``intake -> pay -> ship``, paused before ``pay``."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from typing import Any

from langgraph.graph import START, StateGraph

from langgraph_durable_mongodb.journal import effect
from langgraph_durable_mongodb.platform import DurablePlatform

from .graphs import Notes


class Effects:
    """Counts real executions; ``pay`` takes ``seconds`` and sets ``paying`` when it starts."""

    def __init__(self, seconds: float = 0.3) -> None:
        self.seconds = seconds
        self.counts: Counter[str] = Counter()
        self.paying = threading.Event()
        self.lock = threading.Lock()

    def hit(self, name: str) -> None:
        with self.lock:
            self.counts[name] += 1


def build(platform: DurablePlatform, fx: Effects, *, fail: bool = False, use_async: bool = False) -> Any:
    """``intake -> pay -> ship``, paused before ``pay``."""

    @effect(name="pay")
    def pay_sync(case: str) -> str:
        fx.hit("pay")
        fx.paying.set()
        time.sleep(fx.seconds)
        if fail:
            raise ValueError("card declined")
        return f"paid {case}"

    @effect(name="pay")
    async def pay_async(case: str) -> str:
        fx.hit("pay")
        fx.paying.set()
        await asyncio.sleep(fx.seconds)
        return f"paid {case}"

    @effect(name="ship")
    def ship_sync(case: str) -> str:
        fx.hit("ship")
        return f"shipped {case}"

    @effect(name="ship")
    async def ship_async(case: str) -> str:
        fx.hit("ship")
        return f"shipped {case}"

    def intake(s: Notes) -> Notes:
        return {"notes": ["intake"]}

    if use_async:

        async def pay(s: Notes) -> Notes:
            return {"notes": [await pay_async("42")]}

        async def ship(s: Notes) -> Notes:
            return {"notes": [await ship_async("42")]}
    else:

        def pay(s: Notes) -> Notes:
            return {"notes": [pay_sync("42")]}

        def ship(s: Notes) -> Notes:
            return {"notes": [ship_sync("42")]}

    builder = StateGraph(Notes)
    builder.add_node("intake", intake)
    builder.add_node("pay", pay)
    builder.add_node("ship", ship)
    builder.add_edge(START, "intake")
    builder.add_edge("intake", "pay")
    builder.add_edge("pay", "ship")
    return platform.compile(builder, interrupt_before=["pay"])


FINAL = {"notes": ["intake", "paid 42", "shipped 42"]}
