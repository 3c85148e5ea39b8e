"""MongoDB I/O written once, run by a sync face and a native async face.

Storage logic in this package is written as *plans*: generators that yield
small request objects (``Find``, ``Upsert``, ...) and receive their results.
``SyncIO`` runs a plan on a synchronous client (pymongo ``MongoClient``,
``mongomock``); ``AsyncIO`` runs the same plan with ``await`` on an
asynchronous client (pymongo ``AsyncMongoClient``, motor, ``mongomock_motor``).
The logic never knows which one runs it, so the two faces cannot drift apart.

Example::

    def count_threads(thread_id):
        docs = yield Find("checkpoints", {"thread_id": thread_id}, limit=1)
        return len(docs)

    SyncIO(client["db"]).run(count_threads("t1"))
    await AsyncIO(async_client["db"]).run(count_threads("t1"))
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, Union

from pymongo import IndexModel, ReplaceOne, ReturnDocument, UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

logger = logging.getLogger("langgraph_durable_mongodb")

DUPLICATE_KEY = 11000


@dataclass(frozen=True)
class Find:
    """``find`` materialised into a list."""

    collection: str
    filter: dict[str, Any]
    projection: dict[str, Any] | None = None
    sort: list[tuple[str, int]] | None = None
    limit: int = 0
    #: Results come in as few replies as 16 MiB allow, not pymongo's first batch of 101.
    batch_size: int = 10_000


@dataclass(frozen=True)
class Aggregate:
    collection: str
    pipeline: list[dict[str, Any]]


@dataclass(frozen=True)
class Upsert:
    """One unordered bulk of ``UpdateOne``/``ReplaceOne`` upserts (one command on a server).

    Duplicate-key errors from concurrent upserts of the same key are ignored:
    every caller uses it for idempotent, insert-if-absent or last-writer-wins
    documents.
    """

    collection: str
    operations: list[UpdateOne | ReplaceOne]


@dataclass(frozen=True)
class InsertMany:
    """Unordered insert of many documents; keys already present are left as they are."""

    collection: str
    documents: list[dict[str, Any]]


@dataclass(frozen=True)
class UpdateMany:
    """Returns how many documents matched ``filter``."""

    collection: str
    filter: dict[str, Any]
    update: dict[str, Any]


@dataclass(frozen=True)
class FencedUpdate:
    """Update the one document ``filter`` names, if it still matches; returns whether it did.

    ``filter`` carries the fence (a claim's token, the state a decision was
    taken on). The answer is the server's *matched* count, never
    ``nModified``, which some servers omit (pymongo then reports None).
    """

    collection: str
    filter: dict[str, Any]
    update: dict[str, Any]


@dataclass(frozen=True)
class DeleteMany:
    collection: str
    filter: dict[str, Any]


@dataclass(frozen=True)
class InsertOne:
    """Insert one document; returns False instead of raising on a duplicate key."""

    collection: str
    document: dict[str, Any]


@dataclass(frozen=True)
class FindOneAndUpdate:
    """Returns the document after the update, or None when nothing matched."""

    collection: str
    filter: dict[str, Any]
    update: dict[str, Any]
    upsert: bool = False
    projection: dict[str, Any] | None = None


@dataclass(frozen=True)
class CreateIndexes:
    """Create indexes. ``optional`` ones (a TTL index, say) only log a warning
    when the server does not implement them, and the request returns False."""

    collection: str
    indexes: list[IndexModel]
    optional: bool = False


@dataclass(frozen=True)
class Command:
    command: dict[str, Any]


@dataclass(frozen=True)
class Gather:
    """Independent requests: the async face sends them concurrently, the sync face one after another.

    Returns their results in order. The command count is the same; an async
    caller waits for one round trip instead of several.
    """

    requests: tuple[Any, ...]


@dataclass(frozen=True)
class Sleep:
    """Not I/O: pause the plan (``time.sleep`` on the sync face, ``asyncio.sleep`` on the async face)."""

    seconds: float


@dataclass(frozen=True)
class Emit:
    """Not I/O: hands one item to the caller of an iterating plan."""

    value: Any


Request = Union[
    Find,
    Aggregate,
    Upsert,
    InsertMany,
    UpdateMany,
    FencedUpdate,
    DeleteMany,
    InsertOne,
    FindOneAndUpdate,
    CreateIndexes,
    Command,
    Sleep,
]
Plan = Generator[Any, Any, Any]


def is_async_client(client: Any) -> bool:
    """True for pymongo's ``AsyncMongoClient``, motor and mongomock_motor clients."""
    return any(
        cls.__module__.startswith(("pymongo.asynchronous", "motor", "mongomock_motor")) for cls in type(client).__mro__
    )


