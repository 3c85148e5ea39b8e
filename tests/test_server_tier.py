"""The real-server tier itself: the server is reachable with every driver we support, and the
tier's run/skip/fail policy holds (those unit tests need no server)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest
from bson import Binary
from pymongo import AsyncMongoClient, MongoClient

from tests.conftest import choose_server, ferretdb

# --- against the server (auto-marked `server`) -------------------------------------------------


def test_sync_client_ping_and_round_trip(mongodb_uri: str, server_db_name: str) -> None:
    with MongoClient(mongodb_uri, serverSelectionTimeoutMS=10_000) as client:
        assert client.admin.command("ping")["ok"] == 1
        assert client.address is not None  # a TCP (host, port)
        coll = client[server_db_name]["docs"]
        doc = {"_id": "a", "payload": b"\x00\x01\xff" * 1000, "nested": {"step": 3, "tags": ["x"]}}
        coll.insert_one(doc)
        assert coll.find_one({"nested.step": 3}) == doc


async def test_async_client_ping_and_round_trip(mongodb_uri: str, server_db_name: str) -> None:
    client = AsyncMongoClient(mongodb_uri, serverSelectionTimeoutMS=10_000)
    try:
        assert (await client.admin.command("ping"))["ok"] == 1
        coll = client[server_db_name]["docs"]
        await coll.insert_one({"_id": 1, "blob": Binary(b"abc")})
        assert await coll.find_one({"_id": 1}) == {"_id": 1, "blob": b"abc"}
    finally:
        await client.close()


async def test_motor_ping_and_round_trip(mongodb_uri: str, server_db_name: str) -> None:
    motor_asyncio = pytest.importorskip("motor.motor_asyncio")
    client = motor_asyncio.AsyncIOMotorClient(mongodb_uri, serverSelectionTimeoutMS=10_000)
    try:
        assert (await client.admin.command("ping"))["ok"] == 1
        coll = client[server_db_name]["docs"]
        await coll.insert_one({"_id": 1, "v": "motor"})
        assert await coll.find_one({"_id": 1}) == {"_id": 1, "v": "motor"}
    finally:
        client.close()


def test_server_db_name_is_unique_and_dropped(mongodb_uri: str, server_db_name: str) -> None:
    assert server_db_name.startswith("test_")
    with MongoClient(mongodb_uri) as client:
        client[server_db_name]["c"].insert_one({"x": 1})
        assert server_db_name in client.list_database_names()


def test_stdlib_ping_speaks_the_wire_protocol(mongodb_uri: str) -> None:
    with MongoClient(mongodb_uri) as client:
        host, port = client.address  # the server the driver actually talks to
    assert ferretdb.ping(host, port)
    assert not ferretdb.ping("127.0.0.1", ferretdb.free_port())


# --- the tier's policy (no server needed) ------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "available", "expected"),
    [
        ({"MONGODB_URI": "mongodb://db:27017"}, False, ("uri", "mongodb://db:27017")),
        ({"MONGODB_URI": "mongodb://db:27017", "CI": "true"}, True, ("uri", "mongodb://db:27017")),
        ({}, True, ("ferretdb", "")),
        ({"CI": "true"}, True, ("ferretdb", "")),
        ({"MONGODB_URI": "  "}, True, ("ferretdb", "")),
    ],
)
def test_choose_server_runs(env: dict, available: bool, expected: tuple) -> None:
    assert choose_server(env, available) == expected


@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_choose_server_skips_locally_without_a_server(ci: str | None) -> None:
    env = {} if ci is None else {"CI": ci}
    action, reason = choose_server(env, ferretdb_available=False)
    assert action == "skip"
    assert "MONGODB_URI" in reason and "go" in reason


@pytest.mark.parametrize("ci", ["true", "TRUE", "1"])
def test_choose_server_fails_in_ci_without_a_server(ci: str) -> None:
    action, reason = choose_server({"CI": ci}, ferretdb_available=False)
    assert action == "fail"
    assert "CI=true" in reason


def test_cache_dir_honours_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("FERRETDB_BIN", raising=False)
    assert ferretdb.binary_path() == tmp_path / "langgraph-durable-mongodb" / "ferretdb-v1.24.2" / "ferretdb"


def test_install_without_go_fails_clearly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("FERRETDB_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert not ferretdb.is_available()
    with pytest.raises(ferretdb.FerretDBError, match="`go` is not on PATH"):
        ferretdb.install(verbose=False)


def _fake_binary(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fake-ferretdb"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script")
def test_start_reports_early_exit_with_log_tail(tmp_path: Path) -> None:
    binary = _fake_binary(tmp_path, 'echo "listen: address already in use" >&2; exit 3')
    with pytest.raises(ferretdb.FerretDBError, match=r"exited with code 3(.|\n)*address already in use"):
        ferretdb.start(binary=binary, timeout=10)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script")
def test_start_times_out_and_kills_a_silent_server(tmp_path: Path) -> None:
    binary = _fake_binary(tmp_path, 'echo "still starting"; exec sleep 60')
    with pytest.raises(ferretdb.FerretDBError, match=r"no ping answer in 1s(.|\n)*still starting"):
        ferretdb.start(binary=binary, timeout=1)

