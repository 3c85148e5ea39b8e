"""Shared fixtures. The real-server tier: tests that use `mongodb_uri` (marked `server` automatically).

The tier runs every server test once per server (the test id names it):

- ``ferretdb``: a throwaway FerretDB 1.x (SQLite) built with Go by tests/servers/ferretdb.py;
- ``mongo_java_server``: a throwaway mongo-java-server (in memory) built with Maven by
  tests/servers/mongo_java_server.py. Unlike FerretDB it updates one document atomically, as MongoDB does,
  so the concurrency tests hold it to MongoDB's guarantees (see tests/workers/harness.py);
- ``uri``: only the server in ``MONGODB_URI``, when that is set.

Per server (see `choose_server`): MONGODB_URI if set; else start it when it can be built or is cached;
else skip, except under CI=true where the tier must run, so a missing server fails the run instead.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from pymongo import MongoClient

from tests.servers import ferretdb, mongo_java_server

#: The servers this suite builds and starts itself, in the order their tests run.
LAUNCHED = ("ferretdb", "mongo_java_server")


def in_ci(env: Mapping[str, str]) -> bool:
    return env.get("CI", "").strip().lower() in ("true", "1")


def server_ids(env: Mapping[str, str]) -> list[str]:
    """The servers the tier runs on: ``["uri"]`` when MONGODB_URI is set, else every server we launch."""
    return ["uri"] if env.get("MONGODB_URI", "").strip() else list(LAUNCHED)


def why_not_startable(server: str) -> str:
    """Why this machine can't start ``server`` ("" when it can), naming the fix."""
    if server == "ferretdb":
        if ferretdb.is_available():
            return ""
        return f"no `go` on PATH and no cached binary at {ferretdb.binary_path()}; install Go"
    missing = mongo_java_server.missing_tools()
    if not missing:
        return ""
    return (
        f"no {' and no '.join(f'`{t}`' for t in missing)} on PATH (jar cache: {mongo_java_server.jar_path()}); "
        "install Java 17+ and Maven"
    )


def choose_server(env: Mapping[str, str], server: str, why_not: str) -> tuple[str, str]:
    """Decide how the tier runs on ``server`` (one of ``server_ids(env)``), given ``why_not_startable(server)``.
    Returns one of ("uri", <MONGODB_URI>), ("start", ""), ("skip", <reason>), ("fail", <reason>)."""
    uri = env.get("MONGODB_URI", "").strip()
    if uri:
        return "uri", uri
    if not why_not:
        return "start", ""
    reason = f"server tier on {server}: {why_not}, or set MONGODB_URI=mongodb://..."
    return ("fail", reason + " [CI=true: the server tier must run]") if in_ci(env) else ("skip", reason)


def _serve(server: str) -> Iterator[str]:
    """Yield the URI of ``server`` for the session: MONGODB_URI, or a server started now and stopped after."""
    action, detail = choose_server(os.environ, server, why_not_startable(server) if server in LAUNCHED else "")
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
    launcher = {"ferretdb": ferretdb, "mongo_java_server": mongo_java_server}[server]
    try:
        started = launcher.start()
    except (ferretdb.FerretDBError, mongo_java_server.MongoJavaServerError) as exc:
        pytest.fail(f"could not start {server}: {exc}", pytrace=False)
    try:
        yield started.uri
    finally:
        launcher.stop(started)


@pytest.fixture(scope="session")
def given_mongodb_uri() -> Iterator[str]:
    """MONGODB_URI, checked to answer ping."""
    yield from _serve("uri")


@pytest.fixture(scope="session")
def ferretdb_uri() -> Iterator[str]:
    """The session's FerretDB (MONGODB_URI instead, when set)."""
    yield from _serve("ferretdb")


@pytest.fixture(scope="session")
def mongo_java_server_uri() -> Iterator[str]:
    """The session's mongo-java-server (MONGODB_URI instead, when set)."""
    yield from _serve("mongo_java_server")


#: The fixture that serves each of ``server_ids``: each server starts once, on first use.
SERVER_FIXTURES = {"uri": "given_mongodb_uri", "ferretdb": "ferretdb_uri", "mongo_java_server": "mongo_java_server_uri"}


def uri_of(request: pytest.FixtureRequest, server: str) -> str:
    return request.getfixturevalue(SERVER_FIXTURES[server])


@pytest.fixture(scope="session", params=[pytest.param(s, marks=pytest.mark.mongodb_server(s)) for s in server_ids(os.environ)])
def mongodb_uri(request: pytest.FixtureRequest) -> str:
    """URI of a real MongoDB wire-protocol server, reachable over TCP: each test runs once per server."""
    return uri_of(request, request.param)


@pytest.fixture
def mongodb_server(request: pytest.FixtureRequest) -> str:
    """The server the test runs on: ``ferretdb``, ``mongo_java_server`` or ``uri`` (its ``mongodb_server`` mark)."""
    mark = request.node.get_closest_marker("mongodb_server")
    if mark is None:
        raise LookupError(
            f"{request.node.nodeid} reaches the server tier without naming a server: take `mongodb_uri`, "
            "or parametrize with tests.clients.on_servers(...)"
        )
    return mark.args[0]


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
        if {"mongodb_uri", *SERVER_FIXTURES.values()} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.server)


