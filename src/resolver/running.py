"""Resolve the running node from its own config and the facts a ``TaskTrace`` recorded of the tasks enclosing it.

A node's config names its namespace (one ``name:task_id`` segment per graph level, with LangGraph's subgraph
counters), the root checkpoint its task was prepared from, and its own step and trigger. The trace adds what the
config no longer shows of the enclosing tasks (``trace.py``). Both resolvers end here:

* ``resolve_task``: the platform's. It needs no topology: a subgraph counter, after any node, is turned into the
  run's position within its retry attempt from the attempts the trace recorded (a node that is a compiled graph
  runs it once per attempt, so that position is 0). A child without a recorded run start ran without the
  platform checkpointer (``checkpointer=False``), and one whose namespace segment has no task id keeps a
  history of its own (``checkpointer=True``): ``TopologyError`` for both, at the first effect that meets them.
* ``DurableSubgraphResolver.resolve_config``: a scope's, walking its graph's topology too (``durable_subgraphs.py``).

Example::

    resolved = resolve_task(get_config(), trace)
    resolved.boundaries    # (ChildOperationBoundary("case_investigation", "<root checkpoint id>"), ...)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig

from .. import _langgraph
from ..errors import NamespaceError, TopologyError
from ..storage.visit_keys import call_key
from .namespace import ChildOperationBoundary, NamespaceSegment, ResolvedNamespace, SendOrigin, parse_namespace
from .trace import TaskTrace, is_pull, send_index_of

__all__ = ["Level", "StepEdit", "resolve_levels", "resolve_task"]


@dataclass(frozen=True)
class Level:
    """One walked namespace segment: the node it names, its path of node names, and whether its subgraph counter
    only counts retry attempts (a node that is a compiled graph) and is dropped."""

    segment: NamespaceSegment
    path: str
    counts_attempts: bool = False


def resolve_task(
    config: RunnableConfig, trace: TaskTrace, origin: str | None = None, edits: Mapping[str, StepEdit] | None = None
) -> ResolvedNamespace:
    """Resolve the task whose config is ``config`` (a node's ``get_config()``) from ``trace`` alone, no topology.

    Args:
        config: the running node's config.
        trace: the facts recorded of the runs' tasks (the platform's, fed by its checkpointer's reads).
        origin: the root checkpoint the task continues (see ``resolve_levels``).
        edits: the edits of compiled children's runs the task's path was prepared from (see ``resolve_levels``).

    Returns:
        The node's boundaries and key.

    Raises:
        TopologyError: a compiled child on the node's path was compiled with ``checkpointer=True`` or ``False``
            (the message names it and the fix).
        NamespaceError: ``config`` is not a node's own config.
    """
    ns = (config.get("configurable") or {}).get("checkpoint_ns")
    if not isinstance(ns, str):
        raise NamespaceError(f"a checkpoint namespace is a string, got {type(ns).__name__}")
    _refuse_own_history(ns)
    levels, path = [], ""
    for segment in parse_namespace(ns):
        path = f"{path}/{segment.name}" if path else segment.name
        levels.append(Level(segment, path))
    return resolve_levels(config, trace, levels, origin, _ran_without_platform_saver, edits)


def _refuse_own_history(ns: str) -> None:
    """A segment without task id is a child compiled with ``checkpointer=True``: one history for every occurrence."""
    names: list[str] = []
    for part in ns.split(_langgraph.NS_SEP):
        if part.isdigit():
            continue
        name, sep, _ = part.partition(_langgraph.NS_END)
        names.append(name)
        if not sep and name:
            raise TopologyError(
                f"child '{'/'.join(names)}' was compiled with checkpointer=True: it keeps one history for all its "
                "occurrences, so they cannot be told apart. Compile it with checkpointer=None so it inherits the "
                "root's saver"
            )


def _ran_without_platform_saver(level: Level, what: str) -> Exception:
    return TopologyError(
        f"child '{level.path}' ran without the platform checkpointer ({what} was not seen through it): it was "
        "compiled with checkpointer=False, so its runs are not saved and its nodes cannot be identified durably. "
        "Compile it with checkpointer=None so it inherits the root's saver"
    )


def resolve_levels(
    config: RunnableConfig,
    trace: TaskTrace,
    levels: Sequence[Level],
    origin: str | None,
    unseen: Callable[[Level, str], Exception],
    edits: Mapping[str, StepEdit] | None = None,
) -> ResolvedNamespace:
    """Resolve the running node from its walked namespace ``levels``, the trace's facts and its own metadata.

    A root-level node triggered by an edge is keyed by the root checkpoint its task was prepared from, not by
    its task id: ``origin`` when given (the checkpoint an edit of the latest checkpoint continues, see
    ``MongoDBCheckpointer.origin_of``), else the task's own. A ``Send`` task at the root is grouped by the same
    checkpoint. A task inside a compiled child is keyed by its step within the child's run, less the steps an edit
    of that run moved it on (``edits``, by the namespace of the run: ``MongoDBCheckpointer.continuations``), so the
    visit the edit interrupted continues. ``unseen(level, what)`` is raised when the trace recorded nothing of an
    enclosing task's start (``what``).
    """
    configurable = config.get("configurable") or {}
    ns, thread_id = configurable.get("checkpoint_ns"), str(configurable.get("thread_id", ""))
    root = origin if origin is not None else _langgraph.checkpoint_of(configurable, "")
    own = _own_facts(config, ns, levels[-1])
    callers = _callers(levels, own, trace, thread_id)
    edits = edits or {}
    boundaries = tuple(
        _task_boundary(level, callers[i], root, edits)
        if i in callers
        else _boundary(level, trace, thread_id, root, unseen, edits)
        for i, level in enumerate(levels[:-1])
    )
    retried = any((trace.run_attempt(thread_id, lv.segment.task_ns, lv.segment.counter) or 1) > 1 for lv in levels[:-1])
    node = _task_boundary(levels[-1], own, root, edits)
    continued = any(_edit_of(level, edits) for level in levels)
    return ResolvedNamespace(boundaries, node.name, node.task_key, node.send, node.step, retried, continued)


@dataclass(frozen=True)
class StepEdit:
    """An edit of a compiled child's run (``update_state`` at its ``interrupt()``), or a checkpoint of the run after
    one: how many steps later than without it the run goes on, and, for an edit 0.4.0 stored as the interrupted
    node (``as_node``), the nodes whose task it completed, whose next visit is new (this version folds them into
    the shift)."""

    shift: int
    completed: frozenset[str] = frozenset()


def _edit_of(level: Level, edits: Mapping[str, StepEdit]) -> int:
    """The steps the edits of the run ``level``'s task belongs to moved it on (0: none, or an edit stored by 0.4.0
    completed it)."""
    edit = edits.get(level.segment.parent_ns) if level.segment.parent_ns else None
    return edit.shift if edit is not None and level.segment.name not in edit.completed else 0


def _step_of(level: Level, step: int | None, edits: Mapping[str, StepEdit]) -> int | None:
    """``level``'s step within its child's run, as the visit an edit of that run continues numbers it."""
    return None if step is None else step - _edit_of(level, edits)


@dataclass(frozen=True)
class _TaskFacts:
    """What a task's own metadata (or that of a task it called) tells of it: its ``langgraph_path`` and step."""

    path: Any
    step: int | None


