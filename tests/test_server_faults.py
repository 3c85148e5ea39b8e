"""Server faults: the server process is stopped and restarted mid-run. Real-server tier.

These tests start their own FerretDB (tests/servers/ferretdb.py) with a state dir and
a port they keep, so they can stop it and start it again on the same address
with its data. So they run once, with the tier's FerretDB (``ferretdb_uri``: they
skip or fail where it does), not once per server: mongo-java-server keeps its
data in memory, which a restart loses. They skip when ``MONGODB_URI`` names a
server this suite does not control.

Expected: every operation during the outage either fails with a clear error
(a pymongo ``ConnectionFailure`` naming the server) or is retried by pymongo
(retryable reads; retryable writes need a replica set); a resume after the
restart completes with nothing lost: every document written before the fault
is still there, the final state is the uncrashed run's, effects completed
before the fault never run again, and the one in flight runs again at most
once, under the same idempotency key.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections import Counter
from typing import Any

import pytest
from pymongo import AsyncMongoClient, MongoClient, monitoring
from pymongo.errors import ConnectionFailure

from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.storage.thread_summaries import SUMMARY_NS

from .servers import ferretdb
from .workers import durable_worker
from .workers.harness import by_key, journal_entries, positions, read_log, reference_run

COLLECTIONS = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "activity_journal")


class Server:
    """Our own FerretDB: stop (SIGTERM) or kill (SIGKILL) it, start it again on the same port with its data."""

    def __init__(self, state_dir: Any) -> None:
        self.state_dir, self.port = state_dir, ferretdb.free_port()
        self.process = ferretdb.start(state_dir=state_dir, port=self.port)
        self.uri = self.process.uri

    def stop(self) -> None:
        ferretdb.stop(self.process, keep_state=True)

    def kill(self) -> None:
        os.kill(self.process.process.pid, signal.SIGKILL)
        self.process.process.wait()

    def start(self) -> None:
        self.process = ferretdb.start(state_dir=self.state_dir, port=self.port)


@pytest.fixture
def server(ferretdb_uri: str, tmp_path: Any) -> Any:
    if os.environ.get("MONGODB_URI", "").strip():
        pytest.skip(
            "server faults stop and restart the server process; MONGODB_URI names a server this suite does not "
            "control, so this test runs only on the FerretDB the suite starts itself (as in CI)"
        )
    own = Server(tmp_path / "ferretdb")
    yield own
    ferretdb.stop(own.process)


class Failures(monitoring.CommandListener):
    """Counts commands that failed (a retried read shows as a failure followed by a success)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def started(self, event: Any) -> None:
        pass

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        self.counts[event.command_name] += 1


def snapshot(uri: str, db: str) -> dict[str, list[dict]]:
    with MongoClient(uri, serverSelectionTimeoutMS=5000) as client:
        return {c: list(client[db][c].find({})) for c in COLLECTIONS}


def missing(before: dict[str, list[dict]], after: dict[str, list[dict]]) -> list[Any]:
    """Documents of ``before`` that are gone (or changed, for the journal's completed entries; counting fewer
    checkpoints, for a thread summary) in ``after``."""
    lost = []
    for coll, docs in before.items():
        now = {d["_id"]: d for d in after[coll]}
        for d in docs:
            if d["_id"] not in now:
                lost.append((coll, d["_id"]))
            elif d.get("checkpoint_ns") == SUMMARY_NS:
                if now[d["_id"]]["checkpoints"] < d["checkpoints"]:
                    lost.append((coll, d["_id"], "counts fewer checkpoints"))
            elif coll != "activity_journal" or d.get("status") == "completed":
                if coll == "activity_journal" and now[d["_id"]].get("outcome") != d.get("outcome"):
                    lost.append((coll, d["_id"], "outcome changed"))
                elif coll != "activity_journal" and now[d["_id"]] != d:
                    lost.append((coll, d["_id"], "changed"))
    return lost


def resume_until_done(run: Any, attempts: int = 4) -> tuple[Any, list[str]]:
    """Call ``run()`` until it returns; every failure on the way must be a clear connection error."""
    errors = []
    for _ in range(attempts):
        try:
            return run(), errors
        except ConnectionFailure as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    raise AssertionError(f"no resume completed in {attempts} attempts: {errors}")


