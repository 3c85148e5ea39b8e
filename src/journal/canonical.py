"""A value's canonical form (JSON types that depend on its content only), its JSON text and its digest, at any depth.

``digest`` fingerprints an effect's input, stable across processes, so a resumed run can tell whether it calls an
effect with the same input; the journal stores it with every entry, so the text it hashes must never change for a
value it could hash before. Every walk here is a loop over a stack, not a recursion: a value an effect is given may be
nested deeper than Python's recursion limit, or hold itself, and such a value must not break the claim that runs the
effect.

Example::

    >>> canonical({"b": (1, 2), "a": {3}})
    {'a': [3], 'b': [1, 2]}
    >>> digest({"a": 1}) == digest({"a": 1}) != digest({"a": 2})
    True
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import hmac
import json
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Any

from pydantic import BaseModel

#: What a container that holds itself (a list appended to itself, say) is written as where it recurs.
CYCLE = "<cycle>"
_CONTAINERS = (Mapping, list, tuple, set, frozenset)
_SCALARS = (bool, int, float, str)
#: The exact types whose values are their own canonical form: placed at once, without a task.
_PLAIN = frozenset({str, int, float, bool, type(None)})
#: One JSON value that is not a container, written as ``json.dumps(..., ensure_ascii=False)`` writes it.
_SCALAR_TEXT = json.JSONEncoder(ensure_ascii=False).encode


def canonical(value: Any, *, ordered: bool = True) -> Any:
    """A JSON-able form of ``value`` that depends on its content only (no ids of objects).

    ``ordered=False`` leaves mappings in their own order, for a caller that sorts keys as it serializes
    (``digest``): it skips re-walking what pydantic's JSON dump already made JSON-able, the bulk of an LLM
    call's input. A container met again inside itself becomes ``CYCLE``.

    >>> canonical({"b": (1, 2), "a": {3}})
    {'a': [3], 'b': [1, 2]}
    """
    try:
        return _Walk(ordered, watch=False).run(value)
    except _DeepWalk:
        return _Walk(ordered, watch=True).run(value)


#: How deep ``canonical`` goes before it looks for containers inside themselves: a value nested deeper (or one
#: holding itself, which never ends) is walked again, each container noted while it is walked. Noting costs a set
#: update and a marker per container, so the common walk (tens to hundreds of containers) goes without it.
_UNWATCHED_DEPTH = 2_000


class _DeepWalk(Exception):
    """An unwatched walk went past ``_UNWATCHED_DEPTH``."""


class _Left:
    """Pushed beneath a container's items: popped once they are all canonical, to leave the container."""

    __slots__ = ("held", "made", "sort")

    def __init__(self, held: tuple[Any, ...], made: Any, sort: bool) -> None:
        self.held = held  # the container and the objects it stands for: held, so no other object takes their ids
        self.made = made  # its canonical form: a set's items are sorted once they are all made
        self.sort = sort


class _Walk:
    """``canonical``'s stack: each task puts the canonical form of a value at ``into[at]``. A container is made where
    it goes, its plain items in place, the others filled by a task each. ``watch``: note the containers walked now
    (``inside``), so that one met again inside itself becomes ``CYCLE``."""

    def __init__(self, ordered: bool, *, watch: bool) -> None:
        self.ordered, self.watch = ordered, watch
        self.tasks: list[Any] = []
        self.inside: set[int] = set()

    def run(self, value: Any) -> Any:
        root: list[Any] = [None]
        self.tasks.append((value, root, 0, 0))
        while self.tasks:
            task = self.tasks.pop()
            if type(task) is _Left:
                self.leave(task)
            else:
                item, into, at, depth = task
                into[at] = self.step(item, depth)
        return root[0]

    def step(self, value: Any, depth: int) -> Any:
        """The canonical form of ``value`` (``depth`` containers deep): made here, or a container its items' tasks
        fill."""
        stands_for: list[Any] = []  # the models and dataclasses ``value`` became: walked as that container
        while True:
            if value is None or isinstance(value, _SCALARS):
                return value
            if id(value) in self.inside:
                return CYCLE
            if isinstance(value, _CONTAINERS):
                return self.enter(value, stands_for, depth)
            if isinstance(value, BaseModel):
                dumped = _model_dump(value)
                if dumped is not None and not self.ordered:
                    return dumped  # JSON types already, its keys sorted by the caller
                stands_for.append(value)
                value = (
                    dumped if dumped is not None else {name: getattr(value, name) for name in type(value).model_fields}
                )
            elif is_dataclass_instance(value):
                stands_for.append(value)
                value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            elif isinstance(value, enum.Enum):
                value = value.value
            else:
                return _canonical_leaf(value)

    def enter(self, value: Any, stands_for: list[Any], depth: int) -> Any:
        """``value``'s canonical container: its plain items in place, a task for each other one (in order)."""
        if depth > _UNWATCHED_DEPTH and not self.watch:
            raise _DeepWalk
        made: Any
        if isinstance(value, Mapping):
            pairs = sorted(value.items(), key=lambda kv: str(kv[0])) if self.ordered else value.items()
            made = {str(key): item for key, item in pairs}  # two keys of one text: the first's place, the last's item
            places: Any = made.items()
        else:
            made = list(value)
            places = enumerate(made)
        tasks = [(item, made, at, depth + 1) for at, item in places if type(item) not in _PLAIN]
        sort = isinstance(value, (set, frozenset))
        if sort or (tasks and self.watch):
            held = (value, *stands_for)
            if self.watch:
                self.inside.update(map(id, held))
            self.tasks.append(_Left(held, made, sort))
        tasks.reverse()
        self.tasks.extend(tasks)
        return made

    def leave(self, left: _Left) -> None:
        self.inside.difference_update(map(id, left.held))
        if left.sort:
            left.made.sort(key=repr)


