"""The otel bench section (scripts/benchmarks/otel.py, issue 46) runs its three cases in child processes on the
server tier and reports them side by side. No time is asserted: what each case emitted is."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchmarks.otel import CASES, OtelSettings, bench_otel, render_otel  # noqa: E402  (scripts/benchmarks/otel.py)


def test_the_otel_section_runs_each_case_and_only_the_sdk_exports_spans(mongodb_uri: str, mongodb_server: str) -> None:
    if mongodb_server == "ferretdb":
        pytest.skip("the section measures where the rtt section's CPU line does: mongo-java-server or MONGODB_URI")
    result = bench_otel(mongodb_uri, True, lambda line: None, OtelSettings(rounds=1, turns=2, watches=200))
    cases = result["cases"]
    assert set(cases) == set(CASES) and cases["none"]["ratio"] == 1.0
    assert cases["none"]["spans_per_turn"] == cases["noop"]["spans_per_turn"] == 0
    assert cases["sdk"]["spans_per_turn"] >= 10  # 3 effects (each with its claim and record), the lock, the stores
    assert all(row["turn_cpu_ms"] > 0 and row["watch_us"] > 0 and row["import_ms"] > 0 for row in cases.values())
    table = "\n".join(render_otel(result))
    assert result["watched_per_turn"] >= 5 and cases["noop"]["bound_share"] < cases["sdk"]["bound_share"]
    assert "the no-op tracer" in table and table.count("\n| ") == 4  # the header and a row per case
