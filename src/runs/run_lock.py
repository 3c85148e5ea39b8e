"""One run per thread at a time: a leased, fenced, per-thread run lock in ``thread_runs``.

Two processes that resume one thread at once would each run the pending root
steps from the same checkpoint, each save its own next checkpoint (a fork),
and so run every later root effect once per branch. Like Temporal and DBOS
(one execution per workflow id), a ``DurableGraph`` (``DurablePlatform.compile``
or ``attach``) lets one run hold a thread at a time: its ``stream`` and
``astream``, and so ``invoke``, ``ainvoke`` and the event streams, take the
thread's run lock first, and ``batch``/``abatch`` run in rounds. A graph merely
compiled with the platform checkpointer takes no lock. The thread is the one
LangGraph runs on (``thread_id_of``): the graph's bound config
(``with_config``) merged with the call's, a top-level ``{"thread_id": t}``
included. A batch that names one thread more than once runs in rounds, one
input per thread per round (``batch_rounds``).

The lock is one document per thread, under a unique ``thread_id`` index. It
stays after its run ends, so that its token keeps counting::

    {thread_id, fence: <int>, owner: <fresh uuid, None once released>,
     owner_host, owner_pid, owner_process, lease_until, started_at, renewed_at, ended_cleanly,
     runs: {"<fence % RUNS_KEPT>": {fence, host, pid, started_at, ended_at, ended}}}

- ``fence`` is the lock's token: every acquisition and take-over increments
  it, and every renewal and release is conditional on the holder's fence, so
  a run whose lock was taken over can neither extend nor free its successor's.
- Acquire a lock this process has taken before (its last run usually
  released it): first one conditional update on ``{thread_id, owner: None}``
  that sets the new owner and lease and increments the fence, unread; it
  matches nothing when the lock is held or expired, and the acquirer goes on:
- Acquire: read the lock. None yet: insert it with ``fence: 1`` (the unique
  index admits one racer). Free (released: ``owner`` None, ``lease_until``
  1970), expired (``lease_until <= now``) or held by a process that is gone
  (``owner_gone``: same host, pid exited): take it with **one conditional
  update on exactly the state read**, ``{thread_id, fence, lease_until}`` as
  read, which sets the new owner and lease and increments the fence. If the
  holder renewed or released, or another run took the lock, in between, the
  update matches nothing and the acquirer reads again. CallLocks by a live run:
  poll until ``wait_seconds``, then raise ``ThreadBusyError``.
- Renew, every ``lease_seconds / 3`` while the run lasts, conditional on
  ``{thread_id, fence, lease_until > now}``: a renewal fails once its lease
  has expired, even if nobody took the lock yet, and once another run has.
  A failed renewal (or release) records the lock as lost on the ``CallLocks``
  (``CallLocks.lost``), logs a warning and stops renewing; from then on
  ``check_held()`` (no I/O) raises ``RunLockLostError`` in that run.
- Self-fencing: whatever stalls a run (a blocked event loop, a frozen
  process, a renewal stuck on a slow server) stalls its renewals too, so a
  holder cannot wait for one to tell it the lock is lost. Each ``HeldLock``
  keeps its own deadline on the monotonic clock: the moment its last
  successful renewal (or the take) was *sent*, plus ``lease_seconds``, which
  is no later than the ``lease_until`` that command stored. Past it,
  ``check_held()`` raises ``RunLockLostError``. The platform gives it to its
  checkpointer and journal as their ``run_fence``: the journal calls it just
  before an effect starts, the checkpointer just before it writes a checkpoint
  or pending writes (for the locks ``CallLocks.mark`` made this context's): so
  no effect starts and no checkpoint write is sent after the holder's lease may
  have ended, by its own clock.
- Release, conditional on ``{thread_id, fence}``: ``owner`` None and
  ``lease_until`` 1970, also when the run raises or is interrupted, and
  ``ended_cleanly``: whether it did neither. A sync run's release is sent in
  the background once the run returned (``CallLocks.release_in_background``);
  this process's next run of the thread waits for it. The async face awaits
  its release: a loop that ends with the run would cancel it.
- ``ended_cleanly``, ``renewed_at`` and ``runs`` are kept for people, never read by a run (a run's visits are new by
  construction whatever ended the run before: ``resolver/visit.py``): the inspectors tell a crashed run from one
  that stopped, a holder that stopped renewing from one that runs, and draw the runs. ``runs`` keeps the last
  ``RUNS_KEPT`` runs that ended, one slot per fence: each release writes its run's (``finished``, or ``failed``
  when it raised or was cut short), and a take-over of a lock still owned writes the dead holder's (``crashed``
  when its process is known gone, else ``lock lost``: its lease ran out), in the command they send anyway.

A run costs 3 commands (read, take, release) on a thread this process has not
run before, 2 (take, release) on one it has; one shorter than
``lease_seconds / 3`` renews nothing. Every guard is a single-document
conditional update (``FencedUpdate``), atomic on MongoDB; on FerretDB 1.x,
whose conditional updates are not atomic, two runs racing for one free or
expired lock can both win.

A run that calls the same thread again from inside itself (same process,
same context) re-enters the lock instead of waiting for itself.

The lock is live state of running processes, not thread data: its collection
is not declared per-thread (``thread_collections.py``: ``copy_thread`` does not
copy it, TTLs do not expire it) and ``delete_thread`` leaves it alone, so deleting a thread
mid-run cannot let a second run in beside the first. A lock left by a dead
run is taken over by the next run (at once on the same host, else when its
lease expires).

Example::

    locks = RunLocks(client, db_name="agents")
    with locks.hold(["case-42"]) as held:
        graph.invoke(None, {"configurable": {"thread_id": "case-42"}})
        check_held("case-42")  # RunLockLostError if a stall let the lease expire meanwhile
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType
from typing import Any, TypeVar, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import merge_configs
from pymongo.errors import ConnectionFailure

from .._bson import require_db_name, require_seconds, require_str, require_thread_id
from .._lru import LRU
from ..errors import RunLockLostError, ThreadBusyError
from ..storage.format import StorageFormat
from ..storage.heartbeats import Beat
from ..storage.liveness import identity, owner_gone
from ..storage.plans import lease
from ..storage.plans.faces import TwoFaces, split_clients
from ..storage.plans.interpreters import background_pool
from ..storage.plans.requests import (
    CreateIndexes,
    FencedUpdate,
    Find,
    FindOneAndUpdate,
    Heartbeat,
    InsertOne,
    Plan,
    Request,
    Returned,
    Sleep,
    Try,
    ask,
)
from ..storage.schema import INDEXES, CollectionNames
from ..telemetry.watches import UNWATCHED, lock_lost, lock_take_watch
from .context import current_run, entered

logger = logging.getLogger("langgraph_durable_mongodb.runs.run_lock")

T = TypeVar("T")

#: First and longest pause between two attempts while another run holds the thread.
POLL_FIRST, POLL_MAX = 0.05, 1.0
#: Threads whose lock a ``RunLocks`` remembers having taken (the oldest forgotten first).
TAKEN_REMEMBERED = 10_000
#: The owners of this process's runs that ended and whose release is not known to have gone through: their locks
#: are this process's to take at once, by any of its platforms (a release lost to the network would otherwise hold
#: a thread a lease long). Owners are random: another process's never appear here.
_ENDED: LRU[str, None] = LRU(TAKEN_REMEMBERED)
_ENDED_LOCK = threading.Lock()
#: The ``lease_until`` of a released lock: long expired, so the next run takes it at once.
RELEASED = datetime(1970, 1, 1)
#: The ended runs a lock keeps (``runs``), one slot per fence modulo this.
RUNS_KEPT = 16


def run_record(fence: int, holder: Mapping[str, Any], ended_at: Any, ended: str) -> dict[str, Any]:
    """``{"runs.<slot>": record}``: the ``$set`` that keeps how the run holding ``fence`` ended, for people."""
    record = {
        "fence": fence, "host": holder.get("owner_host"), "pid": holder.get("owner_pid"),
        "started_at": holder.get("started_at"), "ended_at": ended_at, "ended": ended,
    }
    return {f"runs.{fence % RUNS_KEPT}": record}


def held_locks() -> Mapping[tuple[int, str], HeldLock]:
    """The run locks the current context holds, by (lock store, thread id): a nested run on one of them re-enters."""
    locks: Mapping[tuple[int, str], HeldLock] = current_run().locks
    return locks


def _explicit(config: Mapping[str, Any]) -> RunnableConfig:
    """``config`` with a ``configurable`` of its own, so ``merge_configs`` reads only what the caller gave.

    Without one, langchain_core's ``ensure_config`` would fill it from the node this call runs in (the
    ambient config), whose thread would then override the graph's bound one; LangGraph's does not. (A
    call naming no thread at all runs inside that node's run, on its checkpointer: no lock of its own.)
    Top-level keys (``{"thread_id": t}``) stay: ``merge_configs`` moves them into ``configurable``.
    """
    # a RunnableConfig: the call's or the graph's own, as given
    return cast(RunnableConfig, {**config, "configurable": dict(config.get("configurable") or {})})


def thread_id_of(config: Any, bound: Any = None) -> str | None:
    """The thread LangGraph runs ``config`` on: the key it stores the run's checkpoints under.

    Computed like ``Pregel.stream`` does: the graph's bound config merged with the call's by
    langchain_core's ``merge_configs``, which moves top-level keys such as ``{"thread_id": t}``
    into ``configurable`` (``ensure_config``), the call's winning.

    Args:
        config: the call's config (a ``RunnableConfig``, or None).
        bound: the graph's own config (``graph.config``, set by ``with_config``), or None.

    Returns:
        ``str(thread_id)``, or None when neither config names a thread.

    Raises:
        InvalidInputError: the thread id is empty or falsy (``""``, ``0``), which LangGraph would not
            turn into a name.
    """
    explicit = [_explicit(c) for c in (bound, config) if isinstance(c, Mapping)]
    thread_id = merge_configs(*explicit).get("configurable", {}).get("thread_id")
    if thread_id is None:
        return None
    return require_thread_id(str(thread_id) if thread_id else thread_id)


def thread_ids_of(configs: Any, bound: Any = None) -> list[str]:
    """The distinct threads of one config or a list of configs (see ``thread_id_of``), sorted.

    Args:
        configs: a call's config, or a batch's list of configs.
        bound: the graph's own config (``graph.config``), or None.

    Returns:
        the thread ids, sorted (the order locks are taken in, so two batches cannot deadlock).
    """
    configs = configs if isinstance(configs, (list, tuple)) else [configs]
    return sorted({t for t in (thread_id_of(c, bound) for c in configs) if t is not None})


def batch_rounds(thread_ids: Sequence[str | None]) -> list[list[int]]:
    """Split a batch into rounds in which no thread occurs twice.

    Args:
        thread_ids: each input's thread (``thread_id_of``), None for an input that names none.

    Returns:
        the input positions of each round: a thread's n-th input is in round n, so its inputs run
        one after the other, in their order. A batch of distinct threads is one round.
    """
    rounds: list[list[int]] = []
    seen: Counter[str] = Counter()
    for position, thread_id in enumerate(thread_ids):
        n = 0 if thread_id is None else seen[thread_id]
        if thread_id is not None:
            seen[thread_id] += 1
        if n == len(rounds):
            rounds.append([])
        rounds[n].append(position)
    return rounds


class HeldLock:
    """One run's hold on one thread's lock: the token it took (``fence``) and whether it has lost it since.

    ``lost`` is set by the renewal or the release that found the lock no longer this holding's (its lease
    expired, or another run took it over); reading it costs no I/O (``check_held``).
    """

    def __init__(
        self,
        thread_id: str,
        owner: str,
        fence: int,
        lease_seconds: float,
        since: float | None = None,
        started_at: datetime | None = None,
    ) -> None:
        self.thread_id, self.owner, self.fence, self.lease_seconds = thread_id, owner, fence, lease_seconds
        #: When the take was sent (wall clock, as stored): kept in the run's record at its release.
        self.started_at = started_at
        self.lost = False
        #: Set when the run returned or raised, before it waits for what it left in flight: no effect starts after it.
        self.ended = False
        self.released = False  # set before the release is sent: a renewal failing after it is no loss
        self.beat = Beat()
        #: The OpenTelemetry context the lock was taken in (``LockTakeWatch.context``): a loss's span goes under it.
        self.trace: Any = None
        #: The monotonic time until which the lease surely holds: when the take or the last successful renewal
        #: was sent (``since``), plus the lease. Its stored ``lease_until`` is no earlier.
        self.until = (time.monotonic() if since is None else since) + lease_seconds

    def renewed(self, sent: float) -> None:
        """A renewal sent at monotonic time ``sent`` succeeded: the lease holds until ``sent + lease_seconds``."""
        self.until = max(self.until, sent + self.lease_seconds)

    def lapsed(self) -> bool:
        """Whether the lease may have run out by this process's clock (no renewal succeeded in time)."""
        return time.monotonic() >= self.until

    def lose(self) -> None:
        """Record that the lock is no longer this run's (logged once)."""
        if not self.lost:
            logger.warning(
                "lost the run lock of thread %r (fence %d): its lease of %g s expired before a renewal, or "
                "another run took the lock over; check_held() now raises RunLockLostError in this run. Raise "
                "run_lease_seconds above the longest stall you expect", self.thread_id, self.fence, self.lease_seconds,
            )
            lock_lost(self.thread_id, self.fence, self.trace)
        self.lost = True

    def ended_error(self) -> RunLockLostError:
        """The error ``check_held`` raises once the holding's run has ended: work it left running (an effect in a
        thread its cancelled node no longer waited for) starts no effect under the run's lock."""
        return RunLockLostError(
            f"the run of thread {self.thread_id!r} (fence {self.fence}) has ended: its node stopped waiting for this "
            "work (a thread it started, or an asyncio.to_thread its cancellation left running), so no effect starts "
            "here now. The thread's next run runs the effect where this one stopped (invoke(None, config)).",
            thread_id=self.thread_id,
            fence=self.fence,
        )

    def error(self) -> RunLockLostError:
        """The error ``check_held`` raises for this lost holding, naming the thread and the fix."""
        return RunLockLostError(
            f"this run lost the run lock of thread {self.thread_id!r} (fence {self.fence}): its lease of "
            f"{self.lease_seconds:g} s expired before it was renewed (a stall: a frozen process or VM, a blocked "
            "event loop, an unreachable server), so another run may be running the thread now. It stops here "
            "so that two runs never write one thread at once. Raise DurablePlatform(run_lease_seconds=...) above "
            "the longest stall you expect, then resume the thread (invoke(None, config)).",
            thread_id=self.thread_id,
            fence=self.fence,
        )


