"""Stable operation paths for compiled child graphs.

``DurableSubgraphResolver`` turns a running node's LangGraph checkpoint namespace
into ordered child boundaries, ``OrdinalAllocator`` gives each occurrence a stable
ordinal persisted in MongoDB, and ``durable_scope`` binds both to a graph run.

Example::

    resolver = DurableSubgraphResolver.from_graph(graph)   # once per compiled graph
    allocator = OrdinalAllocator(MongoClient()["app"])

    with durable_scope(resolver, context=platform_context):
        graph.invoke(inputs, {"configurable": {"thread_id": "t1"}})

    # in a node, at any depth:
    config = get_config()
    resolved = current_scope().resolve_current(config)
    allocator.position(config["configurable"]["thread_id"], resolved)
    # OperationPosition('agent/1/case_investigation/1/policy_analysis/1', 'review_policy', '1')
"""

from langgraph_durable_mongodb.resolver.allocator import (
    DEFAULT_COLLECTION,
    ROOT_PATH,
    OperationPosition,
    OrdinalAllocator,
)
from langgraph_durable_mongodb.resolver.durable_subgraphs import DurableSubgraphResolver
from langgraph_durable_mongodb.resolver.namespace import (
    ChildOperationBoundary,
    NamespaceSegment,
    ResolvedNamespace,
    SendOrigin,
    parse_namespace,
)
from langgraph_durable_mongodb.resolver.scope import (
    DurableScope,
    SupportsBind,
    current_scope,
    durable_scope,
    maybe_current_scope,
    scoped_aiter,
    scoped_iter,
)
from langgraph_durable_mongodb.resolver.topology import (
    GraphTopology,
    NodeKind,
    NodeTopology,
    Topology,
    TopologyIssue,
    discover_topology,
)
from langgraph_durable_mongodb.resolver.trace import TaskTrace

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
    "OperationPosition",
    "OrdinalAllocator",
    "ResolvedNamespace",
    "SendOrigin",
    "SupportsBind",
    "TaskTrace",
    "Topology",
    "TopologyIssue",
    "current_scope",
    "discover_topology",
    "durable_scope",
    "maybe_current_scope",
    "parse_namespace",
    "scoped_aiter",
    "scoped_iter",
]
