"""The run context: what the code of a run carries as it goes, in one ContextVar.

DBOS keeps one ``DBOSContext`` in one ContextVar; this is ours. A ``RunContext`` is
immutable: a block changes one of its fields with ``entered(field, value)``, and the
field is put back when the block ends. LangGraph copies the context into each task
it runs (threads and asyncio tasks alike), so a node, its effects and the graphs it
calls see what the code around them entered.

- ``effect_scope``: the journal and node locator bound around a block
  (``journal.effect_scope``; a platform run is served one through its checkpointer's hooks instead);
- ``effect``: the effect executing or being replayed now (``journal.current_effect``), under whose key
  nested effects number;
- ``turn``: the ``SecureLLM`` call whose callback run is being pulled (``journal/llm.py``);
- ``locks``: the run locks this context holds, by (lock store, thread id) (``runs.run_lock``): a nested run
  on one re-enters it, and an effect starting checks it was not lost.

A field is put back on its own, not by resetting the whole context: a stream's generator that yields inside
its block, while its caller enters another field, leaves the caller's field as the caller set it.

The durable scope (the resolver and task trace of a graph call, ``resolver/scope.py``) keeps a ContextVar of its
own: LangChain's configure hook reads a ContextVar that holds a callback handler.

The fields are typed ``Any`` here because their types belong to the layers above (``journal``, ``runs.run_lock``),
which this module lies beneath, for the type checker too (an ``if TYPE_CHECKING:`` import up would close an import
cycle, which ``tests/test_architecture.py`` refuses); each layer reads its own field through one accessor, which
names its type.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any, NamedTuple


class RunContext(NamedTuple):
    """What the current context of a run carries (see the module docstring)."""

    effect_scope: Any = None
    effect: Any = None
    turn: Any = None
    locks: Mapping[tuple[int, str], Any] = MappingProxyType({})


_RUN: ContextVar[RunContext] = ContextVar(
    "langgraph_durable_mongodb_run", default=RunContext()  # noqa: B039 - immutable: a NamedTuple
)
_FIELDS = {name: index for index, name in enumerate(RunContext._fields)}


def current_run() -> RunContext:
    """The run context of the running code (empty outside any run)."""
    return _RUN.get()


def entered(field: str, value: Any) -> Entered:
    """A ``with`` block in which the run context's ``field`` is ``value``; it is put back as it was at the end.

    Raises:
        KeyError: ``field`` is not a field of ``RunContext``.
    """
    return Entered(_FIELDS[field], value)


class Entered:
    """One field of the run context changed for a ``with`` block (``entered``): a class, not a generator, because
    a streamed model enters one per chunk (1.1 us a block against 3.1 us for ``contextlib.contextmanager``)."""

    __slots__ = ("_before", "_index", "_value")

    def __init__(self, index: int, value: Any) -> None:
        self._index, self._value = index, value

    def __enter__(self) -> None:
        run = _RUN.get()
        self._before = run[self._index]
        _RUN.set(_with(run, self._index, self._value))

    def __exit__(self, *exc_info: object) -> None:
        _RUN.set(_with(_RUN.get(), self._index, self._before))


def _with(run: RunContext, index: int, value: Any) -> RunContext:
    fields = list(run)
    fields[index] = value
    return RunContext._make(fields)
