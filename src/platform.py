"""``DurablePlatform``: the checkpointer and the journal, bound to your graphs.

Compile a root graph with the platform checkpointer, and its runs are durable:
compiled children inherit the checkpointer (``checkpointer=None``), and in
every node of a run that saves with it, ``SecureLLM``, ``SecureTool`` and
``@effect`` record and replay: the node's own config names the checkpointer,
and so the platform's journal (``checkpointer.hooks.effect_scopes``), and its
position is resolved from that config and the facts the checkpointer's reads
recorded of the tasks enclosing it (``resolver/running.py``). ``compile`` and
``attach`` also discover and validate the graph's topology (``TopologyError``)
and return a ``DurableGraph``: a real compiled graph whose runs also take the
thread's run lock. A graph compiled with ``builder.compile(checkpointer=...)``
is validated the same way as each of its runs starts, before any step
(``MongoDBCheckpointer.observe_root_runs``): one rule, one message, for both forms.

Example (``uri`` a MongoDB URI, ``builder`` your ``StateGraph``)::

    from langgraph_durable_mongodb import DurablePlatform

    with DurablePlatform.from_conn_string(uri, db_name="agents") as platform:   # or async with
        graph = platform.compile(builder)   # or builder.compile(checkpointer=platform.checkpointer)
        config = {"configurable": {"thread_id": "case-42"}}
        graph.invoke({"case": "42"}, config)
        # crash, restart, then resume: recorded effects are replayed, not re-run
        graph.invoke(None, config)

    platform = DurablePlatform.embedded()   # in-memory mongomock, for demos and tests
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import logging
import threading
from collections.abc import AsyncIterator, Collection, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, cast

from langchain_core.runnables.config import get_config_list
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.pregel import Pregel

from . import _langgraph
from ._bson import DEFAULT_CHUNK_BYTES, require_db_name
from ._lru import LRU
from .checkpointer import MongoDBCheckpointer
from .errors import InvalidInputError, TopologyError
from .journal import ActivityJournal, EffectScope, ResolverLocator
from .resolver import DurableSubgraphResolver, TaskTrace
from .runs.run_lock import (
    LockedAsyncIterator,
    LockedIterator,
    RunLocks,
    batch_rounds,
    check_held,
    thread_id_of,
    thread_ids_of,
)
from .storage.connections import ClosesOpenedClients, ConnectionScope, database_name
from .storage.plans.requests import Plan
from .storage.schema import CollectionNames

if TYPE_CHECKING:
    from pymongo import MongoClient

#: What a platform gives its checkpointer and journal itself: not options of theirs a caller may pass it.
_GIVEN_BY_PLATFORM = ("client", "async_client", "db_name", "storage_format", "expiry", "run_fence")


def _options_of(cls: type[Any], given: Iterable[str]) -> frozenset[str]:
    """The keyword arguments ``cls`` takes, but ``given``."""
    return frozenset(inspect.signature(cls.__init__).parameters) - {"self", "checkpointer_options", *given}


def check_options(entry: str, options: Mapping[str, Any], known: Collection[str]) -> None:
    """Refuse an option ``entry`` does not take, at the call the user made, suggesting the closest it does.

    Raises:
        InvalidInputError: e.g. ``DurablePlatform got an unexpected option 'tll': did you mean 'ttl'?``.
    """
    if not isinstance(options, Mapping):
        raise InvalidInputError(f"{entry} must be a dict of options, got {type(options).__name__}")
    unknown = [name for name in options if name not in known]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), sorted(known), n=1)
        hint = f": did you mean {close[0]!r}?" if close else ""
        raise InvalidInputError(
            f"{entry} got an unexpected option {unknown[0]!r}{hint} (its options: {', '.join(sorted(known))})"
        )


#: Compiled graphs whose discovered topology a platform remembers.
RESOLVERS_REMEMBERED = 256
#: How long ``close()`` waits for the run locks' background releases (one command each).
RELEASES_AT_CLOSE_SECONDS = 10.0
_log = logging.getLogger(__name__)
#: Tasks running compiled children whose facts a platform remembers (``TaskTrace``), the least recent forgotten.
TASKS_REMEMBERED = 65536


class DurablePlatform(ClosesOpenedClients):
    """Owns the platform checkpointer and the activity journal.

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
            their async twins take the thread's fenced run lock (``runs/run_lock.py``, collection
            ``thread_runs``; 3 commands per run), so concurrent resumes of one thread run one after
            the other instead of forking it. ``False`` turns it off: then run one caller per thread yourself.
        run_lease_seconds: how long a run's lock outlives its last renewal (renewed every third of it);
            a crashed run's lock is taken over after that, at once when it ran on this host. A run
            whose renewal comes too late has lost its lock (``run_lock.check_held`` then raises
            ``RunLockLostError``).
        run_wait_seconds: how long a run waits for another run of its thread before ``ThreadBusyError``.

    Clients you pass are yours: ``close()``/``aclose()`` close only what ``from_conn_string`` opened. pymongo
    binds an ``AsyncMongoClient`` to the event loop it first runs on: use one you pass within that loop (one
    ``asyncio.run``), or let ``from_conn_string`` open one per loop.
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
        check_options("DurablePlatform", checkpointer_options, _options_of(MongoDBCheckpointer, _GIVEN_BY_PLATFORM))
        journal_known = _options_of(ActivityJournal, _GIVEN_BY_PLATFORM)
        check_options("DurablePlatform's journal_options", journal_options or {}, journal_known)
        fence = check_held if exclusive_runs else None
        self.checkpointer = MongoDBCheckpointer(
            client, async_client=async_client, db_name=db_name, run_fence=fence, **checkpointer_options
        )
        self.journal = ActivityJournal.for_checkpointer(self.checkpointer, **(journal_options or {}))
        self.tasks = TaskTrace(capacity=TASKS_REMEMBERED)
        self.locator = ResolverLocator(self.checkpointer, self.tasks)
        self._lock = threading.Lock()
        self._resolvers: LRU[tuple[int, ...], tuple[Any, DurableSubgraphResolver]] = LRU(RESOLVERS_REMEMBERED)
        self._classes: dict[type, type] = {}
        self.checkpointer.observe_child_runs(self.tasks.note_child_run)
        self.checkpointer.observe_sweep_prunes(self._forget_finished)
        self.checkpointer.observe_root_runs(self._validate_run)
        self.run_locks: RunLocks | None = None
        if exclusive_runs:
            self.run_locks = RunLocks(
                self.checkpointer.client,
                async_client=self.checkpointer.async_client,
                db_name=db_name,
                collection=self.checkpointer.collections.runs,
                lease_seconds=run_lease_seconds,
                wait_seconds=run_wait_seconds,
                storage_format=self.checkpointer.storage_format,
                settle=self.checkpointer.settle_records_plan,
            )
        self._effects = EffectScope(self.journal, self.locator, check_held if self.run_locks is not None else None)
        self.checkpointer.hooks.effect_scopes = self._effects_for

    def __enter__(self) -> DurablePlatform:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> DurablePlatform:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def close(self) -> None:
        """Stop the checkpointer's thread sweepers and let the run locks' background releases finish (at most
        ``RELEASES_AT_CLOSE_SECONDS``), then close the clients ``from_conn_string`` opened; clients you passed
        stay open. In a coroutine, use ``aclose()``."""
        self.checkpointer.stop_sweepers()
        self._finish_releases()
        super().close()

    async def aclose(self) -> None:
        """Stop every sweeper the checkpointer started, let the releases finish, then close what ``close()``
        closes, awaited."""
        self.checkpointer.stop_sweepers()
        await self.checkpointer.astop_sweepers()
        await asyncio.to_thread(self._finish_releases)
        await super().aclose()

    def _finish_releases(self) -> None:
        """A sync run's lock is released in the background once the run returned: a client closed under that
        release would leave the lock held until its lease expires, and the thread's next run waiting for it."""
        if self.run_locks is None:
            return
        try:
            self.run_locks.wait_releases(RELEASES_AT_CLOSE_SECONDS)
        except TimeoutError as error:
            _log.warning(
                "closing with run locks still being released: %s; they free themselves when their lease expires", error
            )

    @classmethod
    def embedded(cls, **options: Any) -> DurablePlatform:
        """An in-memory platform on mongomock (sync and async faces share the data): demos and tests.

        Nothing survives the process; use ``from_conn_string`` or real clients for durability. Like every platform,
        it works with ``with`` and ``async with`` (``close()``/``aclose()`` at the end of the block).

        Args:
            **options: the other ``DurablePlatform`` arguments (``db_name``, ``journal_options``, ``ttl``, ...).

        Returns:
            The platform, with a ``mongomock.MongoClient`` and a ``mongomock_motor`` client over the same data
            (both runtime dependencies of the package).
        """
        import mongomock
        from mongomock_motor import AsyncMongoMockClient

        platform_options = _options_of(cls, ("client", "async_client"))
        saver_options = _options_of(MongoDBCheckpointer, _GIVEN_BY_PLATFORM)
        check_options("DurablePlatform.embedded", options, platform_options | saver_options)
        journal_known = _options_of(ActivityJournal, _GIVEN_BY_PLATFORM)
        check_options("DurablePlatform.embedded's journal_options", options.get("journal_options") or {}, journal_known)
        client: MongoClient[dict[str, Any]] = mongomock.MongoClient()
        return cls(client, async_client=AsyncMongoMockClient(mock_mongo_client=client), **options)

    @classmethod
    def from_conn_string(
        cls,
        uri: str,
        *,
        db_name: str | None = None,
        journal_options: dict[str, Any] | None = None,
        exclusive_runs: bool = True,
        run_lease_seconds: float = 30.0,
        run_wait_seconds: float = 30.0,
        serde: SerializerProtocol | None = None,
        ttl: float | Mapping[str, Any] | None = None,
        collections: CollectionNames | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        auto_setup: bool = True,
    ) -> ConnectionScope[DurablePlatform]:
        """A platform with a sync and an async client for ``uri``, closed at the end of the block.

        Use it with ``with`` or ``async with``. Its async client is one ``AsyncMongoClient`` per event loop,
        so the platform serves several ``asyncio.run`` calls; each loop's client is closed when that loop
        ends or at the end of the block. Example::

            with DurablePlatform.from_conn_string("mongodb://localhost:27017/agents") as platform:
                platform.compile(builder).invoke(inputs, config)

            async with DurablePlatform.from_conn_string(uri, db_name="agents") as platform:
                await platform.compile(builder).ainvoke(inputs, config)

        Args:
            uri: a MongoDB URI.
            db_name: the database; by default the URI's path (``agents`` above), else ``MONGODB_DB``, else
                ``langgraph`` (the rule of the server factory and the CLI too).
            journal_options: as for ``DurablePlatform``.
            exclusive_runs: as for ``DurablePlatform``.
            run_lease_seconds: as for ``DurablePlatform``.
            run_wait_seconds: as for ``DurablePlatform``.
            serde: as for ``MongoDBCheckpointer``.
            ttl: as for ``MongoDBCheckpointer``.
            collections: as for ``MongoDBCheckpointer``.
            chunk_bytes: as for ``MongoDBCheckpointer``.
            auto_setup: as for ``MongoDBCheckpointer``.

        Returns:
            A context manager (``with`` or ``async with``) yielding the platform and closing its clients.

        Raises:
            InvalidInputError: ``uri`` is not a non-empty string, or ``db_name`` no database name (other bad
                options raise on entering the block).
            pymongo.errors.InvalidURI: ``uri`` is not a MongoDB URI.
        """
        if not isinstance(uri, str) or not uri:
            raise InvalidInputError(f"uri must be a MongoDB URI string, got {uri!r}")
        journal_known = _options_of(ActivityJournal, _GIVEN_BY_PLATFORM)
        check_options("DurablePlatform.from_conn_string's journal_options", journal_options or {}, journal_known)
        options: dict[str, Any] = {  # keyword arguments of every type, for DurablePlatform
            "db_name": require_db_name(database_name(uri, db_name)),
            "journal_options": journal_options,
            "exclusive_runs": exclusive_runs,
            "run_lease_seconds": run_lease_seconds,
            "run_wait_seconds": run_wait_seconds,
            "serde": serde,
            "ttl": ttl,
            "collections": collections,
            "chunk_bytes": chunk_bytes,
            "auto_setup": auto_setup,
        }
        return ConnectionScope(uri, lambda client, async_client: cls(client, async_client=async_client, **options))

    def compile(self, builder: Any, **compile_kwargs: Any) -> DurableGraph:
        """Compile ``builder`` with the platform checkpointer and validate its topology.

        Compiled children must be compiled with ``checkpointer=None``: they inherit the platform's. A child that
        does not is refused here, as the graph compiles; the plain
        ``builder.compile(checkpointer=platform.checkpointer)`` refuses it with the same ``TopologyError`` as each run
        starts, before any step.

        Args:
            builder: a ``StateGraph`` (anything whose ``compile(**compile_kwargs)`` returns a compiled graph).
            **compile_kwargs: passed to ``builder.compile`` (``interrupt_before``, ``store``, ...); a
                ``checkpointer`` other than the platform's is refused.

        Returns:
            The compiled graph, a ``DurableGraph`` (a ``Pregel``): its runs record and replay effects, and
            take the run lock.

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

    def attach(self, graph: Pregel[Any, Any, Any, Any]) -> DurableGraph:
        """Make a graph compiled without a checkpointer durable on this platform.

        Refuses a graph compiled with another saver: its history lives there.

        Args:
            graph: a compiled graph (``Pregel``) compiled with ``checkpointer=None`` (or with this
                platform's checkpointer); it is copied, not changed.

        Returns:
            A copy of ``graph`` that saves with the platform checkpointer, a ``DurableGraph`` (a ``Pregel``).

        Raises:
            TopologyError: ``graph`` was compiled with another saver or with ``checkpointer=True``/``False``,
                or a compiled child has an unsupported shape (as for ``compile``).
        """
        if not isinstance(graph, Pregel):
            raise InvalidInputError(
                "attach() takes a compiled graph (a Pregel, what builder.compile() returns), got "
                f"{type(graph).__name__}; for a builder, use platform.compile(builder)"
            )
        saver = graph.checkpointer
        if isinstance(saver, BaseCheckpointSaver) and getattr(saver, "base_saver", saver) is not self.checkpointer:
            raise TopologyError(
                f"the root graph was compiled with its own saver ({type(saver).__name__}); compile it without "
                "a checkpointer (or with checkpointer=None) and attach it, or use platform.compile(builder)"
            )
        if saver is False or saver is True:
            raise TopologyError(
                f"the root graph was compiled with checkpointer={saver}; compile it with checkpointer=None and attach "
                "it"
            )
        return self._durable(_langgraph.keep_allowlist(graph, graph.copy(update={"checkpointer": self.checkpointer})))

    def _durable(self, graph: Pregel[Any, Any, Any, Any]) -> DurableGraph:
        """``graph`` as a ``DurableGraph``, its topology validated now rather than at its first run."""
        self._resolver(graph)
        cls = type(graph)
        with self._lock:
            durable = self._classes.get(cls)
            if durable is None:
                durable = self._classes[cls] = type(
                    f"Durable{cls.__name__}", (DurableGraph, cls), {"_platform": self, "__module__": __name__}
                )
        copied = durable(**{k: v for k, v in graph.__dict__.items() if k != "__orig_class__"})
        # an instance of the class just made, a subclass of DurableGraph's and the graph's: mypy sees only a Pregel
        return cast(DurableGraph, _langgraph.keep_allowlist(graph, copied))

    # -- runs ------------------------------------------------------------------------

    def _resolver(self, graph: Pregel[Any, Any, Any, Any]) -> DurableSubgraphResolver:
        """The validated resolver of ``graph``, discovered once per compiled graph: its copies
        (``with_config``, Agent Server's ``copy``) share its node objects, and so its resolver."""
        nodes = tuple(graph.nodes.values())
        key = tuple(id(node) for node in nodes)
        with self._lock:
            known = self._resolvers.use(key)
            if known is not None:
                return known[1]
        resolver = DurableSubgraphResolver.from_graph(graph, self.checkpointer)
        resolver.validate()
        with self._lock:
            self._resolvers.put(key, (nodes, resolver))  # the nodes kept alive keep their ids unique
        return resolver

    def _validate_run(self, graph: Pregel[Any, Any, Any, Any]) -> None:
        """A root run starting on the platform checkpointer: ``graph``'s compiled children validated before any step,
        as ``compile`` validates them (once per compiled graph, ``_resolver``): the plain form refuses what
        ``compile`` refuses, with its message (``TopologyError``)."""
        self._resolver(graph)

    def _forget_finished(self, thread_id: str, finished: list[str]) -> Plan[None]:
        """A ``keep_latest`` TTL sweep pruned the thread (``observe_sweep_prunes``): drop the journal entries of its
        tasks that finished (keyed by the root checkpoints they were prepared from); the latest checkpoint's pending
        tasks keep theirs."""
        if finished:
            yield from self.journal.forget_entries_plan(thread_id, {"root_key": {"$in": sorted(finished)}})

    def _effects_for(self, saver: MongoDBCheckpointer) -> EffectScope:
        """The effect scope of a node whose run saves with ``saver``: the platform checkpointer, or its clone with
        a graph's strict msgpack allowlist, whose serde then records and replays the node's effects too."""
        if saver is self.checkpointer:
            return self._effects
        return replace(self._effects, journal=self.journal.with_serde(saver.serde))

    def setup(self) -> None:
        """Create every index (checkpointer, journal, run locks) on the sync client; idempotent.

        Raises:
            ClientConfigurationError: the platform has only an async client.
        """
        self.checkpointer.setup()
        self.journal.setup()
        if self.run_locks is not None:
            self.run_locks.setup()

    async def asetup(self) -> None:
        """Async ``setup`` on the async client: same errors (``ClientConfigurationError`` when the platform has
        only a sync client)."""
        await self.checkpointer.asetup()
        await self.journal.asetup()
        if self.run_locks is not None:
            await self.run_locks.asetup()


class DurableGraph:
    """What ``DurablePlatform.compile``/``attach`` add to a compiled graph: one run per thread at a time.

    A ``DurableGraph`` is a real compiled graph (an instance of a subclass of the graph's own class, a
    ``Pregel``): it can be a node of another graph, be served by Agent Server, and everything else is
    the graph's own. Its runs record and replay effects because they save with the platform
    checkpointer, as any graph compiled with it does. What it adds, with ``exclusive_runs``: ``stream``
    and ``astream`` (and so ``invoke``, ``ainvoke``, ``astream_events``, ...) take the run lock of the
    thread LangGraph runs on (``thread_id_of``: the bound config merged with the call's, a top-level
    ``thread_id`` included) from the first item to the last, and ``batch``/``abatch`` run the inputs
    that name one thread in rounds, one after the other. ``with_config`` and ``copy`` keep it durable.
    """

    # mypy sees this class alone: the graph's own class (a Pregel) is its base only in the subclass ``_durable``
    # makes at run time, so each use of Pregel's methods and attributes below is ignored, saying so.
    _platform: ClassVar[DurablePlatform]

    @property
    def resolver(self) -> DurableSubgraphResolver:
        """The graph's validated resolver (its compiled-child topology, discovered once)."""
        return self._platform._resolver(self)  # type: ignore[arg-type]  # Pregel: a base at run time only

    def copy(self, update: dict[str, Any] | None = None) -> Any:
        """``Pregel.copy`` (``with_config`` uses it), keeping the graph's strict msgpack allowlist.

        Args:
            update: attributes to replace.

        Returns:
            The copy, a ``DurableGraph``.
        """
        copied = super().copy(update)  # type: ignore[misc]  # Pregel: a base at run time only
        return _langgraph.keep_allowlist(self, copied)  # type: ignore[arg-type]  # Pregel: a base at run time only

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]:
        """``Pregel.stream`` under the thread's run lock, held from the first item to the last.

        Args:
            input: the graph's input; None (or a ``Command``) resumes the thread, replaying recorded effects.
            config: the run's config (``{"configurable": {"thread_id": ...}}``), merged with the bound one.
            **kwargs: passed to ``Pregel.stream`` (``stream_mode``, ``subgraphs``, ``durability``, ...).

        Returns:
            What ``Pregel.stream`` yields.

        Raises:
            ThreadBusyError: another run held the thread past ``run_wait_seconds``.
            ClientConfigurationError: the platform has no sync client.
            RunLockLostError: the run lost its thread's run lock mid-run (its next effect stops).
        """
        iterator: Iterator[Any] = super().stream(  # type: ignore[misc]  # Pregel: a base at run time only
            input, config, **kwargs
        )
        locks = self._platform.run_locks
        if locks is None:
            return iterator
        bound = self.config  # type: ignore[attr-defined]  # Pregel: a base at run time only
        return LockedIterator(locks, thread_ids_of(config, bound), iterator)

    def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        """Async ``stream`` (``Pregel.astream``) under the run lock, on the async client: same errors."""
        iterator: AsyncIterator[Any] = super().astream(  # type: ignore[misc]  # Pregel: a base at run time only
            input, config, **kwargs
        )
        locks = self._platform.run_locks
        if locks is None:
            return iterator
        bound = self.config  # type: ignore[attr-defined]  # Pregel: a base at run time only
        return LockedAsyncIterator(locks, thread_ids_of(config, bound), iterator)

    def batch(
        self, inputs: list[Any], config: Any = None, *, return_exceptions: bool = False, **kwargs: Any
    ) -> list[Any]:
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
            Exception: the first failed input's exception when ``return_exceptions`` is False (later
                rounds then do not run).
        """
        locks, configs = self._platform.run_locks, get_config_list(config, len(inputs))
        if locks is None:
            return super().batch(  # type: ignore[misc, no-any-return]  # Pregel: a base at run time only
                inputs, config, return_exceptions=return_exceptions, **kwargs
            )
        outputs: list[Any] = [None] * len(inputs)
        bound = self.config  # type: ignore[attr-defined]  # Pregel: a base at run time only
        for positions in batch_rounds([thread_id_of(c, bound) for c in configs]):
            part = [configs[i] for i in positions]
            with locks.hold(thread_ids_of(part, bound)):
                done = super().batch(  # type: ignore[misc]  # Pregel: a base at run time only
                    [inputs[i] for i in positions], part, return_exceptions=return_exceptions, **kwargs
                )
            for i, output in zip(positions, done, strict=True):
                outputs[i] = output
        return outputs

    async def abatch(
        self, inputs: list[Any], config: Any = None, *, return_exceptions: bool = False, **kwargs: Any
    ) -> list[Any]:
        """Async ``batch`` (``Pregel.abatch``, in the same rounds): same arguments, return and errors."""
        locks, configs = self._platform.run_locks, get_config_list(config, len(inputs))
        if locks is None:
            return await super().abatch(  # type: ignore[misc, no-any-return]  # Pregel: a base at run time only
                inputs, config, return_exceptions=return_exceptions, **kwargs
            )
        outputs: list[Any] = [None] * len(inputs)
        bound = self.config  # type: ignore[attr-defined]  # Pregel: a base at run time only
        for positions in batch_rounds([thread_id_of(c, bound) for c in configs]):
            part = [configs[i] for i in positions]
            async with locks.ahold(thread_ids_of(part, bound)):
                done = await super().abatch(  # type: ignore[misc]  # Pregel: a base at run time only
                    [inputs[i] for i in positions], part, return_exceptions=return_exceptions, **kwargs
                )
            for i, output in zip(positions, done, strict=True):
                outputs[i] = output
        return outputs


__all__ = ["DurableGraph", "DurablePlatform"]
