"""The README's "Use it" snippet runs as written, on the tier's servers (``MONGODB_URI`` naming a fresh database)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest
from pymongo import MongoClient

from .clients import with_database

README = Path(__file__).resolve().parents[1] / "README.md"


def use_it_snippet() -> str:
    section = README.read_text().split("\n## Use it\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_use_it_snippet_runs_as_written(
    mongodb_uri: str, server_db_name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setenv("MONGODB_URI", with_database(mongodb_uri, server_db_name))
    script = tmp_path / "use_it.py"  # a file of its own: the platform reads node functions' source
    script.write_text(use_it_snippet())
    runpy.run_path(str(script), run_name="use_it")
    assert capsys.readouterr().out.strip().startswith("paid 120000 cents to claim-7731 (idempotency key ik-")
    with MongoClient(mongodb_uri) as client:
        entries = list(client[server_db_name]["activity_journal"].find({"thread_id": "case-42"}))
    kinds = sorted((e["kind"], e["name"], e["status"], e["attempts"]) for e in entries)
    assert kinds == [
        ("llm", "GenericFakeChatModel", "completed", 1),
        ("llm", "GenericFakeChatModel", "completed", 1),
        ("payment", "charge_card", "completed", 1),
        ("tool", "lookup_policy", "completed", 1),
    ]
