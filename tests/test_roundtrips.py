"""The checkpointer's round-trip budget, counted with pymongo command monitoring on a real server."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "roundtrips.py"


def _roundtrips():
    spec = importlib.util.spec_from_file_location("roundtrips_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_command_budget_per_operation(mongodb_uri: str) -> None:
    script = _roundtrips()
    counts = script.measure(mongodb_uri)
    assert counts["list_100_checkpoints"] == 100
    for operation, limit in script.BUDGET.items():
        assert counts[operation] <= limit, (operation, counts)
    # put: the changed message list is inline in the checkpoint document: one command; a value above
    # inline_value_bytes goes to a blob first: two
    assert counts["put"] == 1
    assert counts["put_large"] == 2
    assert counts["put_writes"] == 1
    # get_tuple: the checkpoint (holding its values), its writes
    assert counts["get_tuple"] == 2
    assert counts["chat_turn"] <= 7
