"""The clients this package opens for a URI, and the name it gives servers in every client's handshake.

pymongo's ``AsyncMongoClient`` binds itself to the event loop it first runs on:
used from another loop (a second ``asyncio.run``) it raises ``Cannot use
AsyncMongoClient in different event loop``. So for a URI the package opens a
``LoopClients``: one ``AsyncMongoClient`` per event loop, made for the running
loop on first use and closed when that loop ends (``asyncio.run``'s
``shutdown_asyncgens``) or by ``close()``/``aclose()``. ``OpenedClients`` pairs it
with the sync ``MongoClient``, and ``ConnectionScope`` is what
``from_conn_string`` returns: ``with`` or ``async with``, closing both at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping
from importlib.metadata import version
from typing import Any, Generic, Protocol, TypeVar

from pymongo import AsyncMongoClient, MongoClient, uri_parser
from pymongo.driver_info import DriverInfo
from pymongo.errors import ConfigurationError, InvalidOperation, InvalidURI

from ..errors import InvalidURIError

#: What every client of this package tells the server in its handshake (``hello``'s ``client.driver``).
DRIVER_INFO = DriverInfo(name="langgraph-durable-mongodb", version=version("langgraph-durable-mongodb"))

#: The database used when nothing names one.
DEFAULT_DB_NAME = "langgraph"


def database_name(uri: str | None, db_name: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The one rule naming the database, everywhere (``from_conn_string``, the server factory, the CLI).

    Args:
        uri: the MongoDB URI (None: no URI, as for a CLI that has none yet).
        db_name: the name given explicitly (``db_name=``, ``--db``): it wins.
        environ: the environment (``os.environ`` by default), for ``MONGODB_DB``.

    Returns:
        ``db_name``, else the URI's path (``mongodb://host/agents``), else ``MONGODB_DB``, else ``langgraph``.

    Raises:
        pymongo.errors.InvalidURI: ``uri`` is not a MongoDB URI (when no ``db_name`` was given).
    """
    if db_name:
        return db_name
    environ = os.environ if environ is None else environ
    from_uri = uri_parser.parse_uri(uri).get("database") if uri else None
    return from_uri or environ.get("MONGODB_DB") or DEFAULT_DB_NAME


#: How long a sync ``close()`` waits for a loop running in another thread to close its client.
CLOSE_TIMEOUT_SECONDS = 10.0


#: URI options whose values are secrets: the URI options spec's sensitive options (pymongo's client repr shows
#: them as ``<redacted>``) and ``authMechanismProperties`` (which may carry ``AWS_SESSION_TOKEN``).
_SECRET_OPTION = re.compile(
    r"([?&;])(proxyUsername|proxyPassword|tlsCertificateKeyFilePassword|authMechanismProperties)=[^&;]*", re.IGNORECASE
)


def masked_uri(uri: str) -> str:
    """``uri`` fit to print or log: never its password, nor the values of secret options.

    pymongo never shows a URI's user info (a client's repr lists the hosts) and masks a proxy URL's as
    ``scheme://***@host``: everything between the scheme and the last ``@`` goes, since a malformed URI may
    hold its credentials anywhere before it. The same rule applies here (a URI without a scheme too), and
    the values of the options pymongo's repr redacts become ``<redacted>``.

    Args:
        uri: a MongoDB URI, well-formed or not.

    Returns:
        The URI with ``***`` for its user info and ``<redacted>`` for secret option values.
    """
    scheme, sep, tail = uri.partition("://")
    if not sep:
        scheme, sep, tail = uri.partition(":") if ":" in uri else ("", "", uri)
    prefix = f"{scheme}{sep}"
    if "@" in tail:
        tail = f"***@{tail.rpartition('@')[2]}"
    return prefix + _SECRET_OPTION.sub(r"\1\2=<redacted>", tail)


