"""``ThreadExpiry``: the one expiry a thread carries under a TTL, set on writes and spread to the thread.

A thread carries one expiry, whatever the number of workers writing it, and it only moves
forward. A write at time t sets the end of t's bucket (ttl/10 long, counted from the epoch)
plus ttl, so workers writing in one bucket agree, and never less than the highest expiry this
process has seen on the thread's documents, so a worker whose clock lags keeps the later one.
The checkpointer's writes then spread it to the thread's other documents with a refresh that
only raises expiries, once per value (about once per bucket) per thread per process.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from ..storage.plans import lease
from ..storage.plans.requests import Plan, UpdateMany
from ..storage.thread_collections import ThreadCollections
from .remembered import ThreadExpiries
from .ttl import TTLConfig

_EPOCH, _MILLISECOND = datetime(1970, 1, 1), timedelta(milliseconds=1)


class ThreadExpiry:
    """The expiry of threads under a saver's TTL, and what this process remembers of it.

    Args:
        ttl_config: the saver's parsed TTL (None: threads never expire).
        collections: the per-thread collections, whose documents carry the expiry.
        known: the expiries this process wrote or read (``remembered.ThreadExpiries``).
    """

    def __init__(self, ttl_config: TTLConfig | None, collections: ThreadCollections, known: ThreadExpiries) -> None:
        self.ttl_config = ttl_config
        self.seconds = ttl_config.seconds if ttl_config is not None else None
        self.collections = collections
        self.known = known

    def fields(self, thread_id: str) -> dict[str, Any]:
        """See ``MongoDBCheckpointer.expiry_fields``: the thread's current expiry as this process knows it, else
        that of a write now."""
        if self.seconds is None:
            return {}
        highest = self.known.highest(thread_id)
        if highest is not None and highest > lease.utcnow():
            return {"expire_at": highest}
        return self.of_write(thread_id)

    def of_write(self, thread_id: str) -> dict[str, Any]:
        """``{"expire_at": ...}`` for the checkpointer's write to the thread now (empty without ttl)."""
        if self.seconds is None:
            return {}
        # milliseconds: BSON dates hold no less
        bucket, ttl = max(1, round(self.seconds * 100)), round(self.seconds * 1000)
        now = (lease.utcnow() - _EPOCH) // _MILLISECOND
        computed = _EPOCH + _MILLISECOND * ((now // bucket + 1) * bucket + ttl)
        return {"expire_at": self.known.raise_to(thread_id, computed)}

    def saw(self, docs: list[dict[str, Any]]) -> None:
        """Note the ``expire_at`` of checkpoint documents read: a later write never sets less."""
        for doc in docs:
            if doc.get("expire_at") is not None:
                self.known.raise_to(doc["thread_id"], doc["expire_at"])

    def spread(self, thread_id: str, expiry: Mapping[str, Any]) -> Plan[None]:
        """Move every document of the thread without an expiry or with a lower one to ``expiry``.

        Sent once per expiry value per thread (the value changes about once per ttl/10): one
        ``updateMany`` per per-thread collection. The filter only ever raises an expiry, so
        concurrent refreshes of two workers end on the higher one.

        Args:
            thread_id: the thread just written.
            expiry: what ``of_write`` set on the new documents (empty without ttl).
        """
        if not expiry:
            return
        value = expiry["expire_at"]
        spread = self.known.spread(thread_id)
        if spread is not None and spread >= value:
            return
        older = {"$or": [{"expire_at": {"$exists": False}}, {"expire_at": {"$lt": value}}]}
        for coll in self.collections.names:
            yield UpdateMany(coll, {"thread_id": thread_id, **older}, {"$set": {"expire_at": value}})
        self.spread_to(thread_id, value)

    def spread_to(self, thread_id: str, expire_at: datetime) -> None:
        """Note that every document of the thread now carries ``expire_at`` (spread, or set on each copy)."""
        self.known.raise_to(thread_id, expire_at, spread=True)

    def forget(self, thread_id: str) -> None:
        """Forget the thread's expiry: it was deleted, or its expiry removed (a ``keep_latest`` sweep)."""
        self.known.forget(thread_id)

    def expired(self, doc: Mapping[str, Any]) -> bool:
        """Whether a checkpoint document read is past its thread's expiry, for readers.

        Between two passes of the TTL monitor (and on servers without one) an expired thread is
        already gone for readers; under keep_latest it stays, to be pruned by the next sweep.
        """
        if self.ttl_config is None or self.ttl_config.strategy != "delete":
            return False
        expire_at = doc.get("expire_at")
        return expire_at is not None and expire_at <= lease.utcnow()

    def refresh_on_read(self, docs: list[dict[str, Any]]) -> Plan[None]:
        """Under ``refresh_on_read``, push the expiry of every thread read forward as a write would.

        Costs what a write's refresh costs: one ``updateMany`` per per-thread collection, once per
        expiry value (about once per ttl/10) per thread per process; other reads cost nothing more.
        """
        if self.ttl_config is None or not self.ttl_config.refresh_on_read:
            return
        for thread_id in sorted({d["thread_id"] for d in docs}):
            yield from self.spread(thread_id, self.of_write(thread_id))
