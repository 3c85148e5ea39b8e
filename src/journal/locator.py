"""Which node runs: how the journal learns where an effect's node is.

A *node locator* answers two questions: ``task()``, which task attempt runs now
(cheap, no I/O; its effects share one ordinal counter), and ``node()`` /
``anode()``, where that node is (a ``NodePosition``; may do I/O, asked once per
attempt). ``ResolverLocator`` answers with the ordinal allocator, from the node's
config and a ``TaskTrace`` (the platform's), or from the durable scope bound
around the graph call; tests and other platforms may bring their own.

Example::

    locator = ResolverLocator(allocator, saver, trace)   # what DurablePlatform serves
    locator = ResolverLocator(allocator)                 # inside durable_scope(resolver)
    with effect_scope(journal, locator):
        graph.invoke(inputs, config)
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from .. import _langgraph
from .._plans.interpreters import on_event_loop
from .._bson import require_str
from ..errors import NoDurableScopeError
from ..resolver import OrdinalAllocator, ResolvedNamespace, TaskTrace, current_durable_scope
from ..resolver.allocator import RootStamp
from ..resolver.namespace import root_task_name, running_task
from ..resolver.position import NodePosition
from ..resolver.running import resolve_task
from .attempt import Trail


class NodeLocator(Protocol):
    """Tells the journal which node runs (see the module docstring)."""

    def task(self) -> tuple[Any, int]:
        """``(task, attempt)``: a weak-referenceable object living as long as the running task, and its attempt."""

    def node(self) -> NodePosition: ...

    async def anode(self) -> NodePosition: ...


def check_node(node: NodePosition) -> NodePosition:
    """Refuse a locator's answer that cannot key a document."""
    require_str("thread_id", node.thread_id, allow_empty=False)
    require_str("path", node.path)
    require_str("node", node.node, allow_empty=False)
    require_str("occurrence", node.occurrence, allow_empty=False)
    return node


def node_config() -> RunnableConfig:
    """The running node's config; ``NoDurableScopeError`` outside a LangGraph node."""
    try:
        return get_config()
    except RuntimeError as error:
        raise NoDurableScopeError(
            "a journaled effect ran outside a LangGraph node (get_config() found no config); "
            "call SecureLLM, SecureTool and @effect functions from node code"
        ) from error


def langgraph_task(config: RunnableConfig) -> tuple[Any, int]:
    """``(task, attempt)`` of the LangGraph task whose config this is.

    ``task`` is the task's write callable: LangGraph makes one per prepared
    task, so every run of a node (a new invocation, a resume) has its own,
    freed with the task. ``attempt`` is the node attempt, which a
    ``RetryPolicy`` retry increments within the task.
    """
    configurable = config.get("configurable") or {}
    task = _langgraph.task_writer(configurable)
    if task is None:
        raise NoDurableScopeError("no LangGraph task is running here: journaled effects must run inside a graph node")
    return task, _langgraph.node_attempt(configurable)


def _root_stamp(config: RunnableConfig, root: str | None, origin: str | None, stored: Any) -> RootStamp | None:
    """What the checkpoint the node's root-level occurrence is keyed by (``origin``) tells of it (``stored``:
    the saver's ``Stored``), or None when it is not stored. Its occurrences are new when this process wrote it
    (and has not read it since), the task was prepared from it, and this is the task's first attempt: no run
    but this one can have met them."""
    if stored is None or origin is None:
        return None
    first_attempt = _langgraph.node_attempt(config.get("configurable") or {}) == 1
    return RootStamp(origin, stored.carried, stored.written and origin == root and first_attempt)


