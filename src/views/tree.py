"""The operation tree of a thread: journal entries grouped by operation path, then node occurrence, in the order
they ran (by the time their effects started, not by name)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from .effects import visit_text


def ordinal_key(ordinal: str) -> tuple[tuple[int, int, str], ...]:
    """Orders ordinals numerically, part by part: ``1.2`` < ``1.10`` < ``2`` < ``10``; a part that is
    not a number sorts after the numbers, by its text."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in ordinal.split("."))


def path_key(path: str) -> tuple[tuple[str, tuple[tuple[int, int, str], ...]], ...]:
    """Orders operation paths (``agent/1/sub/10``) by each level's name, then its ordinal numerically."""
    segments = path.split("/")
    return tuple((name, ordinal_key(ordinal)) for name, ordinal in zip(segments[::2], segments[1::2], strict=False))


def sibling_key(label: str) -> tuple[str, tuple[tuple[int, int, str], ...], str]:
    """Orders the children of one level: a node occurrence (``notify#1.10``) or a subgraph (``sub/2``),
    by name, then ordinal numerically."""
    for mark in ("#", "/"):
        name, found, ordinal = label.rpartition(mark)
        if found:
            return name, ordinal_key(ordinal), mark
    return label, (), ""


def _started(doc: dict[str, Any]) -> tuple[bool, datetime]:
    """When an entry's effect started: entries without ``started_at`` (written before it existed) first."""
    started = doc.get("started_at")
    return (True, started) if isinstance(started, datetime) else (False, datetime.min)


def operation_tree(
    journal: Iterable[dict[str, Any]], describe: Callable[[dict[str, Any]], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Journal entries grouped by path, then node occurrence, in the order they ran: each path and each node
    occurrence where its first effect started (ties, and entries without ``started_at``, in ordinal order);
    effects in the order they started (entries without ``started_at``, written before it existed, first).

    Args:
        journal: entry documents (``chunk: 0``).
        describe: what to show of one entry.

    Returns:
        ``[{"path", "nodes": [{"node": "name#occurrence", "name", "occurrence", "visit" (as a person reads it:
        ``effects.visit_text``), "effects": [describe(entry), ...]}]}]``.
    """
    by_path: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    first: dict[Any, tuple[bool, datetime]] = {}
    for doc in sorted(journal, key=_started):
        path = doc["path"] if isinstance(doc.get("path"), str) else "?"
        node = f"{doc.get('node')}#{doc.get('occurrence', 1)}"
        by_path[path][node].append(describe(doc))
        first.setdefault(path, _started(doc))
        first.setdefault((path, node), _started(doc))
    return [
        {"path": path, "nodes": [
            {"node": node, **_visit(node), "effects": nodes[node]}
            for node in sorted(nodes, key=lambda n: (first[(path, n)], sibling_key(n)))
        ]}
        for path, nodes in sorted(by_path.items(), key=lambda item: (first[item[0]], path_key(item[0])))
    ]


def _visit(node: str) -> dict[str, str]:
    """A node occurrence's name, occurrence and visit as a person reads it."""
    name, _, occurrence = node.rpartition("#")
    return {"name": name, "occurrence": occurrence, "visit": visit_text(occurrence)}
