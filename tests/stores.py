"""``store``: one database on mongomock or on a server of the tier, for the modules that import it (no tests here)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import mongomock
import pytest
from mongomock_motor import AsyncMongoMockClient
from pymongo import AsyncMongoClient, MongoClient, monitoring

from langgraph_durable_mongodb.platform import DurablePlatform

from .clients import on_servers, tier_uri

#: The wire commands that write.
WRITES = {"insert", "update", "delete", "findAndModify", "createIndexes", "create", "drop", "dropIndexes"}


class Commands(monitoring.CommandListener):
    def __init__(self, db_name: str) -> None:
        self.db_name, self.seen = db_name, []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if event.database_name == self.db_name:
            self.seen.append((event.command_name, event.command.get(event.command_name), event.command.get("filter")))

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


class Store:
    """One database on mongomock or on a server of the tier, with a sync and an async client over its data."""

    def __init__(self, kind: str, uri: str | None) -> None:
        self.db_name = f"t_{uuid.uuid4().hex[:12]}"
        self.commands = Commands(self.db_name) if uri else None
        if uri is None:
            self.client = mongomock.MongoClient()
            self.async_client = AsyncMongoMockClient(mock_mongo_client=self.client)
        else:
            self.client = MongoClient(uri, event_listeners=[self.commands])
            self.async_client = AsyncMongoClient(uri, event_listeners=[self.commands])

    @property
    def db(self) -> Any:
        return self.client[self.db_name]

    def platform(self) -> DurablePlatform:
        return DurablePlatform(self.client, async_client=self.async_client, db_name=self.db_name)

    def snapshot(self) -> dict[str, Any]:
        """Every collection's documents and index names, as stored."""
        return {
            name: (sorted(map(repr, self.db[name].find())), sorted(self.db[name].index_information()))
            for name in sorted(self.db.list_collection_names())
        }

    def wire_writes(self) -> list[str]:
        return [name for name, _, _ in (self.commands.seen if self.commands else []) if name in WRITES]


@pytest.fixture(params=["mongomock", *on_servers("server")])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    made = Store(request.param, None if request.param == "mongomock" else tier_uri(request))
    yield made
    made.client.drop_database(made.db_name)
    if request.param != "mongomock":
        made.client.close()
