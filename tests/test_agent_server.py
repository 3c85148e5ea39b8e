"""End to end on Agent Server: ``langgraph dev`` serves examples/agent_server/ on the tier's server. Real-server tier.

Real processes: the test copies the example project into a temporary directory and starts
``langgraph dev --no-browser --no-reload --port <free>`` there (its own process group), with
``MONGODB_URI`` naming a fresh database on the tier's server; it drives the server with the
official client (``langgraph_sdk``), counts real LLM and tool executions from the effects' side
(each appends a line to ``AGENT_EFFECT_LOG``) and reads the journal's raw documents with pymongo.

| scenario | expected |
|---|---|
| a run fails inside the nested child (root -> ``case_investigation`` -> ``policy_analysis`` -> ``review_policy``) after its LLM call and its tool call; ``runs.wait(thread, "agent", input=None)`` | the run completes; the LLM and the tool executed once each; both entries ``completed``, replayed once |
| a second run (new input) waits after its effects; the server's process group is SIGKILLed; the dev store's files are gone; a new server starts on the same project | the thread is re-created from its id (its checkpoints are in MongoDB) and ``runs.wait(..., input=None)`` completes it; every effect completed before the kill executed once, in the killed server; the final state is complete |

| a run waits after its effects until the dev store has saved it; the server is SIGKILLed and restarted | the new server finds the run pending and runs it again by itself; it continues from its checkpoint: its effects replay, none executes again |
| a run streamed with `stream_mode=["messages-tuple", "updates", "events"]` (what chat UIs use), subgraphs included; the example model implements only `_generate` | no `error` event; the model's message streamed once; `events`: one `on_chat_model_start`, with the durable metadata; each effect executed once |

The dev store (``.langgraph_api/``) saves thread and run records only every 10 s, so a kill
before that save loses them: the first test deletes them after the kill, which makes that case
deterministic (the server knows nothing of the thread, MongoDB alone brings the run back); the
second waits for a save, then kills. Each runs once per server of the tier, like the rest of it:
about 8 s and 14 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pymongo import MongoClient

from langgraph_sdk import get_client

from langgraph_durable_mongodb.journal.labels import labelled

from .clients import with_database

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent_server"
LANGGRAPH = Path(sys.executable).with_name("langgraph")  # langgraph-cli[inmem], in the test extra
#: `langgraph dev` offline and quiet: no analytics, no version check, no LangSmith tracing.
OFFLINE = {
    "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    "LANGGRAPH_NO_VERSION_CHECK": "true",
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    "PYTHONUNBUFFERED": "1",
}
PATH_1 = "agent/1/case_investigation/1/policy_analysis/1"  # review_policy in the first run
PATH_2 = "agent/1/case_investigation/2/policy_analysis/1"  # ... and in the second (the child's second visit)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DevServer:
    """One ``langgraph dev`` process (group) on ``project``; its output goes to ``<project>/server-<n>.log``."""

    started = 0

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.project, self.env = project, env
        self.port = free_port()
        DevServer.started += 1
        self.log_path = project / f"server-{DevServer.started}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> DevServer:
        cmd = [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(self.port)]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=self.project, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"langgraph dev exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                with urllib.request.urlopen(self.url + "/ok", timeout=1) as answer:
                    if answer.status == 200:
                        return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"langgraph dev did not answer /ok within {timeout} s:\n{self.tail()}")

    def kill(self) -> None:
        """SIGKILL the whole process group (the CLI and anything it started)."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM the group, then SIGKILL it if it is still there after ``timeout``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass

    def tail(self, lines: int = 60) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def executions(log: Path) -> list[dict[str, Any]]:
    """The real LLM and tool executions, as the effects logged them."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def journal(db: Any, thread_id: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The thread's journal entries as stored, by (path as labelled, name)."""
    return {(e["path"], e["name"]): e for e in labelled(db["activity_journal"].find({"thread_id": thread_id}))}


