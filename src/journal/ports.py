"""What the journal asks of the saver a run saves with: the port ``MongoDBCheckpointer`` fills.

The journal sits beside the checkpointer, not above it (``tests/test_architecture.py``), so it names the saver by
what it calls, not by its class. Static only: nothing here checks an object at run time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import Any, Protocol

from langgraph.checkpoint.serde.base import SerializerProtocol

from ..storage.format import StorageFormat
from ..storage.schema import CollectionNames


class RootCheckpoints(Protocol):
    """A saver's root checkpoints as the locator reads them: whether one is stored yet, the checkpoint a visit
    started from (its origin), the stored root, and where a task's writes wait for its effects' records."""

    def stores_on_event_loop(self, thread_id: str) -> bool: ...

    def wait_stored(self, thread_id: str, checkpoint_id: str, timeout: float = ...) -> None: ...

    async def await_stored(self, thread_id: str, checkpoint_id: str, timeout: float = ...) -> None: ...

    def origin_of(self, thread_id: str, checkpoint_id: str, node: str | None = None) -> str: ...

    async def aorigin_of(self, thread_id: str, checkpoint_id: str, node: str | None = None) -> str: ...

    def continuations(self, thread_id: str, checkpoint_map: Mapping[str, Any]) -> Mapping[str, Any]: ...

    async def acontinuations(self, thread_id: str, checkpoint_map: Mapping[str, Any]) -> Mapping[str, Any]: ...

    def stored_now(self, thread_id: str, checkpoint_id: str) -> bool: ...

    def stored_root(self, thread_id: str, checkpoint_id: str) -> Any: ...

    async def astored_root(self, thread_id: str, checkpoint_id: str) -> Any: ...

    def hold_task_writes(self, thread_id: str, task: Any, future: Future[Any]) -> None: ...

    def run_lineage(self, thread_id: str) -> tuple[int, str] | None: ...


class JournalSaver(RootCheckpoints, Protocol):
    """A saver a journal shares its store with (``ActivityJournal.for_checkpointer``) and locates effects by."""

    client: Any
    async_client: Any
    db_name: str
    serde: SerializerProtocol
    collections: CollectionNames
    chunk_bytes: int
    storage_format: StorageFormat
    ttl: float | None
    @property
    def run_fence(self) -> Callable[[str], object] | None:
        """What refuses work on a thread whose run may have lost its lock (no I/O); None: nothing does."""

    def expiry_fields(self, thread_id: str) -> Mapping[str, Any]: ...