#: What a MongoDB URI starts with.
URI_SCHEMES = ("mongodb://", "mongodb+srv://")
#: How long a command-line client waits to find a server, unless its URI says (pymongo's default is 30 s).
COMMAND_SERVER_SELECTION_MS = 5000
#: How long the clients ``from_conn_string`` opens wait to find a server, unless the URI says (pymongo's default is
#: 30 s): an unreachable server fails the first call in this long, with ``ServerUnreachableError``.
APP_SERVER_SELECTION_MS = 10_000


def selection_timeout(uri: str, default_ms: int) -> dict[str, Any]:
    """How long a client opened for ``uri`` looks for a server before it fails: ``default_ms``, unless the URI sets
    ``serverSelectionTimeoutMS`` itself. A client's keyword options (pymongo's ``**kwargs``), empty or that one."""
    return {} if "serverselectiontimeoutms" in uri.lower() else {"serverSelectionTimeoutMS": default_ms}


def command_client(uri: str) -> MongoClient[dict[str, Any]]:
    """The sync client one command-line run opens for ``uri``, carrying ``DRIVER_INFO``.

    It gives up on finding a server after ``COMMAND_SERVER_SELECTION_MS`` unless the URI sets
    ``serverSelectionTimeoutMS``. No I/O: a server that cannot be reached fails the first command.

    Args:
        uri: a MongoDB URI.

    Returns:
        The client.

    Raises:
        InvalidURIError: ``uri`` does not start with ``mongodb://`` or ``mongodb+srv://`` (pymongo would take it
            for a host name and time out), or pymongo cannot use it; the message shows it masked (``masked_uri``).
    """
    if not uri.startswith(URI_SCHEMES):
        raise InvalidURIError(f"bad MongoDB URI {masked_uri(uri)!r}: it must start with mongodb:// or mongodb+srv://")
    timeout = selection_timeout(uri, COMMAND_SERVER_SELECTION_MS)
    try:
        return MongoClient(uri, driver=DRIVER_INFO, **timeout)
    except (InvalidURI, ConfigurationError, ValueError) as error:
        raise InvalidURIError(f"bad MongoDB URI {masked_uri(uri)!r}: {error}") from None


def announce(client: Any) -> None:
    """Append ``DRIVER_INFO`` to the handshake of a pymongo client the user passed (once per client).

    mongomock, motor and mongomock_motor clients have no handshake to add to: they are left alone.
    """
    if isinstance(client, (MongoClient, AsyncMongoClient)):
        names = client.options.pool_options.metadata["driver"]["name"].split("|")
        if DRIVER_INFO.name not in names:
            client.append_metadata(DRIVER_INFO)


async def _until_loop_ends(client: AsyncMongoClient[dict[str, Any]]) -> AsyncGenerator[None, None]:
    # Suspended at its yield while its loop runs; the loop closes it when it shuts down (asyncio.run's
    # shutdown_asyncgens), and so the client, while the loop can still run the client's close().
    try:
        yield
    finally:
        await client.close()


class _LoopClient:
    """A loop's client, the database and collection objects made from it, and its closer (held here: the
    loop itself holds its async generators weakly). Holds no reference to its loop."""

    def __init__(self, client: AsyncMongoClient[dict[str, Any]]) -> None:
        self.client = client
        self.objects: dict[tuple[str, ...], Any] = {}  # async databases and collections
        self.closer = _until_loop_ends(client)
        # run the closer to its yield now, inside the running loop, which registers it
        with contextlib.suppress(StopIteration):
            self.closer.asend(None).send(None)

    def resolve(self, path: tuple[str, ...], options: Mapping[str, Any] | None = None) -> Any:
        """The object at ``path``; a collection with ``options`` (``write_concern=``...) made by ``get_collection``."""
        if options:
            key = (*path, repr(sorted(options.items())))
            found = self.objects.get(key)
            if found is None:
                found = self.objects[key] = self.resolve(path[:-1]).get_collection(path[-1], **options)
            return found
        found = self.objects.get(path)
        if found is None:
            found = self.objects[path] = self.resolve(path[:-1])[path[-1]] if path else self.client
        return found


