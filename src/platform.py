"""``DurablePlatform``: the checkpointer, the journal and the allocator, bound to your graphs.

``compile`` (or ``attach``) gives a graph whose every run is durable: the root
owns the platform checkpointer, compiled children inherit it, the resolver
validates the topology up front (``TopologyError``), and each
``invoke``/``ainvoke``/``stream``/``astream``/``batch`` call binds the durable
scope in which ``SecureLLM``, ``SecureTool`` and ``@effect`` record and replay.

Example::

    platform = DurablePlatform.from_conn_string("mongodb://localhost:27017", db_name="agents")
    graph = platform.compile(builder)
    graph.invoke({"case": "42"}, {"configurable": {"thread_id": "case-42"}})
    # crash, restart, then resume: recorded effects are replayed, not re-run
    graph.invoke(None, {"configurable": {"thread_id": "case-42"}})

    platform = DurablePlatform.embedded()   # in-memory mongomock, for demos and tests
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from typing import Any

from langchain_core.runnables.config import get_config_list
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel

from .checkpointer import MongoDBCheckpointer
from .errors import TopologyError
from .journal import ActivityJournal, ResolverLocator, effect_scope
from .resolver import DurableScope, DurableSubgraphResolver, OrdinalAllocator, scoped_aiter, scoped_iter
from .run_lock import (
    LockedAsyncIterator,
    LockedIterator,
    RunLocks,
    batch_rounds,
    check_held,
    thread_id_of,
    thread_ids_of,
)


class DurablePlatform:
    """Owns the platform checkpointer, the activity journal and the ordinal allocator.

    Args:
        client: a sync client (pymongo ``MongoClient``, mongomock) and/or
        async_client: an async client (``AsyncMongoClient``, motor, mongomock_motor).
            Give both when graphs run sync nodes inside ``ainvoke`` (LangGraph
            runs those in a thread pool, where they need the sync client).
        db_name: the database for every collection.
        checkpointer_options: passed to ``MongoDBCheckpointer`` (``serde``, ``ttl``, ...).
        journal_options: passed to ``ActivityJournal`` (``lease_seconds``,
            ``wait_seconds``, ``terminal_errors``, ``on_input_change``, ...).
        exclusive_runs: one run per thread at a time (default): ``invoke``/``stream``/``batch`` and
            their async twins take the thread's fenced run lock (``run_lock.py``, collection
            ``thread_runs``; 3 commands per run), so concurrent resumes of one thread run one after
            the other instead of forking it. ``False`` turns it off: then run one caller per thread yourself.
        run_lease_seconds: how long a run's lock outlives its last renewal (renewed every third of it);
            a crashed run's lock is taken over after that, at once when it ran on this host. A run
            whose renewal comes too late has lost its lock (``run_lock.check_held`` then raises
            ``RunLockLostError``).
        run_wait_seconds: how long a run waits for another run of its thread before ``ThreadBusyError``.
    """

    def __init__(
        self,
        client: Any = None,
        *,
        async_client: Any = None,
        db_name: str = "langgraph",
        journal_options: dict[str, Any] | None = None,
        exclusive_runs: bool = True,
        run_lease_seconds: float = 30.0,
        run_wait_seconds: float = 30.0,
        **checkpointer_options: Any,
    ) -> None:
        self.checkpointer = MongoDBCheckpointer(client, async_client=async_client, db_name=db_name, **checkpointer_options)
        self.journal = ActivityJournal.for_checkpointer(self.checkpointer, **(journal_options or {}))
        databases = [c[db_name] for c in (self.checkpointer.client, self.checkpointer.async_client) if c is not None]
        self.allocator = OrdinalAllocator(
            *databases,
            collection_name=self.checkpointer.collections.ordinals,
            expiry=self.checkpointer.expiry_fields if self.checkpointer.ttl is not None else None,
        )
        self.locator = ResolverLocator(self.allocator, self.checkpointer)
        self.run_locks: RunLocks | None = None
        if exclusive_runs:
            self.run_locks = RunLocks(
                self.checkpointer.client,
                async_client=self.checkpointer.async_client,
                db_name=db_name,
                collection=self.checkpointer.collections.runs,
                lease_seconds=run_lease_seconds,
                wait_seconds=run_wait_seconds,
            )

    @classmethod
    def embedded(cls, **options: Any) -> DurablePlatform:
        """An in-memory platform on mongomock (sync and async faces share the data): demos and tests.

        Nothing survives the process; use ``from_conn_string`` or real clients for durability.

        Args:
            **options: the other ``DurablePlatform`` arguments (``db_name``, ``journal_options``, ``ttl``, ...).

        Returns:
            The platform, with a ``mongomock.MongoClient`` and a ``mongomock_motor`` client over the same data.

        Raises:
            ImportError: ``mongomock`` or ``mongomock_motor`` is not installed (the ``test`` extra).
        """
        import mongomock
        from mongomock_motor import AsyncMongoMockClient

        client = mongomock.MongoClient()
        return cls(client, async_client=AsyncMongoMockClient(mock_mongo_client=client), **options)

    @classmethod
    @contextmanager
    def from_conn_string(cls, uri: str, **options: Any) -> Iterator[DurablePlatform]:
        """A platform with a sync and an async client for ``uri``, closed at the end of the block.

        Example::

            with DurablePlatform.from_conn_string("mongodb://localhost:27017", db_name="agents") as platform:
                platform.compile(builder).invoke(inputs, config)

        Args:
            uri: a MongoDB URI.
            **options: the other ``DurablePlatform`` arguments (``db_name``, ``journal_options``, ``ttl``, ...).

        Returns:
            A context manager (``with``) yielding the platform.

        Raises:
            InvalidInputError: ``uri`` is not a non-empty string (raised on entering the block, like the errors
                of invalid options).
        """
        with MongoDBCheckpointer.from_conn_string(uri) as saver:
            yield cls(saver.client, async_client=saver.async_client, **options)

    def compile(self, builder: Any, **compile_kwargs: Any) -> DurableGraph:
        """Compile ``builder`` with the platform checkpointer and validate its topology.

        Compiled children must be compiled with ``checkpointer=None``: they inherit the platform's.

        Args:
            builder: a ``StateGraph`` (anything whose ``compile(**compile_kwargs)`` returns a compiled graph).
            **compile_kwargs: passed to ``builder.compile`` (``interrupt_before``, ``store``, ...); a
                ``checkpointer`` other than the platform's is refused.

        Returns:
            A ``DurableGraph`` whose runs bind the durable scope (and take the run lock).

        Raises:
            TopologyError: ``compile_kwargs`` names another checkpointer, or a compiled child has its own
                saver, ``checkpointer=True``/``False``, or the children form a cycle (the message names
                each child and the fix).
        """
        if compile_kwargs.get("checkpointer") not in (None, self.checkpointer):
            raise TopologyError(
                "DurablePlatform.compile() supplies the checkpointer; drop checkpointer= from the call"
            )
        compile_kwargs["checkpointer"] = self.checkpointer
        return self._durable(builder.compile(**compile_kwargs))

    def attach(self, graph: Pregel) -> DurableGraph:
        """Make a graph compiled without a checkpointer durable on this platform.

        Refuses a graph compiled with another saver: its history lives there.

        Args:
            graph: a compiled graph (``Pregel``) compiled with ``checkpointer=None`` (or with this
                platform's checkpointer); it is copied, not changed.

        Returns:
            A ``DurableGraph`` over a copy of ``graph`` that uses the platform checkpointer.

        Raises:
            TopologyError: ``graph`` was compiled with another saver or with ``checkpointer=True``/``False``,
                or a compiled child has an unsupported shape (as for ``compile``).
        """
        saver = graph.checkpointer
        if isinstance(saver, BaseCheckpointSaver) and saver is not self.checkpointer:
            raise TopologyError(
                f"the root graph was compiled with its own saver ({type(saver).__name__}); compile it without "
                "a checkpointer (or with checkpointer=None) and attach it, or use platform.compile(builder)"
            )
        if saver is False or saver is True:
            raise TopologyError(
                f"the root graph was compiled with checkpointer={saver}; compile it with checkpointer=None and attach it"
            )
        return self._durable(graph.copy(update={"checkpointer": self.checkpointer}))

    def _durable(self, graph: Pregel) -> DurableGraph:
        resolver = DurableSubgraphResolver.from_graph(graph)
        resolver.validate()
        return DurableGraph(graph, self, resolver)

    def setup(self) -> None:
        """Create every index (checkpointer, journal, ordinals, run locks) on the sync client; idempotent.

        Raises:
            ClientConfigurationError: the platform has only an async client.
        """
        self.checkpointer.setup()
        self.journal.setup()
        self.allocator.setup()
        if self.run_locks is not None:
            self.run_locks.setup()

    async def asetup(self) -> None:
        """Async ``setup`` on the async client: same errors (``ClientConfigurationError`` when the platform has
        only a sync client)."""
        await self.checkpointer.asetup()
        await self.journal.asetup()
        await self.allocator.asetup()
        if self.run_locks is not None:
            await self.run_locks.asetup()


class _RunScope:
    """Both scopes of one run, bound together (for a whole call, or per stream step)."""

    def __init__(self, platform: DurablePlatform, resolver: DurableSubgraphResolver) -> None:
        self.platform = platform
        self.durable = DurableScope(resolver)

    @contextmanager
    def bind(self) -> Iterator[_RunScope]:
        with ExitStack() as stack:
            stack.enter_context(self.durable.bind())
            guard = check_held if self.platform.run_locks is not None else None
            stack.enter_context(effect_scope(self.platform.journal, self.platform.locator, guard))
            yield self


class DurableGraph:
    """A compiled graph whose runs bind the durable scope. Everything else is the graph's own.

    ``invoke``, ``ainvoke``, ``stream``, ``astream``, ``batch``, ``abatch``,
    ``get_state``, ``update_state``, ``get_state_history`` and their async
    twins run inside the scope; the six run methods first take the run lock of
    the thread LangGraph runs on (``thread_id_of``: the bound config merged with
    the call's, a top-level ``thread_id`` included). ``with_config`` returns a
    ``DurableGraph``; other attributes pass through to ``graph``.
    """

    def __init__(self, graph: Pregel, platform: DurablePlatform, resolver: DurableSubgraphResolver) -> None:
        self.graph = graph
        self.platform = platform
        self.resolver = resolver

    def __getattr__(self, name: str) -> Any:
        return getattr(self.graph, name)

    def _scope(self) -> _RunScope:
        return _RunScope(self.platform, self.resolver)

    def _threads(self, config: Any) -> list[str]:
        """The threads a call runs on, as LangGraph finds them (the bound config merged with the call's)."""
        return thread_ids_of(config, self.graph.config)

    def with_config(self, config: Any = None, **kwargs: Any) -> DurableGraph:
        """This graph with ``config`` bound (``Pregel.with_config``), still durable.

        Args:
            config / kwargs: as for ``Pregel.with_config``; a bound ``thread_id`` is the thread whose
                run lock the graph's runs take when the call's config names none.

        Returns:
            a ``DurableGraph`` over the bound graph, sharing this one's platform and resolver.
        """
        return DurableGraph(self.graph.with_config(config, **kwargs), self.platform, self.resolver)

    @contextmanager
    def _exclusive(self, config: Any) -> Iterator[None]:
        """Hold the run lock of every thread in ``config`` (one config or a list) for the block."""
        locks = self.platform.run_locks
        if locks is None:
            yield
            return
        with locks.hold(self._threads(config)):
            yield

    @asynccontextmanager
    async def _aexclusive(self, config: Any) -> AsyncIterator[None]:
        locks = self.platform.run_locks
        if locks is None:
            yield
            return
        async with locks.ahold(self._threads(config)):
            yield

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        """Run the graph (``Pregel.invoke``) under the thread's run lock, inside the durable scope.

        Args:
            input: the graph's input; None (or a ``Command``) resumes the thread, replaying recorded effects.
            config: the run's config (``{"configurable": {"thread_id": ...}}``), merged with the bound one.
            **kwargs: passed to ``Pregel.invoke`` (``stream_mode``, ``durability``, ...).

        Returns:
            What ``Pregel.invoke`` returns.

        Raises:
            ThreadBusyError: another run held the thread past ``run_wait_seconds`` (``exclusive_runs``).
            ClientConfigurationError: the platform has no sync client (for the run lock or the journal).
            RunLockLostError: the run lost its thread's run lock mid-run (its next effect stops).
            Exception: whatever the graph raises, the journal's errors from its effects included (see
                ``ActivityJournal.run``: ``NondeterminismError``, ``EffectInProgressError``,
                ``EffectOutcomeUnknownError``, ...).
        """
        with self._exclusive(config), self._scope().bind():
            return self.graph.invoke(input, config, **kwargs)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        """Async ``invoke`` (``Pregel.ainvoke``): same arguments, return and errors, on the async client
        (sync nodes, which LangGraph runs in threads, journal on the sync client)."""
        async with self._aexclusive(config):
            with self._scope().bind():
                return await self.graph.ainvoke(input, config, **kwargs)

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]:
        """Stream the graph (``Pregel.stream``), each step inside the durable scope.

        The run lock is taken at the first ``next()`` and held until the stream is exhausted, fails or
        is closed.

        Args:
            input: as for ``invoke``.
            config: as for ``invoke``.
            **kwargs: passed to ``Pregel.stream`` (``stream_mode``, ``subgraphs``, ...).

        Returns:
            An iterator of what ``Pregel.stream`` yields; the errors below come when iterating.

        Raises:
            ThreadBusyError: another run held the thread past ``run_wait_seconds`` (``exclusive_runs``).
            ClientConfigurationError: the platform has no sync client (for the run lock or the journal).
            RunLockLostError: the run lost its thread's run lock mid-run (its next effect stops).
            Exception: whatever the graph raises, the journal's errors from its effects included (see
                ``ActivityJournal.run``: ``NondeterminismError``, ``EffectInProgressError``,
                ``EffectOutcomeUnknownError``, ...).
        """
        iterator: Any = self.graph.stream(input, config, **kwargs)
        if self.platform.run_locks is not None:  # held from the first next() to exhaustion or close()
            iterator = LockedIterator(self.platform.run_locks, self._threads(config), iterator)
        return scoped_iter(self._scope(), iterator)

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        """Async ``stream`` (``Pregel.astream``): same arguments, items and errors, on the async client; the
        lock is released at exhaustion, an error or ``aclose()``."""
        iterator: Any = self.graph.astream(input, config, **kwargs)
        if self.platform.run_locks is not None:
            iterator = LockedAsyncIterator(self.platform.run_locks, self._threads(config), iterator)
        return scoped_aiter(self._scope(), iterator)

    def _rounds(self, configs: list[Any]) -> list[list[int]]:
        """A batch's rounds (``batch_rounds``): one input per thread per round, or one round without the lock."""
        if self.platform.run_locks is None:
            return [list(range(len(configs)))]
        return batch_rounds([thread_id_of(c, self.graph.config) for c in configs])

    def batch(self, inputs: list[Any], config: Any = None, *, return_exceptions: bool = False, **kwargs: Any) -> list[Any]:
        """``Pregel.batch`` with one run per thread at a time.

        Inputs on distinct threads run together, as in LangGraph; inputs that name one thread run in
        rounds, one after the other in their order, each round under its threads' run locks.

        Args:
            inputs: the inputs.
            config: one config for every input, or one per input.
            return_exceptions: return each failed input's exception in its place instead of raising.
            kwargs: passed to ``Pregel.batch``.

        Returns:
            the outputs (or exceptions) in input order.

        Raises:
            ThreadBusyError: another run held one of the threads past ``run_wait_seconds``.
            ClientConfigurationError: the platform has no sync client (for the run lock or the journal).
            Exception: the first failed input's exception when ``return_exceptions`` is False (later
                rounds then do not run); the journal's errors from effects among them (see ``invoke``).
        """
        configs = get_config_list(config, len(inputs))
        outputs: list[Any] = [None] * len(inputs)
        for positions in self._rounds(configs):
            part = [configs[i] for i in positions]
            with self._exclusive(part), self._scope().bind():
                done = self.graph.batch([inputs[i] for i in positions], part, return_exceptions=return_exceptions, **kwargs)
            for i, output in zip(positions, done):
                outputs[i] = output
        return outputs

    async def abatch(
        self, inputs: list[Any], config: Any = None, *, return_exceptions: bool = False, **kwargs: Any
    ) -> list[Any]:
        """Async ``batch`` (``Pregel.abatch``, in the same rounds): same arguments, return and errors, on the
        async client."""
        configs = get_config_list(config, len(inputs))
        outputs: list[Any] = [None] * len(inputs)
        for positions in self._rounds(configs):
            part = [configs[i] for i in positions]
            async with self._aexclusive(part):
                with self._scope().bind():
                    done = await self.graph.abatch(
                        [inputs[i] for i in positions], part, return_exceptions=return_exceptions, **kwargs
                    )
            for i, output in zip(positions, done):
                outputs[i] = output
        return outputs

    def get_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        """``Pregel.get_state`` inside the durable scope (no run lock: it only reads).

        Args:
            config: the thread (and optionally the checkpoint) to read.
            subgraphs: also return the state of the compiled children that are running.

        Returns:
            The ``StateSnapshot``.

        Raises:
            ClientConfigurationError: the platform has only an async client.
        """
        with self._scope().bind():
            return self.graph.get_state(config, subgraphs=subgraphs)

    async def aget_state(self, config: Any, *, subgraphs: bool = False) -> Any:
        """Async ``get_state`` (``Pregel.aget_state``): same arguments, return and errors, on the async client."""
        with self._scope().bind():
            return await self.graph.aget_state(config, subgraphs=subgraphs)

    def get_state_history(self, config: Any, **kwargs: Any) -> Iterator[Any]:
        """``Pregel.get_state_history``, each item read inside the durable scope (no run lock).

        Args:
            config: the thread to read.
            **kwargs: passed to ``Pregel.get_state_history`` (``filter``, ``before``, ``limit``).

        Returns:
            An iterator of ``StateSnapshot``, newest first.

        Raises:
            ClientConfigurationError: the platform has only an async client (when iterating).
        """
        return scoped_iter(self._scope(), self.graph.get_state_history(config, **kwargs))

    def aget_state_history(self, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        """Async ``get_state_history`` (``Pregel.aget_state_history``): same arguments, items and errors, on the
        async client."""
        return scoped_aiter(self._scope(), self.graph.aget_state_history(config, **kwargs))

    def update_state(self, config: Any, values: Any, as_node: str | None = None, **kwargs: Any) -> Any:
        """``Pregel.update_state`` inside the durable scope (no run lock).

        An edit of the latest checkpoint (at an ``interrupt()``) continues it: the interrupted node meets
        its journal entries again on resume. An edit of an older checkpoint forks the thread.

        Args:
            config: the checkpoint to edit (the thread's latest without ``checkpoint_id``).
            values: the update, applied as if ``as_node`` had written it.
            as_node: the node the update is attributed to.
            **kwargs: passed to ``Pregel.update_state`` (``task_id``).

        Returns:
            The config of the new checkpoint.

        Raises:
            ClientConfigurationError: the platform has only an async client.
        """
        with self._scope().bind():
            return self.graph.update_state(config, values, as_node=as_node, **kwargs)

    async def aupdate_state(self, config: Any, values: Any, as_node: str | None = None, **kwargs: Any) -> Any:
        """Async ``update_state`` (``Pregel.aupdate_state``): same arguments, return and errors, on the async
        client."""
        with self._scope().bind():
            return await self.graph.aupdate_state(config, values, as_node=as_node, **kwargs)


__all__ = ["DurableGraph", "DurablePlatform"]