def test_server_stopped_mid_run_then_restarted(server: Server, tmp_path: Any, record_property: Any) -> None:
    """sync nodes, durability="sync"; the server stops (SIGTERM) inside `review` and stays down until the run fails."""
    expected_values, expected_positions = reference_run()
    log = tmp_path / "effects.log"
    db = "faults_stop"
    before: dict[str, list[dict]] = {}

    def hook(name: str) -> None:
        if name == "review" and not before:
            before.update(snapshot(server.uri, db))
            server.stop()

    durable_worker.configure(log=log, hook=hook)
    failures = Failures()
    client = MongoClient(server.uri, serverSelectionTimeoutMS=3000, event_listeners=[failures])
    aclient = AsyncMongoClient(server.uri, serverSelectionTimeoutMS=3000)
    try:
        platform = DurablePlatform(client, async_client=aclient, db_name=db, journal_options={"lease_seconds": 1.0})
        graph = platform.compile(durable_worker.build_graph("invoke"))
        config = {"configurable": {"thread_id": "outage"}}
        with pytest.raises(ConnectionFailure) as failed:
            graph.invoke(durable_worker.inputs("case-42"), config, durability="sync")
        assert f"127.0.0.1:{server.port}" in str(failed.value)  # a clear error: which server, and why
        assert before, "the server was not stopped"

        server.start()
        durable_worker.configure(log=log)
        result, errors = resume_until_done(lambda: graph.invoke(None, config, durability="sync"))
        assert result == expected_values
        after = snapshot(server.uri, db)
        assert missing(before, after) == []
        assert positions(journal_entries(MongoClient(server.uri)[db], "outage")) == expected_positions
        runs = by_key(read_log(log))
        names = Counter(r[0].name for r in runs.values() for _ in r)
        # triage and the lookups completed before the outage: once; review was in flight: twice, one key.
        assert names == Counter({"triage": 1, "lookup_policy": 1, "lookup_claim": 1, "review": 2, "risk_score": 1,
                                 "issue_payment": 1})
        assert len(runs) == 6
        numbers = {
            "run_error": f"{type(failed.value).__name__}: {failed.value}"[:160],
            "resume_errors": errors,
            "failed_commands": dict(failures.counts),
        }
        record_property("server_stop", numbers)
        print(f"\nserver stopped mid-run: {numbers}")
    finally:
        durable_worker.configure(log=None)
        client.close()


async def test_server_killed_and_restarted_mid_run_async(server: Server, tmp_path: Any, record_property: Any) -> None:
    """async nodes on AsyncMongoClient, durability="async"; the server is SIGKILLed inside `lookup_policy` and
    restarted at once: operations on dead connections fail or are retried, and the run goes on or resumes."""
    expected_values, expected_positions = reference_run("invoke", "async")  # the same as ainvoke's
    log = tmp_path / "effects.log"
    db = "faults_kill"
    before: dict[str, list[dict]] = {}

    def hook(name: str) -> None:
        if name == "lookup_policy" and not before:
            before.update(snapshot(server.uri, db))
            server.kill()
            server.start()

    durable_worker.configure(log=log, hook=hook)
    failures = Failures()
    client = MongoClient(server.uri, serverSelectionTimeoutMS=5000)
    aclient = AsyncMongoClient(server.uri, serverSelectionTimeoutMS=5000, event_listeners=[failures])
    try:
        platform = DurablePlatform(client, async_client=aclient, db_name=db, journal_options={"lease_seconds": 1.0})
        graph = platform.compile(durable_worker.build_graph("ainvoke"))
        config = {"configurable": {"thread_id": "restart"}}
        errors: list[str] = []
        try:
            result = await graph.ainvoke(durable_worker.inputs("case-42"), config, durability="async")
        except ConnectionFailure as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            assert f"127.0.0.1:{server.port}" in str(exc)
            result = None
        assert before, "the server was not killed"
        durable_worker.configure(log=log)
        for _ in range(4):
            if result is not None:
                break
            try:
                result = await graph.ainvoke(None, config, durability="async")
            except ConnectionFailure as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(0.5)
        assert result == expected_values, errors
        assert missing(before, snapshot(server.uri, db)) == []
        assert positions(journal_entries(MongoClient(server.uri)[db], "restart")) == expected_positions
        runs = by_key(read_log(log))
        assert len(runs) == 6 and all(len(r) <= 2 for r in runs.values())
        names = Counter(e.name for r in runs.values() for e in r)
        assert names["triage"] == 1  # completed before the fault
        assert all(names[n] <= 2 for n in names)
        numbers = {"errors": errors, "failed_commands": dict(failures.counts), "executions": dict(names)}
        record_property("server_kill", numbers)
        print(f"\nserver SIGKILLed and restarted mid-run: {numbers}")
    finally:
        durable_worker.configure(log=None)
        client.close()
        await aclient.close()
