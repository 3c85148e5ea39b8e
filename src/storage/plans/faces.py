"""One way to give a storage class two faces: a sync one and a native async one, each set up on first use.

The checkpointer, the journal and the run locks each
hold a ``SyncInterpreter`` for a sync client and an ``AsyncInterpreter`` for an
async one (either may be missing, not both), and run their plans through
``_run``/``_arun``. A face whose kind of client is missing raises
``ClientConfigurationError`` naming what to pass: no thread pool is hidden
behind the other kind.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, TypeVar

from pymongo.errors import ServerSelectionTimeoutError

from ...errors import ClientConfigurationError, InvalidInputError, ServerUnreachableError
from ..connections import LoopBound, LoopClients, announce
from ..schema import MAJORITY_WRITTEN
from .interpreters import AsyncInterpreter, SyncInterpreter
from .requests import Plan, Request

T = TypeVar("T")


def is_async_client(client: Any) -> bool:
    """True for pymongo's ``AsyncMongoClient``, motor and mongomock_motor clients (or their databases), and for
    our ``LoopClients`` (one ``AsyncMongoClient`` per event loop, ``connections.py``)."""
    return isinstance(client, (LoopClients, LoopBound)) or any(
        cls.__module__.startswith(("pymongo.asynchronous", "motor", "mongomock_motor")) for cls in type(client).__mro__
    )


def split_clients(
    client: Any, async_client: Any, owner: str, alternative: str = "or use from_conn_string(uri)"
) -> tuple[Any, Any]:
    """Sort the clients a storage class was given into (sync, async); either may be None, not both.

    A lone async client passed as ``client`` is accepted as the async one. A pymongo client gets
    ``DRIVER_INFO`` appended to its handshake metadata (``announce``). A URI string is refused
    (``InvalidInputError``), its text left out of the message: it may hold a password.
    """
    if isinstance(client, str) or isinstance(async_client, str):
        raise InvalidInputError(
            f"{owner} takes clients, not a URI: open one with DurablePlatform.from_conn_string(uri) or "
            "MongoDBCheckpointer.from_conn_string(uri) (with or async with), or pass client=MongoClient(uri)"
        )
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
    for given in (client, async_client):
        announce(given)
    return client, async_client


_SELECTION = re.compile(r"^(?P<reason>.*?), Timeout: (?P<timeout>[0-9.]+)s", re.S)


def unreachable(error: ServerSelectionTimeoutError) -> ServerUnreachableError:
    """What a call says when no server answered within the client's server selection timeout: the hosts and why
    (pymongo's message names them, never a password), how long it waited, and how to change that."""
    found = _SELECTION.match(str(error))
    reason, waited = (found["reason"], f"{float(found['timeout']):g} s") if found else (str(error)[:300], "its timeout")
    return ServerUnreachableError(
        f"no MongoDB server answered within {waited} ({reason}). Check that the server runs and the URI's hosts "
        "and ports; set serverSelectionTimeoutMS in the URI (or on your client) to wait longer or shorter"
    )


def started(plan: Plan[T]) -> Plan[T]:
    """Run ``plan`` up to its first request now, and return a plan that goes on from there.

    A plan checks its input before its first request: started before a face is set up, a bad input raises
    before the face's first plan (the storage format stamp, the indexes) writes anything.
    """
    try:
        request = next(plan)
    except StopIteration as stop:
        return _returning(stop.value)
    return _going_on(plan, request)


def _returning(value: T) -> Plan[T]:
    yield from ()  # a generator that returns at once
    return value


def _going_on(plan: Plan[T], request: Request[Any]) -> Plan[T]:
    """``plan`` from its first ``request`` on: each answer sent to it, and each request's failure raised in it at the
    ``yield`` that asked (``interpreters._plan_raise``), so its ``except``, ``with`` and ``finally`` blocks run then,
    not when the suspended plan is collected."""
    while True:
        try:
            result = yield request
        except BaseException as error:  # raised in the plan, which re-raises what it does not handle
            step = functools.partial(plan.throw, error)
        else:
            step = functools.partial(plan.send, result)
        try:
            request = step()
        except StopIteration as stop:
            returned: T = stop.value
            return returned


class TwoFaces:
    """Mixin of a storage class: its sync face and its native async face, each set up on first use.

    The class provides ``_setup_plan()`` and says, in ``_needs_sync`` and
    ``_needs_async``, what a caller should do when the face it called is missing.
    """

    _needs_sync = "also pass client=MongoClient(uri)"
    _needs_async = "also pass async_client=AsyncMongoClient(uri)"
    _sync_io: SyncInterpreter | None
    _async_io: AsyncInterpreter | None

    def _init_faces(
        self, sync_db: Any, async_db: Any, auto_setup: bool, guard: Callable[[], Plan[object]], role: str = ""
    ) -> None:
        """Interpreters for the given databases (None: that face is missing). Before each face's first plan,
        ``guard()`` runs (the storage format check: it must see the database before any write, whatever
        ``auto_setup`` says), then ``_setup_plan()`` when ``auto_setup``. A storage class whose ``role``
        ``schema.MAJORITY_WRITTEN`` names writes everything with ``w: "majority"``."""
        majority = role in MAJORITY_WRITTEN
        self._sync_io = SyncInterpreter(sync_db, majority) if sync_db is not None else None
        self._async_io = AsyncInterpreter(async_db, majority) if async_db is not None else None
        self._guard, self._auto_setup = guard, auto_setup
        self._ready = {"sync": False, "async": False}

    #: The plan that creates the store's collections and indexes: each storage class provides it (a class of its
    #: own, or a method of a plans class beside this one among its bases). What it returns is not read.
    _setup_plan: Callable[[], Plan[Any]]

    def _first_plan(self) -> Plan[None]:
        yield from self._guard()
        if self._auto_setup:
            yield from self._setup_plan()

    def _sync_face(self) -> SyncInterpreter:
        if self._sync_io is None:
            raise ClientConfigurationError(f"this {type(self).__name__} has only an async client: {self._needs_sync}")
        if not self._ready["sync"]:
            self._sync_io.run(self._first_plan())
            self._ready["sync"] = True
        return self._sync_io

    async def _async_face(self) -> AsyncInterpreter:
        if self._async_io is None:
            raise ClientConfigurationError(f"this {type(self).__name__} has only a sync client: {self._needs_async}")
        if not self._ready["async"]:
            await self._async_io.run(self._first_plan())
            self._ready["async"] = True
        return self._async_io

    def _run(self, plan: Plan[T]) -> T:
        going = plan if self._ready["sync"] else started(plan)  # once set up, a plan runs as it is: no wrapper
        try:
            try:
                face = self._sync_face()
            except BaseException:
                plan.close()  # started, it stops where it is: its with and finally blocks run now
                raise
            return face.run(going)
        except ServerSelectionTimeoutError as error:
            raise unreachable(error) from None

    async def _arun(self, plan: Plan[T]) -> T:
        going = plan if self._ready["async"] else started(plan)
        try:
            try:
                face = await self._async_face()
            except BaseException:  # a cancellation while the face is set up too
                plan.close()
                raise
            return await face.run(going)
        except ServerSelectionTimeoutError as error:
            raise unreachable(error) from None

    def setup(self) -> None:
        """Create every index this store uses (idempotent), on the sync client.

        Raises:
            ClientConfigurationError: this store has only an async client.
        """
        self._run(self._setup_plan())

    async def asetup(self) -> None:
        """Async ``setup`` on the async client: same errors (``ClientConfigurationError`` when this store has
        only a sync client)."""
        await self._arun(self._setup_plan())
