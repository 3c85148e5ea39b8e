"""Every request a plan can yield, and the values some of them answer with.

A *plan* is a generator that yields these requests and receives each one's
result (``Plan``). Storage logic is written once as plans; the sync and the
async interpreter (``interpreters.py``) execute the requests, each with one
method named by the request's ``op``. Most requests are MongoDB operations on a
collection of the interpreter's database; the rest are not I/O: ``Gather``
(independent requests), ``Emit`` (an item for the caller of an iterating plan),
``Sleep``, ``WaitNotice`` (sleep until something in memory calls back),
``Defer`` / ``Join`` (run a plan in the background, wait for such plans),
``Heartbeat`` (renew a lease while the plan waits), and ``Invoke`` /
``Next`` (call the caller's function, or pull its iterator, inside a context the
caller names).

Example::

    def count_threads(thread_id):
        docs = yield Find("checkpoints", {"thread_id": thread_id}, limit=1)
        return len(docs)
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pymongo import IndexModel, ReplaceOne, UpdateOne

Plan = Generator[Any, Any, Any]


# -- MongoDB operations ----------------------------------------------------------


@dataclass(frozen=True)
class Find:
    """``find`` materialised into a list."""

    op: ClassVar[str] = "find"
    collection: str
    filter: dict[str, Any]
    projection: dict[str, Any] | None = None
    sort: list[tuple[str, int]] | None = None
    limit: int = 0
    #: Results come in as few replies as 16 MiB allow, not pymongo's first batch of 101.
    batch_size: int = 10_000


@dataclass(frozen=True)
class Aggregate:
    op: ClassVar[str] = "aggregate"
    collection: str
    pipeline: list[dict[str, Any]]


@dataclass(frozen=True)
class Upsert:
    """One unordered bulk of ``UpdateOne``/``ReplaceOne`` upserts (one command on a server).

    Duplicate-key errors from concurrent upserts of the same key are ignored:
    every caller uses it for idempotent, insert-if-absent or last-writer-wins
    documents.
    """

    op: ClassVar[str] = "upsert"
    collection: str
    operations: list[UpdateOne | ReplaceOne]


@dataclass(frozen=True)
class InsertMany:
    """Unordered insert of many documents; keys already present are left as they are."""

    op: ClassVar[str] = "insert_many"
    collection: str
    documents: list[dict[str, Any]]


@dataclass(frozen=True)
class InsertOne:
    """Insert one document; returns False instead of raising on a duplicate key."""

    op: ClassVar[str] = "insert_one"
    collection: str
    document: dict[str, Any]


@dataclass(frozen=True)
class UpdateMany:
    """Returns how many documents matched ``filter``."""

    op: ClassVar[str] = "update_many"
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

    op: ClassVar[str] = "fenced_update"
    collection: str
    filter: dict[str, Any]
    update: dict[str, Any]


@dataclass(frozen=True)
class FindOneAndUpdate:
    """Returns the document after the update (before it, with ``before``), or None when nothing matched.

    An upsert that loses the race to insert a new key is tried once more (the
    server retries such upserts itself, but not every server and not always) and
    then matches the winner's document.
    """

    op: ClassVar[str] = "find_one_and_update"
    collection: str
    filter: dict[str, Any]
    update: dict[str, Any]
    upsert: bool = False
    projection: dict[str, Any] | None = None
    before: bool = False


@dataclass(frozen=True)
class DeleteMany:
    """Returns how many documents were deleted."""

    op: ClassVar[str] = "delete_many"
    collection: str
    filter: dict[str, Any]


@dataclass(frozen=True)
class CreateIndexes:
    """Create indexes (one command, or one per index where the server needs that).

    ``optional`` ones (a TTL index, say) only log a warning when the server
    does not implement them, and the request returns False.
    """

    op: ClassVar[str] = "create_indexes"
    collection: str
    indexes: list[IndexModel]
    optional: bool = False


@dataclass(frozen=True)
class Command:
    """A database command (``buildInfo``, ``ping``, ...)."""

    op: ClassVar[str] = "command"
    command: dict[str, Any]


@dataclass(frozen=True)
class ListCollections:
    """Returns the names of the database's collections."""

    op: ClassVar[str] = "list_collections"


@dataclass(frozen=True)
class ListIndexes:
    """Returns the names of the collection's indexes (none for a collection that does not exist)."""

    op: ClassVar[str] = "list_indexes"
    collection: str


# -- not I/O ---------------------------------------------------------------------


@dataclass(frozen=True)
class Gather:
    """Independent requests: the async face sends them concurrently, the sync face one after another.

    Returns their results in order. The command count is the same; an async
    caller waits for one round trip instead of several.
    """

    op: ClassVar[str] = "gather"
    requests: tuple[Any, ...]


