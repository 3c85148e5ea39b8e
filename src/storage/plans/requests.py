"""Every request a plan can yield, and the values some of them answer with.

A *plan* is a generator that yields these requests and receives each one's
result (``Plan[T]``, ``T`` what the plan returns). A request is a ``Request[R]``,
``R`` what the interpreter answers it with; ``yield from ask(request)`` hands the
plan that answer typed. Storage logic is written once as plans; the sync and the
async interpreter (``interpreters.py``) execute the requests, each with the
method their table gives the request's type. Most requests are MongoDB operations on a
collection of the interpreter's database; the rest are not I/O: ``Gather``
(independent requests), ``Emit`` (an item for the caller of an iterating plan),
``Sleep``, ``WaitNotice`` (sleep until something in memory calls back),
``Defer`` / ``Join`` (run a plan in the background, wait for such plans),
``Heartbeat`` (renew a lease while the plan waits), and ``Invoke`` /
``Next`` (call the caller's function, or pull its iterator, inside a context the
caller names).

Example::

    def count_threads(thread_id: str) -> Plan[int]:
        docs = yield from ask(Find("checkpoints", {"thread_id": thread_id}, limit=1))
        return len(docs)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Generic, TypeAlias, TypeVar

from pymongo import IndexModel, ReplaceOne, UpdateOne

from ..heartbeats import Beat

T = TypeVar("T")
R = TypeVar("R", covariant=True)


class Request(Generic[R]):
    """What a plan yields to its interpreter, which answers with an ``R``."""

    __slots__ = ()


#: A plan returning ``T``: it yields requests and is sent each one's answer.
Plan: TypeAlias = Generator[Request[Any], Any, T]


def ask(request: Request[T]) -> Generator[Request[T], Any, T]:
    """``answer = yield from ask(request)``: the interpreter's answer to ``request``, typed as the request says."""
    answer: T = yield request
    return answer


# -- MongoDB operations ----------------------------------------------------------


@dataclass(frozen=True)
class Find(Request[list[dict[str, Any]]]):
    """``find`` materialised into a list."""

    collection: str
    filter: dict[str, Any]
    projection: dict[str, Any] | None = None
    sort: list[tuple[str, int]] | None = None
    limit: int = 0
    #: Results come in as few replies as 16 MiB allow, not pymongo's first batch of 101.
    batch_size: int = 10_000


@dataclass(frozen=True)
class Aggregate(Request[list[dict[str, Any]]]):
    collection: str
    pipeline: list[dict[str, Any]]


@dataclass(frozen=True)
class Upsert(Request[None]):
    """One unordered bulk of ``UpdateOne``/``ReplaceOne`` upserts (one command on a server).

    Duplicate-key errors from concurrent upserts of the same key are ignored:
    every caller uses it for idempotent, insert-if-absent or last-writer-wins
    documents.
    """

    collection: str
    operations: Sequence[UpdateOne | ReplaceOne[dict[str, Any]]]


@dataclass(frozen=True)
class InsertMany(Request[None]):
    """Unordered insert of many documents; keys already present are left as they are."""

    collection: str
    documents: list[dict[str, Any]]


@dataclass(frozen=True)
class InsertOne(Request[bool]):
    """Insert one document; returns False instead of raising on a duplicate key."""

    collection: str
    document: dict[str, Any]


@dataclass(frozen=True)
class UpdateMany(Request[int]):
    """Returns how many documents matched ``filter``."""

    collection: str
    filter: dict[str, Any]
    update: dict[str, Any]


@dataclass(frozen=True)
class FencedUpdate(Request[bool]):
    """Update the one document ``filter`` names, if it still matches; returns whether it did.

    ``filter`` carries the fence (a claim's token, the state a decision was
    taken on). The answer is the server's *matched* count, never
    ``nModified``, which some servers omit (pymongo then reports None).
    """

    collection: str
    filter: dict[str, Any]
    update: dict[str, Any]


@dataclass(frozen=True)
class FindOneAndUpdate(Request[dict[str, Any] | None]):
    """Returns the document after the update (before it, with ``before``), or None when nothing matched.

    An upsert that loses the race to insert a new key is tried once more (the
    server retries such upserts itself, but not every server and not always) and
    then matches the winner's document.
    """

    collection: str
    filter: dict[str, Any]
    update: dict[str, Any]
    upsert: bool = False
    projection: dict[str, Any] | None = None
    before: bool = False


@dataclass(frozen=True)
class DeleteMany(Request[int]):
    """Returns how many documents were deleted."""

    collection: str
    filter: dict[str, Any]


@dataclass(frozen=True)
class CreateIndexes(Request[bool]):
    """Create indexes (one command, or one per index where the server needs that).

    ``optional`` ones (a TTL index, say) only log a warning when the server
    does not implement them, and the request returns False.
    """

    collection: str
    indexes: list[IndexModel]
    optional: bool = False


