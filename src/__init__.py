"""langgraph-durable-mongodb: durable LangGraph agents on MongoDB.

Example::

    from langgraph_durable_mongodb import DurablePlatform, SecureLLM, SecureTool

    with DurablePlatform.from_conn_string("mongodb://localhost:27017", db_name="agents") as platform:
        graph = platform.compile(builder)
        graph.invoke(inputs, {"configurable": {"thread_id": "case-42"}})
"""

import logging
from importlib.metadata import version as _version

from .checkpointer import CollectionNames, MongoDBCheckpointer
from .errors import (
    CheckpointNotStoredError,
    ClientConfigurationError,
    CorruptDocumentError,
    CorruptJournalEntryError,
    DeltaChainError,
    DurableMongoError,
    EffectInProgressError,
    EffectOutcomeUnknownError,
    EffectRecordLostError,
    EncryptionKeyError,
    IncompatibleStorageError,
    InputChangedError,
    InputChangedWarning,
    InvalidInputError,
    NamespaceError,
    NoDurableScopeError,
    NondeterminismError,
    OutcomeNotSerializableError,
    RecordedFailureError,
    RunLockLostError,
    RunsInFlightError,
    ServerUnreachableError,
    SyncEffectOnEventLoopError,
    ThreadBusyError,
    ThreadExistsError,
    TopologyError,
)
from .journal import ActivityJournal, SecureLLM, SecureTool, current_effect, effect
from .platform import DurableGraph, DurablePlatform
from .resolver import DurableSubgraphResolver
from .storage.format import FORMAT_VERSION

#: The installed distribution's version (its package metadata).
__version__ = _version("langgraph-durable-mongodb")
#: The storage format this version writes, and upgrades an older database to: the minor version while the major
#: is 0 (CHANGELOG.md).
STORAGE_FORMAT = FORMAT_VERSION

# Silent unless the application configures logging, like LangGraph's savers: DEBUG for every replay, INFO for
# take-overs, WARNING for a lost lock and an outcome that cannot be known (README, "Logging").
logging.getLogger("langgraph_durable_mongodb").addHandler(logging.NullHandler())

__all__ = [
    "STORAGE_FORMAT",
    "ActivityJournal",
    "CheckpointNotStoredError",
    "ClientConfigurationError",
    "CollectionNames",
    "CorruptDocumentError",
    "CorruptJournalEntryError",
    "DeltaChainError",
    "DurableGraph",
    "DurableMongoError",
    "DurablePlatform",
    "DurableSubgraphResolver",
    "EffectInProgressError",
    "EffectOutcomeUnknownError",
    "EffectRecordLostError",
    "EncryptionKeyError",
    "IncompatibleStorageError",
    "InputChangedError",
    "InputChangedWarning",
    "InvalidInputError",
    "MongoDBCheckpointer",
    "NamespaceError",
    "NoDurableScopeError",
    "NondeterminismError",
    "OutcomeNotSerializableError",
    "RecordedFailureError",
    "RunLockLostError",
    "RunsInFlightError",
    "SecureLLM",
    "SecureTool",
    "ServerUnreachableError",
    "SyncEffectOnEventLoopError",
    "ThreadBusyError",
    "ThreadExistsError",
    "TopologyError",
    "__version__",
    "current_effect",
    "effect",
]