class ResolverLocator:
    """Node positions from the resolver: stable operation paths and occurrence ordinals.

    Needs an ``OrdinalAllocator`` with a sync database for sync effects, an async one for async effects (or
    both). With ``trace``, a node resolves from its config and the trace's facts of the tasks enclosing it
    (``running.resolve_task``); without, from the durable scope bound around the graph call. With ``saver``,
    a node's first effect learns what the root checkpoint its task was prepared from records (under
    ``durability="async"`` LangGraph stores it in the background: ``MongoDBCheckpointer.foresee_root``, else
    a wait for its store to begin) and which checkpoint an edit continues (``MongoDBCheckpointer.origin_of``),
    and the task's records trail its effects (``trail``).

    Example::

        locator = ResolverLocator(OrdinalAllocator(client["app"], async_client["app"]))
        with durable_scope(resolver), effect_scope(journal, locator):
            graph.invoke(inputs, config)
    """

    def __init__(self, allocator: OrdinalAllocator, saver: Any = None, trace: TaskTrace | None = None) -> None:
        self.allocator = allocator
        self.saver = saver
        self.trace = trace

    def task(self) -> tuple[Any, int]:
        return langgraph_task(node_config())

    def _task(self) -> tuple[RunnableConfig, str, str | None, bool, str]:
        """The node's config, thread id, root checkpoint (with a saver), whether it may not be stored yet, and the
        root-level task's node name."""
        config = node_config()
        configurable = config["configurable"]
        running = _langgraph.run_checkpointer(configurable)
        if self.saver is not None and getattr(running, "base_saver", running) is not self.saver:
            raise NoDurableScopeError(
                f"this effect's graph runs on {type(running).__name__ if running is not None else 'no checkpointer'}, "
                "not on the platform's checkpointer: the journal keys effects by the platform's checkpoints. "
                "Compile the root graph with checkpointer=platform.checkpointer (its children with checkpointer=None)"
            )
        # LangGraph saves checkpoints under str(thread_id) (an int or a UUID works there): journal under the same.
        thread_id = str(configurable["thread_id"])
        root = _langgraph.checkpoint_of(configurable, "") if self.saver is not None else None
        unstored = root is not None and _langgraph.runs_durably_async(configurable)
        return config, thread_id, root, unstored, root_task_name(configurable["checkpoint_ns"])

    def trail(self) -> Trail | None:
        """The running task's trailing records (with a saver): the task's writes wait for them."""
        if self.saver is None:
            return None
        config, thread_id, _, _, _ = self._task()
        task = running_task(config["configurable"])
        if task is None:
            return None
        saver = self.saver

        def hold(record: Future[Any]) -> None:
            saver.hold_task_writes(thread_id, task, record)

        return Trail(hold)

    def _resolve(self, config: RunnableConfig, origin: str | None) -> ResolvedNamespace:
        if self.trace is not None:
            return resolve_task(config, self.trace, origin)
        return current_durable_scope().resolve_current(config, origin)

    def node(self) -> NodePosition:
        """Where the running node is, for a sync effect.

        A sync effect called on an event loop (inside an async node) does not wait for its root checkpoint:
        the async run stores it on that very loop, which a blocking wait would stall until it timed out. It
        runs at once, as without a wait; make the effect async (``anode`` waits without blocking) or run with
        ``durability="sync"`` to close that window.
        """
        config, thread_id, root, unstored, root_task = self._task()
        origin = None
        if root is not None:
            if unstored and not self.saver.foresee_root(thread_id, root) and not on_event_loop():
                self.saver.wait_stored(thread_id, root, begun=True)
            origin = self.saver.origin_of(thread_id, root, root_task)
        resolved = self._resolve(config, origin)
        stamp = _root_stamp(config, root, origin, self.saver.stored_root(thread_id, origin) if origin else None)
        return self.allocator.position(thread_id, resolved, continued=origin not in (None, root), root=stamp)

    async def anode(self) -> NodePosition:
        config, thread_id, root, unstored, root_task = self._task()
        origin = None
        if root is not None:
            if unstored and not self.saver.foresee_root(thread_id, root):
                await self.saver.await_stored(thread_id, root, begun=True)
            origin = await self.saver.aorigin_of(thread_id, root, root_task)
        resolved = self._resolve(config, origin)
        stamp = _root_stamp(config, root, origin, await self.saver.astored_root(thread_id, origin) if origin else None)
        return await self.allocator.aposition(thread_id, resolved, continued=origin not in (None, root), root=stamp)
