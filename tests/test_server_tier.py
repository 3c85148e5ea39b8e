"""The real-server tier itself: the server is reachable with every driver we support, and the
tier's run/skip/fail policy holds (those unit tests need no server)."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from bson import Binary
from pymongo import AsyncMongoClient, MongoClient

from langgraph_durable_mongodb.storage.deployment import server_identity
from langgraph_durable_mongodb.storage.plans.interpreters import AsyncInterpreter, SyncInterpreter
from tests.conftest import builds_needed, choose_server, server_ids, why_not_startable
from tests.servers import ferretdb, mongo_java_server
from tests.workers.harness import judge, measure_gaps, server_gaps

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


def test_mongo_java_server_reports_wire_13_and_stops_on_sigterm(mongo_java_server_uri: str) -> None:
    """A second server from the tier's jar: MongoDB 5.0.0 on wire version 13 (pymongo 4.20 needs 9+, the
    library's own 5.0 says 8), and SIGTERM stops it through its shutdown hook, never needing SIGKILL."""
    if os.environ.get("MONGODB_URI", "").strip():
        pytest.skip("this test starts its own mongo-java-server; MONGODB_URI names a server this suite does not control")
    server = mongo_java_server.start()
    try:
        with MongoClient(server.uri, serverSelectionTimeoutMS=10_000) as client:
            assert client.admin.command("isMaster")["maxWireVersion"] == 13
            assert client.admin.command("buildInfo")["version"] == "5.0.0"
            assert client.admin.command("serverStatus")["process"] == "java"
    finally:
        mongo_java_server.stop(server)
    assert server.process.returncode == 128 + signal.SIGTERM  # the JVM's exit on SIGTERM, not -SIGKILL
    assert not server.state_dir.exists()


#: What each server the suite launches says it is (``deployment.server_identity``).
IDENTITIES = {
    "ferretdb": {"version": "7.0.42", "name": "FerretDB", "ferretdb": "v1.24.2", "mongo_java_server": False},
    "mongo_java_server": {"version": "5.0.0", "name": "mongo-java-server", "ferretdb": None, "mongo_java_server": True},
}


@pytest.mark.parametrize("mongodb_uri", [s for s in server_ids(os.environ) if s in IDENTITIES], indirect=True)
def test_each_launched_server_is_recognised(mongodb_uri: str, request: pytest.FixtureRequest) -> None:
    with MongoClient(mongodb_uri) as client:
        identity, quirks = server_identity(client)
        assert identity == IDENTITIES[request.node.callspec.params["mongodb_uri"]] and quirks.name == identity["name"]
        # the interpreters identify the server with the same plan as doctor: one identification
        assert SyncInterpreter(client["recognised"]).quirks is quirks


@pytest.mark.parametrize("mongodb_uri", [s for s in server_ids(os.environ) if s in IDENTITIES], indirect=True)
async def test_each_launched_server_is_recognised_by_the_async_face(mongodb_uri: str, request: pytest.FixtureRequest) -> None:
    client = AsyncMongoClient(mongodb_uri)
    try:
        quirks = await AsyncInterpreter(client["recognised"]).quirks()
    finally:
        await client.close()
    assert quirks.name == IDENTITIES[request.node.callspec.params["mongodb_uri"]]["name"]


@pytest.mark.parametrize("mongodb_uri", [s for s in server_ids(os.environ) if s != "ferretdb"], indirect=True)
def test_servers_other_than_ferretdb_update_one_document_atomically(mongodb_uri: str) -> None:
    """Why the mongo_java_server tier exists: racing conditional updates of one document have one winner and
    a lost upsert race is a duplicate-key error, as on MongoDB, so ``judge`` grants no gap and fails instead."""
    assert measure_gaps(mongodb_uri) == ()
    assert server_gaps(mongodb_uri) == ()
    with pytest.raises(AssertionError, match="owing MongoDB's single-document atomicity"):  # never an xfail
        judge(mongodb_uri, [("conditional_update", "review ran in processes 1 and 2 at the same time")])


# --- the tier's policy (no server needed) ------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ["ferretdb", "mongo_java_server"]),
        ({"CI": "true"}, ["ferretdb", "mongo_java_server"]),
        ({"MONGODB_URI": "  "}, ["ferretdb", "mongo_java_server"]),
        ({"MONGODB_URI": "mongodb://db:27017"}, ["uri"]),
    ],
)
def test_server_ids(env: dict, expected: list) -> None:
    assert server_ids(env) == expected


