"""Durable scope: the resolver bound to one graph run.

A scope carries the run's ``DurableSubgraphResolver`` and the ``TaskTrace`` that records task
starts. Binding is by ``contextvars``, so it reaches every node at every depth:
LangGraph copies the caller's context into the tasks it schedules, for async
nodes (asyncio tasks), for sync nodes it runs in its thread pool, and for
compiled child graphs.

* ``invoke``/``ainvoke``: bind for the whole call with ``durable_scope``.
* ``stream``/``astream``: a node sees the context of the ``next()``/``__anext__()``
  call that scheduled its step, and an async generator may be resumed from a
  different asyncio task, so a ``with`` block around the loop is not enough. Wrap
  the iterator with ``scoped_iter``/``scoped_aiter``: every step is then pulled
  inside the same scope object (one trace for the whole stream).

Outside any scope, ``current_durable_scope()`` raises ``NoDurableScopeError`` and
``maybe_durable_scope()`` returns None. A scope must be bound when the graph
call starts: a scope bound later (inside a node) cannot resolve nodes of compiled
children, because it did not see the tasks that entered them
(``NoDurableScopeError`` from ``resolve_current``).

Example::

    with durable_scope(resolver):
        graph.invoke(inputs, config)

    scope = DurableScope(resolver)
    async for chunk in scoped_aiter(scope, graph.astream(inputs, config)):
        ...

    # inside any node, at any depth:
    resolved = current_durable_scope().resolve_current()
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any, Generic, Protocol, TypeVar

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.runnables import RunnableConfig
from langchain_core.tracers.context import register_configure_hook
from langgraph.config import get_config

from ..errors import NamespaceError, NoDurableScopeError
from .durable_subgraphs import DurableSubgraphResolver
from .namespace import ResolvedNamespace
from .trace import TaskTrace

__all__ = [
    "DurableScope",
    "SupportsBind",
    "current_durable_scope",
    "durable_scope",
    "maybe_durable_scope",
    "scoped_aiter",
    "scoped_iter",
]

T = TypeVar("T")

#: The scope bound in this context. LangChain adds the handler this variable holds to every callback manager
#: it configures (``langchain_core/callbacks/manager.py``, ``_configure``), inheritable by child runs.
_SCOPE: ContextVar[DurableScope | None] = ContextVar("langgraph_durable_mongodb_scope", default=None)
register_configure_hook(_SCOPE, inheritable=True)


class DurableScope(BaseCallbackHandler):
    """Resolver and task trace of one graph run.

    Creating a scope validates the resolver's topology (``TopologyError``). While it is bound, LangChain's
    configure hook gives it to every callback manager LangGraph configures for the run, and it hands each
    task start to its trace.

    Example::

        scope = DurableScope(resolver)
        with scope.bind():
            graph.invoke(inputs, config)
        for chunk in scoped_iter(scope, graph.stream(inputs, config)):
            ...
    """

    run_inline = True  # called in the emitting thread/task, also by async callback managers

    def __init__(self, resolver: DurableSubgraphResolver) -> None:
        resolver.validate()
        self.resolver = resolver
        self.trace = TaskTrace()

    @contextmanager
    def bind(self) -> Iterator[DurableScope]:
        """Make this scope current for the block (its trace records the task starts of what runs in it)."""
        token = _SCOPE.set(self)
        try:
            yield self
        finally:
            _SCOPE.reset(token)

    def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
        self.trace.on_chain_start(serialized, inputs, **kwargs)

    def resolve_current(self, config: RunnableConfig | None = None, origin: str | None = None) -> ResolvedNamespace:
        """Resolve the running node: its config defaults to ``langgraph.config.get_config()``.

        ``origin``: the root checkpoint the run continues (see ``DurableSubgraphResolver.resolve_config``).
        """
        if config is None:
            try:
                config = get_config()
            except RuntimeError as error:
                raise NamespaceError(
                    "resolve_current() was called outside a LangGraph node (get_config() found no runnable "
                    "config); call it from node code, or pass the node's config"
                ) from error
        return self.resolver.resolve_config(config, self.trace, origin)


@contextmanager
def durable_scope(resolver: DurableSubgraphResolver) -> Iterator[DurableScope]:
    """Create a scope and bind it for the block (one ``invoke``/``ainvoke``)."""
    with DurableScope(resolver).bind() as scope:
        yield scope


def current_durable_scope() -> DurableScope:
    """The scope bound here; raises ``NoDurableScopeError`` outside any scope."""
    scope = _SCOPE.get()
    if scope is None:
        raise NoDurableScopeError(
            "no durable scope is bound: compile the graph with the platform checkpointer, or run it inside "
            "durable_scope(resolver)"
        )
    return scope


def maybe_durable_scope() -> DurableScope | None:
    """The scope bound here, or None."""
    return _SCOPE.get()



class SupportsBind(Protocol):
    """A scope ``scoped_iter``/``scoped_aiter`` can bind: a ``DurableScope``, or one that binds it with more."""

    def bind(self) -> AbstractContextManager[Any]: ...


class _ScopedIterator(Iterator[T], Generic[T]):
    def __init__(self, scope: SupportsBind, iterable: Iterable[T]) -> None:
        self._scope = scope
        self._iterator = iter(iterable)

    def __iter__(self) -> _ScopedIterator[T]:
        return self

    def __next__(self) -> T:
        with self._scope.bind():
            return next(self._iterator)

    def close(self) -> None:
        close = getattr(self._iterator, "close", None)
        if close is not None:
            with self._scope.bind():
                close()


class _ScopedAsyncIterator(AsyncIterator[T], Generic[T]):
    def __init__(self, scope: SupportsBind, iterable: AsyncIterable[T]) -> None:
        self._scope = scope
        self._iterator = iterable.__aiter__()

    def __aiter__(self) -> _ScopedAsyncIterator[T]:
        return self

    async def __anext__(self) -> T:
        with self._scope.bind():
            return await self._iterator.__anext__()

    async def aclose(self) -> None:
        aclose = getattr(self._iterator, "aclose", None)
        if aclose is not None:
            with self._scope.bind():
                await aclose()


def scoped_iter(scope: SupportsBind, iterable: Iterable[T]) -> Iterator[T]:
    """Iterate ``iterable`` (e.g. ``graph.stream(...)``) with ``scope`` bound during every ``next()``."""
    return _ScopedIterator(scope, iterable)


def scoped_aiter(scope: SupportsBind, iterable: AsyncIterable[T]) -> AsyncIterator[T]:
    """Iterate ``iterable`` (e.g. ``graph.astream(...)``) with ``scope`` bound during every ``__anext__()``."""
    return _ScopedAsyncIterator(scope, iterable)
