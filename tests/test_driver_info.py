"""Every pymongo client this package creates, or is given, names it in its handshake: the ``driver`` of
``hello``'s client metadata carries ``langgraph-durable-mongodb`` and the installed version, once.

The metadata is read where pymongo keeps what it sends (``client.options.pool_options.metadata``);
no test here needs a server (``connect=false``).
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from pymongo import AsyncMongoClient, MongoClient

from langgraph_durable_mongodb import DurablePlatform, MongoDBCheckpointer, cli, demo

from .clients import names_us_once

URI = "mongodb://127.0.0.1:1/?connect=false&serverSelectionTimeoutMS=100"
def test_from_conn_string_names_us_on_the_sync_client() -> None:
    with DurablePlatform.from_conn_string(URI) as platform:
        assert names_us_once(platform.checkpointer.client)
    with MongoDBCheckpointer.from_conn_string(URI) as saver:
        assert names_us_once(saver.client)


async def test_from_conn_string_names_us_on_each_loops_async_client() -> None:
    async with DurablePlatform.from_conn_string(URI) as platform:
        assert names_us_once(platform.checkpointer.async_client.current())


def test_clients_you_pass_get_us_appended_once() -> None:
    client, async_client = MongoClient(URI), AsyncMongoClient(URI)
    try:
        # the checkpointer, the journal and the run locks each take the clients: still one entry
        DurablePlatform(client, async_client=async_client)
        DurablePlatform(client, async_client=async_client)
        assert names_us_once(client)
        assert names_us_once(async_client)
    finally:
        client.close()


def test_the_cli_client_names_us(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[MongoClient] = []

    class Recorded(MongoClient):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    # where the CLI's client is made (connections.command_client)
    monkeypatch.setattr(importlib.import_module("langgraph_durable_mongodb.storage.connections"), "MongoClient", Recorded)
    cli.main(["--uri", URI, "threads"])  # unreachable: exits non-zero, after making its client
    assert len(made) == 1 and names_us_once(made[0])


def test_the_demo_clients_name_us() -> None:
    client, platform, _ = demo.open_platform(URI, "demo")
    try:
        assert names_us_once(client)
        assert names_us_once(platform.checkpointer.async_client)
    finally:
        client.close()
