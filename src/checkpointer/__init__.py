"""The platform checkpointer: LangGraph's full saver contract on MongoDB."""

from ..storage.schema import CollectionNames
from .saver import MongoDBCheckpointer
from .ttl import TTLConfig

__all__ = ["CollectionNames", "MongoDBCheckpointer", "TTLConfig"]
