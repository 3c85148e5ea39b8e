"""The two interpreters of plans: one on a synchronous database, one natively on an asynchronous one.

Each executes a request with the method its table gives the request's type
(``Find`` -> ``_find``), so the two read alike line by line; they differ only where one awaits. Where
servers differ, they ask the database's ``ServerQuirks`` (``quirks.py``).

Example::

    SyncInterpreter(client["db"]).run(count_threads("t1"))
    await AsyncInterpreter(async_client["db"]).run(count_threads("t1"))
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeAlias, TypeVar, cast

from pymongo import IndexModel, ReplaceOne, ReturnDocument, UpdateOne, WriteConcern
from pymongo.collection import Collection
from pymongo.database import Database
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure

from ..heartbeats import RENEWER, Beat, TaskBeat, renewal_failed
from ..schema import KEY_PREFIX, majority_concern
from . import quirks as server_quirks
from .requests import (
    END,
    Aggregate,
    Await,
    Command,
    CreateIndexes,
    Defer,
    DeleteMany,
    Detach,
    Emit,
    End,
    FencedUpdate,
    Find,
    FindOneAndUpdate,
    Gather,
    Heartbeat,
    InsertMany,
    InsertOne,
    Invoke,
    Join,
    ListCollections,
    ListIndexes,
    Next,
    Plan,
    Raised,
    Request,
    Returned,
    Sleep,
    Try,
    UpdateMany,
    Upsert,
    WaitNotice,
)

logger = logging.getLogger("langgraph_durable_mongodb")

T = TypeVar("T")
#: The collection objects of an interpreter's database.
C = TypeVar("C")
#: An operation of an ``Upsert``.
WriteOp: TypeAlias = UpdateOne | ReplaceOne[dict[str, Any]]

DUPLICATE_KEY = 11000


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


def _single_op(collection: Any, op: WriteOp) -> Any:
    # ``collection``: sync or async (the caller awaits what it answers)
    doc = op._doc  # the public operation objects expose no getters
    upsert = bool(op._upsert)  # None when not given, which bulk_write takes and update_one refuses
    if isinstance(op, ReplaceOne):
        return collection.replace_one(op._filter, doc, upsert=upsert)
    return collection.update_one(op._filter, doc, upsert=upsert)


def _index_batches(request: CreateIndexes, quirks: server_quirks.ServerQuirks) -> list[list[IndexModel]]:
    return [[index] for index in request.indexes] if quirks.one_index_per_command else [request.indexes]


def _names_key(query: Any) -> bool:
    """Whether ``query`` names documents by ``_id`` beside the key fields it encodes (``schema.key_filter``)."""
    return isinstance(query, dict) and "_id" in query and KEY_PREFIX[0] in query


def _by_id(query: Mapping[str, Any], quirks: server_quirks.ServerQuirks) -> Mapping[str, Any]:
    """``query`` as the server finds it from its ``_id`` index: when it names documents by key (``_names_key``) on a
    server that needs ``_id`` alone (``ServerQuirks.id_alone``), without the key fields the ``_id`` encodes (the same
    documents match)."""
    if not (quirks.id_alone and _names_key(query)):
        return query
    return {k: v for k, v in query.items() if k not in KEY_PREFIX}


def _ops_by_id(ops: Sequence[WriteOp], quirks: Callable[[], server_quirks.ServerQuirks]) -> Sequence[WriteOp]:
    """``ops``, those whose filter names its document by key with the filter ``_by_id`` gives; ``quirks()`` is asked
    only when one does (a sync interpreter may not know its server yet)."""
    if not any(_names_key(op._filter) for op in ops) or not quirks().id_alone:  # no public getters
        return ops
    return [
        ReplaceOne(_by_id(op._filter, quirks()), op._doc, upsert=op._upsert)
        if isinstance(op, ReplaceOne)
        else UpdateOne(_by_id(op._filter, quirks()), op._doc, upsert=op._upsert)
        for op in ops
    ]


def _cursor(coll: Any, request: Find, query: Mapping[str, Any]) -> Any:
    # ``coll``: sync or async (pymongo, motor, mongomock), and so is the cursor
    cursor = coll.find(query, request.projection).batch_size(request.batch_size)
    if request.sort:
        cursor = cursor.sort(request.sort)
    if request.limit:
        cursor = cursor.limit(request.limit)
    return cursor


def _plan_step(plan: Plan[Any], result: Any) -> tuple[bool, Any]:
    """Send ``result``; ``(True, request)`` for the next request, ``(False, value)`` when the plan returned."""
    try:
        return True, plan.send(result)
    except StopIteration as stop:
        return False, stop.value


def _plan_raise(plan: Plan[Any], error: BaseException) -> tuple[bool, Any]:
    """Raise ``error`` (a request's failure) in the plan, at the ``yield`` that asked for it: the plan's ``except``
    and ``with`` blocks see it there and then, not when the suspended plan is collected. As ``_plan_step``."""
    try:
        return True, plan.throw(error)
    except StopIteration as stop:
        return False, stop.value


class _Collections(Generic[C]):
    """The collection objects of one database, made once: a driver's ``db[name]`` builds a new one per call,
    and building them took a measurable share of the client CPU of a LangGraph step when profiled.

    With ``majority`` each is given ``w: "majority"`` (``schema.majority_concern``), whatever the database's
    write concern: the interpreters of the storage classes ``schema.MAJORITY_WRITTEN`` names."""

    db: Any  # pymongo's, motor's or mongomock's, sync or async as the interpreter is: its collections are ``C``
    _collections: dict[str, C]
    _majority: bool
    #: The method that executes each type of request (``_handlers``).
    _HANDLERS: ClassVar[dict[type[Request[Any]], Callable[..., Any]]]

    def _coll(self, name: str) -> C:
        found = self._collections.get(name)
        if found is None:
            found = self._collections[name] = self._made(name)
        return found

    def _made(self, name: str) -> C:
        if not self._majority:
            made: C = self.db[name]
            return made
        given = getattr(self.db, "write_concern", None)  # mongomock's databases have none (they answer a collection)
        concern = majority_concern(given if isinstance(given, WriteConcern) else WriteConcern())
        made = self.db.get_collection(name, write_concern=concern)
        return made


class SyncInterpreter(_Collections[Collection[dict[str, Any]]]):
    """Runs plans on a synchronous database (pymongo ``MongoClient``, mongomock); with ``majority``, every write waits
    for a majority of a replica set (``_Collections``)."""

    db: Database[dict[str, Any]]  # or mongomock's, which behaves as one

    def __init__(self, db: Database[dict[str, Any]], majority: bool = False) -> None:
        self.db, self._collections, self._majority = db, {}, majority
        self._quirks = server_quirks.of_client(db)

    @property
    def quirks(self) -> server_quirks.ServerQuirks:
        if self._quirks is None:
            self._quirks = self.run(server_quirks.identify_plan())[0]
        return self._quirks

    def run(self, plan: Plan[T]) -> T:
        """Drive a plan to its return value."""
        going, value = _plan_step(plan, None)
        while going:
            going, value = self._answer(plan, value)
        returned: T = value
        return returned

    def iterate(self, plan: Plan[Any]) -> Iterator[Any]:
        """Drive a plan, yielding what it ``Emit``s."""
        going, request = _plan_step(plan, None)
        while going:
            if isinstance(request, Emit):
                yield request.value
                going, request = _plan_step(plan, None)
            else:
                going, request = self._answer(plan, request)

    def _answer(self, plan: Plan[Any], request: Any) -> tuple[bool, Any]:
        """Execute ``request`` and send its result to the plan, or raise its failure there (``_plan_raise``)."""
        try:
            result = self.execute(request)
        except BaseException as error:  # raised in the plan, which re-raises what it does not handle
            return _plan_raise(plan, error)
        return _plan_step(plan, result)

    def execute(self, request: Request[T]) -> T:
        """Execute one request: its answer, or what it raised."""
        try:
            handler = self._HANDLERS[type(request)]
        except KeyError:
            raise TypeError(f"{type(request).__name__} is not a request this interpreter executes") from None
        answer: T = handler(self, request)
        return answer

    # -- MongoDB operations --

    def _find(self, request: Find) -> list[dict[str, Any]]:
        return list(_cursor(self._coll(request.collection), request, self._answerable(request.filter)))

    def _answerable(self, query: Mapping[str, Any]) -> Mapping[str, Any]:
        """``query`` as this server finds it from its ``_id`` index (``_by_id``); the server is identified only for
        a query that names documents by key."""
        return _by_id(query, self.quirks) if _names_key(query) else query

    def _aggregate(self, request: Aggregate) -> list[dict[str, Any]]:
        return list(self._coll(request.collection).aggregate(request.pipeline))

    def _upsert(self, request: Upsert) -> None:
        coll = self._coll(request.collection)
        operations = _ops_by_id(request.operations, lambda: self.quirks)
        if len(operations) > 1 and self.quirks.bulk_upserts:
            try:
                coll.bulk_write(operations, ordered=False)
                return
            except BulkWriteError as error:
                _raise_unless_duplicates(error)
                return
            except KeyError:
                if not self.quirks.lost_upsert_race_lacks_nmodified:
                    raise
        for op in operations:  # one command each (a single operation is lighter this way too)
            # a concurrent writer upserted the same key: these writes are idempotent
            with contextlib.suppress(DuplicateKeyError):
                _single_op(coll, op)

    def _insert_many(self, request: InsertMany) -> None:
        if request.documents:
            try:
                self._coll(request.collection).insert_many(request.documents, ordered=False)
            except BulkWriteError as error:
                _raise_unless_duplicates(error)

    def _insert_one(self, request: InsertOne) -> bool:
        try:
            self._coll(request.collection).insert_one(dict(request.document))
        except DuplicateKeyError:
            return False
        return True

    def _update_many(self, request: UpdateMany) -> int:
        return self._coll(request.collection).update_many(request.filter, request.update).matched_count

    def _fenced_update(self, request: FencedUpdate) -> bool:
        query = self._answerable(request.filter)
        return self._coll(request.collection).update_one(query, request.update).matched_count == 1

    def _find_one_and_update(self, request: FindOneAndUpdate) -> dict[str, Any] | None:
        coll = self._coll(request.collection)

        def call() -> dict[str, Any] | None:
            return coll.find_one_and_update(
                request.filter, request.update, projection=request.projection, upsert=request.upsert,
                return_document=ReturnDocument.BEFORE if request.before else ReturnDocument.AFTER,
            )

        try:
            return call()
        except DuplicateKeyError:
            if not request.upsert:
                raise
            return call()  # lost the race to insert: now it matches the winner's document

    def _delete_many(self, request: DeleteMany) -> int:
        return self._coll(request.collection).delete_many(request.filter).deleted_count

    def _create_indexes(self, request: CreateIndexes) -> bool:
        try:
            for batch in _index_batches(request, self.quirks):
                self._coll(request.collection).create_indexes(batch)
        except OperationFailure as error:
            return _optional_index_failed(request, error)
        return True

    def _command(self, request: Command) -> dict[str, Any]:
        return self.db.command(request.command)

    def _list_collections(self, request: ListCollections) -> list[str]:
        return list(self.db.list_collection_names())

    def _list_indexes(self, request: ListIndexes) -> list[str]:
        return [ix["name"] for ix in self._coll(request.collection).list_indexes()]

    # -- not I/O --

    def _gather(self, request: Gather) -> list[Any]:
        return [self.execute(r) for r in request.requests]

    def _sleep(self, request: Sleep) -> None:
        time.sleep(request.seconds)

    def _wait_notice(self, request: WaitNotice) -> None:
        woken = threading.Event()
        unsubscribe = request.subscribe(woken.set)
        try:
            woken.wait(request.seconds)
        finally:
            unsubscribe()

    def _defer(self, request: Defer) -> concurrent.futures.Future[Any]:
        return background_pool().submit(self.run, request.plan)

    def _join(self, request: Join) -> None:
        loop = running_loop()
        for future in request.futures:
            # A future a task of this thread's running loop settles (an async face's Defer) would never be done
            # while a sync call blocks that loop: its error is raised once done, it is not waited for. Every
            # other future (this face's pool threads, another loop's tasks) is waited for, on a loop or not.
            if future.done() or not settled_on(future, loop):
                concurrent.futures.wait([future]) if request.settle else future.result()

    def _heartbeat(self, request: Heartbeat) -> Beat:
        if request.every <= 0:
            return Beat()
        return RENEWER.start(lambda: self.run(request.renew()), request.every)

    def _invoke(self, request: Invoke) -> Returned | Raised:
        with request.context():
            try:
                return Returned(request.fn())
            except BaseException as exc:  # handed to the plan, which re-raises it
                return Raised(exc)

    def _try(self, request: Try) -> Returned | Raised:
        try:
            return Returned(self.execute(request.request))
        except Exception as exc:  # handed to the plan, which judges it
            return Raised(exc)

    def _next(self, request: Next) -> Returned | Raised | End:
        iterator = cast(Iterator[Any], request.iterator)  # a plan on the sync face streams a sync iterator
        with request.context():
            try:
                return Returned(next(iterator))
            except StopIteration:
                return END
            except BaseException as exc:
                return Raised(exc)


_pool_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None
#: Threads running deferred plans (journal records) for the sync faces of this process.
BACKGROUND_THREADS = 8


def background_pool() -> concurrent.futures.ThreadPoolExecutor:
    """The process's pool for deferred plans. Python joins its threads at exit, so a record under way when the
    program ends is still written."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(BACKGROUND_THREADS, thread_name_prefix="durable-deferred")
        return _pool


_DEFERRED_TASKS: set[asyncio.Task[Any]] = set()


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio event loop this thread is running (a sync call made from a coroutine), or None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def on_event_loop() -> bool:
    """Whether this thread is running an asyncio event loop (a sync call made from a coroutine)."""
    return running_loop() is not None


class LoopFuture(concurrent.futures.Future[Any]):
    """The future of an async face's ``Defer``: a task of ``loop`` settles it, so only that loop's progress can."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None) -> None:
        super().__init__()
        self.loop = loop


class UnderWay(LoopFuture):
    """An effect this thread is running, settled by this thread when it ends: by its event loop, when it runs one
    (``loop``; None when it runs none). Already under way: no waiter can cancel it."""

    def __init__(self) -> None:
        super().__init__(running_loop())
        self.set_running_or_notify_cancel()


def settled_on(future: concurrent.futures.Future[Any], loop: asyncio.AbstractEventLoop | None) -> bool:
    """Whether ``future`` is settled by a task of ``loop`` (a blocking wait on that loop's thread would never end)."""
    return loop is not None and isinstance(future, LoopFuture) and future.loop is loop


def _settle_future(done: concurrent.futures.Future[Any], task: asyncio.Task[Any]) -> None:
    """Hand a deferred task's outcome to the future ``Defer`` answered with."""
    _DEFERRED_TASKS.discard(task)
    if task.cancelled():
        done.set_exception(asyncio.CancelledError())
    elif (error := task.exception()) is not None:
        done.set_exception(error)
    else:
        done.set_result(task.result())


async def _to_list(cursor_or_coro: Any) -> list[Any]:
    # pymongo's async aggregate is a coroutine returning a cursor; motor's and mongomock_motor's a cursor.
    cursor = await cursor_or_coro if inspect.isawaitable(cursor_or_coro) else cursor_or_coro
    found: list[Any] = await cursor.to_list(None)
    return found


class AsyncInterpreter(_Collections[Any]):
    """Runs plans natively on an asynchronous database (pymongo ``AsyncMongoClient``, motor, mongomock_motor); with
    ``majority``, as ``SyncInterpreter``. Its database and collections are ``Any``: pymongo's are typed, motor's and
    mongomock_motor's are not, and the interpreter calls them all alike."""

    def __init__(self, db: Any, majority: bool = False) -> None:
        self.db, self._collections, self._majority = db, {}, majority
        self._quirks = server_quirks.of_client(db)

    async def quirks(self) -> server_quirks.ServerQuirks:
        if self._quirks is None:
            self._quirks = (await self.run(server_quirks.identify_plan()))[0]
        return self._quirks

    async def run(self, plan: Plan[T]) -> T:
        """Drive a plan to its return value."""
        going, value = _plan_step(plan, None)
        while going:
            going, value = await self._answer(plan, value)
        returned: T = value
        return returned

    async def iterate(self, plan: Plan[Any]) -> AsyncIterator[Any]:
        """Drive a plan, yielding what it ``Emit``s."""
        going, request = _plan_step(plan, None)
        while going:
            if isinstance(request, Emit):
                yield request.value
                going, request = _plan_step(plan, None)
            else:
                going, request = await self._answer(plan, request)

    async def _answer(self, plan: Plan[Any], request: Any) -> tuple[bool, Any]:
        """``SyncInterpreter._answer``, awaited; a cancellation is raised in the plan too."""
        try:
            result = await self.execute(request)
        except BaseException as error:  # raised in the plan, which re-raises what it does not handle
            return _plan_raise(plan, error)
        return _plan_step(plan, result)

    async def execute(self, request: Request[T]) -> T:
        """``SyncInterpreter.execute``, awaited."""
        try:
            handler = self._HANDLERS[type(request)]
        except KeyError:
            raise TypeError(f"{type(request).__name__} is not a request this interpreter executes") from None
        answer: T = await handler(self, request)
        return answer

    # -- MongoDB operations --

    async def _find(self, request: Find) -> list[dict[str, Any]]:
        query = await self._answerable(request.filter)
        found: list[dict[str, Any]] = await _cursor(self._coll(request.collection), request, query).to_list(None)
        return found

    async def _answerable(self, query: Mapping[str, Any]) -> Mapping[str, Any]:
        """``SyncInterpreter._answerable``, awaited."""
        return _by_id(query, await self.quirks()) if _names_key(query) else query

    async def _aggregate(self, request: Aggregate) -> list[dict[str, Any]]:
        return await _to_list(self._coll(request.collection).aggregate(request.pipeline))

    async def _upsert(self, request: Upsert) -> None:
        coll = self._coll(request.collection)
        quirks = await self.quirks()
        operations = _ops_by_id(request.operations, lambda: quirks)
        if len(operations) > 1 and quirks.bulk_upserts:
            try:
                await coll.bulk_write(operations, ordered=False)
                return
            except BulkWriteError as error:
                _raise_unless_duplicates(error)
                return
            except KeyError:
                if not quirks.lost_upsert_race_lacks_nmodified:
                    raise
        for op in operations:
            with contextlib.suppress(DuplicateKeyError):
                await _single_op(coll, op)

    async def _insert_many(self, request: InsertMany) -> None:
        if request.documents:
            try:
                await self._coll(request.collection).insert_many(request.documents, ordered=False)
            except BulkWriteError as error:
                _raise_unless_duplicates(error)

    async def _insert_one(self, request: InsertOne) -> bool:
        try:
            await self._coll(request.collection).insert_one(dict(request.document))
        except DuplicateKeyError:
            return False
        return True

    async def _update_many(self, request: UpdateMany) -> int:
        matched: int = (await self._coll(request.collection).update_many(request.filter, request.update)).matched_count
        return matched

    async def _fenced_update(self, request: FencedUpdate) -> bool:
        query = await self._answerable(request.filter)
        matched: int = (await self._coll(request.collection).update_one(query, request.update)).matched_count
        return matched == 1

    async def _find_one_and_update(self, request: FindOneAndUpdate) -> dict[str, Any] | None:
        coll = self._coll(request.collection)

        async def call() -> dict[str, Any] | None:
            found: dict[str, Any] | None = await coll.find_one_and_update(
                request.filter, request.update, projection=request.projection, upsert=request.upsert,
                return_document=ReturnDocument.BEFORE if request.before else ReturnDocument.AFTER,
            )
            return found

        try:
            return await call()
        except DuplicateKeyError:
            if not request.upsert:
                raise
            return await call()

    async def _delete_many(self, request: DeleteMany) -> int:
        deleted: int = (await self._coll(request.collection).delete_many(request.filter)).deleted_count
        return deleted

    async def _create_indexes(self, request: CreateIndexes) -> bool:
        try:
            for batch in _index_batches(request, await self.quirks()):
                await self._coll(request.collection).create_indexes(batch)
        except OperationFailure as error:
            return _optional_index_failed(request, error)
        return True

    async def _command(self, request: Command) -> dict[str, Any]:
        answer: dict[str, Any] = await self.db.command(request.command)
        return answer

    async def _list_collections(self, request: ListCollections) -> list[str]:
        return list(await self.db.list_collection_names())

    async def _list_indexes(self, request: ListIndexes) -> list[str]:
        return [ix["name"] for ix in await _to_list(self._coll(request.collection).list_indexes())]

    # -- not I/O --

    async def _gather(self, request: Gather) -> list[Any]:
        return list(await asyncio.gather(*(self.execute(r) for r in request.requests)))

    async def _sleep(self, request: Sleep) -> None:
        await asyncio.sleep(request.seconds)

    async def _wait_notice(self, request: WaitNotice) -> None:
        loop = asyncio.get_running_loop()
        woken = loop.create_future()

        def settle() -> None:
            if not woken.done():
                woken.set_result(None)

        def wake() -> None:  # from any thread: the store may run on another loop's thread or in a pool
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
                loop.call_soon_threadsafe(settle)

        unsubscribe = request.subscribe(wake)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(woken, request.seconds)
        finally:
            unsubscribe()

    async def _defer(self, request: Defer) -> concurrent.futures.Future[Any]:
        done = LoopFuture(asyncio.get_running_loop())
        done.set_running_or_notify_cancel()  # under way: no waiter can cancel it (``Future.cancel`` refuses then)
        task = asyncio.ensure_future(self.run(request.plan))
        _DEFERRED_TASKS.add(task)  # the loop keeps only a weak reference to its tasks
        task.add_done_callback(lambda t: _settle_future(done, t))
        return done

    async def _join(self, request: Join) -> None:
        if request.settle:
            await asyncio.wait([asyncio.wrap_future(f) for f in request.futures])
            return
        for future in request.futures:
            # Shielded: a cancelled waiter (LangGraph cancels a failed task's siblings) must not call the work off
            # through ``wrap_future`` (a record still queued would never be written, one under way would be taken for
            # done while it goes on).
            await asyncio.shield(asyncio.wrap_future(future))

    async def _heartbeat(self, request: Heartbeat) -> Beat:
        return Beat() if request.every <= 0 else TaskBeat(asyncio.create_task(self._beat(request)))

    async def _beat(self, request: Heartbeat) -> None:
        held = True
        while held:
            await asyncio.sleep(request.every)
            try:
                held = await self.run(request.renew())
            except Exception as error:  # keep the lease alive through a network error
                held = renewal_failed(error)

    async def _invoke(self, request: Invoke) -> Returned | Raised:
        with request.context():
            try:
                value = request.fn()
                if not inspect.isawaitable(value):
                    return Returned(value)
                work = asyncio.ensure_future(value)  # copies the context: the effect's, entered above
            except BaseException as exc:
                return Raised(exc)
            return await self._await(Await(work))

    async def _try(self, request: Try) -> Returned | Raised:
        try:
            return Returned(await self.execute(request.request))
        except Exception as exc:  # handed to the plan, which judges it
            return Raised(exc)

    async def _detach(self, request: Detach) -> Returned | Raised:
        task = asyncio.ensure_future(self.run(request.plan))
        while not task.done():
            with contextlib.suppress(BaseException):  # cancelled (again): the plan goes on, and so does the wait
                await asyncio.shield(task)
        if task.cancelled():
            return Raised(asyncio.CancelledError())
        error = task.exception()
        return Raised(error) if error is not None else Returned(task.result())

    async def _await(self, request: Await) -> Returned | Raised:
        """The work's outcome; shielded, so a cancellation of the caller leaves the work running (its thread
        could not be stopped anyway) and hands it back as ``Raised(..., pending=work)``."""
        work = request.work
        try:
            return Returned(await asyncio.shield(work))
        except asyncio.CancelledError as exc:
            return Raised(exc) if work.cancelled() else Raised(exc, pending=work)
        except BaseException as exc:
            return Raised(exc)

    async def _next(self, request: Next) -> Returned | Raised | End:
        iterator = cast(AsyncIterator[Any], request.iterator)  # a plan on the async face streams an async one
        with request.context():
            try:
                return Returned(await iterator.__anext__())
            except StopAsyncIteration:
                return END
            except BaseException as exc:
                return Raised(exc)


#: The method executing each type of request, by name: the same in both interpreters, which differ only where one
#: awaits. ``Detach`` and ``Await`` are the async face's alone.
HANDLER_NAMES: dict[type[Request[Any]], str] = {
    Find: "_find",
    Aggregate: "_aggregate",
    Upsert: "_upsert",
    InsertMany: "_insert_many",
    InsertOne: "_insert_one",
    UpdateMany: "_update_many",
    FencedUpdate: "_fenced_update",
    FindOneAndUpdate: "_find_one_and_update",
    DeleteMany: "_delete_many",
    CreateIndexes: "_create_indexes",
    Command: "_command",
    ListCollections: "_list_collections",
    ListIndexes: "_list_indexes",
    Gather: "_gather",
    Sleep: "_sleep",
    WaitNotice: "_wait_notice",
    Defer: "_defer",
    Join: "_join",
    Heartbeat: "_heartbeat",
    Invoke: "_invoke",
    Try: "_try",
    Next: "_next",
    Detach: "_detach",
    Await: "_await",
}


def _handlers(interpreter: type[_Collections[Any]]) -> dict[type[Request[Any]], Callable[..., Any]]:
    """``interpreter``'s table: each request type it has a method for, to that method (looked up once, here)."""
    return {r: getattr(interpreter, name) for r, name in HANDLER_NAMES.items() if hasattr(interpreter, name)}


SyncInterpreter._HANDLERS = _handlers(SyncInterpreter)
AsyncInterpreter._HANDLERS = _handlers(AsyncInterpreter)
