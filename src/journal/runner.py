"""The journal's faces: the I/O plan runners, plus running the effect itself.

An effect's whole life (claim, run, record) is one plan. Besides database
requests it yields ``Invoke`` (call the effect), ``Next`` (pull one item of
a streamed effect) and ``Sleep`` (wait for another worker's lease): the sync
face calls, iterates and sleeps; the async face awaits. So the lifecycle is
written once and runs natively on both kinds of client.

Example::

    def plan():
        result = yield Invoke(lambda: 42, info)
        return result.value

    SyncRunner(db).run(plan())          # 42
    await AsyncRunner(db).run(plan())   # 42, awaiting coroutine functions
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._mongo import AsyncIO, SyncIO
from .context import EffectInfo, running


@dataclass(frozen=True)
class Invoke:
    """Run ``fn()`` as ``effect`` (awaited on the async face if it returns an awaitable)."""

    fn: Callable[[], Any]
    effect: EffectInfo


@dataclass(frozen=True)
class Next:
    """Pull the next item of a streamed effect's (async) iterator; ``END`` when exhausted."""

    iterator: Any
    effect: EffectInfo


@dataclass(frozen=True)
class Sleep:
    seconds: float


@dataclass(frozen=True)
class Returned:
    value: Any


@dataclass(frozen=True)
class Raised:
    """The effect raised; any ``BaseException``, so a cancelled effect still releases its claim."""

    error: BaseException


END = object()


class SyncRunner(SyncIO):
    def execute(self, request: Any) -> Any:
        if isinstance(request, Invoke):
            with running(request.effect):
                try:
                    return Returned(request.fn())
                except BaseException as exc:  # noqa: BLE001 - handed to the plan, which re-raises it
                    return Raised(exc)
        if isinstance(request, Next):
            with running(request.effect):
                try:
                    return Returned(next(request.iterator))
                except StopIteration:
                    return END
                except BaseException as exc:  # noqa: BLE001
                    return Raised(exc)
        if isinstance(request, Sleep):
            time.sleep(request.seconds)
            return None
        return super().execute(request)


class AsyncRunner(AsyncIO):
    async def execute(self, request: Any) -> Any:
        if isinstance(request, Invoke):
            with running(request.effect):
                try:
                    value = request.fn()
                    return Returned(await value if inspect.isawaitable(value) else value)
                except BaseException as exc:  # noqa: BLE001
                    return Raised(exc)
        if isinstance(request, Next):
            with running(request.effect):
                try:
                    return Returned(await request.iterator.__anext__())
                except StopAsyncIteration:
                    return END
                except BaseException as exc:  # noqa: BLE001
                    return Raised(exc)
        if isinstance(request, Sleep):
            await asyncio.sleep(request.seconds)
            return None
        return await super().execute(request)
