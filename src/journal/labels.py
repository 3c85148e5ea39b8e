"""Readable labels for journal entries: the keys of a visit, numbered in the order the visits ran.

An entry is keyed by its visit (``resolver/visit.py``): ``agent/1/case_investigation/<root checkpoint>/
policy_analysis/s1``, node ``review_policy``, occurrence ``s1``. People read ordinals instead:
``agent/1/case_investigation/1/policy_analysis/1``, occurrence ``1``. Each key is replaced by its rank among the
keys of the same name under the same parent (a *sequence*), ``Send`` groups (``<group>.<index>``) counted in a
sequence of their own and keeping their index, a subgraph run keeping its ``+p``, a ``@task`` call its ``c<N>``
ranked by number.

Every entry stores its label (``label: {path, occurrence}``), made when its visit's first effect is claimed
(``ThreadLabels``, one place for both: ``label`` numbers a visit from the ranks known, ``labelled`` numbers entries
as read) and never read by replay. A visit is numbered after every visit of its sequence claimed before it: by a
key's rank when the key is known, else one past the sequence's highest rank. ``ThreadLabels`` holds, per thread,
the ranks this process assigned and read; a sequence is known whole when the thread was new when this process took
it up (its run found no checkpoint), when this process read it whole (every entry under one root-level name, once:
``sequence_filter``), or below a key new to a sequence known whole. The journal reads a sequence whole beside the
node's own entries when it cannot number a visit otherwise (``journal/plans.py``). ``labelled`` reads labels as
stored, and numbers an entry stored without one (written before labels were stored) by its rank among the entries
read: steps and task calls by number, checkpoint and task ids by when their visit's first entry was claimed. An
entry whose key is not a visit's (a position given explicitly) keeps what is stored.

Example::

    labelled([{"path": "agent/1", "node": "pay", "occurrence": "1f0c…", ...}])[0]["occurrence"]   # "1"
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, cast

from ..storage.visit_keys import CALL_PREFIX, KEY, ROOT_PATH, STEP_PREFIX, levels

__all__ = ["ThreadLabels", "labelled", "sequence_filter", "stored_label"]

_EARLIEST = datetime.min
#: A sequence: the key path of its parent, its name, and whether it counts ``Send`` groups.
Sequence = tuple[str, str, bool]


def _levels(doc: Mapping[str, Any]) -> list[tuple[str, re.Match[str]]] | None:
    """``[(name, key match), ...]`` of an entry's boundaries and node, or None when its position is not a visit's."""
    pairs = levels(doc) if doc.get("root_key") else None
    matches = [(name, KEY.match(text)) for name, text in pairs or []]
    if pairs is None or any(match is None for _, match in matches):
        return None
    return cast("list[tuple[str, re.Match[str]]]", matches)  # none is None (checked above)


def _order(match: re.Match[str], claimed: Any) -> tuple[int, datetime, str]:
    base = match["base"]
    numbered = base[:1] in (STEP_PREFIX, CALL_PREFIX) and base[1:].isdigit()  # a step or a call, not an id
    step = int(base[1:]) if numbered else 0
    return step, claimed if isinstance(claimed, datetime) else _EARLIEST, base


def _walk(levels: list[tuple[str, re.Match[str]]]) -> Iterable[tuple[Sequence, re.Match[str]]]:
    """Each level's sequence ``(parent key path, name, Send?)`` and key."""
    parent = ROOT_PATH
    for name, match in levels:
        yield (parent, name, match["index"] is not None), match
        parent = f"{parent}/{name}/{match[0]}"


def _text(rank: int, match: re.Match[str]) -> str:
    text = f"{rank}.{match['index']}" if match["index"] is not None else str(rank)
    return f"{text}+{match['run']}" if match["run"] is not None else text


def _label(levels: list[tuple[str, re.Match[str]]], ranks: list[int]) -> dict[str, str]:
    """``{"path", "occurrence"}``: the levels' keys replaced by their ranks."""
    texts = [_text(rank, match) for rank, (_, match) in zip(ranks, levels, strict=True)]
    names = [name for name, _ in levels]
    path = "/".join([ROOT_PATH, *(f"{n}/{t}" for n, t in zip(names[:-1], texts[:-1], strict=True))])
    return {"path": path, "occurrence": texts[-1]}


def stored_label(doc: Mapping[str, Any]) -> dict[str, str] | None:
    """The label an entry stores (``{"path", "occurrence"}``), or None when it stores none (or a damaged one)."""
    label = doc.get("label")
    if isinstance(label, Mapping) and isinstance(label.get("path"), str) and isinstance(label.get("occurrence"), str):
        return {"path": label["path"], "occurrence": label["occurrence"]}
    return None


def _ranks(label: Mapping[str, str]) -> list[int] | None:
    """The rank of each level of a label (``agent/1/sub/3/inner/1`` and ``2.1``: 3, 1, 2), or None if it is none."""
    parts = label["path"].split("/")[2:]
    texts = [*parts[1::2], label["occurrence"]]
    ranks = [t.split("+")[0].split(".")[0] for t in texts]
    return [int(r) for r in ranks] if all(r.isdigit() for r in ranks) else None


