"""Translate a running node's checkpoint namespace into durable child boundaries.

``DurableSubgraphResolver`` walks the statically discovered topology and the
namespace together, left to right. Every segment must name a node of the graph
level it is in; each segment that enters a compiled child graph contributes a
``ChildOperationBoundary``; the rightmost segment is the running node and
contributes none. A namespace the topology cannot explain (an unknown name, a
segment beneath an ordinary node, a segment without task id) raises
``NamespaceError``: it never collapses onto a valid identity.

Bare numeric segments (LangGraph's per-task subgraph counter, never reset between
retry attempts, ``pregel/_loop.py``) are normalised so a retry resolves to the
identities of the first attempt:

* after a node that *is* a compiled graph the number can only count retry
  attempts (the node runs its graph once per attempt), so it is dropped;
* after a function node it numbers that task's compiled-graph runs across all
  attempts. ``resolve_config`` turns it into the run's position within its own
  attempt (``subgraph_run``), using the attempt starts recorded by the scope's
  ``TaskTrace``. ``resolve``/``resolve_namespace`` see the string only and take the
  number at face value (position n, i.e. no retry happened). This assumes the
  function runs its subgraphs one after another, each scheduling at least one
  task; LangGraph numbers concurrent runs of one task (``asyncio.gather``) in
  arrival order, so neither its checkpoints nor these positions are stable then.

Tasks inside compiled children are identified by their step within the child's
run, not by their task id, so a child LangGraph restarts from scratch meets the
same identities (see ``visit``).

Example::

    resolver = DurableSubgraphResolver.from_graph(compiled_root)
    resolver.validate()
    resolver.resolve_namespace(
        "case_investigation:task-a|policy_analysis:task-b|review_policy:task-c"
    )
    # [ChildOperationBoundary("case_investigation", "task-a"),
    #  ChildOperationBoundary("policy_analysis", "task-b")]
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel

from .. import _langgraph
from ..errors import NamespaceError, NoDurableScopeError, TopologyError
from .namespace import ChildOperationBoundary, NamespaceSegment, ResolvedNamespace, parse_namespace
from .running import Level, resolve_levels
from .topology import (
    GraphTopology,
    NodeKind,
    NodeTopology,
    Topology,
    TopologyIssue,
    discover_topology,
)
from .trace import TaskTrace

__all__ = ["DurableSubgraphResolver"]

_BIND_FIX = (
    "bind the scope around the whole graph call: durable_scope(...) around invoke/ainvoke, "
    "scoped_iter/scoped_aiter around stream/astream"
)


@dataclass(frozen=True)
class _WalkedSegment:
    """One walked namespace segment: the node it names, its kind, and its path of node names."""

    segment: NamespaceSegment
    kind: NodeKind
    path: str


class DurableSubgraphResolver:
    """Static topology of one compiled graph plus the rules that turn namespaces into identities.

    Build it once per compiled graph with ``from_graph``; it is immutable and
    thread-safe, and caches the translation of the last 4096 namespaces.

    Example::

        resolver = DurableSubgraphResolver.from_graph(graph)
        resolver.resolve("case_investigation:task-a|policy_analysis:task-b|review_policy:task-c").node_name
        # 'review_policy'
    """

    def __init__(self, topology: Topology) -> None:
        self._topology = topology
        self._cached_walk = functools.lru_cache(maxsize=4096)(self._walk_uncached)

    @classmethod
    def from_graph(
        cls, compiled: Pregel[Any, Any, Any, Any], root_saver: BaseCheckpointSaver[Any] | None = None
    ) -> DurableSubgraphResolver:
        """Discover the topology of ``compiled`` (see ``topology.discover_topology``; ``root_saver`` is the saver
        the root runs on, its own by default)."""
        return cls(discover_topology(compiled, root_saver))

    @property
    def topology(self) -> Topology:
        return self._topology

    @property
    def issues(self) -> tuple[TopologyIssue, ...]:
        """Unsupported shapes found by discovery; ``validate`` raises when there is any."""
        return self._topology.issues

    def validate(self) -> None:
        """Raise ``TopologyError`` naming every unsupported child path and its fix."""
        if self._topology.issues:
            lines = "\n".join(f"  - {issue.message}" for issue in self._topology.issues)
            raise TopologyError(
                f"graph '{self._topology.root.name}' cannot run durably "
                f"({len(self._topology.issues)} unsupported shape(s)):\n{lines}"
            )

    def resolve_namespace(self, ns: str) -> list[ChildOperationBoundary]:
        """Ordered child boundaries of ``ns`` (the string alone; see ``resolve``)."""
        return list(self.resolve(ns).boundaries)

    def resolve(self, ns: str) -> ResolvedNamespace:
        """Boundaries and running node of ``ns``, from the string alone.

        Without run-time facts, a subgraph counter after a function node is taken
        as that node's n-th subgraph run, no task is known to come from ``Send``,
        and every task is keyed by its task id. Live effects use ``resolve_config``.
        """
        levels = self._walk(ns)
        boundaries = tuple(
            ChildOperationBoundary(
                level.segment.name,
                level.segment.task_id,
                level.segment.counter if level.kind is NodeKind.CALLER else 0,
            )
            for level in levels[:-1]
        )
        node = levels[-1].segment
        return ResolvedNamespace(boundaries, node.name, node.task_id)

    def resolve_config(self, config: RunnableConfig, trace: TaskTrace, origin: str | None = None) -> ResolvedNamespace:
        """Resolve the task whose config is ``config`` (a node's ``get_config()``), walking this topology.

        Adds what only the run knows: for every task, whether it came from ``Send`` (and its index) and, inside
        a compiled child, its step within the child's run; for function nodes, the position of each subgraph
        run within its retry attempt. Facts about enclosing tasks come from ``trace``, those of the running node
        from its config metadata; the keys are those of ``running.resolve_levels``.

        Raises:
            NoDurableScopeError: ``trace`` did not see an enclosing task start (the scope was bound too late).
            NamespaceError: the namespace does not come from this graph, or ``config`` is not a node's own.
        """
        ns = (config.get("configurable") or {}).get("checkpoint_ns")
        calls = _langgraph.trailing_calls((config.get("metadata") or {}).get("langgraph_path"))
        levels = [Level(level.segment, level.path, level.kind is NodeKind.CHILD) for level in self._walk(ns, calls)]
        return resolve_levels(config, trace, levels, origin, _unbound)

    def _walk(self, ns: Any, calls: int = 0) -> tuple[_WalkedSegment, ...]:
        if not isinstance(ns, str):
            raise NamespaceError(f"a checkpoint namespace is a string, got {type(ns).__name__}")
        return self._cached_walk(ns, calls)

    def _walk_uncached(self, ns: str, calls: int) -> tuple[_WalkedSegment, ...]:
        """The segments of ``ns`` walked through the topology; its last ``calls`` are functional-API task calls,
        which no topology holds: each is an ordinary node beneath the one that called it."""
        segments = parse_namespace(ns)
        graphs: tuple[GraphTopology, ...] = (self._topology.root,)
        walked: list[_WalkedSegment] = []
        for position, segment in enumerate(segments):
            parent = walked[-1].path if walked else ""
            path = f"{parent}/{segment.name}" if parent else segment.name
            if position >= len(segments) - calls:
                walked.append(_WalkedSegment(segment, NodeKind.ORDINARY, path))
                continue
            node = _lookup(graphs, segment, ns, parent)
            rightmost = position == len(segments) - 1 - calls
            if rightmost and node.kind is NodeKind.CHILD:
                raise NamespaceError(
                    f"namespace {ns!r} ends at '{path}', which is a compiled child graph; "
                    "the running task is always a node inside it"
                )
            if not rightmost and node.kind is NodeKind.ORDINARY:
                raise NamespaceError(
                    f"namespace {ns!r} continues beneath '{path}', a node that runs no compiled graph "
                    "the topology knows of. If it does run one, let discovery find it: add the graph as "
                    "a node, or name it in the node's code (closure, global, default or partial argument)"
                )
            walked.append(_WalkedSegment(segment, node.kind, path))
            graphs = node.subgraphs
        return tuple(walked)


def _lookup(graphs: tuple[GraphTopology, ...], segment: NamespaceSegment, ns: str, parent: str) -> NodeTopology:
    """The node ``segment`` names in any of the graphs that can run at this level."""
    matches = [graph.nodes[segment.name] for graph in graphs if segment.name in graph.nodes]
    where = f"the graphs run by '{parent}'" if parent else "the root graph"
    if not matches:
        known = sorted({name for graph in graphs for name in graph.nodes})
        raise NamespaceError(
            f"segment '{segment.name}:{segment.task_id}' of namespace {ns!r} names no node of {where} "
            f"(nodes: {', '.join(known)}); the namespace does not come from this graph"
        )
    kinds = {match.kind for match in matches}
    if len(kinds) > 1:
        raise NamespaceError(
            f"node '{segment.name}' of {where} is {' in one graph and '.join(sorted(k.value for k in kinds))} "
            f"in another, so namespace {ns!r} is ambiguous; give the nodes distinct names"
        )
    subgraphs = tuple({id(graph): graph for match in matches for graph in match.subgraphs}.values())
    return NodeTopology(segment.name, matches[0].kind, subgraphs)


def _unbound(level: Level, what: str) -> Exception:
    return NoDurableScopeError(
        f"the durable scope did not see {what}, so its step, Send index and retry attempt are unknown; {_BIND_FIX}"
    )
