"""The journal and resolver bench sections run on the real-server tier: they rotted once, unnoticed, when issue 32
removed the ordinal allocator they used. No time is asserted; commands are (``scripts/bench --only journal,resolver``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchmarks.common import EFFECTS, Settings  # noqa: E402  (scripts/benchmarks/common.py)
from benchmarks.journal import bench_journal, render_journal  # noqa: E402
from benchmarks.resolver import bench_resolver, render_resolver  # noqa: E402


def test_the_journal_section_replays_every_effect_from_one_read(mongodb_uri: str) -> None:
    result = bench_journal(mongodb_uri, Settings.quick(), lambda line: None)
    first, replay = result["phases"]["first"], result["phases"]["replay"]
    assert first["journal_commands_per_effect"] == 1.0  # an exclusive run writes each entry once, when it ends
    assert replay["journal_commands_per_effect"] * EFFECTS == 1  # the node's entries, one find
    assert "| replay | 0.10 |" in "\n".join(render_journal(result))


def test_the_resolver_section_names_a_visit_without_a_command(mongodb_uri: str) -> None:
    result = bench_resolver(mongodb_uri, Settings.quick(), lambda line: None)
    assert result["position_commands"] == 0
    assert result["operation_path"].startswith("agent/1/case/") and result["operation_path"].endswith(" inner#s1")
    assert "visit_position" in "\n".join(render_resolver(result))