def _own_facts(config: RunnableConfig, ns: Any, node: Level) -> _TaskFacts:
    """The running task's path and step, from its config's metadata (the step only where a key needs it: inside a
    compiled child's run, or in a task call)."""
    metadata = config.get("metadata") or {}
    if metadata.get("langgraph_checkpoint_ns", ns) != ns:
        raise NamespaceError(
            f"config metadata describes task {metadata['langgraph_checkpoint_ns']!r}, not the running "
            f"task {ns!r}; pass the node's own config (langgraph.config.get_config())"
        )
    step = None
    if node.segment.parent_ns:
        step = metadata.get("langgraph_step")
        if not isinstance(step, int):
            raise NamespaceError(
                f"config metadata of task {ns!r} has no langgraph_step; pass the node's own config "
                "(langgraph.config.get_config())"
            )
    return _TaskFacts(metadata.get("langgraph_path"), step)


def _callers(levels: Sequence[Level], own: _TaskFacts, trace: TaskTrace, thread_id: str) -> dict[int, _TaskFacts]:
    """The facts of the tasks on the node's path that made a functional-API task call, by level: a call's path names
    its caller's path, and its step is the caller's. The running task's own metadata tells of it; an enclosing call
    (one that ran a compiled child) is known from the trace."""
    callers: dict[int, _TaskFacts] = {}
    call, step = _langgraph.task_call(own.path), own.step
    for index in range(len(levels) - 2, -1, -1):
        if call is not None:
            callers[index] = _TaskFacts(call.caller_path, step)
            call = _langgraph.task_call(call.caller_path)
            continue
        facts = trace.task(thread_id, levels[index].segment.task_ns)
        call, step = (facts.call, facts.step) if facts is not None else (None, None)
    return callers


