"""Client-parametrized fixtures: every storage test runs once per client kind.

``face`` wraps a ``MongoDBCheckpointer`` so a test written once (as ``async``)
calls the sync methods on sync clients and the native async methods on async
clients:

- ``mongomock`` (sync) and ``mongomock_motor`` (async): offline, always run;
- ``pymongo``, ``pymongo_async`` and ``motor``: the real-server tier, once per
  server (``pymongo-ferretdb``, ``pymongo-mongo_java_server``, or ``pymongo-uri``
  for ``MONGODB_URI``): see ``on_servers``.
"""

from __future__ import annotations

import importlib.metadata
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pymongo import monitoring

from langgraph_durable_mongodb import MongoDBCheckpointer
from langgraph_durable_mongodb.storage.thread_summaries import NOT_SUMMARY
from tests.conftest import server_ids, uri_of


def on_servers(kind: str) -> list[Any]:
    """``kind`` as a param once per server of the tier, marked ``server`` and with the server it runs on
    (read back by ``tier_uri``)."""
    return [
        pytest.param(kind, id=f"{kind}-{server}", marks=[pytest.mark.server, pytest.mark.mongodb_server(server)])
        for server in server_ids(os.environ)
    ]


def tier_uri(request: pytest.FixtureRequest) -> str:
    """The URI of the server the requesting test runs on: the one its ``on_servers`` param names."""
    return uri_of(request, request.getfixturevalue("mongodb_server"))


def with_database(uri: str, db_name: str) -> str:
    """``uri`` naming the database ``db_name`` in its path (its options kept)."""
    base, _, query = uri.partition("?")
    return f"{base.rstrip('/')}/{db_name}" + (f"?{query}" if query else "")


OFFLINE = ["mongomock", "mongomock_motor"]
SERVER = ["pymongo", "pymongo_async", "motor"]
ALL_CLIENTS = OFFLINE + [p for k in SERVER for p in on_servers(k)]
#: A test mark: the test runs on the offline client kinds only.
offline = pytest.mark.parametrize("client_kind", OFFLINE, indirect=True)


def make_client(kind: str, uri: str | None) -> Any:
    if kind == "mongomock":
        import mongomock

        return mongomock.MongoClient()
    if kind == "mongomock_motor":
        from mongomock_motor import AsyncMongoMockClient

        return AsyncMongoMockClient()
    if kind == "pymongo":
        from pymongo import MongoClient

        return MongoClient(uri)
    if kind == "pymongo_async":
        from pymongo import AsyncMongoClient

        return AsyncMongoClient(uri)
    if kind == "motor":
        from motor.motor_asyncio import AsyncIOMotorClient

        return AsyncIOMotorClient(uri)
    raise ValueError(kind)


def is_async_kind(kind: str) -> bool:
    return kind in ("mongomock_motor", "pymongo_async", "motor")


def names_us_once(client: Any) -> bool:
    """The client's handshake names us once, with our version (PyMongo's own entry stays first)."""
    name, version = "langgraph-durable-mongodb", importlib.metadata.version("langgraph-durable-mongodb")
    driver = client.options.pool_options.metadata["driver"]
    # pymongo before 4.20 lists "c" and "async" among the names without a version: the lists need not line up
    names, versions = driver["name"].split("|"), driver["version"].split("|")
    return names[0] == "PyMongo" and names.count(name) == 1 and versions[-1] == version


class Face:
    """Calls the saver's sync or async methods with one ``await``-able API."""

    def __init__(self, saver: MongoDBCheckpointer, kind: str, db: Any) -> None:
        self.saver, self.kind, self.is_async = saver, kind, is_async_kind(kind)
        self.db = db  # the raw database, to read documents as stored

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.is_async:
            return await getattr(self.saver, "a" + name)(*args, **kwargs)
        return getattr(self.saver, name)(*args, **kwargs)

    async def list(self, *args: Any, **kwargs: Any) -> list:
        if self.is_async:
            return [t async for t in self.saver.alist(*args, **kwargs)]
        return list(self.saver.list(*args, **kwargs))

    async def raw(self, collection: str, query: dict | None = None) -> list[dict]:
        """The stored documents of ``collection`` matching ``query``, without ``_id``; of ``checkpoints``, the
        checkpoints only (``thread_summaries.NOT_SUMMARY``), unless ``query`` names a namespace."""
        query = dict(query or {})
        if collection == "checkpoints":
            query.setdefault("checkpoint_ns", NOT_SUMMARY)
        cursor = self.db[collection].find(query, {"_id": 0})
        if self.is_async:
            return await cursor.to_list(None)
        return list(cursor)


@pytest.fixture
def client_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def server_uri(request: pytest.FixtureRequest, client_kind: str) -> str | None:
    if client_kind in OFFLINE:
        return None
    return tier_uri(request)


@pytest.fixture
def mongo_client(client_kind: str, server_uri: str | None) -> Iterator[Any]:
    client = make_client(client_kind, server_uri)
    yield client
    if client_kind == "pymongo":
        client.close()
    elif client_kind == "motor":
        client.close()


