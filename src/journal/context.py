"""The context an effect runs in: which journal and node locator, and which effect is running.

An effect scope names a journal and a node locator. The wrappers find the one
of the running node here, so a graph's code does not change: a platform serves
one for every run that saves with its checkpointer, found from the node's own
config (``SaverHooks.effect_scopes``, on its checkpointer), and ``effect_scope`` binds one around a block
whatever saver its graphs use.

Example::

    with effect_scope(journal, ResolverLocator()):
        graph.invoke(inputs, config)

    @effect(kind="payment")
    def charge(amount):
        return psp.charge(amount, idempotency_key=current_effect().idempotency_key)
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, cast

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from .. import _langgraph
from ..errors import NoDurableScopeError
from ..resolver.position import NodePosition
from ..runs.context import Entered, current_run, entered
from .attempt import Attempt, Trail, current_attempt
from .documents import EffectCall
from .locator import NodeLocator, ResolverLocator, check_node
from .position import EffectPosition
from .unjournaled import (
    UNJOURNALED,
    means_unjournaled,
    note_unjournaled_run,
    runs_without_checkpointer,
    unjournaled_position,
)


class Journal(Protocol):
    """What the wrappers call on a scope's journal (``ActivityJournal``)."""

    def run(self, call: EffectCall, fn: Callable[[], Any], *, replay: Callable[[Any], Any] | None = None) -> Any: ...

    async def arun(
        self, call: EffectCall, fn: Callable[[], Any], *, replay: Callable[[Any], Any] | None = None
    ) -> Any: ...

    def run_stream(
        self,
        call: EffectCall,
        open_stream: Callable[[], Any],
        merge: Callable[[list[Any]], Any],
        replay: Callable[[Any], Iterable[Any]],
    ) -> Iterator[Any]: ...

    def arun_stream(
        self,
        call: EffectCall,
        open_stream: Callable[[], Any],
        merge: Callable[[list[Any]], Any],
        replay: Callable[[Any], Iterable[Any] | Awaitable[Iterable[Any]]],
    ) -> AsyncIterator[Any]: ...


@dataclass(frozen=True)
class EffectScope:
    """The journal and node locator that effects run inside this scope use.

    ``guard(thread_id)``, when set, runs before every effect starts: it raises to stop it, and says
    whether the run holds its thread exclusively (the platform's run lock: ``run_lock.check_held``
    refuses once the run lost its thread's lock). An exclusive run journals at-least-once effects
    without claiming them first (see ``journal/plans.py``).
    """

    journal: Journal
    #: None only for the unjournaled scope, whose journal locates nothing.
    locator: NodeLocator | None
    guard: Callable[[str], bool] | None = None


@dataclass(frozen=True)
class EffectInfo:
    """The effect being executed, or replayed, as ``current_effect()`` returns it.

    Attributes:
        position: the effect's journal position.
        kind, name: what the effect is (``llm``/``tool``/a user kind, and its name).
        attempt: executions started at this position in every process, this one included, as its entry counts
            them (0 while replayed): exact wherever the effect was claimed before it ran (``at_most_once``, runs
            without the run lock, ``claim_always``); under the run lock an at-least-once effect runs unclaimed, and
            an execution a crash cut short left no entry to count.
        at_most_once: whether a lost outcome stops a re-run.
        replayed: its outcome comes from the journal: a wrapper's ``replay`` hook is running, not the effect.
        recorded_key: the idempotency key the position's entry was first claimed under, when it was (a take-over
            keeps it).
    """

    position: EffectPosition
    kind: str
    name: str
    attempt: int
    at_most_once: bool = False
    replayed: bool = False
    recorded_key: str | None = None
    _children: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False, compare=False)

    @property
    def idempotency_key(self) -> str:
        """The same on every re-execution of this effect, and no other effect's: pass it to APIs that de-duplicate.
        It is fixed when the effect's entry is first claimed (a digest of its position, ``EffectPosition``)."""
        return self.recorded_key or self.position.idempotency_key


@contextmanager
def effect_scope(
    journal: Journal, locator: NodeLocator, guard: Callable[[str], bool] | None = None
) -> Iterator[EffectScope]:
    """Run the block's effects on ``journal`` at the nodes ``locator`` reports (see ``EffectScope``), whatever
    saver their graphs run on."""
    scope = EffectScope(journal, locator, guard)
    with entered("effect_scope", scope):
        yield scope


