"""One journal entry as the pages, their JSON and ``inspect`` show it: names a person reads (its node by its graph
name, its visit as "2nd visit", a tool call by its name and id), its state, the process that claimed it, and its
stored text scrubbed of the thread's credential values. A field edited by hand into another type shows as absent,
never as a traceback."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from ..journal.position import EffectPosition
from ..journal.redaction import scrub
from ..storage.plans import lease
from ..storage.visit_keys import KEY
from .states import effect_state, lease_live

#: The fields of an entry that make its position.
POSITION = ("thread_id", "path", "node", "occurrence", "effect_key")
_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}


def text(value: Any) -> str | None:
    """``value`` if it is a string, else None (a field edited into another type reads as absent)."""
    return value if isinstance(value, str) else None


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` if it is a document, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def number(value: Any) -> int | float | None:
    """``value`` if it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ... ``11th``, ``21st``."""
    return f"{n}{'th' if 10 <= n % 100 <= 20 else _SUFFIXES.get(n % 10, 'th')}"


def visit_text(occurrence: Any) -> str:
    """A visit as a person reads it: its label (``2``: ``2nd visit``; a ``Send``'s ``3.1``: ``3rd visit, Send 1``;
    a subgraph run's ``2+1``: ``2nd visit, run 1``), or, when only its stored key is known (``s3``, a checkpoint
    id), ``visit <key>`` shortened (the key whole is in the JSON)."""
    label = text(occurrence) or ""
    head, _, run = label.partition("+")
    rank, _, send = head.partition(".")
    if not rank.isdigit() or (send and not send.isdigit()) or (run and not run.isdigit()):
        return f"visit {label[:13]}{'…' if len(label) > 13 else ''}" if KEY.match(label) else f"visit {label}"
    return f"{ordinal(int(rank))} visit" + (f", Send {send}" if send else "") + (f", run {run}" if run else "")


def holder(doc: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """Who holds a claim or a run lock, and for how long yet."""
    until = lease.naive(doc.get("lease_until"))
    return {
        "owner": text(doc.get("owner")), "host": text(doc.get("owner_host")), "pid": number(doc.get("owner_pid")),
        "started_at": lease.naive(doc.get("started_at")),
        "lease_left_s": None if until is None else round((until - now).total_seconds(), 1),
    }


def stored_position(entry: Mapping[str, Any]) -> str | None:
    """The position of the entry as stored (its keys, whatever its labels), as the errors print it and
    ``resolve``/``discard`` take it; None when a field of it is not text."""
    fields: dict[str, Any] = {f: entry.get(f) for f in POSITION}
    fields.update({k: v for k, v in mapping(entry.get("visit")).items() if k in ("path", "occurrence")})
    if not all(isinstance(v, str) for v in fields.values()):
        return None
    return str(EffectPosition(*fields.values()))


def shown_text(value: Any, secrets: frozenset[str] | None) -> str | None:
    """Stored text for a page: scrubbed of ``secrets`` (the thread's credential values) unless None."""
    value = text(value)
    return value if value is None or secrets is None else scrub(value, secrets)


def effect_view(entry: Mapping[str, Any], now: datetime, secrets: frozenset[str] | None) -> dict[str, Any]:
    """One journal entry as the thread page shows it (see the module docstring).

    Args:
        entry: the entry document (labelled: ``journal.labels``).
        now: the present, naive UTC.
        secrets: the thread's credential values to scrub from stored text, or None (``--with-outcomes``).

    Returns:
        Its position fields, ``position`` (as stored), ``visit`` (as read), ``kind``, ``name``, ``tool_call_id``,
        ``status``, ``state``, times, ``attempts``, ``duration_ms``, ``idempotency_key``, ``at_most_once``,
        ``host``/``pid`` (who claimed it), previews, ``error`` and ``holder``.
    """
    error = mapping(entry.get("error"))
    started = entry.get("status") == "started"
    return {
        **{f: text(entry.get(f)) for f in POSITION},
        "position": stored_position(entry),
        "visit": visit_text(entry.get("occurrence")),
        "kind": text(entry.get("kind")), "name": text(entry.get("name")),
        "tool_call_id": text(entry.get("tool_call_id")),
        "status": text(entry.get("status")), "state": effect_state(entry, now),
        **{f: lease.naive(entry.get(f)) for f in ("started_at", "finished_at", "updated_at", "visited_at")},
        "attempts": number(entry.get("attempts")) or 0, "duration_ms": number(entry.get("duration_ms")),
        "idempotency_key": text(entry.get("idempotency_key")), "at_most_once": entry.get("at_most_once") is True,
        "host": text(entry.get("owner_host")), "pid": number(entry.get("owner_pid")),
        "input_preview": shown_text(mapping(entry.get("input")).get("preview"), secrets),
        "outcome_preview": shown_text(mapping(entry.get("outcome")).get("preview"), secrets),
        "error": (
            {"type": text(error.get("type")), "message": shown_text(error.get("message"), secrets)} if error else None
        ),
        "holder": holder(entry, now) if started and lease_live(entry, now) else None,
    }
