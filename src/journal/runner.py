"""The journal's faces: the I/O plan runners, plus running the effect itself.

An effect's whole life (claim, run, record) is one plan. Besides database
requests it yields ``Invoke`` (call the effect), ``Next`` (pull one item of
a streamed effect), ``Sleep`` (wait for another worker's lease) and
``Heartbeat`` (renew the claim while the effect runs): the sync face calls,
iterates, sleeps and renews from one background thread; the async face
awaits, and renews from a task. So the lifecycle is written once and runs
natively on both kinds of client.

Example::

    def plan():
        result = yield Invoke(lambda: 42, info)
        return result.value

    SyncRunner(db).run(plan())          # 42
    await AsyncRunner(db).run(plan())   # 42, awaiting coroutine functions
"""

from __future__ import annotations

import asyncio
import heapq
import inspect
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pymongo.errors import DuplicateKeyError

from .._mongo import AsyncIO, FindOneAndUpdate, Plan, SyncIO
from .context import EffectInfo, running

logger = logging.getLogger("langgraph_durable_mongodb.journal")


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
class Heartbeat:
    """Renew a claim every ``every`` seconds by running the plan ``renew()`` until the returned ``Beat`` stops.

    ``renew()`` returns whether the claim is still held: False (another worker
    took the position over) ends the heartbeat. The first renewal is due after
    ``every`` seconds, so an effect shorter than that costs no I/O. A renewal
    that fails (the server is unreachable, say) is logged and tried again at
    the next interval.
    """

    renew: Callable[[], Plan]
    every: float


class Beat:
    """A running heartbeat; as a context manager it stops on exit. Stopping never waits for I/O."""

    stopped = False

    def stop(self) -> None:
        self.stopped = True

    def __enter__(self) -> Beat:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _TaskBeat(Beat):
    """The async face's heartbeat: a task, cancelled when the beat stops."""

    def __init__(self, task: asyncio.Task[None]) -> None:
        self.task = task

    def stop(self) -> None:
        super().stop()
        self.task.cancel()


def _renewal_failed(error: Exception) -> bool:
    logger.warning("could not renew an effect's lease in the activity journal; retrying at the next interval: %s", error)
    return True  # still ours as far as we know


class _Renewer:
    """One daemon thread renewing the claims of all the process's running sync effects, earliest due first.

    Stopped beats are dropped when they come due (no search through the heap).
    """

    def __init__(self) -> None:
        self._due: list[tuple[float, int, Beat, Callable[[], bool], float]] = []
        self._order = itertools.count()  # breaks ties between equal due times
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def start(self, renew: Callable[[], bool], every: float) -> Beat:
        beat = Beat()
        with self._wake:
            self._schedule(beat, renew, every)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="journal-lease-renewer", daemon=True)
                self._thread.start()
            self._wake.notify()
        return beat

    def _schedule(self, beat: Beat, renew: Callable[[], bool], every: float) -> None:
        heapq.heappush(self._due, (time.monotonic() + every, next(self._order), beat, renew, every))

    def _next(self) -> tuple[Beat, Callable[[], bool], float]:
        """Wait for the earliest live beat to come due, and take it off the heap."""
        with self._wake:
            while True:
                while self._due and self._due[0][2].stopped:
                    heapq.heappop(self._due)
                delay = self._due[0][0] - time.monotonic() if self._due else None
                if delay is not None and delay <= 0:
                    return heapq.heappop(self._due)[2:]
                self._wake.wait(delay)

    def _loop(self) -> None:
        while True:
            beat, renew, every = self._next()
            try:
                held = renew()  # outside the lock: other effects can start and stop meanwhile
            except Exception as error:  # noqa: BLE001 - the thread must outlive a network error
                held = _renewal_failed(error)
            if held and not beat.stopped:
                with self._wake:
                    self._schedule(beat, renew, every)


_RENEWER = _Renewer()
if hasattr(os, "register_at_fork"):  # a forked child starts afresh: its parent's claims are not its own
    os.register_at_fork(after_in_child=_RENEWER.__init__)


@dataclass(frozen=True)
class Returned:
    value: Any


@dataclass(frozen=True)
class Raised:
    """The effect raised; any ``BaseException``, so a cancelled effect still releases its claim."""

    error: BaseException


END = object()


def _upsert(request: Any) -> bool:
    """A visit's upsert: when it loses the race to insert a new position, it is tried once more (the server
    retries such upserts itself, but not every server and not always) and then matches the winner's entry."""
    return isinstance(request, FindOneAndUpdate) and request.upsert


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
        if isinstance(request, Heartbeat):
            if request.every <= 0:
                return Beat()
            return _RENEWER.start(lambda: self.run(request.renew()), request.every)
        try:
            return super().execute(request)
        except DuplicateKeyError:
            if not _upsert(request):
                raise
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
        if isinstance(request, Heartbeat):
            return Beat() if request.every <= 0 else _TaskBeat(asyncio.create_task(self._beat(request)))
        try:
            return await super().execute(request)
        except DuplicateKeyError:
            if not _upsert(request):
                raise
            return await super().execute(request)

    async def _beat(self, request: Heartbeat) -> None:
        held = True
        while held:
            await asyncio.sleep(request.every)
            try:
                held = await self.run(request.renew())
            except Exception as error:  # noqa: BLE001 - keep the effect's claim alive through a network error
                held = _renewal_failed(error)
