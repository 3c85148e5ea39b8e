"""docs/images/trace-resumed-turn.svg is redrawn by ``scripts/trace-picture`` from a real run's exported spans: the
script runs (in a process of its own: OpenTelemetry sets a process's tracer provider once) and draws what the
docs say it shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_script_draws_the_crashed_and_the_resumed_call_from_their_spans(tmp_path: Path) -> None:
    target = tmp_path / "trace.svg"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "trace_picture.py"), str(target)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    svg = target.read_text()
    assert svg.startswith("<svg") and svg.count("<rect") > 20
    for text in (
        "POST /claims/7731/ask (crashed)</text>", "raised ConnectionError", "POST /claims/7731/resume</text>",
        "run_lock take", "fence 2", "tool lookup_policy", "replayed, node tools", "executed, attempt 1, node agent",
        "journal claim", "journal record", "checkpoint store",
    ):
        assert text in svg, text
    committed = (ROOT / "docs" / "images" / "trace-resumed-turn.svg").read_text()
    assert "drawn by scripts/trace-picture" in committed and "replayed, node tools" in committed