def check_held(thread_id: str | None = None) -> bool:
    """Refuse to go on once the current run has lost its run lock, or may have. No I/O.

    Call it before work that must not run beside another run of the thread, such as starting an effect. The
    lock is lost when a renewal found it so, or when the holder's own monotonic clock says its lease may have
    run out since its last successful renewal (``HeldLock.lapsed``: a stall that also kept the renewals back).

    Args:
        thread_id: the thread the work belongs to; None checks every lock the current context holds.

    Returns:
        Whether the current context holds the thread's lock (so no other run of the thread runs now).

    Raises:
        RunLockLostError: the current context held that thread's lock and lost it, or its lease may have run
            out (see ``HeldLock.lose``, ``HeldLock.lapsed``), or its run has ended (``HeldLock.ended``: work the run
            left running in a thread asks too late).
    """
    held = False
    for holding in held_locks().values():
        if thread_id is None or holding.thread_id == str(thread_id):
            if holding.lost or (not holding.released and holding.lapsed()):
                holding.lose()
                raise holding.error()
            if holding.ended:
                raise holding.ended_error()
            held = True
    return held


class CallLocks:
    """The locks one call holds, one ``HeldLock`` per thread. ``release``/``arelease`` are idempotent."""

    def __init__(self, locks: RunLocks) -> None:
        self.locks = locks
        self.holdings: list[HeldLock] = []

    @property
    def thread_ids(self) -> list[str]:
        """The threads this call holds (re-entered ones excepted: the enclosing run holds those)."""
        return [h.thread_id for h in self.holdings]

    @property
    def lost(self) -> list[str]:
        """The threads whose lock this call has lost (no I/O)."""
        return [h.thread_id for h in self.holdings if h.lost]

    @contextmanager
    def mark(self) -> Iterator[None]:
        """Mark the held threads as this context's: a nested run on them re-enters, ``check_held`` sees them."""
        marked = {(id(self.locks), h.thread_id): h for h in self.holdings}
        with entered("locks", MappingProxyType({**held_locks(), **marked})):
            yield

    def stop_renewing(self) -> None:
        """Stop the renewals without I/O (an abandoned iterator): the leases then expire."""
        for holding in self.holdings:
            holding.beat.stop()

    def _unreleased(self) -> list[HeldLock]:
        """The holdings not released yet, last first, now marked released and no longer renewing."""
        pending = [h for h in reversed(self.holdings) if not h.released]
        for holding in pending:
            holding.released = True
            holding.beat.stop()
        return pending

    def _settling(self) -> list[Plan[object]]:
        """The plans that wait, still holding the locks (renewed), for what each held thread's run left in flight in
        this process (``RunLocks.settle``: its effects' records): the next run, here or in another process, must
        find them written."""
        settle = self.locks.settle
        ending = [h for h in self.holdings if not h.released]
        for holding in ending:
            holding.ended = True  # first: an effect that starts from now on is refused; those under way are waited for
        return [settle(h.thread_id) for h in ending] if settle is not None else []

    def release(self, cleanly: bool = True) -> None:
        """Release every lock still held (1 command each); one found taken over is recorded as lost instead.

        ``cleanly`` False: the run raised or was cut short (``ended_cleanly``, for the inspectors).
        """
        for plan in self._settling():
            self.locks._run(plan)
        for holding in self._unreleased():
            self.locks._run(self.locks._release_plan(holding, cleanly))

    def release_in_background(self, cleanly: bool = True) -> None:
        """``release``, sent from the process's pool of background threads (which Python lets finish at exit), so
        the run returns without waiting for it. The next acquisition of one of these threads in this process
        waits for its release (``RunLocks.wait_releases``). A release that fails is logged: the lock then frees
        itself when its lease expires. What the run left in flight is waited for here, in the caller's thread: a
        pool thread must not wait for work queued behind it."""
        for plan in self._settling():
            self.locks._run(plan)
        for holding in self._unreleased():
            self.locks._release_in_background(holding, cleanly)

    async def arelease(self, cleanly: bool = True) -> None:
        """The async twin of ``release``. The async face has no background release: a task left to release the
        lock would be cancelled with its loop, which may end as soon as the run returns, and the lock would then
        stay taken for its lease."""
        for plan in self._settling():
            await self.locks._arun(plan)
        for holding in self._unreleased():
            await self.locks._arun(self.locks._release_plan(holding, cleanly))