def _is_mongomock(collection: Any) -> bool:
    # mongomock 4.3 cannot take pymongo >= 4.20's UpdateOne/ReplaceOne in
    # bulk_write (they pass a `sort` argument it does not know). Only there do
    # we apply a bulk one operation at a time; real servers get one command
    # (update_one/replace_one for a single operation: lighter on the client
    # than bulk_write).
    return any(cls.__module__.startswith("mongomock") for cls in type(collection).__mro__)


def _raise_unless_duplicates(error: BulkWriteError) -> None:
    others = [e for e in error.details.get("writeErrors", []) if e.get("code") != DUPLICATE_KEY]
    if others or error.details.get("writeConcernErrors"):
        raise error


def _optional_index_failed(request: CreateIndexes, error: OperationFailure) -> bool:
    if not request.optional:
        raise error
    names = ", ".join(str(i.document.get("name")) for i in request.indexes)
    logger.warning(
        "the server refused optional index %s on %s (%s); carrying on without it", names, request.collection, error
    )
    return False


def _single_op(collection: Any, op: UpdateOne | ReplaceOne) -> Any:
    doc = op._doc  # noqa: SLF001 - the public operation objects expose no getters
    if isinstance(op, ReplaceOne):
        return collection.replace_one(op._filter, doc, upsert=op._upsert)  # noqa: SLF001
    return collection.update_one(op._filter, doc, upsert=op._upsert)  # noqa: SLF001


def _one_by_one(collection: Any, operations: list[Any]) -> None:
    for op in operations:
        try:
            _single_op(collection, op)
        except DuplicateKeyError:
            pass  # a concurrent writer upserted the same key: these writes are idempotent


async def _aone_by_one(collection: Any, operations: list[Any]) -> None:
    for op in operations:
        try:
            await _single_op(collection, op)
        except DuplicateKeyError:
            pass


