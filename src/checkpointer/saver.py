"""``MongoDBCheckpointer``: LangGraph's saver contract, a thin sync face and a native async face."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
import asyncio
import threading
from datetime import datetime
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    SerializerProtocol,
)

from .._bson import DEFAULT_CHUNK_BYTES
from .._mongo import AsyncIO, Plan, SyncIO, is_async_client
from ..errors import ClientConfigurationError, InvalidInputError
from .base import CheckpointPlans, next_version
from .documents import CollectionNames


class MongoDBCheckpointer(CheckpointPlans, BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on MongoDB, with native sync and async methods.

    Give it a sync client (``pymongo.MongoClient``, ``mongomock.MongoClient``)
    for ``invoke``/``stream``, an async client (``pymongo.AsyncMongoClient``,
    motor, ``mongomock_motor``) for ``ainvoke``/``astream``, or both. A method
    whose kind of client is missing raises ``ClientConfigurationError`` naming
    the argument to add; it never hides a thread pool behind the other kind.

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
        ttl: seconds after its last write at which a whole thread expires.
        collections: collection names (see ``CollectionNames``).
        chunk_bytes: serialized bytes per document for large values.
        auto_setup: create indexes before the first operation of each face.
    """

    def __init__(
        self,
        client: Any = None,
        *,
        async_client: Any = None,
        db_name: str = "langgraph",
        serde: SerializerProtocol | None = None,
        ttl: float | None = None,
        collections: CollectionNames | None = None,
        chunk_bytes: int = DEFAULT_CHUNK_BYTES,
        auto_setup: bool = True,
    ) -> None:
        super().__init__(serde=serde)
        if client is not None and is_async_client(client):
            if async_client is not None:
                raise ClientConfigurationError("client is an async client and async_client is set too; pass the sync client as client=")
            client, async_client = None, client
        if async_client is not None and not is_async_client(async_client):
            raise ClientConfigurationError(f"async_client must be an async client, got {type(async_client).__name__}")
        if client is None and async_client is None:
            raise ClientConfigurationError(
                "MongoDBCheckpointer needs a client: pass client=MongoClient(uri) and/or "
                "async_client=AsyncMongoClient(uri), or use MongoDBCheckpointer.from_conn_string(uri)"
            )
        if not isinstance(db_name, str) or not db_name or set(db_name) & set('/\\. "$\x00'):
            raise InvalidInputError(f"db_name must be a valid MongoDB database name, got {db_name!r}")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0):
            raise InvalidInputError(f"ttl must be a positive number of seconds or None, got {ttl!r}")
        self.client = client
        self.async_client = async_client
        self.db_name = db_name
        self.ttl = ttl
        self.collections = collections or CollectionNames()
        self.chunk_bytes = chunk_bytes
        self._sync_io = SyncIO(client[db_name]) if client is not None else None
        self._async_io = AsyncIO(async_client[db_name]) if async_client is not None else None
        self._auto_setup = auto_setup
        self._ready = {"sync": not auto_setup, "async": not auto_setup}
        self._expiries: dict[str, datetime] = {}
        self._applied_expiries: dict[str, datetime] = {}
        self._expiry_lock = threading.Lock()

    @classmethod
    def from_conn_string(cls, conn_string: str, **kwargs: Any) -> "_ConnectionScope":
        """Create a sync and an async client for ``conn_string``; close both at the end.

        Works with ``with`` and with ``async with``. Example::

            with MongoDBCheckpointer.from_conn_string("mongodb://localhost:27017") as saver:
                graph = builder.compile(checkpointer=saver)
                graph.invoke(inputs, config)

            async with MongoDBCheckpointer.from_conn_string(uri) as saver:
                await builder.compile(checkpointer=saver).ainvoke(inputs, config)
        """
        if not isinstance(conn_string, str) or not conn_string:
            raise InvalidInputError(f"conn_string must be a MongoDB URI string, got {conn_string!r}")
        return _ConnectionScope(cls, conn_string, kwargs)

    # -- faces --------------------------------------------------------------------

    def _run(self, plan: Plan) -> Any:
        io = self._sync_face()
        return io.run(plan)

    def _sync_face(self) -> SyncIO:
        if self._sync_io is None:
            raise ClientConfigurationError(
                "this MongoDBCheckpointer has only an async client, so sync methods (invoke, stream, "
                "get_state) cannot run; use ainvoke/astream/aget_state, or also pass client=MongoClient(uri)"
            )
        if not self._ready["sync"]:
            self._sync_io.run(self._setup_plan())
            self._ready["sync"] = True
        return self._sync_io

    async def _async_face(self) -> AsyncIO:
        if self._async_io is None:
            raise ClientConfigurationError(
                "this MongoDBCheckpointer has only a sync client, so async methods (ainvoke, astream, "
                "aget_state) cannot run natively; use invoke/stream, or also pass "
                "async_client=AsyncMongoClient(uri)"
            )
        if not self._ready["async"]:
            await self._async_io.run(self._setup_plan())
            self._ready["async"] = True
        return self._async_io

    async def _arun(self, plan: Plan) -> Any:
        io = await self._async_face()
        return await io.run(plan)

    # -- setup ----------------------------------------------------------------------

    def setup(self) -> None:
        """Create every index (idempotent)."""
        self._sync_face()
        self._sync_io.run(self._setup_plan())

    async def asetup(self) -> None:
        """Create every index (idempotent)."""
        io = await self._async_face()
        await io.run(self._setup_plan())

    # -- the saver contract: sync ---------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._run(self._get_tuple_plan(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        plan = self._list_plan(config, filter, before, limit)
        return self._sync_face().iterate(plan)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._run(self._put_plan(config, checkpoint, metadata, new_versions))

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._run(self._put_writes_plan(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's checkpoints, blobs, writes, journal and ordinals."""
        self._run(self._delete_thread_plan(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints the runs created (refused if a DeltaChannel still needs them)."""
        self._run(self._delete_for_runs_plan(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every document of every namespace (ids, parents, journal) to another thread."""
        self._run(self._copy_thread_plan(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's latest checkpoint and what its DeltaChannels replay."""
        self._run(self._prune_plan(thread_ids, strategy))

    def sweep_expired(self) -> list[str]:
        """Delete every thread past its TTL, whole; returns their ids.

        MongoDB's TTL monitor does this by itself; run it on servers that do
        not enforce TTL indexes (FerretDB) or to reclaim space at once.
        """
        return self._run(self._sweep_expired_plan())

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return self._run(self._delta_history_plan(config, channels))

    # -- the saver contract: async --------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._arun(self._get_tuple_plan(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        plan = self._list_plan(config, filter, before, limit)
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
        return await self._arun(self._put_plan(config, checkpoint, metadata, new_versions))

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await self._arun(self._put_writes_plan(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._arun(self._delete_thread_plan(thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await self._arun(self._delete_for_runs_plan(run_ids))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await self._arun(self._copy_thread_plan(source_thread_id, target_thread_id))

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await self._arun(self._prune_plan(thread_ids, strategy))

    async def asweep_expired(self) -> list[str]:
        return await self._arun(self._sweep_expired_plan())

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await self._arun(self._delta_history_plan(config, channels))

    def get_next_version(self, current: str | int | float | None, channel: None = None) -> str:
        return next_version(current)


class _ConnectionScope:
    """What ``from_conn_string`` returns: a sync and async context manager owning two clients."""

    def __init__(self, cls: type[MongoDBCheckpointer], uri: str, kwargs: dict[str, Any]) -> None:
        self._cls, self._uri, self._kwargs = cls, uri, kwargs

    def _open(self) -> MongoDBCheckpointer:
        from pymongo import AsyncMongoClient, MongoClient

        self._client, self._async_client = MongoClient(self._uri), AsyncMongoClient(self._uri)
        return self._cls(self._client, async_client=self._async_client, **self._kwargs)

    def __enter__(self) -> MongoDBCheckpointer:
        return self._open()

    def __exit__(self, *exc: object) -> None:
        self._client.close()
        try:
            asyncio.get_running_loop().create_task(self._async_client.close())
        except RuntimeError:
            asyncio.run(self._async_client.close())

    async def __aenter__(self) -> MongoDBCheckpointer:
        return self._open()

    async def __aexit__(self, *exc: object) -> None:
        self._client.close()
        await self._async_client.close()