@pytest.fixture
def db_name(client_kind: str, server_uri: str | None) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield name
    if server_uri is not None:
        from pymongo import MongoClient

        with MongoClient(server_uri) as c:
            c.drop_database(name)


@pytest.fixture
async def face(client_kind: str, mongo_client: Any, db_name: str) -> Any:
    saver = MongoDBCheckpointer(mongo_client, db_name=db_name)
    f = Face(saver, client_kind, mongo_client[db_name])
    await f.call("setup")
    yield f
    if client_kind == "pymongo_async":
        await mongo_client.close()


PLATFORMS = ["embedded", *on_servers("server")]


@pytest.fixture(params=PLATFORMS)
def make_platform(request: pytest.FixtureRequest) -> Iterator[Any]:
    """``make_platform(**options)``: DurablePlatforms on one store, embedded (mongomock) or on the server tier.

    At the end of the test it waits for the platforms' background lock releases (a sync run returns before its
    release is sent): one still under way would otherwise run into the next test, and its monkeypatches."""
    from langgraph_durable_mongodb.platform import DurablePlatform

    made: list[Any] = []

    def made_here(platform: Any) -> Any:
        made.append(platform)
        return platform

    if request.param == "embedded":
        import mongomock
        from mongomock_motor import AsyncMongoMockClient

        client = mongomock.MongoClient()
        yield lambda **o: made_here(
            DurablePlatform(client, async_client=AsyncMongoMockClient(mock_mongo_client=client), **o)
        )
        for platform in made:
            if platform.run_locks is not None:  # exclusive_runs=False: no locks
                platform.run_locks.wait_releases(10)
        return
    from pymongo import AsyncMongoClient, MongoClient

    uri = tier_uri(request)
    db_name = f"t_{uuid.uuid4().hex[:16]}"
    client = MongoClient(uri)
    yield lambda **o: made_here(DurablePlatform(client, async_client=AsyncMongoClient(uri), db_name=db_name, **o))
    for platform in made:
        if platform.run_locks is not None:
            platform.run_locks.wait_releases(10)
    client.drop_database(db_name)
    client.close()


class PlainCompile:
    """A platform whose ``compile`` is the plain form: ``builder.compile(checkpointer=platform.checkpointer)``."""

    def __init__(self, platform: Any) -> None:
        self.platform = platform

    def compile(self, builder: Any, **kwargs: Any) -> Any:
        return builder.compile(checkpointer=self.platform.checkpointer, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.platform, name)


#: The two ways a graph becomes durable, for the tests marked ``both_compile_forms``.
COMPILE_FORMS = ["platform.compile", "plain compile"]


@pytest.fixture
def compile_form() -> str:
    """How ``platform`` compiles: ``platform.compile``, or each of ``COMPILE_FORMS`` in a test (or module) marked
    ``both_compile_forms``."""
    return COMPILE_FORMS[0]


@pytest.fixture
def platform(make_platform: Any, compile_form: str) -> Any:
    """A DurablePlatform with default options, embedded and on the server tier; under ``both_compile_forms`` its
    ``compile`` is also the plain ``builder.compile(checkpointer=platform.checkpointer)`` (``PlainCompile``)."""
    real = make_platform()
    return real if compile_form == "platform.compile" else PlainCompile(real)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "client_kind" in metafunc.fixturenames and not any(
        m.name == "parametrize" and "client_kind" in m.args[0] for m in metafunc.definition.iter_markers()
    ):
        metafunc.parametrize("client_kind", ALL_CLIENTS, indirect=True)
    if "compile_form" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_compile_forms"):
        metafunc.parametrize("compile_form", COMPILE_FORMS)


#: The wire command each plan request becomes (offline counts name requests as the servers name commands).
WIRE = {
    "Find": "find", "FindOneAndUpdate": "findAndModify", "FencedUpdate": "update", "InsertOne": "insert",
    "InsertMany": "insert", "CreateIndexes": "createIndexes", "DeleteMany": "delete", "Upsert": "update",
}


class CollectionCommands(monitoring.CommandListener):
    """The names of the commands sent to one collection of one database (pymongo command monitoring)."""

    def __init__(self, db_name: str, collection: str) -> None:
        self.db_name, self.collection, self.names = db_name, collection, []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.database_name == self.db_name and event.command.get(event.command_name) == self.collection:
            self.names.append(event.command_name)

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


def count_requests(faces: Any, collection: str, names: list[str]) -> None:
    """Offline: append to ``names`` the wire name of every request ``faces`` (a storage class's two interpreters)
    executes on ``collection``."""
    for io in (faces._sync_io, faces._async_io):  # noqa: SLF001
        inner = io.execute
        if io is faces._async_io:  # noqa: SLF001

            async def aexecute(request: Any, inner: Any = inner) -> Any:
                if getattr(request, "collection", None) == collection:
                    names.append(WIRE[type(request).__name__])
                return await inner(request)

            io.execute = aexecute
        else:

            def execute(request: Any, inner: Any = inner) -> Any:
                if getattr(request, "collection", None) == collection:
                    names.append(WIRE[type(request).__name__])
                return inner(request)

            io.execute = execute