def current_effect_scope() -> EffectScope:
    """The effect scope of the running node: the one bound here (``effect_scope``), else the one served for the
    checkpointer its graph saves with (``SaverHooks.effect_scopes``).

    A node of a graph that runs with no checkpointer at all, in a run that says it means to (Agent Server's
    stateless runs, or ``{"configurable": {"unjournaled": True}}``), gets the ``Unjournaled`` scope: its effects
    run for real, unrecorded (``unjournaled.py``).

    Raises:
        NoDurableScopeError: none is bound or served; the message says how to get one (a graph started from a
            thread of a durable node's own lost the node's ``contextvars``).
    """
    scope: EffectScope | None = current_run().effect_scope
    if scope is not None:
        return scope
    config = _node_config()
    if config is not None:
        saver = _langgraph.run_checkpointer(config.get("configurable") or {})
        scope_for = _serving(saver)
        if scope_for is not None:
            return scope_for(saver)
        if runs_without_checkpointer(config) and means_unjournaled(config):
            note_unjournaled_run(config)
            return _UNJOURNALED
        if saver is not None:
            raise NoDurableScopeError(
                f"this effect's graph runs on {type(saver).__name__}, not on the platform's checkpointer: the "
                "journal keys effects by the platform's checkpoints. Compile the root graph with "
                "checkpointer=platform.checkpointer (its children with checkpointer=None)"
            )
    raise NoDurableScopeError(
        "a journaled effect (SecureLLM, SecureTool, @effect) ran outside a durable scope. If your node "
        "started it, or a graph running it, from a thread of its own (a ThreadPoolExecutor, threading.Thread), that "
        "thread did not get the node's contextvars: submit it as pool.submit(contextvars.copy_context().run, fn, "
        "*args), or use langchain_core.runnables.config.ContextThreadPoolExecutor. Otherwise compile the graph with "
        "a DurablePlatform's checkpointer (builder.compile(checkpointer=platform.checkpointer) or "
        "platform.compile(builder)), run it inside `with effect_scope(journal, locator):`, or, for a graph that "
        f"means to run without a checkpointer and unjournaled, pass {{'configurable': {{{UNJOURNALED!r}: True}}}}"
    )


def _serving(saver: object) -> Callable[[Any], EffectScope] | None:
    """What the saver's owner serves its runs' nodes (``MongoDBCheckpointer.hooks``; a clone shares its original's)."""
    served = getattr(getattr(saver, "hooks", None), "effect_scopes", None)
    return served if callable(served) else None


def _node_config() -> RunnableConfig | None:
    try:
        return get_config()
    except RuntimeError:
        return None


class Unjournaled:
    """The journal of a run without a checkpointer: every effect runs, once, and nothing is recorded."""

    def run(self, call: EffectCall, fn: Callable[[], Any], *, replay: Callable[[Any], Any] | None = None) -> Any:
        with running(EffectInfo(unjournaled_position(call), call.kind, call.name, 1, call.at_most_once)):
            return fn()

    async def arun(
        self, call: EffectCall, fn: Callable[[], Any], *, replay: Callable[[Any], Any] | None = None
    ) -> Any:
        with running(EffectInfo(unjournaled_position(call), call.kind, call.name, 1, call.at_most_once)):
            result = fn()
            return await result if inspect.isawaitable(result) else result

    def run_stream(
        self,
        call: EffectCall,
        open_stream: Callable[[], Any],
        merge: Callable[[list[Any]], Any],
        replay: Callable[[Any], Iterable[Any]],
    ) -> Iterator[Any]:
        return iter(open_stream())

    async def arun_stream(
        self,
        call: EffectCall,
        open_stream: Callable[[], Any],
        merge: Callable[[list[Any]], Any],
        replay: Callable[[Any], Iterable[Any] | Awaitable[Iterable[Any]]],
    ) -> AsyncIterator[Any]:
        async for item in open_stream():
            yield item


_UNJOURNALED = EffectScope(Unjournaled(), None)  # nothing to locate


