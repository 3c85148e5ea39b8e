"""The platform checkpointer: LangGraph's full saver contract on MongoDB."""

from .documents import CollectionNames
from .saver import MongoDBCheckpointer

__all__ = ["CollectionNames", "MongoDBCheckpointer"]
