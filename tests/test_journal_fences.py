"""The journal's fences: what decides whether a claim, a renewal, a take-over or a record still holds.

Every guard is a single-document conditional update. These tests drive the
race they guard against step by step (offline, deterministic); the racing
versions run on the atomic server tier in ``test_journal_races.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from langgraph_durable_mongodb.journal import EffectCall, EffectPosition

from .test_journal_support import Counter, JournalFace, jface  # noqa: F401 - jface is a fixture

offline = pytest.mark.parametrize("client_kind", ["mongomock", "mongomock_motor"], indirect=True)

POS = EffectPosition("t1", "agent/1", "work", "1", "1")
REPORT = EffectCall("tool", "report", input={"q": "all"})


@pytest.fixture
def no_nmodified(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server whose update replies carry no ``nModified`` (pymongo's ``modified_count`` is then None)."""
    from mongomock.collection import Collection
    from mongomock.results import UpdateResult

    def without_nmodified(method: Any) -> Any:
        def update(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = method(self, *args, **kwargs)
            raw = {k: v for k, v in result.raw_result.items() if k != "nModified"}
            return UpdateResult(raw, result.acknowledged)

        return update

    monkeypatch.setattr(Collection, "update_one", without_nmodified(Collection.update_one))
    monkeypatch.setattr(Collection, "update_many", without_nmodified(Collection.update_many))


@offline
async def test_a_record_the_server_acknowledges_without_nmodified_is_kept(jface: JournalFace, no_nmodified: None) -> None:
    journal = jface.variant(chunk_bytes=64)  # the outcome takes several chunk documents
    count = Counter()
    outcome = {"rows": ["x" * 40] * 8}
    assert await journal.run(REPORT, lambda: count(outcome), POS) == outcome
    [entry] = await journal.raw({"chunk": 0, "effect_key": "1"})
    assert entry["status"] == "completed"
    assert len(await journal.raw({"chunk": {"$gt": 0}})) == entry["outcome"]["chunks"] - 1 > 0
    assert await journal.run(REPORT, lambda: count("again"), POS) == outcome
    assert count.n == 1
