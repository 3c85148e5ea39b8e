"""``MongoDBCheckpointer``: LangGraph's saver contract, a thin sync face and a native async face."""

from __future__ import annotations

import builtins
import concurrent.futures
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from .. import _langgraph
from .._bson import DEFAULT_CHUNK_BYTES, require_db_name
from ..errors import InvalidInputError, TopologyError
from ..storage.connections import ConnectionScope, OpenedClients, aclose_opened, close_opened, database_name
from ..storage.format import StorageFormat
from ..storage.plans.faces import TwoFaces, split_clients, started
from ..storage.plans.requests import CreateIndexes, Plan
from ..storage.schema import EXPIRY_INDEX, INDEXES, TTL_INDEX, CollectionNames
from ..telemetry.watches import store_watch, wait_stored_watch
from .documents import InlineLimits
from .expiry import ThreadExpiry
from .hooks import SaverHooks
from .maintenance import ThreadMaintenance
from .remembered import Stored, StoredCheckpoints, TaskHolds, ThreadExpiries, ValueLocations
from .roots import RootCheckpoints
from .store import CheckpointStore, next_version
from .sweeper import AsyncSweeper, Sweeper
from .ttl import TTLConfig


class MongoDBCheckpointer(TwoFaces, BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on MongoDB, with native sync and async methods.

    Give it a sync client (``pymongo.MongoClient``, ``mongomock.MongoClient``)
    for ``invoke``/``stream``, an async client (``pymongo.AsyncMongoClient``,
    motor, ``mongomock_motor``) for ``ainvoke``/``astream``, or both. A method
    whose kind of client is missing raises ``ClientConfigurationError`` naming
    the argument to add; it never hides a thread pool behind the other kind.

    Clients you pass are yours: ``close()`` leaves them open. pymongo binds an
    ``AsyncMongoClient`` to the event loop it first runs on, so use one you pass
    within that loop (one ``asyncio.run``); ``from_conn_string`` opens one per loop.

    Indexes are created on first use (``auto_setup=True``) or by ``setup()`` /
    ``asetup()``.

    Example::

        from pymongo import MongoClient
        saver = MongoDBCheckpointer(MongoClient(uri), db_name="agents")
        graph = builder.compile(checkpointer=saver)
        graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})

    Args:
        client: a sync client, or an async one (then ``async_client`` must be None).
        async_client: an async client.
        db_name: the database holding every collection.
        serde: any ``SerializerProtocol``; LangGraph's ``JsonPlusSerializer``
            by default; ``EncryptedSerializer`` encrypts values at rest.
        ttl: a number: a whole thread expires between ``ttl`` and ``1.1 * ttl`` seconds after its
            last write; every document of it carries one ``expire_at`` (see ``expiry_fields``). Or the
            ``checkpointer.ttl`` block of ``langgraph.json`` (see ``ttl.TTLConfig``): ``{"strategy":
            "delete" | "keep_latest", "default_ttl": minutes, "sweep_interval_minutes": n,
            "sweep_limit": n, "refresh_on_read": bool}``; ``keep_latest`` prunes an expired thread
            (``sweep_expired``, ``start_sweeper``) instead of deleting it.
        collections: collection names (see ``CollectionNames``).
        chunk_bytes: serialized bytes per document for large values.
        auto_setup: create indexes before the first operation of each face. Either way, the database's
            storage format is checked before the first operation (``storage_format``).
        run_fence: called with the thread id, without I/O, just before a checkpoint, its blobs or a task's
            writes are written; it raises to refuse the write. ``DurablePlatform`` passes its run locks'
            ``check_held`` (with ``exclusive_runs``), so a run that may have lost its thread's lock writes nothing.

    Raises:
        IncompatibleStorageError: (at the first operation) the database holds a newer storage format or a
            foreign one (a ``MongoDBSaver`` database, say); nothing was written, and the message names the fix.
    """

    _needs_sync = (
        "sync methods (invoke, stream, get_state) cannot run; use ainvoke/astream/aget_state, "
        "or also pass client=MongoClient(uri)"
    )
    _needs_async = (
        "async methods (ainvoke, astream, aget_state) cannot run natively; use invoke/stream, "
        "or also pass async_client=AsyncMongoClient(uri)"
    )
    #: A value is stored inline in the checkpoint document up to this size (a larger one in blobs) ...
    inline_value_bytes: int = 1024 * 1024
    #: ... while the document's inline values stay within this total (a document holds 16 MiB at most).
    inline_document_bytes: int = 4 * 1024 * 1024
    #: An unchanged value this small is copied inline again, so a read of the latest checkpoint needs no
    #: other document for it; a larger one is referenced where it is stored, when this process knows where.
    copy_value_bytes: int = 2048
    #: The clients ``from_conn_string`` opened for this saver (``ConnectionScope`` sets them), closed by ``close()``.
    _opened_clients: OpenedClients | None = None

    def __init__(
        self,
        client: Any = None,
        *,
        async_client: Any = None,
        db_name: str = "langgraph",
        serde: SerializerProtocol | None = None,
        ttl: float | Mapping[str, Any] | None = None,
        collections: CollectionNames | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        auto_setup: bool = True,
        run_fence: Callable[[str], object] | None = None,
    ) -> None:
        super().__init__(serde=serde)
        client, async_client = split_clients(client, async_client, "MongoDBCheckpointer")
        require_db_name(db_name)
        ttl_config = TTLConfig.parse(ttl)
        self.client = client
        self.async_client = async_client
        self.db_name = db_name
        #: The parsed TTL, and its length in seconds (None without a TTL).
        self.ttl_config = ttl_config
        self.ttl = ttl_config.seconds if ttl_config is not None else None
        self.collections = collections or CollectionNames()
        self.chunk_bytes = chunk_bytes
        #: What its owner hangs on it (``hooks.py``): the run fence, the child-run and sweep-prune observers, the
        #: effect scopes a platform serves. A ``with_allowlist`` clone shares it.
        self.hooks = SaverHooks(run_fence=run_fence)
        #: The database's storage format check, shared with the journal and the run locks beside it.
        self.storage_format = StorageFormat(db_name, self.collections)
        threads = self.storage_format.thread_collections
        for role in ("checkpoints", "blobs", "writes"):
            threads.register(getattr(self.collections, role), role)
        self._init_faces(
            client[db_name] if client is not None else None,
            async_client[db_name] if async_client is not None else None,
            auto_setup,
            self.storage_format.check_plan,
        )
        # What this process remembers (``remembered.py``), shared by the parts below; a ``with_allowlist`` clone
        # shares the parts too (each part that serializes gets the serde per call).
        locations = ValueLocations()
        self._expiry = ThreadExpiry(ttl_config, threads, ThreadExpiries())
        self._roots = RootCheckpoints(self.collections, StoredCheckpoints(), TaskHolds())
        self._store = CheckpointStore(self.collections, chunk_bytes, self._expiry, self._roots, locations, self.hooks)
        self._maintenance = ThreadMaintenance(
            self.collections,
            self.storage_format,
            chunk_bytes,
            self._expiry,
            locations,
            self.hooks,
            self._roots.settled_plan,
        )
        # LangGraph's strict msgpack mode clones a saver with copy.copy (``with_allowlist``): this stays the original.
        self._base_saver = self
        self._sweepers: list[Sweeper] = []
        self._async_sweepers: list[AsyncSweeper] = []

    @property
    def base_saver(self) -> MongoDBCheckpointer:
        """The saver this one was cloned from by ``with_allowlist`` (itself when it is no clone).

        Under ``LANGGRAPH_STRICT_MSGPACK=true``, ``compile()`` and each run hand LangGraph such a clone: the
        same store, whose serde also reads the types of the graph's schemas.
        """
        return self._base_saver

    def expiry_fields(self, thread_id: str) -> dict[str, Any]:
        """``{"expire_at": ...}`` for a document another component adds to the thread (empty without ttl).

        The journal sets it on its documents. It is the thread's
        current expiry as this process knows it, so the new document expires with the rest of the
        thread; only the checkpointer's own writes move the expiry forward, since a refresh then
        moves every document with it. A thread this process knows nothing of, or whose expiry has
        passed, gets that of a write now (``expiry.py`` tells how a write's expiry is chosen).

        Args:
            thread_id: the thread the new document belongs to.

        Returns:
            ``{"expire_at": datetime}`` under ``ttl``, else ``{}``.
        """
        return self._expiry.fields(thread_id)

    @property
    def run_fence(self) -> Callable[[str], object] | None:
        """What refuses a write of a thread whose run may have lost its lock (the constructor's ``run_fence``); the
        journal built from this saver (``ActivityJournal.for_checkpointer``) shares it."""
        return self.hooks.run_fence

    def run_lineage(self, thread_id: str) -> tuple[int, str] | None:
        """Whether another process may have run the thread since this one last did, as of the latest root run of it
        started here: ``(run, lineage)``, ``run`` counting the runs started, ``lineage`` ``fresh`` (the thread had no
        checkpoint), ``ours`` (its latest root checkpoint is the last one this process stored) or ``foreign``; None
        when no run of it started here. The journal keeps its labels across runs while it is ``ours``
        (``journal/labels.py``).

        Args:
            thread_id: the thread.

        Returns:
            The lineage, or None.
        """
        return self._roots.run_lineage(thread_id)

    def observe_child_runs(self, observer: Callable[[str, RunnableConfig], None]) -> None:
        """Call ``observer(thread_id, config)`` at each read that may start a compiled child's run.

        LangGraph reads the latest checkpoint of a child's namespace as the child's run starts, with the config
        of the task that runs it (``_langgraph.child_run_start``): every read whose config carries a task's
        metadata is passed on, in the reading thread or task, before the read's query. ``DurablePlatform``
        records there what its journal needs of the tasks enclosing a node (``TaskTrace.note_child_run``).

        Args:
            observer: called with the read's thread id (as LangGraph stores it: a string) and config.
        """
        self.hooks.child_runs.append(observer)

    def observe_root_runs(self, observer: Callable[[Any], None]) -> None:
        """Call ``observer(graph)`` as a root run of ``graph`` starts, before any of its steps: at LangGraph's read of
        the thread's latest checkpoint, with the compiled graph being run (``_langgraph.running_graph``). An
        exception it raises fails the run there. ``DurablePlatform`` validates the graph's compiled children
        (``TopologyError``), so a graph compiled with ``checkpointer=platform.checkpointer`` is refused when
        ``platform.compile`` would have refused it, at its first run.

        Args:
            observer: called with the ``Pregel`` whose run starts.
        """
        self.hooks.root_runs.append(observer)

    def observe_sweep_prunes(self, forget: Callable[[str, list[str]], Plan[None]]) -> None:
        """Let ``forget(thread_id, finished)`` drop what a thread's finished tasks left, in a ``keep_latest`` sweep.

        ``forget`` returns a storage plan (a generator of ``storage.plans.requests``), run by the sweep's face right
        after the thread's checkpoints are pruned. ``finished`` are the root checkpoint ids whose tasks
        finished: every one the thread had but its latest and the one the latest continues (``origin_of``).
        ``DurablePlatform`` drops the journal entries of the visits keyed by them; those of the latest
        checkpoint's pending tasks stay, so a resume replays their recorded effects.

        Args:
            forget: called once per pruned thread.
        """
        self.hooks.sweep_prunes.append(forget)

    def _notice_run_start(self, config: RunnableConfig, *, on_loop: bool) -> None:
        """A checkpoint read that starts a run: a root run is noted as run on an event loop or not
        (``stores_on_event_loop``; its read then waits for the records the runs before left in flight and drops what
        it cannot inherit of them: ``RootCheckpoints.after_thread_held``), a child run goes to the observers
        (``observe_child_runs``); one started at a child's namespace is refused."""
        if (child := _langgraph.run_start_in_child(config)) is not None:
            raise TopologyError(
                f"a run was started at checkpoint namespace {child!r}, a compiled child's (a config from the child's "
                "get_state_history or get_state(subgraphs=True)): running from a child's checkpoint is not supported. "
                "LangGraph runs that child again in a new task, outside the history of the child's checkpoints, so "
                "its effects cannot be placed in the thread's journal. Nothing ran. To go back in time, pass a root "
                "checkpoint's config (from graph.get_state_history({'configurable': {'thread_id': ...}})); to change "
                "the child's state, call graph.update_state with the child's config, then resume with the root config"
            )
        if _langgraph.root_run_start(config):
            self._start_root_run(str(config["configurable"].get("thread_id")), on_loop=on_loop)
        if not self.hooks.child_runs or not isinstance(config, dict):
            return
        if not (config.get("metadata") or {}).get("langgraph_checkpoint_ns"):
            return  # a root run's read, or one outside any task
        thread_id = (config.get("configurable") or {}).get("thread_id")
        if thread_id is not None:
            for observer in self.hooks.child_runs:
                observer(str(thread_id), config)

    def _start_root_run(self, thread_id: str, *, on_loop: bool) -> None:
        """A root run's start: its graph shown to the observers (``observe_root_runs``), which may refuse it, then the
        run noted (``_notice_run_start``)."""
        if self.hooks.root_runs:
            graph = _langgraph.running_graph()
            if graph is not None:
                for observer in self.hooks.root_runs:
                    observer(graph)
        self._roots.run_started(thread_id, on_loop=on_loop)

    @classmethod
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        db_name: str | None = None,
        serde: SerializerProtocol | None = None,
        ttl: float | Mapping[str, Any] | None = None,
        collections: CollectionNames | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        auto_setup: bool = True,
    ) -> ConnectionScope[MongoDBCheckpointer]:
        """Create a sync and an async client for ``conn_string``; close both at the end.

        Works with ``with`` and with ``async with``, and across event loops: the async client is one
        ``AsyncMongoClient`` per loop (``LoopClients``), so the saver can serve several ``asyncio.run``
        calls. Example::

            with MongoDBCheckpointer.from_conn_string("mongodb://localhost:27017/agents") as saver:
                graph = builder.compile(checkpointer=saver)
                graph.invoke(inputs, config)

            async with MongoDBCheckpointer.from_conn_string(uri, db_name="agents") as saver:
                await builder.compile(checkpointer=saver).ainvoke(inputs, config)

        Args:
            conn_string: a MongoDB URI, e.g. ``mongodb://localhost:27017/agents``.
            db_name: the database; by default the URI's path (``agents`` above), else ``MONGODB_DB``, else
                ``langgraph`` (the rule of the server factory and the CLI too).
            serde: as for ``MongoDBCheckpointer``.
            ttl: as for ``MongoDBCheckpointer``.
            collections: as for ``MongoDBCheckpointer``.
            chunk_bytes: as for ``MongoDBCheckpointer``.
            auto_setup: as for ``MongoDBCheckpointer``.

        Returns:
            A context manager (``with`` or ``async with``) that yields the saver and closes both clients.

        Raises:
            InvalidInputError: ``conn_string`` is not a non-empty string, or ``db_name`` no database name
                (other bad options raise on entering).
            pymongo.errors.InvalidURI: ``conn_string`` is not a MongoDB URI.
        """
        if not isinstance(conn_string, str) or not conn_string:
            raise InvalidInputError(f"conn_string must be a MongoDB URI string, got {conn_string!r}")
        name = require_db_name(database_name(conn_string, db_name))
        return ConnectionScope(
            conn_string,
            lambda client, async_client: cls(
                client,
                async_client=async_client,
                db_name=name,
                serde=serde,
                ttl=ttl,
                collections=collections,
                chunk_bytes=chunk_bytes,
                auto_setup=auto_setup,
            ),
        )

    # -- the saver contract: sync ---------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Fetch one checkpoint with its channel values and pending writes.

        Args:
            config: ``{"configurable": {"thread_id": ..., "checkpoint_ns": ..., "checkpoint_id": ...}}``;
                without ``checkpoint_id``, the namespace's latest checkpoint.

        Returns:
            The checkpoint tuple (``pending_writes`` in ``writes_sort_key`` order), or None when the
            checkpoint does not exist or its thread is past its ``ttl``.

        Raises:
            InvalidInputError: ``config`` has no ``configurable`` dict or no ``thread_id``, or an id is not a string.
            ClientConfigurationError: this saver has only an async client.
        """
        self._notice_run_start(config, on_loop=False)
        return self._run(self._store.get_tuple_plan(config, self.serde))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """List checkpoints, newest first, matching ``config``, ``filter`` and ``before``.

        Reads in pages of ``LIST_PAGE`` checkpoints: a page's writes, and the values its checkpoints do not
        hold inline, cost a query each per page, not one per checkpoint.

        Args:
            config: narrows to its ``thread_id``, ``checkpoint_ns`` and ``checkpoint_id`` when present;
                None lists every thread (a query that scatters on a sharded cluster).
            filter: metadata to match: top-level keys by equality, nested dicts by containment.
            before: only checkpoints older than this config's ``checkpoint_id``.
            limit: at most this many checkpoints.

        Returns:
            An iterator of checkpoint tuples; threads past their ``ttl`` are left out.

        Raises:
            InvalidInputError: a malformed config, an id that is not a string, a filter key that is not a
                string or starts with ``$``, an empty ``thread_id``, or a ``limit`` that is not a non-negative
                int (raised by the call itself, before any query).
            ClientConfigurationError: this saver has only an async client (raised by the call itself).
        """
        plan = started(self._store.list_plan(config, filter, before, limit, self.serde))
        return self._sync_face().iterate(plan)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: one document holding its skeleton, metadata and an entry per channel value.

        Each value is stored inline in that document while it is at most ``inline_value_bytes`` and the
        document's inline values stay within ``inline_document_bytes``; a larger one goes to
        ``checkpoint_blobs``, written once per channel version. A value whose version did not change (not in
        ``new_versions``) is stored inline again, unless it is larger than ``copy_value_bytes`` and this
        process knows where the parent's copy is: then its entry only references it (the checkpoint
        holding it inline, or its blob). The stored layout: ``checkpointer/documents.py``.

        Args:
            config: the parent's config: ``thread_id``, ``checkpoint_ns`` and, when there is a parent,
                its ``checkpoint_id``.
            checkpoint: the checkpoint; its ``id`` must be a non-empty string.
            metadata: stored as native BSON (keys escaped), so ``list(filter=...)`` queries it.
            new_versions: the channels whose values changed since the parent.

        Returns:
            The config of the stored checkpoint (``thread_id``, ``checkpoint_ns``, ``checkpoint_id``).

        Raises:
            InvalidInputError: a malformed config, an id that is not a string, an empty checkpoint id, or a
                metadata key that is not a string.
            ClientConfigurationError: this saver has only an async client.
        """
        with store_watch(config, checkpoint):
            return self._run(
                self._store.put_plan(config, checkpoint, metadata, new_versions, self.serde, self._inline_limits())
            )

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes, linked to a checkpoint.

        Regular writes are inserted if absent (a retried task does not overwrite them); the special
        channels (``ERROR``, ``INTERRUPT``, ``RESUME``, ``SCHEDULED``) overwrite.

        Args:
            config: the checkpoint's config; it must name ``thread_id`` and ``checkpoint_id``.
            writes: ``(channel, value)`` pairs.
            task_id: the task that made the writes.
            task_path: the task's path (orders writes with ``writes_sort_key``).

        Raises:
            InvalidInputError: ``config`` has no ``checkpoint_id``, or an id, ``task_path`` or a channel is
                not a string.
            ClientConfigurationError: this saver has only an async client.
        """
        self._run(self._store.put_writes_plan(config, writes, task_id, task_path, self.serde))

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's documents in every per-thread collection, in every namespace: its checkpoints,
        blobs and writes, and its journal entries and ordinals (the collections the database declares:
        ``thread_collections.py``; one ``find`` reads them first).

        The thread's run lock (``thread_runs``) is left alone: it is live state of a run, not thread data.

        Args:
            thread_id: the thread to delete.

        Raises:
            InvalidInputError: ``thread_id`` is not a string.
            ClientConfigurationError: this saver has only an async client.
        """
        self._run(self._maintenance.delete_thread_plan(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs created, with their writes and the blobs only they used.

        The journal and the ordinals are left alone (entries are keyed by position, not by run).

        Args:
            run_ids: the runs (``metadata["run_id"]``) whose checkpoints go.

        Raises:
            DeltaChainError: a checkpoint of another run still replays the writes of one of these runs'
                checkpoints (a DeltaChannel chain); nothing was deleted. Delete the later runs too, or the
                whole thread.
            InvalidInputError: ``run_ids`` is not a list or tuple of strings.
            ClientConfigurationError: this saver has only an async client.
        """
        self._run(self._maintenance.delete_for_runs_plan(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy the source thread whole to a thread that has no documents yet.

        Every checkpoint of every namespace (ids and parents kept), its blobs and writes, and the documents
        of the other per-thread collections the database declares (the journal, the ordinals) are copied;
        the target gets its own expiry under ``ttl``.

        Args:
            source_thread_id: the thread to copy (unchanged by the copy).
            target_thread_id: a thread with no documents in any per-thread collection.

        Raises:
            ThreadExistsError: the target has documents; nothing was written. Delete it first with
                ``delete_thread(target_thread_id)``, or pick another id.
            InvalidInputError: an id is not a string, or both are the same.
        """
        self._run(self._maintenance.copy_thread_plan(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Prune threads: keep each namespace's latest checkpoint, or delete the threads.

        Args:
            thread_ids: the threads to prune.
            strategy: ``"keep_latest"`` keeps each namespace's latest checkpoint and every ancestor its
                DeltaChannels still replay (with their writes), deleting the other checkpoints, their writes
                and the blobs only they used; the journal and the ordinals stay. ``"delete"`` deletes the
                threads whole, like ``delete_thread``.

        Raises:
            InvalidInputError: ``thread_ids`` is not a list or tuple of strings, or ``strategy`` is unknown.
            ClientConfigurationError: this saver has only an async client.
        """
        self._run(self._maintenance.prune_plan(thread_ids, strategy))

    def sweep_expired(self) -> builtins.list[str]:
        """Apply the TTL strategy to the threads past their TTL, at most ``sweep_limit`` of them.

        ``delete`` (and ``ttl=`` seconds) deletes each thread whole: MongoDB's TTL monitor does this by
        itself; run it on servers that do not enforce TTL indexes (FerretDB) or to reclaim space at once.
        ``keep_latest`` prunes each like ``prune(strategy="keep_latest")`` (the latest checkpoint of each
        namespace and what its DeltaChannels replay stay), lets ``observe_sweep_prunes`` observers drop what
        finished tasks left (on a ``DurablePlatform``: their journal entries and ordinals), and clears its
        expiry; only a sweep does this, no index.

        Returns:
            The ids of the deleted or pruned threads, sorted.

        Raises:
            ClientConfigurationError: this saver has only an async client.
        """
        return self._run(self._maintenance.sweep_expired_plan())

    def start_sweeper(self) -> Sweeper:
        """Run ``sweep_expired`` now and then every ``sweep_interval_minutes``, in a thread, until stopped.

        Returns:
            The running sweeper; ``stop()`` it (or ``stop_sweepers()``) before closing the client.

        Raises:
            InvalidInputError: the ``ttl`` block names no ``sweep_interval_minutes``.
            ClientConfigurationError: this saver has only an async client.
        """
        interval = self._sweep_interval()
        self._sync_face()  # a missing sync client fails here, not in the sweeper's thread
        sweeper = Sweeper(self.sweep_expired, interval)
        self._sweepers.append(sweeper)
        return sweeper

    async def astart_sweeper(self) -> AsyncSweeper:
        """Run ``asweep_expired`` now and then every ``sweep_interval_minutes``, in a task of this loop.

        Returns:
            The running sweeper; ``await astop()`` it (or ``astop_sweepers()``) before closing the client.

        Raises:
            InvalidInputError: the ``ttl`` block names no ``sweep_interval_minutes``.
            ClientConfigurationError: this saver has only a sync client.
        """
        interval = self._sweep_interval()
        await self._async_face()  # a missing async client fails here, not in the sweeper's task
        sweeper = AsyncSweeper(self.asweep_expired, interval)
        self._async_sweepers.append(sweeper)
        return sweeper

    def stop_sweepers(self) -> None:
        """Stop every sweeper ``start_sweeper`` started; each stops after a sweep under way."""
        while self._sweepers:
            self._sweepers.pop().stop()

    async def astop_sweepers(self) -> None:
        """Stop every sweeper ``astart_sweeper`` started (call it on the loop that started them)."""
        while self._async_sweepers:
            await self._async_sweepers.pop().astop()

    def close(self) -> None:
        """Stop the sweepers ``start_sweeper`` started, then close the clients ``from_conn_string`` opened
        (clients you passed stay open). Sweepers ``astart_sweeper`` started need ``aclose()``."""
        self.stop_sweepers()
        close_opened(self._opened_clients)

    async def aclose(self) -> None:
        """Stop every sweeper this saver started (thread and task), then close what ``close()`` closes, awaited."""
        self.stop_sweepers()
        await self.astop_sweepers()
        await aclose_opened(self._opened_clients)

    def _inline_limits(self) -> InlineLimits:
        return InlineLimits(self.inline_value_bytes, self.inline_document_bytes, self.copy_value_bytes)

    def _setup_plan(self) -> Plan[None]:
        for role in ("checkpoints", "blobs", "writes"):
            yield CreateIndexes(getattr(self.collections, role), list(INDEXES[role]))
        if self.ttl_config is not None and self.ttl_config.strategy == "keep_latest":
            yield CreateIndexes(self.collections.checkpoints, [EXPIRY_INDEX])
        elif self.ttl is not None:
            # Servers without TTL support (FerretDB) keep working: readers
            # already treat expired threads as gone, and sweep_expired() deletes them.
            for coll in self.storage_format.thread_collections.names:
                yield CreateIndexes(coll, [TTL_INDEX], optional=True)

    def _sweep_interval(self) -> float:
        if self.ttl_config is None or self.ttl_config.sweep_interval_minutes is None:
            raise InvalidInputError(
                'a sweeper needs ttl={"default_ttl": minutes, "sweep_interval_minutes": n, ...}; '
                "or call sweep_expired() yourself"
            )
        return self.ttl_config.sweep_interval_minutes * 60

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The writes and seed each DeltaChannel needs to rebuild its value at a checkpoint.

        Reads the chain with a bounded number of queries (the target and its ancestors in pages,
        their writes, the seeds' values), not one per ancestor.

        Args:
            config: the target checkpoint (``thread_id``, ``checkpoint_ns``, ``checkpoint_id``; the
                latest when no ``checkpoint_id``).
            channels: the channels to rebuild.

        Returns:
            Per channel, ``{"writes": [...]}`` oldest first, plus ``"seed"`` when an ancestor stores its
            value; only ``{"writes": []}`` when the target does not exist.

        Raises:
            InvalidInputError: a malformed config, or an id or channel that is not a string.
            ClientConfigurationError: this saver has only an async client.
        """
        return self._run(self._store.delta_history_plan(config, channels, self.serde))

    # -- the saver contract: async --------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async ``get_tuple`` on the async client: same arguments, return and errors (``ClientConfigurationError``
        when this saver has only a sync client)."""
        self._notice_run_start(config, on_loop=True)
        return await self._arun(self._store.get_tuple_plan(config, self.serde))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async ``list`` on the async client: same arguments, items and errors (all raised when iterating;
        ``ClientConfigurationError`` when this saver has only a sync client)."""
        plan = started(self._store.list_plan(config, filter, before, limit, self.serde))
        io = await self._async_face()
        async for item in io.iterate(plan):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Async ``put`` on the async client: same arguments, return and errors (``ClientConfigurationError``
        when this saver has only a sync client)."""
        with store_watch(config, checkpoint):
            return await self._arun(
                self._store.put_plan(config, checkpoint, metadata, new_versions, self.serde, self._inline_limits())
            )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Async ``put_writes`` on the async client: same arguments and errors (``config`` must name a
        ``checkpoint_id``; ``ClientConfigurationError`` when this saver has only a sync client)."""
        await self._arun(self._store.put_writes_plan(config, writes, task_id, task_path, self.serde))

    async def adelete_thread(self, thread_id: str) -> None:
        """Async ``delete_thread`` on the async client: same arguments and errors."""
        await self._arun(self._maintenance.delete_thread_plan(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async ``delete_for_runs`` on the async client: same arguments and errors (``DeltaChainError``
        refuses, deleting nothing, when another run's checkpoint still replays these runs' writes)."""
        await self._arun(self._maintenance.delete_for_runs_plan(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async ``copy_thread`` on the async client: same arguments and errors; refuses a target with documents
        the same way (``ThreadExistsError``)."""
        await self._arun(self._maintenance.copy_thread_plan(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Async ``prune`` on the async client: same arguments and errors."""
        await self._arun(self._maintenance.prune_plan(thread_ids, strategy))

    async def asweep_expired(self) -> builtins.list[str]:
        """Async ``sweep_expired`` on the async client: same return and errors."""
        return await self._arun(self._maintenance.sweep_expired_plan())

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """Async ``get_delta_channel_history`` on the async client: same arguments, return and errors."""
        return await self._arun(self._store.delta_history_plan(config, channels, self.serde))

    # -- stored checkpoints (the journal's durability="async" guard) -------------------

    def wait_stored(self, thread_id: str, checkpoint_id: str, timeout: float = 30.0) -> None:
        """Block until the root checkpoint ``checkpoint_id`` of the thread is in the database.

        With ``durability="async"`` LangGraph stores a checkpoint in the background while the tasks prepared from
        it already run. A journal position derives from that checkpoint (``resolver/visit.py``), so a node's first
        effect waits here until it is stored: an effect never runs under an identity a crash could lose. A
        checkpoint this process stored or read, or stores within ``STORED_FIRST_CHECK_SECONDS``, costs no query
        (a bounded in-memory registry); any other is looked up by its key, then and every
        ``STORED_RECHECK_SECONDS`` while waiting.

        Args:
            thread_id: the thread.
            checkpoint_id: the root-namespace checkpoint the running tasks were prepared from.
            timeout: seconds to wait for the store.

        Raises:
            CheckpointNotStoredError: its store, or an older one of the run, failed here, or it was not stored
                within ``timeout``; the message says what to do.
            RunLockLostError: the store failed because the run lost its thread's lock.
            ClientConfigurationError: a database lookup was needed and this saver has no sync client.
        """
        if not self._roots.stored.known(thread_id, checkpoint_id):
            with wait_stored_watch(thread_id, checkpoint_id):
                self._run(self._roots.wait_stored_plan(thread_id, checkpoint_id, timeout))

    def settle_records_plan(self, thread_id: str) -> Plan[None]:
        """A plan that returns once the effects and journal records this process holds the thread's writes for are
        done (``hold_task_writes``): what a run that stopped left in flight, an effect still running in a thread its
        node no longer waited for included. The platform's run lock is released only after it, so the next run, here
        or in another process, reads what those records hold. Raises none of their errors.

        Args:
            thread_id: the thread.

        Returns:
            The plan (run it on either face; it yields no database request).
        """
        return self._roots.after_thread_held(thread_id, effects=True)

    def stores_on_event_loop(self, thread_id: str) -> bool:
        """Whether the thread's latest run started here runs on an event loop (``ainvoke``, ``astream``): LangGraph
        then stores its checkpoints on that loop, so a sync call on it must not block waiting for one
        (``wait_stored``). True when no run of the thread was seen start here. No I/O.

        Args:
            thread_id: the thread.
        """
        return self._roots.stores_on_loop(thread_id)

    def hold_task_writes(
        self, thread_id: str, task: _langgraph.RunningTask, future: concurrent.futures.Future[Any]
    ) -> None:
        """Make the task's writes wait for ``future`` first, and raise its error: its ``put_writes``, and the ``put``
        of every later checkpoint of its namespace, which holds those writes.

        The journal records an effect's outcome while the node goes on; the node's writes must not be saved
        before those records are (a resume would take the node for done while its effects' records were lost).

        Args:
            thread_id: the thread.
            task: the LangGraph task whose writes wait (``resolver.namespace.running_tasks``).
            future: the work they wait for.
        """
        self._roots.holds.hold(thread_id, task.task_id, task.checkpoint_ns, task.prepared_from, future)

    def origin_of(self, thread_id: str, checkpoint_id: str, node: str | None = None) -> str:
        """The root checkpoint whose tasks the tasks prepared from ``checkpoint_id`` continue.

        ``update_state`` on the latest checkpoint (an edit at an ``interrupt()``)
        writes a checkpoint that continues it: the interrupted node runs again
        from the new checkpoint under a new task id, and the resolver keys it by
        the origin so it meets its journal entries again. An edit made as the
        interrupted node (``as_node``) completes that node instead: its next
        visit is new, so for that ``node`` the checkpoint is its own origin. Any
        other checkpoint, an edit of an older one (time travel) included, is its
        own origin. A checkpoint this process stored or read costs no query.

        Args:
            thread_id: the thread.
            checkpoint_id: a root-namespace checkpoint.
            node: the root-level node whose task was prepared from it (None: any node the edit did not complete).

        Returns:
            The origin's checkpoint id (``checkpoint_id`` itself when it continues nothing or is not stored).

        Raises:
            ClientConfigurationError: a lookup was needed and this saver has no sync client.
        """
        known = self._roots.stored.origin(thread_id, checkpoint_id, node)
        return known or self._run(self._roots.origin_plan(thread_id, checkpoint_id, node))

    async def aorigin_of(self, thread_id: str, checkpoint_id: str, node: str | None = None) -> str:
        """Async ``origin_of`` on the async client: same arguments, return and errors (``ClientConfigurationError``
        when a lookup is needed and this saver has only a sync client)."""
        known = self._roots.stored.origin(thread_id, checkpoint_id, node)
        if known:
            return known
        return await self._arun(self._roots.origin_plan(thread_id, checkpoint_id, node))

    def continuations(self, thread_id: str, checkpoint_map: Mapping[str, Any]) -> dict[str, Stored]:
        """The checkpoints of compiled children's runs, among those a task was prepared from, that an edit wrote
        (``update_state`` at a child's ``interrupt()``) or that the run wrote after one: their ``Stored.shift`` (and
        ``completed``, of an edit 0.4.0 stored) say how the tasks prepared from them continue the visits the edit
        interrupted. A checkpoint whose store is still under way (``durability="async"``) takes the shift of the
        latest checkpoint of its run stored before it. The registry, else one query per checkpoint it lacks.

        Args:
            thread_id: the thread.
            checkpoint_map: a running task's ``checkpoint_map`` (namespace -> checkpoint id; the root's is skipped).

        Returns:
            ``{namespace: Stored}`` of the edits only (empty for a run no edit continued).

        Raises:
            ClientConfigurationError: a lookup was needed and this saver has no sync client.
        """
        return self._run(self._roots.continuations_plan(thread_id, checkpoint_map))

    async def acontinuations(self, thread_id: str, checkpoint_map: Mapping[str, Any]) -> dict[str, Stored]:
        """Async ``continuations`` on the async client: same arguments, return and errors (``ClientConfigurationError``
        when a lookup is needed and this saver has only a sync client)."""
        return await self._arun(self._roots.continuations_plan(thread_id, checkpoint_map))

    def stored_now(self, thread_id: str, checkpoint_id: str) -> bool:
        """Whether the root checkpoint is stored, for a sync call on the event loop that stores it (a sync effect in
        an async node, ``durability="async"``), which could never wait for that loop: the registry, else the store
        this process has under way there, sent now from this thread on the sync client (the same idempotent upsert,
        whose own reply then finds it done), else one query. False: the store has not reached its write yet (the
        checkpoint's values still being written, a store before it still under way), or is not this process's.

        Args:
            thread_id: the thread.
            checkpoint_id: a root-namespace checkpoint.

        Raises:
            ClientConfigurationError: this saver has no sync client.
        """
        return bool(self._run(self._roots.stored_now_plan(thread_id, checkpoint_id)))

    def stored_root(self, thread_id: str, checkpoint_id: str) -> Stored | None:
        """What is known of a stored root checkpoint: its origin, and whether this process wrote it and has not read
        it since (``remembered.Stored``). The registry, else one query by the checkpoint's key.

        Args:
            thread_id: the thread.
            checkpoint_id: a root-namespace checkpoint.

        Returns:
            The checkpoint's ``Stored``, or None when it is not in the database.

        Raises:
            ClientConfigurationError: a lookup was needed and this saver has no sync client.
        """
        known = self._roots.stored.root(thread_id, checkpoint_id)
        return known or self._run(self._roots.root_plan(thread_id, checkpoint_id))

    async def astored_root(self, thread_id: str, checkpoint_id: str) -> Stored | None:
        """Async ``stored_root`` on the async client: same arguments, return and errors (``ClientConfigurationError``
        when a lookup is needed and this saver has only a sync client)."""
        known = self._roots.stored.root(thread_id, checkpoint_id)
        return known or await self._arun(self._roots.root_plan(thread_id, checkpoint_id))

    async def await_stored(self, thread_id: str, checkpoint_id: str, timeout: float = 30.0) -> None:
        """Async ``wait_stored`` on the event loop: it waits without blocking the loop that may be running the store.

        Args:
            thread_id: the thread.
            checkpoint_id: the root-namespace checkpoint the running tasks were prepared from.
            timeout: seconds to wait for the store.

        Raises:
            CheckpointNotStoredError: as ``wait_stored``.
            ClientConfigurationError: a database lookup was needed and this saver has no async client.
        """
        if not self._roots.stored.known(thread_id, checkpoint_id):
            with wait_stored_watch(thread_id, checkpoint_id):
                await self._arun(self._roots.wait_stored_plan(thread_id, checkpoint_id, timeout))

    def get_next_version(self, current: str | int | float | None, channel: None = None) -> str:
        """The next version of a channel: a zero-padded counter plus random bits (no I/O).

        Two branches forked from one checkpoint reach the same counter but never the same version,
        so their stored values never collide.

        Args:
            current: the channel's current version (a string from this saver, or a number), or None.
            channel: unused (LangGraph's signature).

        Returns:
            A version that sorts after ``current``.
        """
        return next_version(current)