def _model_dump(value: BaseModel) -> Any:
    """A pydantic model's JSON dump, or None when pydantic refuses it (nested past its own depth limit)."""
    try:
        return value.model_dump(mode="json")  # JSON types only, string keys
    except ValueError:
        return None


def _canonical_leaf(value: Any) -> Any:
    """Any other value made canonical: a date or time as ISO text, bytes by their digest, the rest by its type."""
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": hashlib.sha256(value).hexdigest()}
    # Anything else (a client, a callback, ...) counts by its type: its repr
    # may hold a memory address, which would change the digest on every run.
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def is_dataclass_instance(value: Any) -> bool:
    """Whether ``value`` is an instance of a dataclass (not the class itself)."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def canonical_json(value: Any, *, sort_keys: bool = False, separators: tuple[str, str] = (", ", ": ")) -> str:
    """``json.dumps(value, ensure_ascii=False, sort_keys=..., separators=...)`` of a canonical form, at any depth.

    The C encoder recurses, and raises ``RecursionError`` for a form nested deeper than the interpreter's limit
    allows from where it is called: such a form is written by a loop instead, to the same text.

    >>> canonical_json({"b": [1.5, None], "a": "é"}, sort_keys=True)
    '{"a": "é", "b": [1.5, null]}'
    """
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=sort_keys, separators=separators)
    except RecursionError:
        return _json_by_loop(value, sort_keys, separators)


def _json_by_loop(value: Any, sort_keys: bool, separators: tuple[str, str]) -> str:
    """``canonical_json``'s text, written from a stack of what is still to write (text, or a value)."""
    item_separator, key_separator = separators
    parts: list[str] = []
    stack: list[tuple[bool, Any]] = [(False, value)]  # (is text, what)
    while stack:
        is_text, item = stack.pop()
        if is_text:
            parts.append(item)
        elif isinstance(item, dict):
            pairs = sorted(item.items()) if sort_keys else list(item.items())
            stack.append((True, "}"))
            for i in reversed(range(len(pairs))):
                stack.append((False, pairs[i][1]))
                stack.append((True, (item_separator if i else "") + _SCALAR_TEXT(pairs[i][0]) + key_separator))
            stack.append((True, "{"))
        elif isinstance(item, (list, tuple)):
            stack.append((True, "]"))
            for i in reversed(range(len(item))):
                stack.append((False, item[i]))
                if i:
                    stack.append((True, item_separator))
            stack.append((True, "["))
        else:
            parts.append(_SCALAR_TEXT(item))
    return "".join(parts)


def digest(value: Any, key: bytes | None = None) -> str:
    """``sha256:<hex>`` of ``value``'s canonical JSON; ``hmac-sha256:<hex>`` keyed by ``key`` when given.

    A plain digest of a short secret (a PIN, a card number) is found by trying every value; keyed, it
    is not, without the key. Text holding a lone surrogate (which UTF-8 cannot encode) is hashed as
    ``surrogatepass`` encodes it.

    >>> digest({"a": 1}) == digest({"a": 1}) != digest({"a": 2})
    True
    >>> digest({"a": 1}, b"k1") != digest({"a": 1}, b"k2")
    True
    """
    text = canonical_json(canonical(value, ordered=False), sort_keys=True, separators=(",", ":"))
    data = text.encode("utf-8", "surrogatepass")
    if key is None:
        return "sha256:" + hashlib.sha256(data).hexdigest()
    return "hmac-sha256:" + hmac.new(key, data, hashlib.sha256).hexdigest()
