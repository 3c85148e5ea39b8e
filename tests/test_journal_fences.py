"""The journal's fences: what decides whether a claim, a renewal, a take-over or a record still holds.

Every guard is a single-document conditional update. These tests drive the
race they guard against step by step (offline, deterministic); the racing
versions run on the atomic server tier in ``test_journal_races.py``.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from langgraph_durable_mongodb.errors import EffectInProgressError
from langgraph_durable_mongodb.storage.plans.lease import utcnow

from .clients import offline
from .journal_helpers import POS, Counter, JournalFace
from .journal_steps import REPORT, Stepper, effect_plan, expire, is_invoke, is_takeover


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


async def entry(face: JournalFace) -> dict[str, Any]:
    [doc] = await face.raw({"chunk": 0})
    return doc


@offline
async def test_a_record_after_a_take_over_is_fenced_out(jface: JournalFace) -> None:
    count = Counter()
    first = Stepper(jface, effect_plan(jface, lambda: count("first")))
    await first.until(is_invoke)  # claimed (fence 1), about to run
    await expire(jface)
    second = Stepper(jface, effect_plan(jface, lambda: count("second")))
    await second.until(is_invoke)  # took the position over (fence 2), about to run
    taken = await entry(jface)
    assert (taken["status"], taken["fence"]) == ("started", 2)

    assert await first.finish() == "first"  # its own value; its record did not land
    after = await entry(jface)
    assert (after["status"], after["owner"], after["fence"]) == ("started", taken["owner"], 2)

    assert await second.finish() == "second"
    assert (await entry(jface))["status"] == "completed"
    assert await jface.run(REPORT, lambda: count("third"), POS) == "second"
    assert count.n == 2


@offline
async def test_a_take_over_decided_on_a_stale_read_loses(jface: JournalFace) -> None:
    count = Counter()
    owner = Stepper(jface, effect_plan(jface, lambda: count("owner")))
    await owner.until(is_invoke)
    await expire(jface)
    other = jface.variant(wait_seconds=0.2)
    late = Stepper(other, effect_plan(other, lambda: count("late")))
    await late.until(is_takeover)  # read the expired entry, decided to take it over
    early = Stepper(jface, effect_plan(jface, lambda: count("early")))
    await early.until(is_invoke)  # another worker took it over first, under a live lease

    with pytest.raises(EffectInProgressError):  # the late take-over fails, then the live lease makes it wait
        await late.finish()
    assert (await entry(jface))["fence"] == 2
    assert await early.finish() == "early"
    assert count.n == 1


@offline
async def test_a_take_over_loses_to_a_renewal_after_its_read(jface: JournalFace) -> None:
    count = Counter()
    owner = Stepper(jface, effect_plan(jface, lambda: count("owner")))
    await owner.until(is_invoke)
    await expire(jface)
    other = jface.variant(wait_seconds=0.2)
    taker = Stepper(other, effect_plan(other, lambda: count("taker")))
    await taker.until(is_takeover)
    # The owner's clock still saw its lease live, and it renewed before the take-over landed.
    await jface.raw_update({"chunk": 0}, {"$set": {"lease_until": utcnow() + timedelta(seconds=60)}})
    with pytest.raises(EffectInProgressError):
        await taker.finish()
    assert (await entry(jface))["fence"] == 1
    assert await owner.finish() == "owner"
    assert count.n == 1


@offline
async def test_a_renewal_fails_once_the_lease_expired_or_the_claim_was_taken_over(jface: JournalFace) -> None:
    owner = Stepper(jface, effect_plan(jface, lambda: "owner"))
    await owner.until(is_invoke)
    fence = (await entry(jface))["fence"]
    renew = jface.journal._renew_plan  # noqa: SLF001
    assert await Stepper(jface, renew(POS, fence)).finish() is True
    await expire(jface)
    assert await Stepper(jface, renew(POS, fence)).finish() is False  # expired: the owner cannot revive it
    lease = (await entry(jface))["lease_until"]

    await Stepper(jface, effect_plan(jface, lambda: "taker")).until(is_invoke)
    assert await Stepper(jface, renew(POS, fence)).finish() is False  # taken over: the old token is dead
    assert (await entry(jface))["lease_until"] > lease
