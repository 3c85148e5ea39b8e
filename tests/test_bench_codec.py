"""The codec bench section (scripts/benchmarks/codec.py, issue 24) runs quick on the server tier and reports what it says.

No time is asserted: what the numbers are is the bench's business (``scripts/bench --only codec``). What is asserted
is the report's shape, that the postgres-like saver really lays values out like langgraph-checkpoint-postgres (read
from the raw documents), and that every layout restores the same states, before and after the prune.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.servers import toxiproxy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from benchmarks import codec as bench_codec  # noqa: E402  (scripts/benchmarks/codec.py)
from benchmarks import common as bench  # noqa: E402  (scripts/benchmarks/common.py)


def test_codec_bench_compares_the_layouts_restoring_the_same_states(
    mongodb_uri: str, toxiproxy_server: toxiproxy.Toxiproxy
) -> None:
    res = bench_codec.bench_codec(mongodb_uri, bench.Settings.quick(), lambda _: None, toxiproxy_server)
    st = res["settings"]
    assert st == bench_codec.dataclasses.asdict(bench_codec.CodecSettings.quick())
    layouts = res["layouts"]
    assert set(layouts) == set(bench_codec.LAYOUTS)
    for row in layouts.values():
        assert row["direct"]["turns"] == st["threads"] * st["turns"] and row["rtt"]["turns"] == st["rtt_threads"] * st["rtt_turns"]
        for phase in ("direct", "rtt"):
            # the breakdown by collection accounts for every command of a later turn
            assert sum(row[phase]["by_target"].values()) == pytest.approx(row[phase]["commands_per_turn"])
            assert row[phase]["commands_per_turn"] > row[phase]["writes_per_turn"] > 0
        assert row["reads"]["list"]["checkpoints"] == 3 * st["turns"]  # input, __start__, reply: per turn
        assert row["prune"]["n"] == st["threads"] and row["prune"]["commands"] > 0
        assert 0 < row["bytes_after_prune"]["total"] < row["bytes"]["total"]
        for thread, restored in row["restored"].items():
            assert restored["messages"] == 2 * st["turns"], thread
    assert set(res["ratios"]) == set(bench_codec.LAYOUTS) - {"references"}
    assert all(set(r) == {label for label, _ in bench_codec.FIGURES} for r in res["ratios"].values())
    # what makes the comparison: the same states, histories and pruned states under every layout
    references, postgres = layouts["references"], layouts["postgres"]
    for name, row in layouts.items():
        for key in ("restored", "restored_rtt", "restored_after_prune"):
            assert row[key] == references[key], (name, key)
    assert res["states_equal"] is True
    # the layouts are what they claim, counted from the raw documents: the large unchanged value is a `k`
    # reference as shipped; the postgres layout keeps no value with bytes inline and references no checkpoint
    assert references["entries"]["k_reference"] > 0 and references["entries"]["inline_with_bytes"] > 0
    assert postgres["entries"]["k_reference"] == postgres["entries"]["inline_with_bytes"] == 0
    assert postgres["entries"]["in_blobs"] > 0 and postgres["entries"]["empty_inline_types"] == ["null"]
    # inline while small, else blobs: the large value in blobs, never a `k` reference
    assert layouts["small_inline"]["entries"]["k_reference"] == 0 < layouts["small_inline"]["entries"]["in_blobs"]
    report = "\n".join(bench_codec.render_codec(res))
    assert "## 9. Stored-value codec: references against the postgres layout" in report
    assert all(f"| {label} |" in report for label, _ in bench_codec.FIGURES)


def test_states_equal_sees_a_difference_between_the_layouts_and_a_prune_that_changed_a_state() -> None:
    same = {"restored": {"t": {"messages": 2, "state": "a", "history": "h"}}, "restored_rtt": {},
            "restored_after_prune": {"t": {"messages": 2, "state": "a"}}}
    assert bench_codec.states_equal({"references": same, "postgres": same, "small_inline": same})
    other = {**same, "restored": {"t": {"messages": 2, "state": "a", "history": "other"}}}
    assert not bench_codec.states_equal({"references": same, "postgres": same, "small_inline": other})
    pruned = {**same, "restored_after_prune": {"t": {"messages": 0, "state": "b"}}}
    assert not bench_codec.states_equal({"references": pruned, "postgres": pruned})