@pytest.mark.parametrize(
    ("env", "server", "why_not", "expected"),
    [
        ({"MONGODB_URI": "mongodb://db:27017"}, "uri", "", ("uri", "mongodb://db:27017")),
        ({"MONGODB_URI": "mongodb://db:27017", "CI": "true"}, "uri", "", ("uri", "mongodb://db:27017")),
        # Tests tied to one launched server (the server faults: ferretdb) get MONGODB_URI too, and decide.
        ({"MONGODB_URI": "mongodb://db:27017", "CI": "true"}, "ferretdb", "no `go`", ("uri", "mongodb://db:27017")),
        ({}, "ferretdb", "", ("start", "")),
        ({"CI": "true"}, "mongo_java_server", "", ("start", "")),
        ({"MONGODB_URI": "  "}, "mongo_java_server", "", ("start", "")),
    ],
)
def test_choose_server_runs(env: dict, server: str, why_not: str, expected: tuple) -> None:
    assert choose_server(env, server, why_not) == expected


@pytest.fixture
def bare_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No Go, Java or Maven on PATH, and nothing cached."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("FERRETDB_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))


@pytest.mark.parametrize(("server", "tools"), [("ferretdb", ["`go`"]), ("mongo_java_server", ["`java`", "`mvn`"])])
@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_choose_server_skips_locally_without_a_server(bare_machine: None, server: str, tools: list, ci: str | None) -> None:
    env = {} if ci is None else {"CI": ci}
    action, reason = choose_server(env, server, why_not_startable(server))
    assert action == "skip"
    assert server in reason and "MONGODB_URI" in reason and all(t in reason for t in tools), reason


@pytest.mark.parametrize("server", ["ferretdb", "mongo_java_server"])
@pytest.mark.parametrize("ci", ["true", "TRUE", "1"])
def test_choose_server_fails_in_ci_without_a_server(bare_machine: None, server: str, ci: str) -> None:
    action, reason = choose_server({"CI": ci}, server, why_not_startable(server))
    assert action == "fail"
    assert server in reason and "CI=true" in reason


def test_a_cached_jar_needs_java_but_not_maven(bare_machine: None, tmp_path: Path) -> None:
    jar = mongo_java_server.jar_path()
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"")
    assert mongo_java_server.missing_tools() == ["java"]
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "java").write_text("#!/bin/sh\n")
    (tmp_path / "empty" / "java").chmod(0o755)
    assert mongo_java_server.missing_tools() == [] and mongo_java_server.is_available()


class Item:
    """What ``builds_needed`` reads of a collected test: its fixtures and its marks."""

    def __init__(self, fixtures: tuple[str, ...], *marks: pytest.MarkDecorator) -> None:
        self.fixturenames = fixtures
        self.marks = {m.mark.name: m.mark for m in marks}

    def get_closest_marker(self, name: str) -> object:
        return self.marks.get(name)


FAST = Item(("platform", "client_kind"))
ON_FERRETDB = Item(("mongodb_uri",), pytest.mark.server, pytest.mark.mongodb_server("ferretdb"))
THROUGH_TOXIPROXY = Item(("mongodb_uri", "toxiproxy_server"), pytest.mark.server, pytest.mark.mongodb_server("mongo_java_server"))


@pytest.mark.parametrize(
    ("items", "env", "expected"),
    [
        ([FAST, FAST], {}, []),
        ([FAST, ON_FERRETDB], {}, ["ferretdb"]),
        ([ON_FERRETDB, THROUGH_TOXIPROXY], {}, ["ferretdb", "mongo_java_server", "toxiproxy"]),
        ([Item(("mongo_java_server_uri",), pytest.mark.server)], {}, ["mongo_java_server"]),
        ([ON_FERRETDB, THROUGH_TOXIPROXY], {"MONGODB_URI": "mongodb://db:27017"}, ["toxiproxy"]),
    ],
)
def test_only_the_servers_the_selected_tests_run_on_are_built(items: list, env: dict, expected: list) -> None:
    assert builds_needed(items, env) == expected