class RunLocks(TwoFaces):
    """Per-thread run locks in ``collection`` (default ``thread_runs``).

    Args:
        client / async_client: as for the checkpointer (either or both).
        db_name: the database.
        lease_seconds: how long a lock outlives its holder's last renewal.
        wait_seconds: how long an acquisition waits for another run before ``ThreadBusyError``.
        storage_format: the database's format check, run before the first operation (``DurablePlatform``
            passes the checkpointer's); by default one of its own.
        settle: for a thread, a plan that returns once what its run left in flight in this process is done (its
            effects' records); each lock is released only after it. None: nothing to wait for.
    """

    _needs_sync = "give DurablePlatform a sync client (client=MongoClient(uri)) to run invoke/stream/batch"
    _needs_async = (
        "give DurablePlatform an async client (async_client=AsyncMongoClient(uri)) to run ainvoke/astream/abatch"
    )

    def __init__(
        self,
        client: Any = None,
        *,
        async_client: Any = None,
        db_name: str = "langgraph",
        collection: str = "thread_runs",
        lease_seconds: float = 30.0,
        wait_seconds: float = 30.0,
        auto_setup: bool = True,
        storage_format: StorageFormat | None = None,
        settle: Callable[[str], Plan[object]] | None = None,
    ) -> None:
        lease_seconds = require_seconds("run_lease_seconds", lease_seconds, positive=True)
        wait_seconds = require_seconds("run_wait_seconds", wait_seconds)
        require_db_name(db_name)
        client, async_client = split_clients(client, async_client, "RunLocks")
        self.collection = require_str("collection", collection, allow_empty=False)
        self.lease_seconds, self.wait_seconds = lease_seconds, wait_seconds
        #: A plan, per thread, that returns once what a run of it left in flight here is done: a run's lock is
        #: released only after it (``CallLocks``). The platform gives its checkpointer's ``settle_records_plan``.
        self.settle = settle
        self._init_faces(
            client[db_name] if client is not None else None,
            async_client[db_name] if async_client is not None else None,
            auto_setup,
            (storage_format or StorageFormat(db_name, CollectionNames(runs=self.collection))).check_plan,
            role="runs",
        )
        #: Threads whose lock this process has taken before: their next take tries the released lock first.
        self._taken_before: LRU[str, None] = LRU(TAKEN_REMEMBERED)
        self._taken_lock = threading.Lock()
        #: Releases sent in the background (``CallLocks.release``), by thread: the thread's next take waits for
        #: its own.
        self._releasing: dict[str, concurrent.futures.Future[None]] = {}

    # ---- plans (the storage logic, once) ----

    def _setup_plan(self) -> Plan[None]:
        yield CreateIndexes(self.collection, list(INDEXES["runs"]))

    def _holder(self, owner: str, now: datetime) -> dict[str, Any]:
        """The fields a new holder sets, its fence aside."""
        lease_until = now + timedelta(seconds=self.lease_seconds)
        return {"owner": owner, **identity(), "lease_until": lease_until, "started_at": now}

    def _acquire_plan(self, thread_id: str, watch: Any = UNWATCHED) -> Plan[HeldLock]:
        """Take the thread's lock (see the module docstring); returns the renewing ``HeldLock``.

        Raises ``ThreadBusyError`` when a live run holds it past ``wait_seconds``. ``watch`` hears of its waits and
        of a take-over (``telemetry.watches.LockTakeWatch``).
        """
        owner = uuid.uuid4().hex
        pause = lease.Backoff(POLL_FIRST, POLL_MAX)
        # A thread this process ran before was usually released by its last run: taken then in one command, unread.
        since, now = time.monotonic(), lease.utcnow()
        deadline = since + self.wait_seconds  # monotonic: the wall clock may step, and BSON dates drop microseconds
        taken = (yield from self._take_released_plan(thread_id, owner, now)) if self._was_taken(thread_id) else None
        taken_over = False
        while taken is None:
            found = yield from ask(Find(self.collection, {"thread_id": thread_id}, limit=1))
            now, since = lease.utcnow(), time.monotonic()
            if found and not _takeable(found[0], now) and not self._ended_here(found[0].get("owner")):
                if since >= deadline:
                    raise _busy(thread_id, found[0], self.wait_seconds)
                watch.waited()
                yield Sleep(_pause(pause.next(), deadline - since, found[0], now))
                continue
            taken_over = self._taken_over(found[0] if found else None)
            taken = yield from self._take_plan(thread_id, found[0] if found else None, owner, now)
        self._note_taken(thread_id)
        watch.taken(taken, taken_over)
        holding = HeldLock(thread_id, owner, taken, self.lease_seconds, since, started_at=now)
        every = self.lease_seconds / lease.RENEWALS_PER_LEASE
        holding.beat = yield from ask(Heartbeat(lambda: self._renew_plan(holding), every))
        return holding

    def _taken_over(self, holder: dict[str, Any] | None) -> bool:
        """Whether taking the lock ``holder`` shows takes it over from another run (one that died, or whose lease
        expired), not from this process's own ended run whose release is still under way."""
        owner = holder.get("owner") if holder is not None else None
        return owner is not None and not self._ended_here(owner)

    def _take_released_plan(self, thread_id: str, owner: str, now: datetime) -> Plan[int | None]:
        """Take the thread's lock if its last holder released it (no owner), by one conditional update.

        Returns the new fence, or None when the lock is held, expired, or not there yet: then it is read first.
        """
        released = yield from self._take_sent(thread_id, owner, FindOneAndUpdate(
            self.collection,
            {"thread_id": thread_id, "owner": None},
            {"$set": self._holder(owner, now), "$inc": {"fence": 1}},
            before=True,
        ))
        if isinstance(released, _Applied):
            return released.fence
        return None if released is None else (released.get("fence") or 0) + 1

    def _take_sent(self, thread_id: str, owner: str, request: Request[T]) -> Plan[T | _Applied]:
        """Send a take; its answer, or ``_Applied`` when its reply was lost to a connection failure and the lock, read
        again, is ours: the server applied it (a standalone server's replies are not retried by the driver). Without
        this, the run would fail holding the lock, and every later run of the thread wait out its lease."""
        answer = yield from ask(Try(request))
        if isinstance(answer, Returned):
            value: T = answer.value
            return value
        if not isinstance(answer.error, ConnectionFailure):
            raise answer.error
        found = yield from ask(Find(self.collection, {"thread_id": thread_id}, limit=1))
        if found and found[0].get("owner") == owner:
            logger.warning(
                "the run lock of thread %r was taken, its reply lost (%s): holding it", thread_id, answer.error
            )
            return _Applied(found[0].get("fence") or 0)
        raise answer.error

    def _was_taken(self, thread_id: str) -> bool:
        with self._taken_lock:
            return thread_id in self._taken_before

    def _note_taken(self, thread_id: str) -> None:
        with self._taken_lock:
            self._taken_before.put(thread_id, None)

    def _take_plan(
        self, thread_id: str, holder: dict[str, Any] | None, owner: str, now: datetime
    ) -> Plan[int | None]:
        """Insert the thread's first lock, or take ``holder``'s by one update conditional on the state read.

        Returns the new fence, or None when another run changed the lock first.
        """
        if holder is None:
            first = {"thread_id": thread_id, "fence": 1, **self._holder(owner, now)}
            inserted = yield from self._take_sent(thread_id, owner, InsertOne(self.collection, first))
            return 1 if inserted else None
        update = {"$set": {**self._holder(owner, now), **_ended_record(holder, now)}, "$inc": {"fence": 1}}
        if not (yield from self._take_sent(thread_id, owner, FencedUpdate(self.collection, _as_read(holder), update))):
            return None
        if holder.get("owner") is not None:
            logger.info("took over the run lock of thread %r from %s", thread_id, _describe(holder))
        return (holder.get("fence") or 0) + 1

    def _renew_plan(self, holding: HeldLock) -> Plan[bool]:
        """Extend the lease while the lock is still this holding's and unexpired; returns whether it was."""
        now, sent = lease.utcnow(), time.monotonic()
        renewed = yield from ask(FencedUpdate(
            self.collection,
            {"thread_id": holding.thread_id, "fence": holding.fence, "lease_until": {"$gt": now}},
            {"$set": {"lease_until": now + timedelta(seconds=self.lease_seconds), "renewed_at": now}},
        ))
        if renewed:
            holding.renewed(sent)
        elif not holding.released:
            holding.lose()
        return renewed

    def _release_plan(self, holding: HeldLock, cleanly: bool) -> Plan[None]:
        """Free the lock if it is still this holding's, saying whether the run ended cleanly; else record it as
        lost. Until the release is known to have gone through, this process's next run of the thread takes the
        lock at once (``_ended_here``)."""
        self._note_ended(holding.owner, ended=True)
        record = run_record(
            holding.fence, {**identity(), "started_at": holding.started_at}, lease.utcnow(),
            "finished" if cleanly else "failed",
        )
        released = yield from ask(FencedUpdate(
            self.collection,
            {"thread_id": holding.thread_id, "fence": holding.fence},
            {"$set": {"owner": None, "lease_until": RELEASED, "ended_cleanly": cleanly, **record}},
        ))
        self._note_ended(holding.owner, ended=False)
        if not released:
            holding.lose()

    @staticmethod
    def _note_ended(owner: str, *, ended: bool) -> None:
        with _ENDED_LOCK:
            if not ended:
                _ENDED.pop(owner, None)
                return
            _ENDED.put(owner, None)

    @staticmethod
    def _ended_here(owner: Any) -> bool:
        """Whether ``owner`` is a run of this process (any platform of it) that ended, its release not known to
        have gone through."""
        with _ENDED_LOCK:
            return owner in _ENDED

    def _release_in_background(self, holding: HeldLock, cleanly: bool) -> None:
        try:
            future = background_pool().submit(self._release_logged, holding, cleanly)
        except RuntimeError:  # the interpreter is shutting down: no thread starts any more
            self._release_logged(holding, cleanly)
            return
        with self._taken_lock:
            self._releasing[holding.thread_id] = future
        future.add_done_callback(lambda done: self._released(holding.thread_id, done))

    def _release_logged(self, holding: HeldLock, cleanly: bool) -> None:
        try:
            self._run(self._release_plan(holding, cleanly))
        except Exception as error:  # nobody waits for it: say so, the lease frees the lock
            _release_failed([holding.thread_id], error)

    def _released(self, thread_id: str, future: concurrent.futures.Future[None]) -> None:
        with self._taken_lock:
            if self._releasing.get(thread_id) is future:
                del self._releasing[thread_id]

    def _release_of(self, thread_id: str) -> concurrent.futures.Future[None] | None:
        """This process's release of the thread's lock still under way, if any."""
        with self._taken_lock:
            return self._releasing.get(thread_id)

    def wait_releases(self, timeout: float | None = None) -> None:
        """Wait until this process's background releases (``CallLocks.release_in_background``: a sync run's, once it
        returned) are done: the locks are then free in the database.

        Args:
            timeout: seconds to wait at most (None: as long as they take).

        Raises:
            TimeoutError: one was still under way after ``timeout``.
        """
        with self._taken_lock:
            pending = list(self._releasing.values())
        _, undone = concurrent.futures.wait(pending, timeout)
        if undone:
            raise TimeoutError(f"{len(undone)} run lock release(s) still under way after {timeout:g} s")

    # ---- faces ----

    def _needed(self, thread_ids: Iterable[str]) -> list[str]:
        held = held_locks()
        return sorted({t for t in thread_ids if (id(self), t) not in held})

    def acquire(self, thread_ids: Iterable[str]) -> CallLocks:
        """Take the run lock of every thread this context does not hold yet, in sorted order.

        Args:
            thread_ids: the threads (sorted order: two batches cannot deadlock).

        Returns:
            the ``CallLocks`` locks, renewing until ``release()``.

        Raises:
            ThreadBusyError: another run held one of them past ``wait_seconds`` (those taken are released).
            ClientConfigurationError: these locks have no sync client.
        """
        held = CallLocks(self)
        try:
            for thread_id in self._needed(thread_ids):
                if (releasing := self._release_of(thread_id)) is not None:
                    releasing.result()
                with lock_take_watch(thread_id) as watch:
                    held.holdings.append(self._run(self._acquire_plan(thread_id, watch)))
                held.holdings[-1].trace = watch.context
        except BaseException:
            held.release()
            raise
        return held

    async def aacquire(self, thread_ids: Iterable[str]) -> CallLocks:
        """Async ``acquire`` on the async client (renewals from a task; release with ``arelease()``): same
        arguments, return and errors."""
        held = CallLocks(self)
        try:
            for thread_id in self._needed(thread_ids):
                if (releasing := self._release_of(thread_id)) is not None:
                    await asyncio.wrap_future(releasing)
                with lock_take_watch(thread_id) as watch:
                    held.holdings.append(await self._arun(self._acquire_plan(thread_id, watch)))
                held.holdings[-1].trace = watch.context
        except BaseException:
            await held.arelease()
            raise
        return held

    @contextmanager
    def hold(self, thread_ids: Iterable[str]) -> Iterator[CallLocks]:
        """``acquire`` for the block, marked as this context's, released at its end (also on an error).

        Args:
            thread_ids: the threads; those this context already holds are re-entered, not waited for.

        Returns:
            A context manager yielding the ``CallLocks`` locks (``held.lost`` names a thread whose lock was lost).

        Raises:
            ThreadBusyError: another run held one of them past ``wait_seconds`` (those taken are released).
            ClientConfigurationError: these locks have no sync client.
        """
        held = self.acquire(thread_ids)
        try:
            with held.mark():
                yield held
        except BaseException:
            held.release(cleanly=False)
            raise
        held.release()

    @asynccontextmanager
    async def ahold(self, thread_ids: Iterable[str]) -> AsyncIterator[CallLocks]:
        """Async ``hold`` on the async client (``async with``): same arguments and errors."""
        held = await self.aacquire(thread_ids)
        try:
            with held.mark():
                yield held
        except BaseException:
            await held.arelease(cleanly=False)
            raise
        await held.arelease()


