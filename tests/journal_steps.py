"""Drive journal plans a request at a time, to interleave two workers exactly (the fence tests, the logging
tests)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from langgraph_durable_mongodb.storage.plans.lease import utcnow
from langgraph_durable_mongodb.storage.plans.requests import FencedUpdate, Invoke
from langgraph_durable_mongodb.journal import EffectCall

from .journal_helpers import POS, JournalFace

REPORT = EffectCall("tool", "report", input={"q": "all"})


class Stepper:
    """Runs one journal plan a request at a time on a face's interpreter, to interleave two workers exactly."""

    def __init__(self, face: JournalFace, plan: Any) -> None:
        self.face, self.plan = face, plan
        self.pending: Any = None  # the request yielded and not yet executed
        self.value: Any = None
        self.done = False

    async def _io(self) -> Any:
        return await self.face.journal._async_face() if self.face.is_async else self.face.journal._sync_face()  # noqa: SLF001

    async def until(self, stop: Callable[[Any], bool] = lambda request: False) -> Any:
        """Execute requests until the plan yields one that ``stop`` accepts (returned, not executed) or ends."""
        io, result = await self._io(), None
        while True:
            if self.pending is not None:
                request, self.pending = self.pending, None
                result = io.execute(request)
                if inspect.isawaitable(result):
                    result = await result
            try:
                request = self.plan.send(result)
            except StopIteration as stop_:
                self.done, self.value = True, stop_.value
                return None
            self.pending = request
            if stop(request):
                return request

    async def finish(self) -> Any:
        await self.until()
        return self.value


def effect_plan(face: JournalFace, fn: Callable[[], Any], call: EffectCall = REPORT) -> Any:
    return face.journal._effect_plan(call, POS, fn)  # noqa: SLF001


def is_invoke(request: Any) -> bool:
    return isinstance(request, Invoke)


def is_takeover(request: Any) -> bool:
    return isinstance(request, FencedUpdate) and "attempts" in request.update.get("$inc", {})


async def expire(face: JournalFace) -> None:
    """The claim's owner stopped renewing a while ago: its lease is over."""
    await face.raw_update({"chunk": 0}, {"$set": {"lease_until": utcnow() - timedelta(seconds=60)}})
