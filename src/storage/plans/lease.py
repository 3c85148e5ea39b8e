"""Lease machinery shared by every lease holder (journal claims, run locks): clock, backoff, self-fence.

The heartbeats that renew a lease (a thread for the process, a task per beat) are in ``heartbeats``.

- ``utcnow()``: the one clock of stored times (naive UTC, milliseconds like a
  BSON date). Callers use ``lease.utcnow()``, so a test moves time for all of
  them by patching this module's attribute.
- ``Backoff``: the pauses of a poll loop waiting for another holder.
- ``RENEWALS_PER_LEASE``: a lease is renewed this often per lease period.
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

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any

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
