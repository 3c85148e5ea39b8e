"""Which node runs: how the journal learns where an effect's node is.

A *node locator* answers two questions: ``task()``, which task attempt runs now
(cheap, no I/O; its effects share one ordinal counter), and ``node()`` /
``anode()``, where that node is (a ``NodePosition``; may wait, asked once per
attempt). ``ResolverLocator`` names the node's visit from its config
(``resolver/visit.py``) and a ``TaskTrace`` (the platform's), or from the durable
scope bound around the graph call; tests and other platforms may bring their own.

Example::

    locator = ResolverLocator(saver, trace)   # what DurablePlatform serves
    locator = ResolverLocator()               # inside durable_scope(resolver)
    with effect_scope(journal, locator):
        graph.invoke(inputs, config)
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import Future
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config

from .. import _langgraph
from .._bson import require_str
from .._lru import LRU
from ..errors import NoDurableScopeError, SyncEffectOnEventLoopError
from ..resolver import ResolvedNamespace, TaskTrace, current_durable_scope
from ..resolver.namespace import root_task_name, running_tasks
from ..resolver.position import NodePosition
from ..resolver.running import StepEdit, resolve_task
from ..resolver.visit import visit_position
from ..storage.plans.interpreters import on_event_loop
from .attempt import Trail
from .labels import ThreadLabels
from .ports import RootCheckpoints

#: Threads whose labels a locator remembers (``ResolverLocator.labels_of``), the least recently used forgotten.
LABELS_REMEMBERED = 10_000


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


def _new(
    config: RunnableConfig, resolved: ResolvedNamespace, root: str | None, origin: str | None, stored: Any
) -> bool:
    """Whether no run but this one can have met the visit: the root checkpoint its task was prepared from was
    written by this process (``stored``: the saver's ``Stored``) and not read since, the visit continues no edit, and
    neither its task nor a task enclosing it is past its first attempt."""
    first_attempt = _langgraph.node_attempt(config.get("configurable") or {}) == 1
    fresh = origin == root and not resolved.continued and first_attempt and not resolved.retried
    return fresh and stored is not None and stored.written


def _edits(continuations: Mapping[str, Any]) -> dict[str, StepEdit]:
    """The saver's ``continuations`` (``Stored`` of the children's edited checkpoints) as the resolver reads them."""
    return {ns: StepEdit(stored.shift, stored.completed) for ns, stored in continuations.items()}


def _in_children(config: RunnableConfig) -> dict[str, Any] | None:
    """The running task's ``checkpoint_map`` when it runs inside a compiled child (a child's run may be edited)."""
    checkpoint_map = _langgraph.checkpoint_map(config.get("configurable") or {})
    return checkpoint_map if len(checkpoint_map) > 1 else None


class ResolverLocator:
    """Node positions from the resolver: a visit named by LangGraph's identity of the work (``resolver/visit.py``).

    With ``trace``, a node resolves from its config and the trace's facts of the tasks enclosing it
    (``running.resolve_task``); without, from the durable scope bound around the graph call. With ``saver``, a
    node's first effect waits until the root checkpoint its task was prepared from is stored (under
    ``durability="async"`` LangGraph stores it in the background: ``MongoDBCheckpointer.wait_stored``), learns
    which checkpoint an edit continues (``MongoDBCheckpointer.origin_of``), and the task's records trail its
    effects (``trail``).

    Example::

        locator = ResolverLocator()
        with durable_scope(resolver), effect_scope(journal, locator):
            graph.invoke(inputs, config)
    """

    def __init__(self, saver: RootCheckpoints | None = None, trace: TaskTrace | None = None) -> None:
        self.saver = saver
        self.trace = trace
        #: Per thread, the lineage its labels hold for and what this process knows of them (``labels_of``).
        self._labels: LRU[str, tuple[Any, ThreadLabels]] = LRU(LABELS_REMEMBERED)
        self._labels_lock = threading.Lock()

    def labels_of(self, thread_id: str) -> ThreadLabels | None:
        """What this process knows of the thread's labels, for the run now running it (with a saver; None without:
        no lineage tells whether another process ran the thread since, so no label is stored).

        Kept from run to run while the thread's lineage is ``ours`` (``RootCheckpoints.run_lineage``: no other
        process ran it since this one did), new and empty for a ``fresh`` thread, new and unknown otherwise.
        """
        if self.saver is None:
            return None
        lineage = self.saver.run_lineage(thread_id)
        with self._labels_lock:
            known = self._labels.get(thread_id)
            if known is not None and lineage is not None and (known[0] == lineage or lineage[1] == "ours"):
                labels = known[1]
            else:
                labels = ThreadLabels(fresh=lineage is not None and lineage[1] == "fresh")
            self._labels.put(thread_id, (lineage, labels))
            return labels

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
        """The running task's trailing records (with a saver): the task's writes wait for them, and those of the tasks
        that called it when it is a ``@task`` call."""
        if self.saver is None:
            return None
        config, thread_id, _, _, _ = self._task()
        tasks = running_tasks(config)
        if not tasks:
            return None
        saver = self.saver

        def hold(record: Future[Any]) -> None:
            for task in tasks:
                saver.hold_task_writes(thread_id, task, record)

        return Trail(hold)

    def _resolve(
        self, config: RunnableConfig, origin: str | None, edits: Mapping[str, StepEdit] | None = None
    ) -> ResolvedNamespace:
        if self.trace is not None:
            return resolve_task(config, self.trace, origin, edits)
        return current_durable_scope().resolve_current(config, origin)

    def node(self) -> NodePosition:
        """Where the running node is, for a sync effect.

        A sync effect called on the event loop of an async run (inside an async node) cannot wait for its root
        checkpoint: the run stores it on that very loop, which the sync call blocks. It sends that store's write
        itself when the store has reached it (``stored_now``); else the visit is ``unconfirmed``: an at-least-once
        effect runs (a crash before that checkpoint is stored runs it again under a new position, as
        ``durability="exit"`` does), an ``at_most_once`` one is refused (``confirm``). A sync run called from a
        coroutine stores its checkpoints in threads: there the effect waits.
        """
        config, thread_id, root, unstored, root_task = self._task()
        origin, edits, unconfirmed = None, None, False
        saver = self.saver  # there is a root only with a saver (_task): checked for the types' sake
        if saver is not None and root is not None:
            if unstored and on_event_loop() and saver.stores_on_event_loop(thread_id):
                unconfirmed = not saver.stored_now(thread_id, root)
            elif unstored:
                saver.wait_stored(thread_id, root)
            origin = saver.origin_of(thread_id, root, root_task)
            if (children := _in_children(config)) is not None:
                edits = _edits(saver.continuations(thread_id, children))
        resolved = self._resolve(config, origin, edits)
        stored = None
        if saver is not None and root is not None and origin == root:
            stored = saver.stored_root(thread_id, root)
        return self._position(config, thread_id, resolved, root, origin, stored, unconfirmed)

    def confirm(self, node: NodePosition) -> None:
        """Before an ``at_most_once`` effect of a visit a sync effect on the event loop located before its root
        checkpoint was stored (``NodePosition.unconfirmed``): go on once it is stored (the store under way sent from
        here, ``stored_now``), else refuse before anything runs. Run under a checkpoint a crash may lose, it would
        run again under another key: twice, which ``at_most_once`` never may."""
        saver = self.saver  # an unconfirmed visit is located only with a saver (node)
        if node.unconfirmed and node.root_key is not None and saver is not None and not saver.stored_now(
            node.thread_id, node.root_key
        ):
            thread_id, root = node.thread_id, node.root_key
            raise SyncEffectOnEventLoopError(
                f"an at_most_once effect was called sync inside an async node of thread {thread_id!r} before "
                f"checkpoint {root} was stored (durability='async'): the run stores it on this event loop, which the "
                "sync call blocks, so the effect cannot wait for it, and run under a checkpoint a crash may lose it "
                "could run again under another idempotency key. Nothing ran. Await the effect (an async @effect), "
                "call it with `await asyncio.to_thread(fn, ...)`, or run the graph with durability='sync'"
            )

    async def anode(self) -> NodePosition:
        config, thread_id, root, unstored, root_task = self._task()
        origin, edits = None, None
        saver = self.saver  # there is a root only with a saver (_task): checked for the types' sake
        if saver is not None and root is not None:
            if unstored:
                await saver.await_stored(thread_id, root)
            origin = await saver.aorigin_of(thread_id, root, root_task)
            if (children := _in_children(config)) is not None:
                edits = _edits(await saver.acontinuations(thread_id, children))
        resolved = self._resolve(config, origin, edits)
        stored = None
        if saver is not None and root is not None and origin == root:
            stored = await saver.astored_root(thread_id, root)
        return self._position(config, thread_id, resolved, root, origin, stored)

    @staticmethod
    def _position(
        config: RunnableConfig,
        thread_id: str,
        resolved: ResolvedNamespace,
        root: str | None,
        origin: str | None,
        stored: Any,
        unconfirmed: bool = False,
    ) -> NodePosition:
        """The visit's position. It continues an earlier one (its effects replay when their input is unchanged,
        run under new keys when it changed) after an edit (``origin``, or an edit of a child's run), and in a fork:
        a run started from a root checkpoint the thread had moved past (``Stored.superseded``)."""
        root_key = origin or _langgraph.checkpoint_of(config["configurable"], "")
        new = _new(config, resolved, root, origin, stored)
        forked = stored is not None and stored.superseded
        continued = origin not in (None, root) or resolved.continued or forked
        return visit_position(
            thread_id, resolved, root_key=root_key, new=new, continued=continued, unconfirmed=unconfirmed
        )
