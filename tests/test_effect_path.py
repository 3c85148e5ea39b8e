"""ARCHITECTURE.md's figures of the effect's and the put's paths are what ``scripts/effect-path`` measures today."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import effect_path  # noqa: E402 - from scripts/, put on the path above


def _reported() -> str:
    text = (ROOT / "ARCHITECTURE.md").read_text()
    found = re.search(r"<!-- effect-path -->\n(.*?)\n<!-- /effect-path -->", text, re.S)
    assert found, "ARCHITECTURE.md has no <!-- effect-path --> table"
    return found.group(1)


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the figures are 3.11's: from 3.12 on, comprehensions make no call")
def test_architecture_reports_the_paths_as_the_script_measures_them() -> None:
    # In a process of its own, as a user runs it: what earlier tests left in this one (a tracer provider, warm
    # caches) changes the path.
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "effect_path.py"), "--json"], capture_output=True, text=True, check=True
    )
    figures = json.loads(done.stdout)
    assert figures["effect"]["modules"] > 20 and figures["put"]["calls"] > 50  # both paths were traced
    assert _reported() == effect_path.table_of(figures), "run scripts/effect-path and put its table in ARCHITECTURE.md"


def test_a_traced_call_is_counted_with_its_module_and_hop() -> None:
    trace = effect_path.Trace()
    from langgraph_durable_mongodb._bson import require_str

    with effect_path.traced(trace):
        require_str("thread", "thread_id")
    assert trace.calls >= 1 and "_bson" in trace.modules and trace.entries >= 1
