"""examples/claims_agent/ runs as its README says: the ReAct claims agent through a real SIGKILL mid-payment, an
unknown outcome settled with the CLI line the error prints, and a resume that pays once (real-server tier); and
both agent builders on the offline model that supports ``bind_tools`` (fast tier)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from langgraph.types import Command
from pymongo import MongoClient

from langgraph_durable_mongodb import DurablePlatform

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "claims_agent"


def load_claims() -> Any:
    spec = importlib.util.spec_from_file_location("claims", EXAMPLE / "claims.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("builder", ["create_react_agent", "create_agent"])
def test_both_builders_run_the_agent_on_the_offline_model(builder: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model binds tools as the prebuilt agents ask; the approval interrupts, the payment is made once and
    replayed on a second resume of the finished thread."""
    claims = load_claims()
    monkeypatch.setenv("CLAIMS_LEDGER", str(tmp_path / "provider.json"))
    platform = DurablePlatform.embedded()
    graph = claims.agent(platform, builder)
    config = {"configurable": {"thread_id": claims.CLAIM}}
    asked = graph.invoke({"messages": [("user", "Please pay out claim 7731.")]}, config)
    assert asked["__interrupt__"][0].value["question"] == "approve paying 1,200.00 EUR on claim-7731?"
    answer = graph.invoke(Command(resume="approve"), config)["messages"][-1].content
    assert answer == "Claim claim-7731 is covered by P-7 and was paid 120000 cents on claim-7731 (charge ch_001)."
    assert [c["id"] for c in claims.Provider().charges().values()] == ["ch_001"]
    entries = platform.journal.client[platform.journal.db_name][platform.journal.collection].find({}, {"_id": 0})
    assert sorted((e["kind"], e["name"], e["status"], e.get("at_most_once", False)) for e in entries) == [
        *[("llm", "ClaimsModel", "completed", False)] * 4,
        ("tool", "lookup_policy", "completed", False),
        ("tool", "pay_claim", "completed", True),
    ]


def test_the_claims_agent_survives_a_sigkill_mid_payment_and_pays_once(mongo_java_server_uri: str) -> None:
    """run.py as the README runs it, on a real server: each step in a process of its own, the payment's worker
    SIGKILLed after the provider charged, the unknown outcome settled with the error's own CLI line, one charge."""
    db = f"claims_{uuid.uuid4().hex[:12]}"
    try:
        done = subprocess.run(
            [sys.executable, str(EXAMPLE / "run.py"), "--uri", mongo_java_server_uri, "--db", db],
            capture_output=True, text=True, timeout=600,
        )
        out = done.stdout
        assert done.returncode == 0, out + done.stderr
        assert "the worker died of SIGKILL (exit -9); the provider holds 1 charge" in out
        assert "EffectOutcomeUnknownError: tool 'pay_claim' at thread 'claim-7731'" in out
        assert "   $ langgraph-durable-mongodb --uri " in out and " resolve 'thread " in out
        assert "Claim claim-7731 is covered by P-7 and was paid 120000 cents on claim-7731 (charge ch_001)." in out
        assert "the provider made 1 charge in all" in out
        with MongoClient(mongo_java_server_uri) as client:
            paid = client[db]["activity_journal"].find_one({"name": "pay_claim"})
            assert (paid["status"], paid["at_most_once"]) == ("completed", True)
    finally:
        with MongoClient(mongo_java_server_uri) as client:
            client.drop_database(db)
