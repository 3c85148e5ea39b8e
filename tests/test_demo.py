"""The README's first command: the demo runs on mongomock and on a real server."""

from __future__ import annotations

import pytest

from langgraph_durable_mongodb import demo


def test_demo_on_embedded_mongomock(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MONGODB_URI", raising=False)
    assert demo.main([]) == 0
    out = capsys.readouterr().out
    assert "embedded mongomock" in out
    assert "paused task: case_investigation -> policy_analysis" in out
    assert '"decision": "closed after 2 findings"' in out
    assert '"case_investigation|policy_analysis"' in out


def test_demo_on_a_real_server(
    mongodb_uri: str, server_db_name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONGODB_URI", mongodb_uri)
    assert demo.main(["--db", server_db_name]) == 0
    out = capsys.readouterr().out
    assert f"storage: {mongodb_uri}" in out
    assert '"decision": "closed after 2 findings"' in out