class SyncIO:
    """Runs plans on a synchronous database."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def execute(self, request: Any) -> Any:
        if isinstance(request, Gather):
            return [self.execute(r) for r in request.requests]
        coll = self.db[request.collection] if hasattr(request, "collection") else None
        if isinstance(request, Find):
            cursor = coll.find(request.filter, request.projection).batch_size(request.batch_size)
            if request.sort:
                cursor = cursor.sort(request.sort)
            if request.limit:
                cursor = cursor.limit(request.limit)
            return list(cursor)
        if isinstance(request, Aggregate):
            return list(coll.aggregate(request.pipeline))
        if isinstance(request, Upsert):
            if not request.operations:
                return None
            if len(request.operations) == 1 or _is_mongomock(coll):
                _one_by_one(coll, request.operations)
                return None
            try:
                coll.bulk_write(request.operations, ordered=False)
            except BulkWriteError as error:
                _raise_unless_duplicates(error)
            except KeyError:
                # FerretDB answers a lost upsert race without nModified; the
                # operations are idempotent, so apply them one by one.
                _one_by_one(coll, request.operations)
            return None
        if isinstance(request, InsertMany):
            if request.documents:
                try:
                    coll.insert_many(request.documents, ordered=False)
                except BulkWriteError as error:
                    _raise_unless_duplicates(error)
            return None
        if isinstance(request, UpdateMany):
            return coll.update_many(request.filter, request.update).matched_count
        if isinstance(request, FencedUpdate):
            return coll.update_one(request.filter, request.update).matched_count == 1
        if isinstance(request, DeleteMany):
            return coll.delete_many(request.filter).deleted_count
        if isinstance(request, InsertOne):
            try:
                coll.insert_one(dict(request.document))
            except DuplicateKeyError:
                return False
            return True
        if isinstance(request, FindOneAndUpdate):
            return coll.find_one_and_update(
                request.filter,
                request.update,
                projection=request.projection,
                upsert=request.upsert,
                return_document=ReturnDocument.AFTER,
            )
        if isinstance(request, CreateIndexes):
            try:
                coll.create_indexes(request.indexes)
            except OperationFailure as error:
                return _optional_index_failed(request, error)
            return True
        if isinstance(request, Command):
            return self.db.command(request.command)
        if isinstance(request, Sleep):
            time.sleep(request.seconds)
            return None
        raise TypeError(f"unknown request {request!r}")

    def run(self, plan: Plan) -> Any:
        """Drive a plan to its return value."""
        result = None
        while True:
            try:
                request = plan.send(result)
            except StopIteration as stop:
                return stop.value
            result = self.execute(request)

    def iterate(self, plan: Plan) -> Iterator[Any]:
        """Drive a plan, yielding what it ``Emit``s."""
        result = None
        while True:
            try:
                request = plan.send(result)
            except StopIteration:
                return
            if isinstance(request, Emit):
                result = None
                yield request.value
            else:
                result = self.execute(request)


async def _resolve(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _to_list(cursor_or_coro: Any) -> list[Any]:
    # pymongo's async aggregate/list_indexes are coroutines returning a cursor;
    # motor's and mongomock_motor's return the cursor directly.
    cursor = await _resolve(cursor_or_coro)
    return await cursor.to_list(None)


class AsyncIO:
    """Runs plans natively on an asynchronous database (no thread pool)."""

    def __init__(self, db: Any) -> None:
        self.db = db

    async def execute(self, request: Any) -> Any:
        if isinstance(request, Gather):
            return list(await asyncio.gather(*(self.execute(r) for r in request.requests)))
        coll = self.db[request.collection] if hasattr(request, "collection") else None
        if isinstance(request, Find):
            cursor = coll.find(request.filter, request.projection).batch_size(request.batch_size)
            if request.sort:
                cursor = cursor.sort(request.sort)
            if request.limit:
                cursor = cursor.limit(request.limit)
            return await cursor.to_list(None)
        if isinstance(request, Aggregate):
            return await _to_list(coll.aggregate(request.pipeline))
        if isinstance(request, Upsert):
            if not request.operations:
                return None
            if len(request.operations) == 1 or _is_mongomock(coll):
                await _aone_by_one(coll, request.operations)
                return None
            try:
                await coll.bulk_write(request.operations, ordered=False)
            except BulkWriteError as error:
                _raise_unless_duplicates(error)
            except KeyError:
                await _aone_by_one(coll, request.operations)  # see SyncIO
            return None
        if isinstance(request, InsertMany):
            if request.documents:
                try:
                    await coll.insert_many(request.documents, ordered=False)
                except BulkWriteError as error:
                    _raise_unless_duplicates(error)
            return None
        if isinstance(request, UpdateMany):
            return (await coll.update_many(request.filter, request.update)).matched_count
        if isinstance(request, FencedUpdate):
            return (await coll.update_one(request.filter, request.update)).matched_count == 1
        if isinstance(request, DeleteMany):
            return (await coll.delete_many(request.filter)).deleted_count
        if isinstance(request, InsertOne):
            try:
                await coll.insert_one(dict(request.document))
            except DuplicateKeyError:
                return False
            return True
        if isinstance(request, FindOneAndUpdate):
            return await coll.find_one_and_update(
                request.filter,
                request.update,
                projection=request.projection,
                upsert=request.upsert,
                return_document=ReturnDocument.AFTER,
            )
        if isinstance(request, CreateIndexes):
            try:
                await coll.create_indexes(request.indexes)
            except OperationFailure as error:
                return _optional_index_failed(request, error)
            return True
        if isinstance(request, Command):
            return await self.db.command(request.command)
        if isinstance(request, Sleep):
            await asyncio.sleep(request.seconds)
            return None
        raise TypeError(f"unknown request {request!r}")

    async def run(self, plan: Plan) -> Any:
        result = None
        while True:
            try:
                request = plan.send(result)
            except StopIteration as stop:
                return stop.value
            result = await self.execute(request)

    async def iterate(self, plan: Plan) -> AsyncIterator[Any]:
        result = None
        while True:
            try:
                request = plan.send(result)
            except StopIteration:
                return
            if isinstance(request, Emit):
                result = None
                yield request.value
            else:
                result = await self.execute(request)



def split_clients(client: Any, async_client: Any, owner: str, alternative: str = "or use from_conn_string(uri)") -> tuple[Any, Any]:
    """Sort the clients a storage class was given into (sync, async); either may be None, not both.

    A lone async client passed as ``client`` is accepted as the async one.
    """
    from .errors import ClientConfigurationError

    if client is not None and is_async_client(client):
        if async_client is not None:
            raise ClientConfigurationError(
                "client is an async client and async_client is set too; pass the sync client as client="
            )
        client, async_client = None, client
    if async_client is not None and not is_async_client(async_client):
        raise ClientConfigurationError(f"async_client must be an async client, got {type(async_client).__name__}")
    if client is None and async_client is None:
        raise ClientConfigurationError(
            f"{owner} needs a client: pass client=MongoClient(uri) and/or async_client=AsyncMongoClient(uri), "
            + alternative
        )
    return client, async_client


class TwoFaces:
    """Mixin of a storage class: its sync face and its native async face, each set up on first use.

    The class provides ``_setup_plan()`` and says, in ``_needs_sync`` and
    ``_needs_async``, what a caller should do when the face it called is missing.
    """

    _needs_sync = "also pass client=MongoClient(uri)"
    _needs_async = "also pass async_client=AsyncMongoClient(uri)"
    _sync_io: SyncIO | None
    _async_io: AsyncIO | None

    def _init_faces(self, sync_io: SyncIO | None, async_io: AsyncIO | None, auto_setup: bool) -> None:
        self._sync_io, self._async_io = sync_io, async_io
        self._ready = {"sync": not auto_setup, "async": not auto_setup}

    _setup_plan: Callable[[], Plan]

    def _sync_face(self) -> Any:
        from .errors import ClientConfigurationError

        if self._sync_io is None:
            raise ClientConfigurationError(f"this {type(self).__name__} has only an async client: {self._needs_sync}")
        if not self._ready["sync"]:
            self._sync_io.run(self._setup_plan())
            self._ready["sync"] = True
        return self._sync_io

    async def _async_face(self) -> Any:
        from .errors import ClientConfigurationError

        if self._async_io is None:
            raise ClientConfigurationError(f"this {type(self).__name__} has only a sync client: {self._needs_async}")
        if not self._ready["async"]:
            await self._async_io.run(self._setup_plan())
            self._ready["async"] = True
        return self._async_io

    def _run(self, plan: Plan) -> Any:
        return self._sync_face().run(plan)

    async def _arun(self, plan: Plan) -> Any:
        return await (await self._async_face()).run(plan)

    def setup(self) -> None:
        """Create every index (idempotent)."""
        self._run(self._setup_plan())

    async def asetup(self) -> None:
        """Create every index (idempotent)."""
        await self._arun(self._setup_plan())
