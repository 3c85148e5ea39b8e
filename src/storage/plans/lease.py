"""Lease machinery shared by every lease holder (journal claims, run locks): clock and backoff.

The heartbeats that renew a lease (a thread for the process, a task per beat) are in ``heartbeats``.

- ``utcnow()``: the one clock of stored times (naive UTC, milliseconds like a
  BSON date). Callers use ``lease.utcnow()``, so a test moves time for all of
  them by patching this module's attribute.
- ``Backoff``: the pauses of a poll loop waiting for another holder.
- ``RENEWALS_PER_LEASE``: a lease is renewed this often per lease period.

The self-fence (a holder whose lease may have run out stops by its own clock) is the run lock's ``check_held``,
given to the checkpointer and the journal as their ``run_fence`` when they are built.

Example::

    pause = Backoff(0.05, 1.0)
    while not done():
        yield Sleep(pause.next(remaining=deadline - time.monotonic()))
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

#: A lease is renewed this many times per lease period.
RENEWALS_PER_LEASE = 3


def utcnow() -> datetime:
    """Naive UTC now, truncated to milliseconds like a BSON date, so stored values compare equal."""
    now = datetime.now(UTC).replace(tzinfo=None)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def naive(value: Any) -> datetime | None:
    """``value`` as naive UTC if it is a datetime (aware ones converted), else None."""
    if not isinstance(value, datetime):
        return None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


class Backoff:
    """Pauses that double from ``first`` up to ``longest``, never past what ``remaining`` allows."""

    def __init__(self, first: float, longest: float) -> None:
        self._pause, self._longest = first, longest

    def next(self, remaining: float | None = None) -> float:
        pause = self._pause
        self._pause = min(self._pause * 2, self._longest)
        return pause if remaining is None else max(min(pause, remaining), 0.0)
