"""An effect's position: the unique key of its journal entry, and the idempotency key derived from it.

A position is the node's position (``NodePosition``: thread, operation path,
node and occurrence) plus an *effect key*: the tool call id for a tool call
issued by a journaled LLM response (``tool_call:<id>``), otherwise the effect's
ordinal within the node attempt, matched to the node's entries (``attempt.py``).
Effects called inside another effect number under it (``2/1``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._bson import require_str
from ..resolver.position import NodePosition
from ..storage.visit_keys import idempotency_key


@dataclass(frozen=True)
class EffectPosition:
    """One effect's place in the journal: the unique key of its document (``root_key``, its node's
    ``NodePosition.root_key``, and ``label``, its visit's readable path and occurrence (``journal/labels.py``), are
    stored with it and are no part of the key)."""

    thread_id: str
    path: str
    node: str
    occurrence: str
    effect_key: str
    root_key: str | None = field(default=None, compare=False)
    label: tuple[str, str] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Its fields become a query filter (discard, resolve): an operator must never reach one.
        for name in ("thread_id", "path", "node", "occurrence", "effect_key"):
            require_str(name, getattr(self, name))

    @property
    def idempotency_key(self) -> str:
        """A stable digest of the position: the same on every re-execution.

        >>> EffectPosition("t1", "agent/1", "llm", "1", "1").idempotency_key[:9]
        'ik-8aa640'
        """
        return idempotency_key((self.thread_id, self.path, self.node, self.occurrence, self.effect_key))

    def __str__(self) -> str:
        return (
            f"thread {self.thread_id!r} path {self.path!r} node {self.node!r}#{self.occurrence} "
            f"effect {self.effect_key!r}"
        )


def at(node: NodePosition, key: str, label: tuple[str, str] | None = None) -> EffectPosition:
    """The position of the effect ``key`` of ``node``, whose visit reads as ``label`` (path, occurrence)."""
    return EffectPosition(node.thread_id, node.path, node.node, node.occurrence, key, node.root_key, label)