def current_effect() -> EffectInfo | None:
    """The effect executing (or being replayed, ``replayed``) now, its ``idempotency_key`` and ``position``; None
    outside effects."""
    effect: EffectInfo | None = current_run().effect
    return effect


def running(info: EffectInfo) -> Entered:
    """A ``with`` block in which ``info`` is the current effect."""
    return entered("effect", info)


def _nested(key: str | None) -> EffectPosition | None:
    """Inside another effect, positions number under that effect's key."""
    parent = current_effect()
    if parent is None:
        return None
    own = key if key is not None else str(next(parent._children))
    return replace(parent.position, effect_key=f"{parent.position.effect_key}/{own}")


@dataclass(frozen=True)
class Slot:
    """An effect of a node attempt: its key (a tool call's), or the ordinal it took, which ``Attempt.take``
    turns into a key once the journal has read the node's entries.

    ``exclusive``: the run holds its thread's run lock, so no other run can meet this position now.
    """

    attempt: Attempt
    ordinal: int
    key: str | None = None
    exclusive: bool = False

    @property
    def node(self) -> NodePosition:
        assert self.attempt.node is not None
        return self.attempt.node


def locate(scope: EffectScope, key: str | None = None, at_most_once: bool = False) -> EffectPosition | Slot:
    """Where an effect starting now goes: under its parent effect, or a slot of the node attempt; an
    ``at_most_once`` one is refused where it could run twice (``ResolverLocator.confirm``)."""
    if (nested := _nested(key)) is not None:
        return nested
    locator = _locator_of(scope)
    attempt = current_attempt(*locator.task())
    ordinal = attempt.next_ordinal() if key is None else 0
    node = attempt.node if attempt.node is not None else _bind_node(attempt, locator, locator.node())
    if at_most_once and node.unconfirmed:
        cast(ResolverLocator, locator).confirm(node)  # only ResolverLocator makes unconfirmed visits
    return _slot(scope, attempt, node, ordinal, key)


def _locator_of(scope: EffectScope) -> NodeLocator:
    """The scope's locator; only an unjournaled run's scope has none (its own journal locates nothing).

    Raises:
        NoDurableScopeError: an ``ActivityJournal`` was called here without a ``position``.
    """
    if scope.locator is None:
        raise NoDurableScopeError(
            "this graph runs without a checkpointer, so its effects run unjournaled and have no position: pass "
            "position= to ActivityJournal.run, or compile the graph with a DurablePlatform's checkpointer"
        )
    return scope.locator


def _bind_node(attempt: Attempt, locator: NodeLocator, found: NodePosition) -> NodePosition:
    """The attempt's first effect: keep the node's position the locator ``found`` (once checked) and the task's
    trailing records in ``attempt``, for its later effects."""
    attempt.node = check_node(found)
    if attempt.trail is None:
        attempt.trail = _trail(locator)
    labels_of = getattr(locator, "labels_of", None)  # a locator keeping the thread's labels (ResolverLocator's)
    attempt.labels = labels_of(found.thread_id) if labels_of is not None else None
    return attempt.node


def _slot(scope: EffectScope, attempt: Attempt, node: NodePosition, ordinal: int, key: str | None) -> Slot:
    thread_id = node.thread_id
    exclusive = bool(scope.guard(thread_id)) if scope.guard is not None else False
    return Slot(attempt, ordinal, key, exclusive)


def _trail(locator: NodeLocator) -> Trail | None:
    """The running task's trailing records, when the locator knows where its writes wait (``ResolverLocator``
    with a saver); other locators' effects are recorded before they return."""
    trail = getattr(locator, "trail", None)
    return trail() if trail is not None else None


async def alocate(scope: EffectScope, key: str | None = None) -> EffectPosition | Slot:
    """``locate`` for async effects: the ordinal is taken before the (possibly I/O-bound) node lookup."""
    if (nested := _nested(key)) is not None:
        return nested
    locator = _locator_of(scope)
    attempt = current_attempt(*locator.task())
    ordinal = attempt.next_ordinal() if key is None else 0
    node = attempt.node if attempt.node is not None else _bind_node(attempt, locator, await locator.anode())
    return _slot(scope, attempt, node, ordinal, key)
