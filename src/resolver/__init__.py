"""Stable operation paths for compiled child graphs.

``DurableSubgraphResolver`` turns a running node's LangGraph checkpoint namespace
into ordered child boundaries, ``OrdinalAllocator`` gives each occurrence a stable
ordinal persisted in MongoDB, and ``durable_scope`` binds both to a graph run.

Example::

    resolver = DurableSubgraphResolver.from_graph(graph)   # once per compiled graph
    allocator = OrdinalAllocator(MongoClient()["app"])

    with durable_scope(resolver):
        graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})

    # in a node, at any depth:
    config = get_config()
    resolved = current_durable_scope().resolve_current(config)
    allocator.position(config["configurable"]["thread_id"], resolved)
    # NodePosition('t1', 'agent/1/case_investigation/1/policy_analysis/1', 'review_policy', '1')
"""

from .allocator import DEFAULT_COLLECTION, ROOT_PATH, OrdinalAllocator
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

__all__ = [
    "DEFAULT_COLLECTION",
    "ROOT_PATH",
    "ChildOperationBoundary",
    "DurableScope",
    "DurableSubgraphResolver",
    "GraphTopology",
    "NamespaceSegment",
    "NodeKind",
    "NodeTopology",
    "NodePosition",
    "OrdinalAllocator",
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
]