def _task_boundary(level: Level, facts: _TaskFacts, root: Any, edits: Mapping[str, StepEdit]) -> ChildOperationBoundary:
    """The key of a task its own facts describe: a task call by its index among its caller's calls, a ``Send`` by its
    group and index, a task inside a compiled child's run by its step, a root-level one by ``_task_key``."""
    segment = level.segment
    call = _langgraph.task_call(facts.path)
    if call is not None:
        return ChildOperationBoundary(segment.name, call_key(call.index))
    step = _step_of(level, facts.step, edits) if segment.parent_ns else None
    send = _send_origin(send_index_of(facts.path), segment, step, root, level.path)
    return ChildOperationBoundary(segment.name, _task_key(segment, is_pull(facts.path), root), send=send, step=step)


def _boundary(
    level: Level,
    trace: TaskTrace,
    thread_id: str,
    root: Any,
    unseen: Callable[[Level, str], Exception],
    edits: Mapping[str, StepEdit],
) -> ChildOperationBoundary:
    segment = level.segment
    facts = trace.task(thread_id, segment.task_ns)
    if facts is None:
        raise unseen(level, f"task '{level.path}' ({segment.task_ns}) start")
    run = 0
    if segment.counter and not level.counts_attempts:
        observed = trace.subgraph_run(thread_id, segment.task_ns, segment.counter)
        if observed is None:
            raise unseen(level, f"subgraph run {segment.counter} of '{level.path}'")
        run = observed
    if facts.call is not None:
        return ChildOperationBoundary(segment.name, call_key(facts.call.index), run)
    child_step = _step_of(level, facts.step, edits) if segment.parent_ns else None
    send = _send_origin(facts.send_index, segment, child_step, root, level.path)
    return ChildOperationBoundary(segment.name, _task_key(segment, facts.pulled, root), run, send, child_step)


def _task_key(segment: NamespaceSegment, pull: bool, root: Any) -> str:
    """A root-level edge-triggered task: the root checkpoint it was prepared from; any other: its task id."""
    return root if pull and not segment.parent_ns and isinstance(root, str) and root else segment.task_id


def _send_origin(
    index: int | None, segment: NamespaceSegment, step: int | None, root: Any, path: str
) -> SendOrigin | None:
    """The Send group is the step the task belongs to: ``step:N`` inside a child run, else the root checkpoint."""
    if index is None:
        return None
    if step is not None:
        return SendOrigin(f"step:{step}", index)
    if not isinstance(root, str):
        raise NamespaceError(
            f"Send task '{path}' has no checkpoint_map entry for {segment.parent_ns!r}; "
            "resolve it from the node's own config (langgraph.config.get_config())"
        )
    return SendOrigin(root, index)
