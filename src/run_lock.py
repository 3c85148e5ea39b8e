"""One run per thread at a time: a leased, per-thread run lock in ``thread_runs``.

Two processes that resume one thread at once would each run the pending root
steps from the same checkpoint, each save its own next checkpoint (a fork),
and so run every later root effect once per branch. Like Temporal and DBOS
(one execution per workflow id), ``DurablePlatform`` lets one run hold a
thread at a time: every ``invoke``/``ainvoke``/``stream``/``astream``/
``batch``/``abatch`` takes the thread's run lock first.

The lock is one document per running thread, under a unique ``thread_id``
index::

    {_id: <owner>, thread_id, owner: <fresh uuid>, owner_host, owner_pid,
     owner_process, lease_until, started_at}

- Acquire: ``insert`` it (1 command). On a duplicate key, read the holder. If
  its lease expired or its process is gone (``owner_gone``: same host, pid
  exited), delete *that holder's* document (``{thread_id, owner: old}``) and
  insert again: the unique index lets exactly one racer in, also on servers
  whose conditional updates are not atomic (FerretDB 1.x). Otherwise poll
  until ``wait_seconds`` and raise ``ThreadBusyError``.
- While the run lasts, the lease is renewed every ``lease_seconds / 3``
  (``update`` fenced on the owner); a run shorter than that renews nothing.
- Release: ``delete {thread_id, owner: me}`` (1 command), also when the run
  raises or is interrupted.

A run that calls the same thread again from inside itself (same process,
same context) re-enters the lock instead of waiting for itself.

The lock is live state of a running process, not thread data: it is not in
``CollectionNames.per_thread`` (``copy_thread`` does not copy it, TTLs do not
expire it) and ``delete_thread`` leaves it alone, so deleting a thread
mid-run cannot let a second run in beside the first. A lock left by a dead
run is reclaimed by the next run (at once on the same host, else when its
lease expires).

Example::

    locks = RunLocks(client, db_name="agents")
    with locks.hold(["case-42"]):
        graph.invoke(None, {"configurable": {"thread_id": "case-42"}})
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta, timezone
from typing import Any

from langchain_core.runnables.config import merge_configs
from pymongo import ASCENDING, IndexModel

from ._mongo import CreateIndexes, DeleteMany, FencedUpdate, Find, InsertOne, Plan, TwoFaces, split_clients
from .errors import ThreadBusyError
from .journal.owner import identity, owner_gone
from .journal.runner import AsyncRunner, Beat, Heartbeat, Sleep, SyncRunner

#: One lock document per thread: the unique index is what makes a take-over atomic, on FerretDB too.
RUN_LOCK_INDEXES = (IndexModel([("thread_id", ASCENDING)], unique=True, name="thread_run_lock"),)

logger = logging.getLogger("langgraph_durable_mongodb.run_lock")

#: First and longest pause between two attempts while another run holds the thread.
POLL_FIRST, POLL_MAX = 0.05, 1.0
#: The lease is renewed this many times per ``lease_seconds``.
RENEWALS_PER_LEASE = 3

#: The (lock store, thread id) pairs the current context holds: a nested run on one of them re-enters.
_HELD: ContextVar[frozenset[tuple[int, str]]] = ContextVar("langgraph_durable_mongodb_run_locks", default=frozenset())


def utcnow() -> datetime:
    """Naive UTC, truncated to milliseconds like a BSON date."""
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def _naive(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value.astimezone(timezone.utc).replace(tzinfo=None) if value.tzinfo else value


def _explicit(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with a ``configurable`` of its own, so ``merge_configs`` reads only what the caller gave.

    Without one, langchain_core's ``ensure_config`` would fill it from the node this call runs in (the
    ambient config): a call that names no thread there runs inside that node's run and its checkpointer.
    Top-level keys (``{"thread_id": t}``) stay: ``merge_configs`` moves them into ``configurable``.
    """
    return {**config, "configurable": dict(config.get("configurable") or {})}


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
    """
    explicit = [_explicit(c) for c in (bound, config) if isinstance(c, Mapping)]
    thread_id = merge_configs(*explicit).get("configurable", {}).get("thread_id")
    return None if thread_id is None else str(thread_id)


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


class Held:
    """The locks one call holds. ``release``/``arelease`` are idempotent."""

    def __init__(self, locks: RunLocks, claims: list[tuple[str, str, Beat]]) -> None:
        self.locks, self.claims = locks, claims

    @property
    def thread_ids(self) -> list[str]:
        return [thread_id for thread_id, _, _ in self.claims]

    @contextmanager
    def mark(self) -> Iterator[None]:
        """Mark the held threads as this context's, so a nested run on them re-enters."""
        token = _HELD.set(_HELD.get() | {(id(self.locks), t) for t in self.thread_ids})
        try:
            yield
        finally:
            _HELD.reset(token)

    def _take(self) -> list[tuple[str, str, Beat]]:
        claims, self.claims = self.claims, []
        for _, _, beat in claims:
            beat.stop()
        return claims

    def stop_renewing(self) -> None:
        """Stop the renewals without I/O (an abandoned iterator): the leases then expire."""
        for _, _, beat in self.claims:
            beat.stop()

    def release(self) -> None:
        for thread_id, owner, _ in reversed(self._take()):
            self.locks._run(self.locks._release_plan(thread_id, owner))

    async def arelease(self) -> None:
        for thread_id, owner, _ in reversed(self._take()):
            await self.locks._arun(self.locks._release_plan(thread_id, owner))


