"""The values dimension (issue 44): hostile values as effect inputs, effect outcomes and state.

A plan's ``Values`` names three ``Hostile`` values by kind and size, so a shrunk history prints short and ``build``
makes the same value again (in a child process too). Where they go (graphs.py):

- ``input``: an argument of every ``@effect`` and ``SecureTool`` call (a tool is given text only: LangChain validates
  and prints a tool's arguments), and a message before the prompt of every ``SecureLLM`` call (text only). Any value:
  nested past the recursion limit, holding itself, a lone surrogate, an int past 64 bits;
- ``outcome``: what every ``@effect`` and ``SecureTool`` call returns beside its slot (``{"slot", "load"}``), and, when
  it is text, the end of every model reply and ``ToolNode`` tool result (``<slot>\\n<text>``). Only what the serde
  stores (msgpack: 254 levels, 64-bit ints, no lone surrogate), or the effect could never be recorded;
- ``state``: the thread's first input, in a channel no node writes (``load``), so every checkpoint carries it.

The oracle compares them with ``same``: NaN is the same as NaN, as a resumed run must see it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from langchain_core.messages import AIMessage
from pydantic import BaseModel

#: Odd text: NUL, right-to-left and zero-width marks, a BOM, a combining mark, astral characters, escapes, BSON's
#: operator and path characters.
ODD = "\x00\u202e\u200f\u200b\ufeffe\u0301𝄞😀\\\"'$.\n\t[{"


@dataclass(frozen=True)
class Hostile:
    """A hostile value, by ``kind`` (``KINDS``), ``size`` and, for odd text, the drawn ``text``."""

    kind: str
    size: int = 0
    text: str = ""


@dataclass(frozen=True)
class Values:
    """The hostile values of one history: what every effect is given, what it returns, what the state holds."""

    input: Hostile
    outcome: Hostile
    state: Hostile


def build(hostile: Hostile) -> Any:
    """The value ``hostile`` names: the same one on every call, in any process."""
    kind, size = hostile.kind, hostile.size
    if kind == "deep_json_text":
        return "[" * size
    if kind == "deep_object_text":
        return '{"a":' * size
    if kind == "huge_text":
        return ("lorem ipsum " * (size // 12 + 1))[:size]
    if kind == "odd_text":
        return hostile.text
    if kind == "lone_surrogate":
        return f"caf\udce9 {hostile.text}\ud800"
    if kind == "floats":
        return [math.nan, math.inf, -math.inf, -0.0, 1e308, 5e-324]
    if kind == "ints":
        return [2**63 - 1, -(2**63), 0]
    if kind == "big_int":
        return 2**size
    if kind == "bytes":
        return bytes(range(256)) * size
    if kind == "deep_list":
        return nested(size)
    if kind == "odd_keys":
        return {"$set": {"$where": 1}, "a.b": [2], "": None, "\x00k": hostile.text, "_id": "x"}
    if kind == "tool_call_message":
        call = {"name": "pay", "args": {"amount": math.nan, "note": hostile.text, "deep": "[" * 1500}, "id": "call_1"}
        return AIMessage(hostile.text, tool_calls=[call])
    if kind == "holds_itself":
        held: dict[str, Any] = {"api_key": "sk-held-0123456789abcdef", "note": hostile.text}
        held["self"] = held
        return held
    raise ValueError(f"no hostile value of kind {kind!r}")


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def same(left: Any, right: Any) -> bool:
    """Equality as a resumed run must see it: NaN is the same as NaN; a message by its fields."""
    if isinstance(left, float) and isinstance(right, float):
        return left == right or (math.isnan(left) and math.isnan(right))
    if isinstance(left, BaseModel) and isinstance(right, BaseModel):
        return type(left) is type(right) and same(left.model_dump(), right.model_dump())
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right))
    return type(left) is type(right) and left == right


odd_text = st.text(alphabet=st.sampled_from(ODD), min_size=1, max_size=24)


def _hostile(kinds: dict[str, st.SearchStrategy[int]]) -> st.SearchStrategy[Hostile]:
    return st.sampled_from(sorted(kinds)).flatmap(lambda kind: st.builds(Hostile, st.just(kind), kinds[kind], odd_text))


#: What the serde stores (outcomes, state): nested at most 200 levels, 64-bit ints, no lone surrogate.
STORED = {
    "deep_json_text": st.integers(1000, 3000),
    "deep_object_text": st.integers(1000, 2000),
    "huge_text": st.integers(10_000, 100_000),
    "odd_text": st.just(0),
    "floats": st.just(0),
    "ints": st.just(0),
    "bytes": st.integers(1, 64),
    "deep_list": st.integers(50, 200),
    "odd_keys": st.just(0),
    "tool_call_message": st.just(0),
}
#: What an effect may be given: anything.
GIVEN = {
    **STORED,
    "deep_list": st.integers(1200, 2500),  # past the recursion limit, wherever the walk starts
    "lone_surrogate": st.just(0),
    "big_int": st.integers(64, 1024),
    "holds_itself": st.just(0),
}


def values() -> st.SearchStrategy[Values]:
    """Hostile values for one history (small state: every checkpoint carries it)."""
    state = dict(STORED, huge_text=st.integers(10_000, 30_000))
    return st.builds(Values, _hostile(GIVEN), _hostile(STORED), _hostile(state))


class Loads:
    """The values a graph built from a plan works with (``build`` of each), and how a node reads what it got."""

    def __init__(self, drawn: Values | None) -> None:
        self.drawn = drawn
        self.input = build(drawn.input) if drawn else None
        self.outcome = build(drawn.outcome) if drawn else None
        self.state = build(drawn.state) if drawn else None

    @property
    def text_input(self) -> str | None:
        """The input where only text may go (a tool's arguments, a message)."""
        return self.input if isinstance(self.input, str) else None

    def returned(self, slot: str) -> Any:
        """What an ``@effect`` or ``SecureTool`` returns for ``slot``."""
        return slot if self.drawn is None else {"slot": slot, "load": self.outcome}

    def text(self, slot: str) -> str:
        """What a model reply or a ``ToolNode`` tool result says for ``slot``: the outcome after it, when text."""
        return f"{slot}\n{self.outcome}" if isinstance(self.outcome, str) else slot

    def unwrap(self, value: Any) -> tuple[Any, bool | None]:
        """``(slot, whether the load a node got with it is the outcome)`` of a value an effect gave back; None when
        no load is drawn."""
        if self.drawn is None:
            return value, None
        if isinstance(value, dict) and "slot" in value:
            return value["slot"], same(value.get("load"), self.outcome)
        if isinstance(value, str) and isinstance(self.outcome, str):
            slot, _, load = value.partition("\n")
            return slot, load == self.outcome
        return value, True


#: The loads of the graph built last (graphs.build sets it): its nodes read them.
CURRENT = Loads(None)
