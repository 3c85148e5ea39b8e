"""Where an effect sits: its node's position, its effect key, and its idempotency key.

A *position provider* tells the journal which node is running. It answers two
questions: ``task()``, which task attempt runs now (cheap, no I/O), and
``position()``/``aposition()``, where that node is (``NodePosition``: thread,
operation path, node name and occurrence; may do I/O, asked once per attempt).
``ResolverPositions`` answers them with the resolver's durable scope and
ordinal allocator; ``LangGraphPositions`` is the base for any other answer.

The journal adds the effect key: the tool call id for a tool call issued by a
journaled LLM response, otherwise the effect's ordinal in call order within
the current node attempt (``1``, ``2``, ...), taken when the call starts.
Effects called inside another effect number under it (``2/1``).

The ordinal counter belongs to one *attempt* of one task: it starts again at 1
when LangGraph re-runs the node (a resume, an ``interrupt()`` answered by
``Command(resume=...)``, a ``RetryPolicy`` retry), so each re-run meets its
effects at the positions they were recorded at.

Example::

    positions = ResolverPositions(allocator)            # inside durable_scope(resolver)
    with effect_scope(journal, positions):
        graph.invoke(inputs, config)
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from .._bson import require_str
from ..errors import NoDurableScopeError


@dataclass(frozen=True)
class NodePosition:
    """The running node: ``path`` like ``agent/1/case_investigation/1``, ``occurrence`` like ``1`` or ``2.3``.

    ``new``: the occurrence was allocated for this attempt, so no effect is journaled under it yet (the
    journal then skips reading its entries). ``continued``: the attempt continues an interrupted
    occurrence after its state was edited (``update_state`` on the latest checkpoint): an effect whose
    input changed runs instead of replaying.
    """

    thread_id: str
    path: str
    node: str
    occurrence: str
    new: bool = field(default=False, compare=False)
    continued: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class EffectPosition:
    """One effect's place in the journal: the unique key of its document."""

    thread_id: str
    path: str
    node: str
    occurrence: str
    effect_key: str

    def __post_init__(self) -> None:
        # Its fields become a query filter (discard, resolve): an operator must never reach one.
        for name in ("thread_id", "path", "node", "occurrence", "effect_key"):
            require_str(name, getattr(self, name))

    @property
    def idempotency_key(self) -> str:
        """A stable digest of the position: the same on every re-execution.

        >>> EffectPosition("t1", "agent/1", "llm", "1", "1").idempotency_key[:9]
        'ik-8aa640'
        """
        parts = (self.thread_id, self.path, self.node, self.occurrence, self.effect_key)
        return "ik-" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:40]

    def __str__(self) -> str:
        return f"thread {self.thread_id!r} path {self.path!r} node {self.node!r}#{self.occurrence} effect {self.effect_key!r}"


class PositionProvider(Protocol):
    """Tells the journal which node runs (see the module docstring)."""

    def task(self) -> tuple[Any, int]:
        """``(task, attempt)``: a weak-referenceable object living as long as the running task, and its attempt."""

    def position(self) -> NodePosition: ...

    async def aposition(self) -> NodePosition: ...


def check_node(node: NodePosition) -> NodePosition:
    """Refuse a provider's answer that cannot key a document."""
    require_str("thread_id", node.thread_id, allow_empty=False)
    require_str("path", node.path)
    require_str("node", node.node, allow_empty=False)
    require_str("occurrence", node.occurrence, allow_empty=False)
    return node


@dataclass(frozen=True)
class Recorded:
    """What matching needs of an entry already journaled at the node: its effect and its input digest."""

    kind: str
    name: str
    digest: str | None


@dataclass
class Attempt:
    """One attempt of one task: its effect ordinals, its node position and the entries it matched.

    Effects called one after another meet the ordinals they were recorded at. Effects started
    concurrently (``batch``, a thread pool, ``asyncio.gather``) take their ordinals in the order they
    happen to start, which differs between runs, so ``take`` matches an effect to the entry recorded for
    its own input first (see ``take``).
    """

    number: int
    node: NodePosition | None = None
    #: The node's top-level ordinal entries, by effect key; None until read (``ActivityJournal`` reads them).
    recorded: dict[str, Recorded] | None = None
    _taken: set[str] = field(default_factory=set)
    _ordinals: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def next_ordinal(self) -> int:
        return next(self._ordinals)  # atomic under the GIL: concurrent tools never share one

    def learn(self, recorded: dict[str, Recorded]) -> None:
        """Keep the node's entries as first read (a concurrent effect may have read them too)."""
        with self._lock:
            if self.recorded is None:
                self.recorded = recorded

    def take(self, ordinal: int, kind: str, name: str, digest: str) -> str:
        """The effect key of the effect that took ``ordinal``; each key is taken once per attempt.

        In order: the entry at its ordinal if it records this effect and input; else the first untaken
        entry that does (a concurrent sibling took its ordinal); else the entry at its ordinal as it is
        (the input changed: the journal's ``on_input_change`` decides, or, in a continued occurrence,
        the effect runs under a new key); else a key nobody holds.
        """
        own = str(ordinal)
        wanted = Recorded(kind, name, digest)
        with self._lock:
            recorded = self.recorded or {}
            free = [key for key in recorded if key not in self._taken]
            if own in free and recorded[own] == wanted:
                key = own
            elif same := sorted((k for k in free if recorded[k] == wanted), key=_ordinal_order):
                key = same[0]
            elif own in free and not (self.node is not None and self.node.continued):
                key = own
            elif own not in recorded and own not in self._taken:
                key = own
            else:
                key = str(max(map(_ordinal_order, [*recorded, *self._taken, own])) + 1)
                while key in self._taken:
                    key = str(int(key) + 1)
            self._taken.add(key)
            return key