@dataclass(frozen=True)
class Command(Request[dict[str, Any]]):
    """A database command (``buildInfo``, ``ping``, ...)."""

    command: dict[str, Any]


@dataclass(frozen=True)
class ListCollections(Request[list[str]]):
    """Returns the names of the database's collections."""



@dataclass(frozen=True)
class ListIndexes(Request[list[str]]):
    """Returns the names of the collection's indexes (none for a collection that does not exist)."""

    collection: str


# -- not I/O ---------------------------------------------------------------------


@dataclass(frozen=True)
class Gather(Request[list[Any]]):
    """Independent requests: the async face sends them concurrently, the sync face one after another.

    Returns their results in order. The command count is the same; an async
    caller waits for one round trip instead of several.
    """

    requests: tuple[Request[Any], ...]


@dataclass(frozen=True)
class Emit(Request[None]):
    """Hands one item to the caller of an iterating plan (``iterate``); answered with None."""

    value: Any


@dataclass(frozen=True)
class Sleep(Request[None]):
    """Pause the plan (``time.sleep`` on the sync face, ``asyncio.sleep`` on the async face)."""

    seconds: float


@dataclass(frozen=True)
class WaitNotice(Request[None]):
    """Pause the plan until the callback handed to ``subscribe`` is called, or for ``seconds`` at most.

    ``subscribe(wake)`` registers ``wake`` (called once, from any thread) and returns a function that
    unregisters it; it may call ``wake`` at once. The plan checks what it waited for afterwards.
    """

    seconds: float
    subscribe: Callable[[Callable[[], None]], Callable[[], None]]


@dataclass(frozen=True)
class Heartbeat(Request[Beat]):
    """Renew a lease every ``every`` seconds by running the plan ``renew()``; answered with a running ``Beat``.

    ``renew()`` returns whether the lease is still held: False ends the
    heartbeat. The first renewal is due after ``every`` seconds, so work shorter
    than that costs no I/O. A renewal that fails (the server is unreachable, say)
    is logged and tried again at the next interval. ``every <= 0`` renews nothing.
    """

    renew: Callable[[], Plan[bool]]
    every: float


def _no_context() -> AbstractContextManager[Any]:
    return nullcontext()


@dataclass(frozen=True)
class Invoke(Request["Returned | Raised"]):
    """Call ``fn()`` inside ``context()`` (awaited on the async face if it returns an awaitable).

    Answered with ``Returned(value)`` or ``Raised(error)``, never by raising.
    """

    fn: Callable[[], Any]
    context: Callable[[], AbstractContextManager[Any]] = field(default=_no_context)


@dataclass(frozen=True)
class Next(Request["Returned | Raised | End"]):
    """Pull the next item of an (async) iterator inside ``context()``: ``Returned``, ``Raised`` or ``END``."""

    iterator: Iterator[Any] | AsyncIterator[Any]
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
    pending: asyncio.Future[Any] | None = None


@dataclass(frozen=True)
class Await(Request["Returned | Raised"]):
    """Wait for the ``pending`` work of a cancelled ``Invoke`` to end (async face only): its ``Returned`` or
    ``Raised``, or ``Raised(CancelledError, pending=work)`` again when the waiting is cancelled too."""

    work: asyncio.Future[Any]


@dataclass(frozen=True)
class Try(Request["Returned | Raised"]):
    """Execute ``request``: ``Returned(its answer)``, or ``Raised(error)`` for the ``Exception`` it raised, so
    the plan can judge a failure (a reply lost to the network) instead of the interpreter raising it."""

    request: Request[Any]


@dataclass(frozen=True)
class Detach(Request["Returned | Raised"]):
    """Run ``plan`` to its end in a task of its own, which the caller's cancellations do not reach, and wait for
    it through them (async face only): ``Returned`` or ``Raised``. What a cancelled effect does to keep its
    position until its work ends."""

    plan: Plan[Any]


@dataclass(frozen=True)
class Defer(Request["Future[Any]"]):
    """Run ``plan`` in the background and answer at once with a ``concurrent.futures.Future`` of its return value,
    which ``Join`` waits for: in a pool thread (sync face), in a task of the running loop (async face, whose future
    is a ``LoopFuture`` naming that loop). What a journal record trailing its effect runs in."""

    plan: Plan[Any]


@dataclass(frozen=True)
class Join(Request[None]):
    """Wait until every future (``concurrent.futures.Future``, from ``Defer``) is done; raise the first one's
    error, in the order given. The sync face waits wherever it runs, on an event loop's thread too (a sync graph
    called from a coroutine), except for a future that loop's own tasks settle, which it could never see done."""

    futures: tuple[Future[Any], ...]
    #: Only wait until each is done, raising none of their errors.
    settle: bool = False


class End:
    """The type of ``END``, ``Next``'s answer once the iterator is exhausted."""

    __slots__ = ()


END = End()