@dataclass(frozen=True)
class _Applied:
    """A take whose reply was lost, found applied: the lock is the taker's, under ``fence``."""

    fence: int


def _takeable(holder: dict[str, Any], now: datetime) -> bool:
    """Released or expired (``lease_until <= now``), or held by a process that is gone."""
    lease_until = lease.naive(holder.get("lease_until"))
    return lease_until is None or lease_until <= now or owner_gone(holder)


def _ended_record(holder: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The record of the run whose lock is taken over (``run_record``), if one still owns it: ``crashed`` when its
    process is known gone, ``lock lost`` when its lease ran out (dead elsewhere, or stalled); none for a lock
    released, or one this process's own ended run still owns (its release is on its way)."""
    owner, fence = holder.get("owner"), holder.get("fence")
    if owner is None or not isinstance(fence, int) or RunLocks._ended_here(owner):
        return {}
    gone = owner_gone(holder)  # it ended before: last seen when it last renewed (the views add its last work)
    last_seen = holder.get("renewed_at") or holder.get("started_at")
    return run_record(fence, holder, last_seen, "crashed" if gone else "lock lost")


def _as_read(holder: dict[str, Any]) -> dict[str, Any]:
    """The filter that matches the lock only in the state it was read in: its token and its lease."""
    return {"thread_id": holder["thread_id"], "fence": holder.get("fence"), "lease_until": holder.get("lease_until")}


def _pause(pause: float, wait_left: float, holder: dict[str, Any], now: datetime) -> float:
    """The next poll: after ``pause``, before the wait's end (``wait_left`` seconds), and just after the holder's
    lease would expire."""
    lease_left = ((lease.naive(holder.get("lease_until")) or now) - now).total_seconds()
    return min(pause, max(wait_left, 0.0), max(lease_left, 0.0) + 0.01)


def _describe(holder: dict[str, Any]) -> str:
    return f"host {holder.get('owner_host', '?')}, pid {holder.get('owner_pid', '?')}"


def _busy(thread_id: str, holder: dict[str, Any], waited: float) -> ThreadBusyError:
    return ThreadBusyError(
        f"thread {thread_id!r} is being run by another run ({_describe(holder)}, started {holder.get('started_at')} "
        f"UTC, lease until {holder.get('lease_until')} UTC); waited {waited:g} s for it. Run one caller per thread "
        "(a queue), retry once that run ends, or raise DurablePlatform(run_wait_seconds=...). If that process is "
        "gone, its lock is taken over when its lease expires (at once when it ran on this host).",
        thread_id=thread_id,
        holder=holder,
    )


def _release_failed(thread_ids: list[str], error: Exception) -> None:
    """A run ended (returned or raised) but its lock could not be released: say so, and let the run's own outcome
    stand; the lock expires after its lease."""
    logger.warning(
        "could not release the run lock of %s after the run ended (%s: %s); it frees itself when its lease expires",
        ", ".join(repr(t) for t in thread_ids), type(error).__name__, error,
    )


class LockedIterator(Iterator[Any]):
    """``iterable`` with the run locks held from the first ``next()`` to exhaustion, an error or ``close()``."""

    def __init__(self, locks: RunLocks, thread_ids: list[str], iterable: Iterable[Any]) -> None:
        self._locks, self._thread_ids = locks, thread_ids
        self._iterator = iter(iterable)
        self._held: CallLocks | None = None
        self._done = False

    def __iter__(self) -> LockedIterator:
        return self

    def __next__(self) -> Any:
        if self._done:
            raise StopIteration
        if self._held is None:
            self._held = self._locks.acquire(self._thread_ids)
        try:
            with self._held.mark():
                return next(self._iterator)
        except BaseException as ended:
            self._finish(cleanly=isinstance(ended, StopIteration))  # its release, sent in the background, never raises
            raise

    def _finish(self, cleanly: bool) -> None:
        self._done = True
        if self._held is not None:
            self._held.release_in_background(cleanly)

    def close(self) -> None:
        try:
            close = getattr(self._iterator, "close", None)
            if close is not None and self._held is not None:
                with self._held.mark():
                    close()
            elif close is not None:
                close()
        finally:
            self._finish(cleanly=False)  # cut short: the next run claims the effects this one left

    def __del__(self) -> None:
        if self._held is not None:
            self._held.stop_renewing()  # abandoned without close(): the lease expires on its own


class LockedAsyncIterator(AsyncIterator[Any]):
    """The async twin of ``LockedIterator`` (``aclose()`` releases)."""

    def __init__(self, locks: RunLocks, thread_ids: list[str], iterable: Any) -> None:
        self._locks, self._thread_ids = locks, thread_ids
        self._iterator = iterable.__aiter__()
        self._held: CallLocks | None = None
        self._done = False

    def __aiter__(self) -> LockedAsyncIterator:
        return self

    async def __anext__(self) -> Any:
        if self._done:
            raise StopAsyncIteration
        if self._held is None:
            self._held = await self._locks.aacquire(self._thread_ids)
        try:
            with self._held.mark():
                return await self._iterator.__anext__()
        except BaseException as ended:
            try:
                await self._finish(cleanly=isinstance(ended, StopAsyncIteration))
            except Exception as error:  # the run's own outcome is what the caller gets
                _release_failed(self._thread_ids, error)
            raise

    async def _finish(self, cleanly: bool) -> None:
        self._done = True
        if self._held is not None:
            await self._held.arelease(cleanly)

    async def aclose(self) -> None:
        try:
            aclose = getattr(self._iterator, "aclose", None)
            if aclose is not None and self._held is not None:
                with self._held.mark():
                    await aclose()
            elif aclose is not None:
                await aclose()
        finally:
            await self._finish(cleanly=False)

    def __del__(self) -> None:
        if self._held is not None:
            self._held.stop_renewing()


__all__ = [
    "CallLocks",
    "HeldLock",
    "LockedAsyncIterator",
    "LockedIterator",
    "RunLocks",
    "batch_rounds",
    "check_held",
    "thread_id_of",
    "thread_ids_of",
]
