"""The heartbeats that keep leases held: what the interpreters answer a ``Heartbeat`` request with.

- ``Beat``: a running heartbeat; stopping it never waits for I/O.
- ``RENEWER``: the sync face's renewals, one daemon thread for the whole process, earliest due first
  (a forked child starts with a fresh one: its parent's leases are not its own).
- ``TaskBeat``: the async face's, one task per beat.
- ``renewal_failed``: what both do with a renewal that could not reach the server (log it, keep the lease).

None of this is a plan: the plans say when to renew (``storage/plans/requests.Heartbeat``), this runs it.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable

logger = logging.getLogger("langgraph_durable_mongodb")


class Beat:
    """A running heartbeat; as a context manager it stops on exit. Stopping never waits for I/O."""

    stopped = False

    def stop(self) -> None:
        self.stopped = True

    def __enter__(self) -> Beat:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class TaskBeat(Beat):
    """The async face's heartbeat: a task, cancelled when the beat stops."""

    def __init__(self, task: asyncio.Task[None]) -> None:
        self.task = task

    def stop(self) -> None:
        super().stop()
        self.task.cancel()


def renewal_failed(error: Exception) -> bool:
    """Log a renewal that could not reach the server; the lease is still ours as far as we know."""
    logger.warning("could not renew a lease; retrying at the next interval: %s", error)
    return True


class Renewer:
    """One daemon thread renewing every running sync lease of the process, earliest due first.

    Stopped beats are dropped when they come due (no search through the heap).
    """

    def __init__(self) -> None:
        self._due: list[tuple[float, int, Beat, Callable[[], bool], float]] = []
        self._order = itertools.count()  # breaks ties between equal due times
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def start(self, renew: Callable[[], bool], every: float) -> Beat:
        """Call ``renew()`` every ``every`` seconds until it returns False or the returned beat stops."""
        beat = Beat()
        with self._wake:
            self._schedule(beat, renew, every)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="lease-renewer", daemon=True)
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
                held = renew()  # outside the lock: other leases can start and stop meanwhile
            except Exception as error:  # the thread must outlive a network error
                held = renewal_failed(error)
            if held and not beat.stopped:
                with self._wake:
                    self._schedule(beat, renew, every)


RENEWER = Renewer()
if hasattr(os, "register_at_fork"):  # a forked child starts afresh: its parent's leases are not its own
    os.register_at_fork(after_in_child=lambda: Renewer.__init__(RENEWER))