class LoopClients:
    """An async client for a URI usable from any event loop: one ``AsyncMongoClient`` per loop.

    ``clients["db"]`` and ``clients["db"]["coll"]`` are ``LoopBound``: every attribute is that of the
    running loop's own database or collection. A loop's client is made on its first use and closed when
    the loop ends (``asyncio.run``) or by ``close()``/``aclose()``; after those, use raises
    ``InvalidOperation``, as a closed pymongo client does.

    Args:
        factory: makes one ``AsyncMongoClient``; called inside the loop that will use it.
    """

    def __init__(self, factory: Callable[[], AsyncMongoClient[dict[str, Any]]]) -> None:
        self._factory = factory
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClient] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        self._closed = False
        self._closing_at_loop_end: list[_LoopClient] = []  # kept alive: the loop holds their closers weakly

    def _entry(self) -> _LoopClient:
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._by_loop.get(loop)
            if entry is None:
                if self._closed:
                    raise InvalidOperation("this platform's clients are closed; open a new one (from_conn_string)")
                entry = self._by_loop[loop] = _LoopClient(self._factory())
            return entry

    def current(self) -> AsyncMongoClient[dict[str, Any]]:
        """The running loop's client (made now if this loop has none).

        Raises:
            RuntimeError: no event loop is running.
            InvalidOperation: ``close()``/``aclose()`` was called.
        """
        return self._entry().client

    def resolve(self, path: tuple[str, ...], options: Mapping[str, Any] | None = None) -> Any:
        """The running loop's object at ``path``: ``("db",)`` its database, ``("db", "coll")`` a collection (with
        ``options``, as the database's ``get_collection`` makes it)."""
        return self._entry().resolve(path, options)

    def __getitem__(self, name: str) -> LoopBound:
        return LoopBound(self, (name,))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.current(), name)

    def _take_all(self) -> list[tuple[asyncio.AbstractEventLoop, _LoopClient]]:
        with self._lock:
            self._closed = True
            taken = list(self._by_loop.items())
            self._by_loop.clear()
        return taken

    def close(self) -> None:
        """Close every loop's client that can be closed from here, and refuse new ones.

        A loop that ended has closed its client already. A loop that is not running runs its client's
        ``close()`` now; a loop running in another thread is asked to and waited for (at most
        ``CLOSE_TIMEOUT_SECONDS``). The client of a loop running in this thread (``close()`` called from a
        coroutine) cannot be awaited from sync code: that loop closes it when it ends; use ``aclose()`` there.
        """
        here = _running_loop()
        for loop, entry in self._take_all():
            self._close_from(here, loop, entry)

    async def aclose(self) -> None:
        """Close the running loop's client (awaited), and the others as ``close()`` does."""
        here = asyncio.get_running_loop()
        for loop, entry in self._take_all():
            if loop is here:
                await entry.closer.aclose()
            else:
                self._close_from(here, loop, entry)

    def _close_from(
        self, here: asyncio.AbstractEventLoop | None, loop: asyncio.AbstractEventLoop, entry: _LoopClient
    ) -> None:
        if loop is here:
            self._closing_at_loop_end.append(entry)
        elif loop.is_running():
            asyncio.run_coroutine_threadsafe(entry.closer.aclose(), loop).result(CLOSE_TIMEOUT_SECONDS)
        elif not loop.is_closed():
            loop.run_until_complete(entry.closer.aclose())


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class LoopBound:
    """A database or a collection of a ``LoopClients``: its attributes are those of the running loop's.

    Args:
        clients: the ``LoopClients``.
        path: ``("db",)`` for a database, ``("db", "coll")`` for a collection.
        options: a collection's options (``write_concern=``, ...), as ``get_collection`` takes them.
    """

    def __init__(self, clients: LoopClients, path: tuple[str, ...], options: Mapping[str, Any] | None = None) -> None:
        self._clients, self._path, self._options = clients, path, options

    @property
    def client(self) -> LoopClients:
        """The ``LoopClients`` this database belongs to (as ``AsyncDatabase.client``)."""
        return self._clients

    def __getitem__(self, name: str) -> LoopBound:
        return LoopBound(self._clients, (*self._path, name))

    def get_collection(self, name: str, **options: Any) -> LoopBound:
        """The collection ``name`` of this database with ``options`` (``write_concern=``, ...), bound to the running
        loop's client like ``db[name]``: ``AsyncDatabase.get_collection`` would bind it to the loop it is called on."""
        return LoopBound(self._clients, (*self._path, name), options)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._clients.resolve(self._path, self._options), name)


