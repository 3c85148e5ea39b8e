"""Stable identities for the nodes of a graph run, compiled children included.

``DurableSubgraphResolver`` turns a running node's LangGraph checkpoint namespace
into ordered child boundaries, ``visit_position`` names the node's visit from them
(LangGraph's own identity of the work: no query, no counter), and ``durable_scope``
binds a resolver to a graph run on any saver.

Example::

    resolver = DurableSubgraphResolver.from_graph(graph)   # once per compiled graph

    with durable_scope(resolver):
        graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})

    # in a node, at any depth:
    config = get_config()
    resolved = current_durable_scope().resolve_current(config)
    visit_position(config["configurable"]["thread_id"], resolved)
    # NodePosition('t1', 'agent/1/case_investigation/1f0c…/policy_analysis/s1', 'review_policy', 's1')
"""

from .durable_subgraphs import DurableSubgraphResolver
from .namespace import (
    ChildOperationBoundary,
    NamespaceSegment,
    ResolvedNamespace,
    SendOrigin,
    parse_namespace,
)
from .position import NodePosition
from .scope import (
    DurableScope,
    SupportsBind,
    current_durable_scope,
    durable_scope,
    maybe_durable_scope,
    scoped_aiter,
    scoped_iter,
)
from .topology import (
    GraphTopology,
    NodeKind,
    NodeTopology,
    Topology,
    TopologyIssue,
    discover_topology,
)
from .trace import TaskTrace
from .visit import ROOT_PATH, visit_position

__all__ = [
    "ROOT_PATH",
    "ChildOperationBoundary",
    "DurableScope",
    "DurableSubgraphResolver",
    "GraphTopology",
    "NamespaceSegment",
    "NodeKind",
    "NodePosition",
    "NodeTopology",
    "ResolvedNamespace",
    "SendOrigin",
    "SupportsBind",
    "TaskTrace",
    "Topology",
    "TopologyIssue",
    "current_durable_scope",
    "discover_topology",
    "durable_scope",
    "maybe_durable_scope",
    "parse_namespace",
    "scoped_aiter",
    "scoped_iter",
    "visit_position",
]
