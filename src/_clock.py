"""The checkpointer's clock: one function, so tests move time by patching ``_clock.utcnow``.

Callers use ``_clock.utcnow()`` (never ``from ._clock import utcnow``) so the patch reaches them.
"""

from __future__ import annotations

from datetime import datetime, timezone


def utcnow() -> datetime:
    """Naive UTC now, truncated to milliseconds like a BSON date, so stored values compare equal.

    Returns:
        The current time, as the checkpointer stamps and compares ``expire_at``.
    """
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
