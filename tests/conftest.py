"""Shared fixtures. The real-server tier: tests that use `mongodb_uri` (marked `server` automatically).

Server choice (see `choose_server`): MONGODB_URI if set; else a throwaway FerretDB started by
scripts/ferretdb.py when it can be built or is cached; else skip, except under CI=true where the
tier must run, so a missing server fails the run instead.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from pymongo import MongoClient

ROOT = Path(__file__).resolve().parents[1]


def _load_ferretdb_script():
    spec = importlib.util.spec_from_file_location("ferretdb_script", ROOT / "scripts" / "ferretdb.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses need the module registered
    spec.loader.exec_module(module)
    return module


ferretdb = _load_ferretdb_script()


def in_ci(env: Mapping[str, str]) -> bool:
    return env.get("CI", "").strip().lower() in ("true", "1")


def choose_server(env: Mapping[str, str], ferretdb_available: bool) -> tuple[str, str]:
    """Decide how the server tier runs. Returns one of
    ("uri", <MONGODB_URI>), ("ferretdb", ""), ("skip", <reason>), ("fail", <reason>)."""
    uri = env.get("MONGODB_URI", "").strip()
    if uri:
        return "uri", uri
    if ferretdb_available:
        return "ferretdb", ""
    reason = (
        "server tier: MONGODB_URI is not set and FerretDB can't be started "
        f"(no `go` on PATH and no cached binary at {ferretdb.binary_path()}); "
        "install Go or set MONGODB_URI=mongodb://..."
    )
    return ("fail", reason + " [CI=true: the server tier must run]") if in_ci(env) else ("skip", reason)


@pytest.fixture(scope="session")
def mongodb_uri() -> Iterator[str]:
    """URI of a real MongoDB wire-protocol server, reachable over TCP."""
    action, detail = choose_server(os.environ, ferretdb.is_available())
    if action == "skip":
        pytest.skip(detail)
    if action == "fail":
        pytest.fail(detail, pytrace=False)
    if action == "uri":
        with MongoClient(detail, serverSelectionTimeoutMS=10_000) as client:
            try:
                client.admin.command("ping")
            except Exception as exc:
                pytest.fail(f"MONGODB_URI={detail} does not answer ping: {exc}", pytrace=False)
        yield detail
        return
    try:
        server = ferretdb.start()
    except ferretdb.FerretDBError as exc:
        pytest.fail(f"could not start FerretDB: {exc}", pytrace=False)
    try:
        yield server.uri
    finally:
        ferretdb.stop(server)


@pytest.fixture(scope="session")
def _server_admin_client(mongodb_uri: str) -> Iterator[MongoClient]:
    with MongoClient(mongodb_uri) as client:
        yield client


@pytest.fixture
def server_db_name(_server_admin_client: MongoClient) -> Iterator[str]:
    """A fresh database name per test; the database is dropped afterwards."""
    name = f"test_{uuid.uuid4().hex}"
    yield name
    _server_admin_client.drop_database(name)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Everything that needs the server is in the `server` tier: `-m "not server"` runs the fast tier.
    for item in items:
        if "mongodb_uri" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.server)


# Client-parametrized fixtures (mongomock, mongomock_motor, pymongo, AsyncMongoClient, motor).
pytest_plugins = ["tests.clients"]
