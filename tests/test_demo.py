"""The README's first command: the demo on mongomock, on a real server, and with a real SIGKILL."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from langgraph_durable_mongodb import demo

PATH = "agent/1/case_investigation/1/policy_analysis/1"


def test_demo_on_embedded_mongomock(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.setattr(demo, "EXECUTED", {"llm": 0, "tool": 0})
    assert demo.main([]) == 0
    out = capsys.readouterr().out
    assert "embedded mongomock" in out and "database 'durable_demo'" in out  # where to look afterwards
    assert f"review_policy at {PATH}" in out
    assert "✗ simulated crash: worker lost after the tool ran" in out
    assert out.count("executed for real") == 2  # the LLM and the tool, once each
    assert "real calls during the resume: llm 0, tool 0" in out
    assert out.count("status completed, executed 1x") == 4  # after the crash and after the resume
    assert '"decision": "approved after 3 findings"' in out
    table = out.split("journal of the thread (--raw")[1]
    assert table.split("\n")[1].split() == ["path", "node", "kind", "name", "status", "attempts", "idempotency_key", "outcome"]
    rows = [line.split(maxsplit=7) for line in table.split("\n")[2:] if line.strip()]
    assert [row[:6] for row in rows] == [
        [PATH, "review_policy", "llm", "CaseModel", "completed", "1"],
        [PATH, "review_policy", "tool", "lookup_policy", "completed", "1"],
    ]
    assert all(row[6].startswith("ik-") for row in rows) and rows[1][7] == "policy P-7: water damage covered up to …"
    assert '"path": "agent/1/case_investigation/' not in out  # the raw documents only with --raw


def test_demo_shows_the_raw_documents_behind_a_flag(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MONGODB_URI", raising=False)
    assert demo.main(["--raw"]) == 0
    out = capsys.readouterr().out
    # as stored: keyed by the visit (the root checkpoint the child's task came from, the steps inside it)
    assert re.search(r'"path": "agent/1/case_investigation/[0-9a-f-]{36}/policy_analysis/s\d+"', out) and '"outcome"' in out


def test_demo_crash_needs_a_real_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MONGODB_URI", raising=False)
    with pytest.raises(SystemExit):
        demo.main(["--crash"])


def _demo(uri: str, db: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MONGODB_URI": uri}
    return subprocess.run(
        [sys.executable, "-m", "langgraph_durable_mongodb.demo", "--db", db, *args],
        env=env, capture_output=True, text=True, timeout=120,
    )


def test_demo_sigkill_then_a_new_process_resumes(mongodb_uri: str, server_db_name: str) -> None:
    crashed = _demo(mongodb_uri, server_db_name, "--crash")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    assert crashed.stdout.count("executed for real") == 2
    resumed = _demo(mongodb_uri, server_db_name)
    assert resumed.returncode == 0, resumed.stderr
    assert "was interrupted by a crash: resuming it in a new process" in resumed.stdout
    assert "executed for real" not in resumed.stdout
    assert "real calls during the resume: llm 0, tool 0" in resumed.stdout
    assert resumed.stdout.count("status completed, executed 1x") == 2
    assert '"decision": "approved after 3 findings"' in resumed.stdout
