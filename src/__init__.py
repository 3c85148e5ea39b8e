"""langgraph-durable-mongodb: durable LangGraph agents on MongoDB."""

from .checkpointer import CollectionNames, MongoDBCheckpointer
from .errors import (
    ClientConfigurationError,
    DeltaChainError,
    DurableMongoError,
    InvalidInputError,
    NamespaceError,
    NoDurableScopeError,
    TopologyError,
)

__all__ = [
    "ClientConfigurationError",
    "CollectionNames",
    "DeltaChainError",
    "DurableMongoError",
    "InvalidInputError",
    "MongoDBCheckpointer",
    "NamespaceError",
    "NoDurableScopeError",
    "TopologyError",
]
