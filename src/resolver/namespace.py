"""LangGraph checkpoint namespaces, parsed, and the identities resolved from them.

While a node runs, ``configurable.checkpoint_ns`` names one segment per active
graph task, ``name:task_id``, joined by ``|``::

    case_investigation:task-a|policy_analysis:task-b|review_policy:task-c

A bare number after a segment (``caller:T|1|inner:U``) is LangGraph's per-task
subgraph counter: the task's second compiled-graph run. ``parse_namespace`` keeps it
on the segment it follows; ``DurableSubgraphResolver`` normalises it.

Example::

    [s.name for s in parse_namespace("a:1|b:2|3|c:4")]   # ['a', 'b', 'c']
    parse_namespace("a:1|b:2|3|c:4")[1].counter           # 3
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .. import _langgraph
from .._langgraph import NS_END, NS_SEP
from ..errors import NamespaceError

__all__ = [
    "ChildOperationBoundary",
    "NamespaceSegment",
    "ResolvedNamespace",
    "SendOrigin",
    "parse_namespace",
    "root_task_name",
    "running_tasks",
]



@dataclass(frozen=True)
class NamespaceSegment:
    """One ``name:task_id`` segment of a checkpoint namespace.

    ``counter`` is the bare number that followed it (0 when none). ``task_ns`` is
    the raw namespace of this task (up to this segment, without its counter) and
    ``parent_ns`` the raw namespace of the graph run that scheduled it; both are the
    keys LangGraph itself uses (task metadata ``langgraph_checkpoint_ns`` and
    ``checkpoint_map``).
    """

    name: str
    task_id: str
    counter: int
    task_ns: str
    parent_ns: str


@dataclass(frozen=True)
class SendOrigin:
    """The task came from ``Send`` number ``index`` (LangGraph's PUSH index) of the step ``group``.

    ``group`` names that step: the id of the checkpoint it was prepared from for a
    root-level task, ``step:N`` for a task inside a compiled child's run.
    """

    group: str
    index: int


@dataclass(frozen=True)
class ChildOperationBoundary:
    """Entry into a compiled child graph.

    ``task_key`` identifies the task that runs the child: its task id (the text
    after ``:`` in the namespace), or, for an edge-triggered root task, the root
    checkpoint it was prepared from (see ``visit``). ``subgraph_run`` tells apart the compiled-graph runs
    of one function-node task within an attempt (0 for the first; always 0 for a
    node that is itself a compiled graph). Set at run time: ``send`` when the task
    came from ``Send``, and ``step`` (the task's step within its enclosing child run)
    for a task inside a compiled child, which is then keyed by its step instead of
    its task id (see ``visit``).
    """

    name: str
    task_key: str
    subgraph_run: int = 0
    send: SendOrigin | None = None
    step: int | None = None


@dataclass(frozen=True)
class ResolvedNamespace:
    """The ordered child boundaries and the active (rightmost) node.

    Example::

        ResolvedNamespace(
            boundaries=(ChildOperationBoundary("case_investigation", "task-a"),
                        ChildOperationBoundary("policy_analysis", "task-b")),
            node_name="review_policy",
            node_task_key="task-c",
        )
    """

    boundaries: tuple[ChildOperationBoundary, ...]
    node_name: str
    node_task_key: str
    node_send: SendOrigin | None = None
    node_step: int | None = None
    #: A task enclosing the node is past its first attempt (a ``RetryPolicy`` retry): the child runs it started
    #: afresh meet the visits of the attempts before.
    retried: bool = False
    #: An edit of a compiled child's run on the node's path moved it on: the node continues the visit it interrupted.
    continued: bool = False


def _is_counter(part: str) -> bool:
    return part.isascii() and part.isdigit() and str(int(part)) == part


def parse_namespace(ns: object) -> tuple[NamespaceSegment, ...]:
    """Split a checkpoint namespace into segments; raise ``NamespaceError`` on any malformed part."""
    if not isinstance(ns, str) or not ns:
        raise NamespaceError(
            f"checkpoint namespace {ns!r} names no node; resolve it while a graph node runs "
            "(LangGraph sets configurable.checkpoint_ns for every task)"
        )
    return _parsed(ns)


@functools.lru_cache(maxsize=4096)
def _parsed(ns: str) -> tuple[NamespaceSegment, ...]:
    """``parse_namespace`` of a non-empty string; a run's effects parse the same few namespaces again and again."""
    segments: list[NamespaceSegment] = []
    prefix = ""
    follows_segment = False
    for position, part in enumerate(ns.split(NS_SEP)):
        here = f"part {position} ({part!r}) of namespace {ns!r}"
        if _is_counter(part):
            if not follows_segment:
                raise NamespaceError(f"{here} is a subgraph counter that follows no 'name:task_id' segment")
            if part == "0":  # LangGraph appends the counter only when it is non-zero
                raise NamespaceError(f"{here} is a zero subgraph counter, which LangGraph never writes")
            last = segments[-1]
            segments[-1] = NamespaceSegment(last.name, last.task_id, int(part), last.task_ns, last.parent_ns)
            follows_segment = False
        else:
            name, sep, task_id = part.partition(NS_END)
            if not sep and name:
                raise NamespaceError(
                    f"{here} has no task id; LangGraph writes such segments for a child compiled with "
                    "checkpointer=True, whose occurrences cannot be told apart. Compile it with "
                    "checkpointer=None so it inherits the root's saver"
                )
            if not name or not task_id or NS_END in task_id:
                raise NamespaceError(f"{here} is not of the form 'name:task_id'")
            task_ns = f"{prefix}{NS_SEP}{part}" if prefix else part
            segments.append(NamespaceSegment(name, task_id, 0, task_ns, prefix))
            follows_segment = True
        prefix = f"{prefix}{NS_SEP}{part}" if position else part
    if segments[-1].counter:
        raise NamespaceError(
            f"namespace {ns!r} ends with a subgraph counter: it names a subgraph run, not the node that is running"
        )
    return tuple(segments)


def running_tasks(config: Any) -> tuple[_langgraph.RunningTask, ...]:
    """The task whose config this is, as the loop running it saves its writes: the task's id (the last segment of
    its ``checkpoint_ns``), the namespace of that loop, and the checkpoint of that namespace it was prepared from.

    A functional-API task call (``@task``) runs on the loop of the node that called it: the call comes with its
    callers, down to that node, each saved by that loop on its own (a caller's writes may be saved while its call's
    are lost). Empty outside a task, or for a namespace that names none (``parse_namespace`` would refuse it)."""
    configurable = config.get("configurable") or {}
    try:
        segments = parse_namespace(configurable.get("checkpoint_ns"))
    except NamespaceError:
        return ()
    calls = _langgraph.trailing_calls((config.get("metadata") or {}).get("langgraph_path"))
    if calls >= len(segments):
        return ()
    loop_ns = segments[-1 - calls].parent_ns
    prepared_from = _langgraph.checkpoint_of(configurable, loop_ns)
    if prepared_from is None:
        return ()
    return tuple(_langgraph.RunningTask(s.task_id, loop_ns, prepared_from) for s in segments[-1 - calls :])


def root_task_name(ns: str) -> str:
    """The node of the root-level task a namespace starts with (``agent:T|...`` -> ``agent``).

    It reads the first segment only, unchecked: the rest may be one ``parse_namespace`` refuses (a child
    compiled with ``checkpointer=True``), and the resolver then raises ``TopologyError`` with its fix."""
    return ns.split(NS_SEP, 1)[0].partition(NS_END)[0]