class RunLocks(TwoFaces):
    """Per-thread run locks in ``collection`` (default ``thread_runs``).

    Args:
        client / async_client: as for the checkpointer (either or both).
        db_name: the database.
        lease_seconds: how long a lock outlives its holder's last renewal.
        wait_seconds: how long an acquisition waits for another run before ``ThreadBusyError``.
    """

    _needs_sync = "give DurablePlatform a sync client (client=MongoClient(uri)) to run invoke/stream/batch"
    _needs_async = "give DurablePlatform an async client (async_client=AsyncMongoClient(uri)) to run ainvoke/astream/abatch"

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
    ) -> None:
        if not lease_seconds > 0:
            raise ValueError(f"run_lease_seconds must be > 0, got {lease_seconds!r}")
        if not wait_seconds >= 0:
            raise ValueError(f"run_wait_seconds must be >= 0, got {wait_seconds!r}")
        client, async_client = split_clients(client, async_client, "RunLocks")
        self.collection = collection
        self.lease_seconds, self.wait_seconds = float(lease_seconds), float(wait_seconds)
        self._init_faces(
            SyncRunner(client[db_name]) if client is not None else None,
            AsyncRunner(async_client[db_name]) if async_client is not None else None,
            auto_setup,
        )

    # ---- plans (the storage logic, once) ----

    def _setup_plan(self) -> Plan:
        yield CreateIndexes(self.collection, list(RUN_LOCK_INDEXES))

    def _document(self, thread_id: str, owner: str) -> dict[str, Any]:
        now = utcnow()
        return {
            "_id": owner,  # never the thread id: deleting a dead holder's document must not delete its successor's
            "thread_id": thread_id,
            "owner": owner,
            **identity(),
            "lease_until": now + timedelta(seconds=self.lease_seconds),
            "started_at": now,
        }

    def _acquire_plan(self, thread_id: str, owner: str) -> Plan:
        """Insert the lock, taking over a dead or expired holder's; returns the renewal ``Beat``."""
        started = utcnow()
        deadline = started + timedelta(seconds=self.wait_seconds)
        pause = POLL_FIRST
        while True:
            if (yield InsertOne(self.collection, self._document(thread_id, owner))):
                return (yield Heartbeat(lambda: self._renew_plan(thread_id, owner), self.lease_seconds / RENEWALS_PER_LEASE))
            found = yield Find(self.collection, {"thread_id": thread_id}, limit=1)
            if not found:
                continue  # released in between: try again at once
            holder = found[0]
            lease_until = _naive(holder.get("lease_until"))
            now = utcnow()
            if lease_until is None or lease_until <= now or owner_gone(holder):
                # Only the holder we judged is deleted; of the racers inserting next, the unique index admits one.
                logger.info("taking over the run lock of thread %r from %s", thread_id, _describe(holder))
                yield DeleteMany(self.collection, {"thread_id": thread_id, "owner": holder.get("owner")})
                continue
            if now >= deadline:
                raise _busy(thread_id, holder, self.wait_seconds)
            remaining = (deadline - now).total_seconds()
            yield Sleep(min(pause, max(remaining, 0.0), max((lease_until - now).total_seconds(), 0.0) + 0.01))
            pause = min(pause * 2, POLL_MAX)

    def _renew_plan(self, thread_id: str, owner: str) -> Plan:
        lease_until = utcnow() + timedelta(seconds=self.lease_seconds)
        modified = yield FencedUpdate(self.collection, {"thread_id": thread_id, "owner": owner}, {"$set": {"lease_until": lease_until}})
        if not modified:
            logger.warning(
                "lost the run lock of thread %r (its lease expired and another run took it over); "
                "raise run_lease_seconds if runs stall longer than that", thread_id
            )
        return bool(modified)

    def _release_plan(self, thread_id: str, owner: str) -> Plan:
        yield DeleteMany(self.collection, {"thread_id": thread_id, "owner": owner})

    # ---- faces ----

    def _needed(self, thread_ids: Iterable[str]) -> list[str]:
        held = _HELD.get()
        return sorted({t for t in thread_ids if (id(self), t) not in held})

    def acquire(self, thread_ids: Iterable[str]) -> Held:
        """Lock every thread not already held by this context, in sorted order (no deadlock between batches)."""
        held = Held(self, [])
        try:
            for thread_id in self._needed(thread_ids):
                owner = uuid.uuid4().hex
                beat = self._run(self._acquire_plan(thread_id, owner))
                held.claims.append((thread_id, owner, beat))
        except BaseException:
            held.release()
            raise
        return held

    async def aacquire(self, thread_ids: Iterable[str]) -> Held:
        held = Held(self, [])
        try:
            for thread_id in self._needed(thread_ids):
                owner = uuid.uuid4().hex
                beat = await self._arun(self._acquire_plan(thread_id, owner))
                held.claims.append((thread_id, owner, beat))
        except BaseException:
            await held.arelease()
            raise
        return held

    @contextmanager
    def hold(self, thread_ids: Iterable[str]) -> Iterator[Held]:
        held = self.acquire(thread_ids)
        try:
            with held.mark():
                yield held
        finally:
            held.release()

    @asynccontextmanager
    async def ahold(self, thread_ids: Iterable[str]) -> AsyncIterator[Held]:
        held = await self.aacquire(thread_ids)
        try:
            with held.mark():
                yield held
        finally:
            await held.arelease()


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


