"""Sweepers: ``sweep_expired`` at once and then every interval, until stopped.

A sweeper is owned by whoever started it (``MongoDBCheckpointer.start_sweeper``): nothing runs after its
``stop()`` / ``astop()`` returns. A sweep that fails is logged and the next one runs on time; a sweeper that
dies (an error its loop cannot go on after) says so at ERROR level, since no sweep runs after it.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)
_DIED = "TTL sweeper died: expired threads are no longer swept until a sweeper is started again"


class Sweeper:
    """Sweeps in a daemon thread of its own (the saver's sync client)."""

    def __init__(self, sweep: Callable[[], list[str]], interval_seconds: float) -> None:
        self._sweep, self._interval = sweep, interval_seconds
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="durable-mongodb-ttl-sweeper", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            self._sweeps()
        except BaseException:  # the thread ends here either way: say so
            logger.exception(_DIED)

    def _sweeps(self) -> None:
        while True:
            try:
                self._sweep()
            except Exception:
                logger.exception("TTL sweep failed; the next runs in %g s", self._interval)
            if self._stopped.wait(self._interval):
                return

    def stop(self) -> None:
        """Stop sweeping; returns once a sweep under way has finished."""
        self._stopped.set()
        self._thread.join()


class AsyncSweeper:
    """Sweeps in an asyncio task of the loop that started it (the saver's async client)."""

    def __init__(self, sweep: Callable[[], Awaitable[list[str]]], interval_seconds: float) -> None:
        self._sweep, self._interval = sweep, interval_seconds
        self._stopped = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="durable-mongodb-ttl-sweeper")

    async def _loop(self) -> None:
        try:
            await self._sweeps()
        except asyncio.CancelledError:  # cancelled, not dead: its loop is closing
            raise
        except BaseException:
            logger.exception(_DIED)

    async def _sweeps(self) -> None:
        while True:
            try:
                await self._sweep()
            except Exception:
                logger.exception("TTL sweep failed; the next runs in %g s", self._interval)
            try:
                await asyncio.wait_for(self._stopped.wait(), self._interval)
                return
            except TimeoutError:
                pass

    async def astop(self) -> None:
        """Stop sweeping; returns once a sweep under way has finished (on the loop that started it)."""
        self._stopped.set()
        await self._task