#: What the selected tests may need built, in the order it is built, and the fixture that asks for each.
BUILT = {"ferretdb": "ferretdb_uri", "mongo_java_server": "mongo_java_server_uri", "toxiproxy": "toxiproxy_server"}


def builds_needed(items: list[pytest.Item], env: Mapping[str, str]) -> list[str]:
    """The servers the selected ``items`` run on that this suite builds (``BUILT``), in build order: none for the
    fast tier, nor for a server tier on MONGODB_URI (bar toxiproxy, which fronts it)."""
    needed: set[str] = set()
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        needed.update(name for name, fixture in BUILT.items() if fixture in fixtures)
        mark = item.get_closest_marker("mongodb_server")
        if mark is not None:
            needed.add(mark.args[0])
        elif item.get_closest_marker("server") is not None and "mongodb_uri" in fixtures:
            needed.update(server_ids(env))
    if env.get("MONGODB_URI", "").strip():
        needed -= set(LAUNCHED)
    return [name for name in BUILT if name in needed]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build what the selected tests run on, once, before the first test (a cold build takes minutes, and a test
    should not be timed with it), and say so; the fast tier builds nothing. A server that cannot be built here is
    left to its fixture, which skips, or fails under CI=true, naming the fix."""
    from tests.servers import toxiproxy

    if session.config.option.collectonly:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    launchers = {"ferretdb": ferretdb, "mongo_java_server": mongo_java_server, "toxiproxy": toxiproxy}
    for name in builds_needed(session.items, os.environ):
        launcher = launchers[name]
        cached = launcher.is_cached()
        try:
            built = launcher.install(verbose=True)
        except (ferretdb.FerretDBError, mongo_java_server.MongoJavaServerError, toxiproxy.ToxiproxyError) as exc:
            line = f"{name}: not built ({exc})"
        else:
            line = f"{name}: {'cached at' if cached else 'built once, for every later run, into'} {built}"
        if reporter is not None:
            reporter.write_line(line)


# Client-parametrized fixtures (mongomock, mongomock_motor, pymongo, AsyncMongoClient, motor), and the
# journal tests' ``jface`` (an ActivityJournal on those clients).
pytest_plugins = ["tests.clients", "tests.journal_helpers", "tests.stores", "tests.telemetry_helpers"]


@pytest.fixture(scope="session")
def toxiproxy_server() -> Iterator[Any]:
    """A toxiproxy-server (tests/servers/toxiproxy.py, built with Go when not cached) for tests that delay or stall
    a real server's replies; skipped without Go, except under CI=true where it must run."""
    from tests.servers import toxiproxy

    if not toxiproxy.is_available():
        reason = f"no `go` on PATH and no cached toxiproxy at {toxiproxy.binary_path()}; install Go"
        if in_ci(os.environ):
            pytest.fail(reason + " [CI=true: the toxiproxy tests must run]", pytrace=False)
        pytest.skip(reason)
    server = toxiproxy.start()
    yield server
    toxiproxy.stop(server)


@pytest.fixture(scope="session")
def dead_pid() -> int:
    """The pid of a process of this host that has exited (and been reaped)."""
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait()
    return proc.pid


# The browser tier: Debian's chromium driven by Playwright (launched at the system browser: nothing is
# downloaded). Like the server tier it skips where chromium is missing, except under CI=true, where
# scripts/test installs it (apt-get install chromium) and a missing one fails the run.
CHROMIUM_NAMES = ("chromium", "chromium-browser")


@pytest.fixture(scope="session")
def chromium_path() -> str:
    """The system Chromium's path (skip without it; fail under CI=true)."""
    import shutil

    found = next((path for path in map(shutil.which, CHROMIUM_NAMES) if path), None)
    if found is None:
        reason = "browser tier: no chromium on PATH; apt-get install chromium"
        if in_ci(os.environ):
            pytest.fail(reason + " [CI=true: the browser tier must run]", pytrace=False)
        pytest.skip(reason)
    return found


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    """One headless Chromium per module (Playwright's sync API)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A page of its own context in the module's browser (a module may define its own ``page``)."""
    context = browser.new_context()
    yield context.new_page()
    context.close()


def serve_inspector(client: Any, db_name: str) -> Iterator[str]:
    """``serve_app`` of the read-only inspector of ``db_name``."""
    from langgraph_durable_mongodb.storage.schema import CollectionNames
    from langgraph_durable_mongodb.ui.actions import Actions
    from langgraph_durable_mongodb.ui.app import create_app
    from langgraph_durable_mongodb.ui.guard import Guard
    from langgraph_durable_mongodb.views.reader import ThreadViews

    names = CollectionNames()
    yield from serve_app(create_app(ThreadViews(client, db_name, names), Actions(client, db_name, names), Guard()))


def serve_app(app: Any) -> Iterator[str]:
    """Serve an ASGI app with uvicorn on a free loopback port in a thread; yield its base URL, stop it after."""
    import threading
    import time

    import uvicorn

    from tests.servers.common import free_port

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the inspector did not start listening within 10 s", pytrace=False)
        time.sleep(0.02)
    yield f"http://127.0.0.1:{server.config.port}"
    server.should_exit = True
    thread.join(10)
