"""A checkpointer's TTL: ``ttl=`` seconds, or the ``checkpointer.ttl`` block of ``langgraph.json``.

The block (LangGraph's ``ThreadTTLConfig``, plus ``refresh_on_read`` from LangGraph's store TTL)::

    {"strategy": "delete" | "keep_latest", "default_ttl": minutes,
     "sweep_interval_minutes": n, "sweep_limit": n, "refresh_on_read": bool}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInputError

STRATEGIES = ("delete", "keep_latest")
#: Threads one sweep handles under the block when it names no ``sweep_limit`` (Agent Server's default).
DEFAULT_SWEEP_LIMIT = 10_000
_KEYS = ("strategy", "default_ttl", "sweep_interval_minutes", "sweep_limit", "refresh_on_read")
#: The longest TTL and sweep interval accepted: 100 years (of 365.25 days). Anything longer cannot be honoured
#: everywhere: an expiry past year 9999 fails every write (``OverflowError: date value out of range``) and a
#: thread cannot wait more than ``threading.TIMEOUT_MAX`` (about 292 years) between sweeps.
MAX_SECONDS = 36525 * 86400
MAX_MINUTES = MAX_SECONDS // 60


@dataclass(frozen=True)
class TTLConfig:
    """A parsed TTL.

    ``seconds``: a thread expires this long after its last write (a read too, with ``refresh_on_read``).
    ``strategy``: ``"delete"`` deletes an expired thread whole (a TTL index, and ``sweep_expired``);
    ``"keep_latest"`` prunes it to its latest checkpoints when ``sweep_expired`` meets it.
    ``sweep_interval_minutes``: how often ``start_sweeper`` sweeps (None: no sweeper).
    ``sweep_limit``: threads per ``sweep_expired`` call (None: every expired thread).
    """

    seconds: float
    strategy: str = "delete"
    sweep_interval_minutes: float | None = None
    sweep_limit: int | None = None
    refresh_on_read: bool = False

    @classmethod
    def parse(cls, ttl: Any) -> TTLConfig | None:
        """Read ``ttl=``: None, a number of seconds (as before the block existed), or the block.

        Args:
            ttl: None; a positive number of seconds; a dict with the keys of the module docstring
                (``default_ttl`` required, in minutes, as in ``langgraph.json``); or a ``TTLConfig``.

        Returns:
            The config, or None without a TTL.

        Raises:
            InvalidInputError: an unknown key, a value of the wrong type, a number that is not positive or is
                above 100 years (``MAX_SECONDS``, ``MAX_MINUTES``: the error names the largest accepted), or
                an unknown strategy.
        """
        if ttl is None or isinstance(ttl, TTLConfig):
            return ttl
        if isinstance(ttl, Mapping):
            return cls._from_block(ttl)
        return cls(seconds=_length("ttl", ttl, "seconds", MAX_SECONDS, ", or the checkpointer.ttl block"))

    @classmethod
    def _from_block(cls, block: Mapping[str, Any]) -> TTLConfig:
        unknown = sorted(map(str, set(block) - set(_KEYS)))
        if unknown:
            raise InvalidInputError(f"ttl block: unknown key(s) {', '.join(unknown)}; the keys are {', '.join(_KEYS)}")
        strategy = block.get("strategy", "delete")
        if strategy not in STRATEGIES:
            raise InvalidInputError(f'ttl block: strategy must be "delete" or "keep_latest", got {strategy!r}')
        if "default_ttl" not in block:
            raise InvalidInputError('ttl block: "default_ttl" (minutes) is required, e.g. {"default_ttl": 1440}')
        minutes = _length("default_ttl", block["default_ttl"], "minutes", MAX_MINUTES)
        interval = block.get("sweep_interval_minutes")
        if interval is not None:
            interval = _length("sweep_interval_minutes", interval, "minutes", MAX_MINUTES, " or null")
        limit = block.get("sweep_limit", DEFAULT_SWEEP_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
            raise InvalidInputError(f"ttl block: sweep_limit must be a positive int (threads per sweep), got {limit!r}")
        refresh = block.get("refresh_on_read", False)
        if not isinstance(refresh, bool):
            raise InvalidInputError(f"ttl block: refresh_on_read must be true or false, got {refresh!r}")
        return cls(minutes * 60, strategy, interval, limit, refresh)


def _length(name: str, value: Any, unit: str, largest: int, alternative: str = "") -> float:
    """``value``, a positive number of ``unit`` up to ``largest``; else InvalidInputError naming the largest."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InvalidInputError(f"{name} must be a positive number of {unit}{alternative}, got {value!r}")
    if value > largest:
        raise InvalidInputError(
            f"{name} must be at most {largest} {unit} (100 years: a longer one cannot be stored as an expiry "
            f"or waited for), got {value!r}"
        )
    return value