async def wait_for(predicate: Any, what: str, server: DevServer, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; server log:\n{server.tail()}")
        await asyncio.sleep(0.05)


class Project:
    """A copy of the example in a temporary directory, its switches, its database, and the servers started on it."""

    def __init__(self, tmp_path: Path, uri: str, db_name: str) -> None:
        self.dir = tmp_path / "project"
        shutil.copytree(EXAMPLE, self.dir, ignore=shutil.ignore_patterns(".env", ".langgraph_api", "__pycache__"))
        self.effects, self.crash, self.pause = tmp_path / "effects.log", tmp_path / "crash", tmp_path / "pause"
        self.env = {k: v for k, v in os.environ.items() if k not in ("MONGODB_DB", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")}
        self.env.update(OFFLINE)
        self.env.update(
            MONGODB_URI=with_database(uri, db_name),
            AGENT_EFFECT_LOG=str(self.effects), AGENT_CRASH_FILE=str(self.crash), AGENT_PAUSE_FILE=str(self.pause),
        )
        self.client = MongoClient(uri)
        self.db = self.client[db_name]
        self.servers: list[DevServer] = []

    def start_server(self) -> DevServer:
        server = DevServer(self.dir, self.env)
        self.servers.append(server)
        return server.start()

    def close(self) -> None:
        for server in self.servers:
            server.stop()
        self.client.close()


@pytest.fixture
def project(mongodb_uri: str, server_db_name: str, tmp_path: Path) -> Any:
    """The example project on a fresh database of the tier's server; its servers are stopped at the end, pass or fail."""
    if not LANGGRAPH.exists():
        pytest.fail(f"no {LANGGRAPH}: install the test extra (scripts/setup-venv), which has langgraph-cli[inmem]")
    project = Project(tmp_path, mongodb_uri, server_db_name)
    try:
        yield project
    finally:
        project.close()


async def test_langgraph_dev_resumes_a_crashed_run_and_a_killed_server_without_repeating_effects(project: Project) -> None:
    db, effects, crash, pause = project.db, project.effects, project.crash, project.pause
    # -- 1. a run crashes in the nested child after its tool ran; resumed with input=None --------------
    first = project.start_server()
    client = get_client(url=first.url)
    thread_id = (await client.threads.create(graph_id="agent"))["thread_id"]
    crash.touch()
    failed = await client.runs.wait(
        thread_id, "agent", input={"case": "claim 7731", "findings": []}, raise_error=False
    )
    assert (failed or {}).get("__error__", {}).get("error") == "SimulatedCrash", (failed, first.tail())
    assert not crash.exists()  # it fails once
    assert Counter(e["name"] for e in executions(effects)) == {"CaseModel": 1, "lookup_policy": 1}
    at_crash = journal(db, thread_id)
    assert {k: e["status"] for k, e in at_crash.items()} == {
        (PATH_1, "CaseModel"): "completed",
        (PATH_1, "lookup_policy"): "completed",
    }

    resumed = await client.runs.wait(thread_id, "agent", input=None)
    assert resumed["decision"] == "claim 7731: approved after 3 findings", resumed
    assert Counter(e["name"] for e in executions(effects)) == {"CaseModel": 1, "lookup_policy": 1}
    for entry in journal(db, thread_id).values():
        assert (entry["status"], entry["attempts"], entry.get("replays")) == ("completed", 1, 1), entry
        assert entry["node"] == "review_policy"

    # -- 2. a second run waits after its effects; the server is SIGKILLed; a new server resumes -------
    pause.touch()
    await client.runs.create(thread_id, "agent", input={"case": "claim 7732"})
    second_run_done = lambda: {  # noqa: E731
        k[1] for k, e in journal(db, thread_id).items() if k[0] == PATH_2 and e["status"] == "completed"
    } == {"CaseModel", "lookup_policy"}
    await wait_for(second_run_done, "the second run's effects to complete", first)
    await asyncio.sleep(0.2)  # review_policy is now waiting on the pause file
    first.kill()
    pause.unlink()
    shutil.rmtree(project.dir / ".langgraph_api", ignore_errors=True)  # the dev store's records, lost
    at_kill = journal(db, thread_id)
    assert {k: e["status"] for k, e in at_kill.items() if k[0] == PATH_2} == {
        (PATH_2, "CaseModel"): "completed",
        (PATH_2, "lookup_policy"): "completed",
    }
    before_restart = executions(effects)
    assert [e["pid"] for e in before_restart] == [first.proc.pid] * 4  # type: ignore[union-attr]

    second = project.start_server()
    client = get_client(url=second.url)
    # The new server knows nothing of the thread; its checkpoints are in MongoDB.
    await client.threads.create(thread_id=thread_id, graph_id="agent", if_exists="do_nothing")
    state = await client.threads.get_state(thread_id)
    assert state["next"] == ["case_investigation"], state
    final = await client.runs.wait(thread_id, "agent", input=None)

    assert final["case"] == "claim 7732" and final["decision"] == "claim 7732: approved after 5 findings", final
    assert "Review the policy for claim 7732: it concerns policy P-7; check its water damage cover." in final["findings"]
    assert executions(effects) == before_restart  # nothing executed again after the kill
    keys = Counter(e["key"] for e in before_restart)
    assert set(keys.values()) == {1}  # each effect once, under its own idempotency key
    final_journal = journal(db, thread_id)
    assert sorted(final_journal) == sorted(
        [(PATH_1, "CaseModel"), (PATH_1, "lookup_policy"), (PATH_2, "CaseModel"), (PATH_2, "lookup_policy")]
    )
    for entry in final_journal.values():
        assert (entry["status"], entry["attempts"], entry.get("replays")) == ("completed", 1, 1), entry
        assert entry["idempotency_key"] in keys
    assert (await client.threads.get_state(thread_id))["next"] == []


async def test_a_run_the_dev_store_saved_is_run_again_by_the_restarted_server_and_replays(project: Project) -> None:
    first = project.start_server()
    client = get_client(url=first.url)
    thread_id = (await client.threads.create(graph_id="agent"))["thread_id"]
    project.pause.touch()
    run = await client.runs.create(thread_id, "agent", input={"case": "claim 7731", "findings": []})
    created = time.time()
    effects_done = lambda: [e["status"] for e in journal(project.db, thread_id).values()] == ["completed"] * 2  # noqa: E731
    await wait_for(effects_done, "the run's effects to complete", first)
    ops = project.dir / ".langgraph_api" / ".langgraph_ops.pckl"
    saved = lambda: ops.exists() and ops.stat().st_mtime > created  # noqa: E731
    await wait_for(saved, "the dev store's save after the run started (every 10 s)", first, timeout=30.0)
    first.kill()
    project.pause.unlink()
    before_restart = executions(project.effects)
    assert [(e["name"], e["pid"]) for e in before_restart] == [("CaseModel", first.proc.pid), ("lookup_policy", first.proc.pid)]  # type: ignore[union-attr]

    second = project.start_server()
    client = get_client(url=second.url)
    assert [r["run_id"] for r in await client.runs.list(thread_id)] == [run["run_id"]]  # the saved run, found again
    await client.runs.join(thread_id, run["run_id"])
    assert (await client.runs.get(thread_id, run["run_id"]))["status"] == "success"
    state = await client.threads.get_state(thread_id)
    assert state["next"] == [] and state["values"]["decision"] == "claim 7731: approved after 3 findings", state
    assert executions(project.effects) == before_restart  # nothing executed again
    for entry in journal(project.db, thread_id).values():
        assert (entry["path"], entry["status"], entry["attempts"], entry.get("replays")) == (PATH_1, "completed", 1, 1), entry


async def test_a_chat_ui_streams_the_journaled_model_s_message_in_messages_tuple_mode(project: Project) -> None:
    # The example's model implements only _generate: SecureLLM must stream what the bare model would (its message).
    server = project.start_server()
    client = get_client(url=server.url)
    thread_id = (await client.threads.create(graph_id="agent"))["thread_id"]
    parts = [
        part
        async for part in client.runs.stream(
            thread_id,
            "agent",
            input={"case": "claim 7733", "findings": []},
            stream_mode=["messages-tuple", "updates", "events"],
            stream_subgraphs=True,  # the model is called two subgraphs down
        )
    ]
    assert "error" not in {part.event for part in parts}, (parts, server.tail())
    said = [part.data[0]["content"] for part in parts if part.event.split("|")[0] == "messages"]
    assert said == ["Review the policy for claim 7733: it concerns policy P-7; check its water damage cover."], parts
    events = [part.data for part in parts if part.event.split("|")[0] == "events"]
    [start] = [e for e in events if e["event"] == "on_chat_model_start"]  # one run for the call, not two
    assert start["metadata"]["durable"]["replayed"] is False and start["metadata"]["durable"]["node"] == "review_policy"
    assert [e for e in events if e["event"] == "on_chat_model_stream"] == []  # the model cannot stream: none, as bare
    assert Counter(e["name"] for e in executions(project.effects)) == {"CaseModel": 1, "lookup_policy": 1}
    state = await client.threads.get_state(thread_id)
    assert state["values"]["decision"] == "claim 7733: approved after 3 findings", state


async def test_a_stateless_run_runs_its_effects_for_real_unjournaled(project: Project) -> None:
    """``runs.stream(None, ...)``: langgraph-api runs the graph with no checkpointer, so nothing can be resumed; the
    effects run for real, once each, nothing is written to the journal, and the server says so once per graph."""
    server = project.start_server()
    client = get_client(url=server.url)
    for case in ("claim 7734", "claim 7735"):
        parts = [
            part
            async for part in client.runs.stream(None, "agent", input={"case": case, "findings": []}, stream_mode="values")
        ]
        assert "error" not in {part.event for part in parts}, (parts, server.tail())
        assert parts[-1].data["decision"] == f"{case}: approved after 3 findings", parts
    assert Counter(e["name"] for e in executions(project.effects)) == {"CaseModel": 2, "lookup_policy": 2}
    assert project.db["activity_journal"].count_documents({}) == 0
    await wait_for(lambda: "runs without a checkpointer" in server.tail(), "the stateless-run log line", server)
    assert server.tail().count("runs without a checkpointer") == 1, server.tail()
