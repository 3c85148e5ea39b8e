"""Lease machinery shared by every lease holder (journal claims, run locks): clock, backoff, renewal.

- ``utcnow()``: the one clock of stored times (naive UTC, milliseconds like a
  BSON date). Callers use ``lease.utcnow()``, so a test moves time for all of
  them by patching this module's attribute.
- ``Backoff``: the pauses of a poll loop waiting for another holder.
- ``RENEWALS_PER_LEASE``: a lease is renewed this often per lease period.
- ``Beat``: a running heartbeat (the interpreters answer ``Heartbeat`` with
  one). The sync face renews from ``RENEWER``, one daemon thread for the whole
  process; the async face from a task per beat (``TaskBeat``).
- ``self_fence``/``check_self_fence``: the check a lease holder bound in this
  context (the run lock's ``check_held``); the journal calls it just before an
  effect starts and the checkpointer before it writes, so a holder whose lease
  may have run out stops by its own clock (no I/O), even when a stall kept its
  renewals from noticing.

Example::

    pause = Backoff(0.05, 1.0)
    while not done():
        yield Sleep(pause.next(remaining=deadline - time.monotonic()))
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any

logger = logging.getLogger("langgraph_durable_mongodb")

#: A lease is renewed this many times per lease period.
RENEWALS_PER_LEASE = 3


def utcnow() -> datetime:
    """Naive UTC now, truncated to milliseconds like a BSON date, so stored values compare equal."""
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def naive(value: Any) -> datetime | None:
    """``value`` as naive UTC if it is a datetime (aware ones converted), else None."""
    if not isinstance(value, datetime):
        return None
    return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value


#: The self-fence bound in this context: called with a thread id, it raises once that thread's lease may be lost.
_self_fence: ContextVar[Callable[[str], object] | None] = ContextVar("langgraph_durable_mongodb_self_fence", default=None)


@contextmanager
def self_fence(check: Callable[[str], object]) -> Iterator[None]:
    """Make ``check`` the self-fence of the block (and of the tasks and threads that copy its context)."""
    token = _self_fence.set(check)
    try:
        yield
    finally:
        _self_fence.reset(token)


def check_self_fence(thread_id: str) -> None:
    """Raise what the bound self-fence raises for ``thread_id`` (no I/O); nothing when none is bound."""
    check = _self_fence.get()
    if check is not None:
        check(thread_id)


class Backoff:
    """Pauses that double from ``first`` up to ``longest``, never past what ``remaining`` allows."""

    def __init__(self, first: float, longest: float) -> None:
        self._pause, self._longest = first, longest

    def next(self, remaining: float | None = None) -> float:
        pause = self._pause
        self._pause = min(self._pause * 2, self._longest)
        return pause if remaining is None else max(min(pause, remaining), 0.0)


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
            except Exception as error:  # noqa: BLE001 - the thread must outlive a network error
                held = renewal_failed(error)
            if held and not beat.stopped:
                with self._wake:
                    self._schedule(beat, renew, every)


RENEWER = Renewer()
if hasattr(os, "register_at_fork"):  # a forked child starts afresh: its parent's leases are not its own
    os.register_at_fork(after_in_child=RENEWER.__init__)