def test_the_fast_tier_builds_nothing(bare_machine: None, tmp_path: Path) -> None:
    """``-m "not server"`` over modules of both tiers, from an empty cache: pytest builds nothing (no tool is there
    to build with: an attempt would say "not built") and writes nothing into the cache."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("CI", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not server", "tests/test_lru.py", "tests/test_bench_rtt.py"],
        cwd=Path(__file__).resolve().parents[1], env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0 and " passed" in run.stdout and " deselected" in run.stdout, run.stdout + run.stderr
    assert "not built" not in run.stdout and "built once" not in run.stdout, run.stdout
    assert not (tmp_path / "langgraph-durable-mongodb").exists()


# --- the launchers (no server needed) --------------------------------------------------------------


def test_cache_dir_honours_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("FERRETDB_BIN", raising=False)
    assert ferretdb.binary_path() == tmp_path / "langgraph-durable-mongodb" / "ferretdb-v1.24.2" / "ferretdb"
    jar = mongo_java_server.jar_path()
    assert jar.parent == tmp_path / "langgraph-durable-mongodb" / "mongo-java-server-1.47.0"
    assert jar.name == f"launcher-{mongo_java_server.source_hash()}.jar"


def test_a_changed_launcher_source_is_a_new_jar(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sources = tmp_path / "launcher"
    shutil.copytree(mongo_java_server.SOURCES, sources, ignore=shutil.ignore_patterns("target"))
    monkeypatch.setattr(mongo_java_server, "SOURCES", sources)
    before = mongo_java_server.jar_path()
    java = sources / mongo_java_server.SOURCE_FILES[1]
    java.write_text(java.read_text() + "// changed\n")
    assert mongo_java_server.jar_path() != before
    java.write_text(java.read_text().removesuffix("// changed\n"))
    assert mongo_java_server.jar_path() == before


def test_the_jar_cache_key_covers_every_launcher_source() -> None:
    """A file added to the launcher but not to ``SOURCE_FILES`` would leave a stale jar cached."""
    on_disk = {
        p.relative_to(mongo_java_server.SOURCES).as_posix()
        for p in mongo_java_server.SOURCES.rglob("*")
        if p.is_file() and "target" not in p.relative_to(mongo_java_server.SOURCES).parts
    }
    assert on_disk == set(mongo_java_server.SOURCE_FILES)


@pytest.mark.parametrize("launcher", ["ferretdb", "mongo_java_server"])
def test_the_launchers_are_commands(launcher: str, tmp_path: Path) -> None:
    """``python -m tests.servers.<launcher> install|start|uri|stop`` from the repository root."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}  # nothing recorded as running: `uri` says so
    usage = subprocess.run([sys.executable, "-m", f"tests.servers.{launcher}"], cwd=root, env=env, capture_output=True, text=True)
    assert usage.returncode == 2 and f"usage: python -m tests.servers.{launcher} install|start|stop|uri" in usage.stderr
    uri = subprocess.run([sys.executable, "-m", f"tests.servers.{launcher}", "uri"], cwd=root, env=env, capture_output=True, text=True)
    assert uri.returncode == 1 and "is not running (use `start`)" in uri.stderr


def test_install_without_go_fails_clearly(bare_machine: None) -> None:
    assert not ferretdb.is_available()
    with pytest.raises(ferretdb.FerretDBError, match="`go` is not on PATH"):
        ferretdb.install(verbose=False)


def test_install_without_java_and_maven_fails_clearly(bare_machine: None) -> None:
    assert not mongo_java_server.is_available()
    with pytest.raises(mongo_java_server.MongoJavaServerError, match="needs `java` and `mvn` on PATH. Install Java 17"):
        mongo_java_server.install(verbose=False)


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


def _fake_java(tmp_path: Path, body: str) -> None:
    """``java`` on the (bare) PATH is this script."""
    bin_dir = tmp_path / "empty"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "java").write_text(f"#!/bin/sh\n{body}\n")
    (bin_dir / "java").chmod(0o755)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script")
def test_mongo_java_server_start_reports_early_exit_with_log_tail(bare_machine: None, tmp_path: Path) -> None:
    _fake_java(tmp_path, 'echo "Error: Invalid or corrupt jarfile $2" >&2; exit 1')
    with pytest.raises(mongo_java_server.MongoJavaServerError, match=r"exited with code 1(.|\n)*corrupt jarfile"):
        mongo_java_server.start(jar=tmp_path / "broken.jar", timeout=10)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell script")
def test_mongo_java_server_start_times_out_and_kills_a_silent_server(bare_machine: None, tmp_path: Path) -> None:
    _fake_java(tmp_path, f'echo "still starting" >&2; exec {sys.executable} -c "import time; time.sleep(60)"')
    with pytest.raises(mongo_java_server.MongoJavaServerError, match=r"did not listen in 1s(.|\n)*still starting"):
        mongo_java_server.start(jar=tmp_path / "silent.jar", timeout=1)
