"""Readable labels for journal entries: the keys of a visit, numbered in the order the visits ran.

An entry is keyed by its visit (``resolver/visit.py``): ``agent/1/case_investigation/<root checkpoint>/
policy_analysis/s1``, node ``review_policy``, occurrence ``s1``. People read ordinals instead:
``agent/1/case_investigation/1/policy_analysis/1``, occurrence ``1``. Each key is replaced by its rank among the
keys of the same name under the same parent, ``Send`` groups (``<group>.<index>``) counted in a sequence of their
own and keeping their index, a subgraph run keeping its ``+p``. Steps and task calls rank by number, checkpoint and task ids by
when their visit's first entry was claimed. Replay never reads a label: they are made here, when entries are
read, from the entries read; an entry whose key is not a visit's (a position given explicitly) keeps what is
stored.

Example::

    labelled([{"path": "agent/1", "node": "pay", "occurrence": "1f0c…", ...}])[0]["occurrence"]   # "1"
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ..storage.visit_keys import CALL_PREFIX, KEY, ROOT_PATH, STEP_PREFIX, levels

__all__ = ["labelled"]

_EARLIEST = datetime.min


def _levels(doc: Mapping[str, Any]) -> list[tuple[str, re.Match[str]]] | None:
    """``[(name, key match), ...]`` of an entry's boundaries and node, or None when its position is not a visit's."""
    pairs = levels(doc) if doc.get("root_key") else None
    matches = [(name, KEY.match(text)) for name, text in pairs or []]
    if pairs is None or any(match is None for _, match in matches):
        return None
    return matches  # type: ignore[return-value]


def _order(match: re.Match[str], claimed: Any) -> tuple[int, datetime, str]:
    base = match["base"]
    numbered = base[:1] in (STEP_PREFIX, CALL_PREFIX) and base[1:].isdigit()  # a step or a call, not an id
    step = int(base[1:]) if numbered else 0
    return step, claimed if isinstance(claimed, datetime) else _EARLIEST, base


def _walk(levels: list[tuple[str, re.Match[str]]]) -> Iterable[tuple[tuple[str, str, bool], re.Match[str]]]:
    """Each level's sequence ``(parent key path, name, Send?)`` and key."""
    parent = ROOT_PATH
    for name, match in levels:
        yield (parent, name, match["index"] is not None), match
        parent = f"{parent}/{name}/{match[0]}"


def _text(rank: int, match: re.Match[str]) -> str:
    text = f"{rank}.{match['index']}" if match["index"] is not None else str(rank)
    return f"{text}+{match['run']}" if match["run"] is not None else text


def labelled(docs: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The entries of one thread with ``path`` and ``occurrence`` as labels, and their stored key kept under
    ``visit`` (``{"path", "occurrence"}``).

    Args:
        docs: entry documents of one thread (at least ``path``, ``node``, ``occurrence``, ``root_key``,
            ``created_at``); the labels number the visits among these.

    Returns:
        New documents, in the order given.
    """
    docs = list(docs)
    parsed = [_levels(doc) for doc in docs]
    first: dict[tuple[str, str, bool], dict[str, tuple[int, datetime, str]]] = {}
    for doc, levels in zip(docs, parsed):
        for sequence, match in _walk(levels or []):
            order = _order(match, doc.get("created_at"))
            known = first.setdefault(sequence, {})
            known[match["base"]] = min(known.get(match["base"], order), order)
    ranks = {seq: {base: n for n, base in enumerate(sorted(keys, key=keys.__getitem__), 1)} for seq, keys in first.items()}
    out = []
    for doc, levels in zip(docs, parsed):
        if levels is None:
            out.append(dict(doc))
            continue
        texts = [_text(ranks[sequence][match["base"]], match) for sequence, match in _walk(levels)]
        names = [name for name, _ in levels]
        path = "/".join([ROOT_PATH, *(f"{n}/{t}" for n, t in zip(names[:-1], texts[:-1]))])
        visit = {"path": doc["path"], "occurrence": doc["occurrence"]}
        out.append({**doc, "path": path, "occurrence": texts[-1], "visit": visit})
    return out