class OpenedClients:
    """The clients a ``from_conn_string`` opened for ``uri``: a ``MongoClient`` and a ``LoopClients``.

    Both carry ``DRIVER_INFO`` in their handshake: the sync client gets it as every client given to a
    storage class does (``faces.split_clients``), each loop's client when it is made.

    Args:
        uri: a MongoDB URI.
    """

    def __init__(self, uri: str) -> None:
        timeout = selection_timeout(uri, APP_SERVER_SELECTION_MS)
        self.client: MongoClient[dict[str, Any]] = MongoClient(uri, **timeout)
        self.async_client = LoopClients(lambda: AsyncMongoClient(uri, driver=DRIVER_INFO, **timeout))

    def close(self) -> None:
        """Close the sync client and the async ones (as ``LoopClients.close``)."""
        self.client.close()
        self.async_client.close()

    async def aclose(self) -> None:
        """Close the sync client and, awaited, the running loop's async client, then the others."""
        self.client.close()
        await self.async_client.aclose()


class ClosesOpenedClients:
    """Mixin: an object that may have opened the clients it was built on (``from_conn_string``), and closes them."""

    _opened_clients: OpenedClients | None = None

    def close(self) -> None:
        """Close the clients this object opened itself (``from_conn_string``); clients you passed stay open.

        In a coroutine, use ``aclose()``: a sync ``close()`` there leaves the running loop's async client
        to be closed when that loop ends.
        """
        close_opened(self._opened_clients)

    async def aclose(self) -> None:
        """Async ``close()``: closes the running loop's async client too, awaited (no task is left behind)."""
        await aclose_opened(self._opened_clients)


def close_opened(opened: OpenedClients | None) -> None:
    """Close the clients ``from_conn_string`` opened for an object (``_opened_clients``; None: it opened none)."""
    if opened is not None:
        opened.close()


async def aclose_opened(opened: OpenedClients | None) -> None:
    """Async ``close_opened``: closes the running loop's async client too, awaited."""
    if opened is not None:
        await opened.aclose()


class ClosesClients(Protocol):
    """What ``ConnectionScope`` builds: an object with an ``_opened_clients`` attribute it closes (``close_opened``)."""

    _opened_clients: OpenedClients | None

    def close(self) -> None: ...

    async def aclose(self) -> None: ...


T = TypeVar("T", bound=ClosesClients)


class ConnectionScope(Generic[T]):
    """What ``from_conn_string`` returns: ``with`` or ``async with`` yields an object built on clients opened
    for a URI, and closes them at the end of the block.

    Args:
        uri: a MongoDB URI.
        build: makes the object from ``(client, async_client)``.
    """

    def __init__(self, uri: str, build: Callable[[Any, Any], T]) -> None:
        self._uri, self._build = uri, build

    def _open(self) -> T:
        clients = OpenedClients(self._uri)
        try:
            opened = self._build(clients.client, clients.async_client)
        except BaseException:
            clients.close()
            raise
        opened._opened_clients = clients
        self._opened = opened
        return opened

    def __enter__(self) -> T:
        return self._open()

    def __exit__(self, *exc: object) -> None:
        self._opened.close()

    async def __aenter__(self) -> T:
        return self._open()

    async def __aexit__(self, *exc: object) -> None:
        await self._opened.aclose()