def _ordinal_order(key: str) -> int:
    return int(key) if key.isdigit() else 0


_lock = threading.Lock()
_attempts: weakref.WeakKeyDictionary[Any, Attempt] = weakref.WeakKeyDictionary()


def current_attempt(provider: PositionProvider) -> Attempt:
    """The running task's attempt; a new task, or a new attempt of it, starts counting again."""
    task, number = provider.task()
    with _lock:
        attempt = _attempts.get(task)
        if attempt is None or attempt.number != number:
            attempt = _attempts[task] = Attempt(number)
        return attempt


def langgraph_task(config: RunnableConfig) -> tuple[Any, int]:
    """``(task, attempt)`` of the LangGraph task whose config this is.

    ``task`` is the task's write callable (``CONFIG_KEY_SEND``): LangGraph
    makes one per prepared task, so every run of a node (a new invocation, a
    resume) has its own, freed with the task. ``attempt`` is
    ``runtime.execution_info.node_attempt``, which a ``RetryPolicy`` retry
    increments within the task.
    """
    from langgraph._internal._constants import CONFIG_KEY_RUNTIME, CONFIG_KEY_SEND

    configurable = config.get("configurable") or {}
    task = configurable.get(CONFIG_KEY_SEND)
    if task is None:
        raise NoDurableScopeError("no LangGraph task is running here: journaled effects must run inside a graph node")
    info = getattr(configurable.get(CONFIG_KEY_RUNTIME), "execution_info", None)
    return task, getattr(info, "node_attempt", 1) or 1


class LangGraphPositions(ABC):
    """Base of providers for effects run by LangGraph nodes: the task comes from the node's config."""

    def task(self) -> tuple[Any, int]:
        return langgraph_task(_node_config())

    @abstractmethod
    def position(self) -> NodePosition: ...

    async def aposition(self) -> NodePosition:
        return self.position()


class ResolverPositions(LangGraphPositions):
    """Node positions from the resolver: stable operation paths and occurrence ordinals.

    Needs the resolver's durable scope bound around the graph call, and an
    ``OrdinalAllocator`` with a sync database for sync effects, an async one
    for async effects (or both).

    Example::

        positions = ResolverPositions(OrdinalAllocator(client["app"], async_client["app"]))
        with durable_scope(resolver), effect_scope(journal, positions):
            graph.invoke(inputs, config)
    """

    def __init__(self, allocator: Any, saver: Any = None) -> None:
        self.allocator = allocator
        self.saver = saver

    def _task(self) -> tuple[RunnableConfig, str, str | None, bool]:
        """The node's config, thread id, root checkpoint, and whether that checkpoint may still be being stored.

        Positions derive from the root checkpoint the task was prepared from; under ``durability="async"``
        LangGraph stores it in the background while the task runs, so the node's first effect waits until
        it is stored (see ``MongoDBCheckpointer.wait_stored``). ``sync`` stored it before the task started;
        ``exit`` stores nothing before the end (a documented limit).
        """
        from langgraph._internal._constants import CONFIG_KEY_CHECKPOINT_MAP, CONFIG_KEY_DURABILITY

        config = _node_config()
        conf = config["configurable"]
        # LangGraph saves checkpoints under str(thread_id) (an int or a UUID works there): journal under the same.
        thread_id = str(conf["thread_id"])
        root = (conf.get(CONFIG_KEY_CHECKPOINT_MAP) or {}).get("")
        if self.saver is None or not isinstance(root, str):
            return config, thread_id, None, False
        return config, thread_id, root, conf.get(CONFIG_KEY_DURABILITY) == "async"

    @staticmethod
    def _node(thread_id: str, root: str | None, origin: str | None, operation: Any) -> NodePosition:
        continued = origin is not None and origin != root
        return NodePosition(
            thread_id, operation.operation_path, operation.node_name, operation.node_ordinal, operation.new, continued
        )

    def _resolve(self, config: RunnableConfig, origin: str | None) -> Any:
        from ..resolver import current_scope as current_durable_scope

        return current_durable_scope().resolve_current(config, origin)

    def position(self) -> NodePosition:
        config, thread_id, root, unstored = self._task()
        origin = None
        if root is not None:
            if unstored:
                self.saver.wait_stored(thread_id, root)
            origin = self.saver.origin_of(thread_id, root)
        operation = self.allocator.position(thread_id, self._resolve(config, origin))
        return self._node(thread_id, root, origin, operation)

    async def aposition(self) -> NodePosition:
        config, thread_id, root, unstored = self._task()
        origin = None
        if root is not None:
            if unstored:
                await self.saver.await_stored(thread_id, root)
            origin = await self.saver.aorigin_of(thread_id, root)
        operation = await self.allocator.aposition(thread_id, self._resolve(config, origin))
        return self._node(thread_id, root, origin, operation)


def _node_config() -> RunnableConfig:
    try:
        return get_config()
    except RuntimeError as error:
        raise NoDurableScopeError(
            "a journaled effect ran outside a LangGraph node (get_config() found no config); "
            "call SecureLLM, SecureTool and @effect functions from node code"
        ) from error