@dataclass(frozen=True)
class Emit:
    """Hands one item to the caller of an iterating plan (``iterate``); answered with None."""

    op: ClassVar[str] = "emit"
    value: Any


@dataclass(frozen=True)
class Sleep:
    """Pause the plan (``time.sleep`` on the sync face, ``asyncio.sleep`` on the async face)."""

    op: ClassVar[str] = "sleep"
    seconds: float


@dataclass(frozen=True)
class WaitNotice:
    """Pause the plan until the callback handed to ``subscribe`` is called, or for ``seconds`` at most.

    ``subscribe(wake)`` registers ``wake`` (called once, from any thread) and returns a function that
    unregisters it; it may call ``wake`` at once. The plan checks what it waited for afterwards.
    """

    op: ClassVar[str] = "wait_notice"
    seconds: float
    subscribe: Callable[[Callable[[], None]], Callable[[], None]]


@dataclass(frozen=True)
class Heartbeat:
    """Renew a lease every ``every`` seconds by running the plan ``renew()``; answered with a running ``Beat``.

    ``renew()`` returns whether the lease is still held: False ends the
    heartbeat. The first renewal is due after ``every`` seconds, so work shorter
    than that costs no I/O. A renewal that fails (the server is unreachable, say)
    is logged and tried again at the next interval. ``every <= 0`` renews nothing.
    """

    op: ClassVar[str] = "heartbeat"
    renew: Callable[[], Plan]
    every: float


def _no_context() -> AbstractContextManager[Any]:
    return nullcontext()


@dataclass(frozen=True)
class Invoke:
    """Call ``fn()`` inside ``context()`` (awaited on the async face if it returns an awaitable).

    Answered with ``Returned(value)`` or ``Raised(error)``, never by raising.
    """

    op: ClassVar[str] = "invoke"
    fn: Callable[[], Any]
    context: Callable[[], AbstractContextManager[Any]] = field(default=_no_context)


@dataclass(frozen=True)
class Next:
    """Pull the next item of an (async) iterator inside ``context()``: ``Returned``, ``Raised`` or ``END``."""

    op: ClassVar[str] = "next"
    iterator: Any
    context: Callable[[], AbstractContextManager[Any]] = field(default=_no_context)


@dataclass(frozen=True)
class Returned:
    value: Any


@dataclass(frozen=True)
class Raised:
    """The call raised; any ``BaseException``, so a cancelled call still reaches the plan.

    ``pending``: on the async face, the awaited call was cancelled while its work goes on (an ``asyncio``
    task, shielded from the cancellation: work it runs in a thread cannot be stopped); ``Await`` it.
    """

    error: BaseException
    pending: Any = None


@dataclass(frozen=True)
class Await:
    """Wait for the ``pending`` work of a cancelled ``Invoke`` to end (async face only): its ``Returned`` or
    ``Raised``, or ``Raised(CancelledError, pending=work)`` again when the waiting is cancelled too."""

    op: ClassVar[str] = "await"
    work: Any


@dataclass(frozen=True)
class Try:
    """Execute ``request``: ``Returned(its answer)``, or ``Raised(error)`` for the ``Exception`` it raised, so
    the plan can judge a failure (a reply lost to the network) instead of the interpreter raising it."""

    op: ClassVar[str] = "try"
    request: Any


@dataclass(frozen=True)
class Detach:
    """Run ``plan`` to its end in a task of its own, which the caller's cancellations do not reach, and wait for
    it through them (async face only): ``Returned`` or ``Raised``. What a cancelled effect does to keep its
    position until its work ends."""

    op: ClassVar[str] = "detach"
    plan: Any


@dataclass(frozen=True)
class Defer:
    """Run ``plan`` in the background and answer at once with a ``concurrent.futures.Future`` of its return value,
    which ``Join`` waits for: in a pool thread (sync face), in a task of the running loop (async face, whose future
    is a ``LoopFuture`` naming that loop). What a journal record trailing its effect runs in."""

    op: ClassVar[str] = "defer"
    plan: Any


@dataclass(frozen=True)
class Join:
    """Wait until every future (``concurrent.futures.Future``, from ``Defer``) is done; raise the first one's
    error, in the order given. The sync face waits wherever it runs, on an event loop's thread too (a sync graph
    called from a coroutine), except for a future that loop's own tasks settle, which it could never see done."""

    op: ClassVar[str] = "join"
    futures: tuple[Any, ...]
    #: Only wait until each is done, raising none of their errors.
    settle: bool = False


#: ``Next``'s answer once the iterator is exhausted.
END = object()