class LockedIterator(Iterator[Any]):
    """``iterable`` with the run locks held from the first ``next()`` to exhaustion, an error or ``close()``."""

    def __init__(self, locks: RunLocks, thread_ids: list[str], iterable: Iterable[Any]) -> None:
        self._locks, self._thread_ids = locks, thread_ids
        self._iterator = iter(iterable)
        self._held: Held | None = None
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
        except BaseException:
            self._finish()
            raise

    def _finish(self) -> None:
        self._done = True
        if self._held is not None:
            self._held.release()

    def close(self) -> None:
        try:
            close = getattr(self._iterator, "close", None)
            if close is not None and self._held is not None:
                with self._held.mark():
                    close()
            elif close is not None:
                close()
        finally:
            self._finish()

    def __del__(self) -> None:
        if self._held is not None and self._held.claims:
            self._held.stop_renewing()  # abandoned without close(): the lease expires on its own


class LockedAsyncIterator(AsyncIterator[Any]):
    """The async twin of ``LockedIterator`` (``aclose()`` releases)."""

    def __init__(self, locks: RunLocks, thread_ids: list[str], iterable: Any) -> None:
        self._locks, self._thread_ids = locks, thread_ids
        self._iterator = iterable.__aiter__()
        self._held: Held | None = None
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
        except BaseException:
            await self._finish()
            raise

    async def _finish(self) -> None:
        self._done = True
        if self._held is not None:
            await self._held.arelease()

    async def aclose(self) -> None:
        try:
            aclose = getattr(self._iterator, "aclose", None)
            if aclose is not None and self._held is not None:
                with self._held.mark():
                    await aclose()
            elif aclose is not None:
                await aclose()
        finally:
            await self._finish()

    def __del__(self) -> None:
        if self._held is not None and self._held.claims:
            self._held.stop_renewing()


__all__ = ["Held", "LockedAsyncIterator", "LockedIterator", "RunLocks", "batch_rounds", "thread_id_of", "thread_ids_of"]