def labelled(docs: Iterable[Mapping[str, Any]], *, number: bool = True) -> list[dict[str, Any]]:
    """The entries of one thread with ``path`` and ``occurrence`` as labels, and their stored key kept under
    ``visit`` (``{"path", "occurrence"}``).

    Args:
        docs: entry documents of one thread (at least ``path``, ``node``, ``occurrence``, ``root_key``,
            ``created_at``, and ``label`` where stored); an entry stored without a label is numbered among these.
        number: number the entries stored without a label (else they keep their keys: the entries read are not the
            thread's first, whose ranks numbering needs).

    Returns:
        New documents, in the order given.
    """
    docs = list(docs)
    parsed = [_levels(doc) for doc in docs]
    first: dict[Sequence, dict[str, tuple[int, datetime, str]]] = {}
    for doc, doc_levels in zip(docs, parsed, strict=True):
        for sequence, match in _walk(doc_levels or []):
            order = _order(match, doc.get("created_at"))
            known = first.setdefault(sequence, {})
            known[match["base"]] = min(known.get(match["base"], order), order)
    ranks = {
        seq: {base: n for n, base in enumerate(sorted(keys, key=keys.__getitem__), 1)} for seq, keys in first.items()
    }
    out = []
    for doc, doc_levels in zip(docs, parsed, strict=True):
        label = stored_label(doc) if doc_levels is not None else None
        if doc_levels is None or (label is None and not number):
            out.append(dict(doc))
            continue
        label = label or _label(doc_levels, [ranks[sequence][match["base"]] for sequence, match in _walk(doc_levels)])
        out.append({**doc, **label, "visit": {"path": doc["path"], "occurrence": doc["occurrence"]}})
    return out


def sequence_filter(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """The filter of every entry of the thread under the root-level name of the visit ``doc`` is at (its node when
    it runs at the root, else its first compiled child): the sequence ``ThreadLabels.learn`` needs whole to number
    the visit. None when ``doc`` is not a visit's."""
    parsed = _levels(doc)
    if parsed is None:
        return None
    name = parsed[0][0]
    return {"$or": [{"path": ROOT_PATH, "node": name}, {"path": {"$regex": "^" + re.escape(f"{ROOT_PATH}/{name}/")}}]}


#: What ``ThreadLabels.learn`` reads of an entry.
LABEL_FIELDS = {"_id": 0, "path": 1, "node": 1, "occurrence": 1, "root_key": 1, "created_at": 1, "label": 1}


class ThreadLabels:
    """What this process knows of one thread's labels: per sequence, the rank of each key it assigned or read.

    Args:
        fresh: the thread had no checkpoint when this process took it up: every sequence is known whole, empty.
    """

    def __init__(self, fresh: bool) -> None:
        self.fresh = fresh
        self._whole: set[str] = set()  # root-level names whose sequences were read whole
        self._ranks: dict[Sequence, dict[str, int]] = {}
        self._lock = threading.Lock()

    def label(self, doc: Mapping[str, Any]) -> dict[str, str] | None:
        """The label of the visit ``doc`` is at (``path``, ``node``, ``occurrence``, ``root_key``), numbering its
        keys new to their sequence after those known; None when a sequence it needs is not known whole (or ``doc``
        is not a visit's: nothing to number)."""
        parsed = _levels(doc)
        if parsed is None:
            return None
        with self._lock:
            whole = self.fresh or parsed[0][0] in self._whole
            ranks = []
            for sequence, match in _walk(parsed):
                known = self._ranks.setdefault(sequence, {})
                if match["base"] not in known:
                    if not whole:
                        return None
                    known[match["base"]] = max(known.values(), default=0) + 1
                    whole = True  # below a new key, every sequence is new: empty, known whole
                ranks.append(known[match["base"]])
            return _label(parsed, ranks)

    def learn(self, doc: Mapping[str, Any], entries: Iterable[Mapping[str, Any]]) -> None:
        """Take the ranks of ``entries``, every entry of the sequence of the visit ``doc`` is at
        (``sequence_filter``), read whole: their stored labels, or their ranks among them."""
        parsed = _levels(doc)
        if parsed is None:
            return
        found: dict[Sequence, dict[str, int]] = {}
        for entry in labelled(entries):
            visit = _levels({**entry, **entry["visit"]}) if "visit" in entry else None
            ranks = _ranks({"path": entry["path"], "occurrence": entry["occurrence"]}) if visit is not None else None
            for (sequence, match), rank in zip(_walk(visit or []), ranks or [], strict=False):
                found.setdefault(sequence, {})[match["base"]] = rank
        with self._lock:
            for sequence, known in found.items():
                self._ranks.setdefault(sequence, {}).update(known)
            self._whole.add(parsed[0][0])
