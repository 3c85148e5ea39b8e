"""Record and replay, leases, fences and documents of the activity journal; each test counts real executions."""

from __future__ import annotations

import asyncio
import threading
from datetime import timedelta

import pytest

from langgraph_durable_mongodb import MongoDBCheckpointer
from langgraph_durable_mongodb.errors import (
    EffectInProgressError,
    EffectOutcomeUnknownError,
    InputChangedError,
    InputChangedWarning,
    NoDurableScopeError,
    NondeterminismError,
    OutcomeNotSerializableError,
)
from langgraph_durable_mongodb.journal import (
    ActivityJournal,
    EffectCall,
    EffectPosition,
    current_effect,
    digest,
    effect,
    effect_scope,
)
from langgraph_durable_mongodb.storage.plans.lease import utcnow

from .journal_helpers import KINDS, SEARCH, Counter, JournalFace, NodeRun, owned_entry

pytestmark = pytest.mark.parametrize("client_kind", KINDS, indirect=True)

POS = EffectPosition("t1", "agent/1/case/1", "policy_analysis", "1", "1")


class PaymentDeclined(Exception):
    pass


async def test_record_then_replay_runs_once_and_stores_a_readable_document(jface: JournalFace) -> None:
    count = Counter()
    first = await jface.run(SEARCH, lambda: count({"temp": 21}), POS)
    again = await jface.run(SEARCH, lambda: count({"temp": 99}), POS)
    assert first == again == {"temp": 21}
    assert count.n == 1
    [doc] = await jface.raw()
    assert {
        k: doc[k] for k in ("thread_id", "path", "node", "occurrence", "effect_key", "kind", "name", "status", "attempts")
    } == {
        "thread_id": "t1",
        "path": "agent/1/case/1",
        "node": "policy_analysis",
        "occurrence": "1",
        "effect_key": "1",
        "kind": "tool",
        "name": "search",
        "status": "completed",
        "attempts": 1,
    }
    assert doc["idempotency_key"] == POS.idempotency_key
    assert doc["input"]["digest"].startswith("sha256:") and doc["input"]["preview"] == '{"q": "weather"}'
    assert doc["outcome"]["type"] and bytes(doc["outcome"]["data"]) and doc["outcome"]["preview"] == '{"temp": 21}'
    assert doc["started_at"] <= doc["finished_at"] and doc["duration_ms"] >= 0 and "lease_until" not in doc
    assert "error" not in doc


async def test_ordinals_follow_call_order_and_restart_when_the_node_runs_again(jface: JournalFace) -> None:
    count = Counter()

    @effect(kind="step")
    def step(n: int) -> int:
        return count(n * 10)

    @effect(kind="step")
    async def astep(n: int) -> int:
        await asyncio.sleep(0.05 if n == 1 else 0)  # the first call finishes last
        return count(n * 10)

    async def node() -> list[int]:
        with effect_scope(jface.journal, NodeRun()):
            if jface.is_async:
                return list(await asyncio.gather(astep(1), astep(2)))
            return [step(1), step(2)]

    assert await node() == [10, 20]
    assert await node() == [10, 20]  # the node re-ran: both replayed
    assert count.n == 2
    assert sorted((d["effect_key"], d["outcome"]["preview"]) for d in await jface.raw()) == [("1", "10"), ("2", "20")]


async def test_a_failure_is_recorded_then_retried(jface: JournalFace) -> None:
    count = Counter()

    def flaky() -> str:
        count()
        if count.n == 1:
            raise ValueError("upstream 503")
        return "ok"

    with pytest.raises(ValueError, match="upstream 503"):
        await jface.run(SEARCH, flaky, POS)
    [doc] = await jface.raw()
    assert doc["status"] == "failed"
    assert doc["error"] == {"type": "ValueError", "module": "builtins", "message": "upstream 503", "terminal": False}
    assert await jface.run(SEARCH, flaky, POS) == "ok"
    assert count.n == 2
    [doc] = await jface.raw()
    assert (doc["status"], doc["attempts"], "error" in doc) == ("completed", 2, False)


async def test_a_terminal_error_is_replayed_as_the_same_type(jface: JournalFace) -> None:
    face = jface.variant(terminal_errors=(PaymentDeclined,))
    count = Counter()

    def charge() -> None:
        count()
        raise PaymentDeclined("card expired")

    for _ in range(2):
        with pytest.raises(PaymentDeclined, match="card expired"):
            await face.run(EffectCall("payment", "charge"), charge, POS)
    assert count.n == 1
    [doc] = await face.raw()
    assert doc["error"]["terminal"] is True and doc["error"]["type"] == "PaymentDeclined"


async def test_a_live_lease_is_waited_for_then_its_outcome_returned(jface: JournalFace) -> None:
    count = Counter()

    async def slow_worker() -> str:
        if jface.is_async:
            await asyncio.sleep(0.3)
        else:
            threading.Event().wait(0.3)
        return count("from the other worker")

    if jface.is_async:
        other = asyncio.create_task(jface.run(SEARCH, slow_worker, POS))
    else:
        other = threading.Thread(target=lambda: jface.journal.run(SEARCH, jface.fn(slow_worker), position=POS))
        other.start()
    while not await jface.raw():
        await asyncio.sleep(0.01)
    mine = Counter()
    assert await jface.run(SEARCH, lambda: mine("mine"), POS) == "from the other worker"
    await other if jface.is_async else other.join()
    assert (count.n, mine.n) == (1, 0)


async def test_a_live_lease_past_the_wait_raises_in_progress(jface: JournalFace) -> None:
    await jface.raw_insert(owned_entry(POS, lease_seconds=3600, owner="dead-worker"))
    count = Counter()
    with pytest.raises(EffectInProgressError, match="running in another worker") as caught:
        await jface.variant(wait_seconds=0.1).run(SEARCH, count, POS)
    assert count.n == 0 and caught.value.position == POS


async def test_an_expired_lease_runs_again_with_the_same_idempotency_key(jface: JournalFace) -> None:
    await jface.raw_insert(owned_entry(POS, lease_seconds=-1, owner="dead-worker"))
    seen = []
    assert await jface.run(SEARCH, lambda: seen.append(current_effect().idempotency_key) or "done", POS) == "done"
    assert seen == [POS.idempotency_key]
    [doc] = await jface.raw()
    assert (doc["status"], doc["attempts"], doc["idempotency_key"]) == ("completed", 2, POS.idempotency_key)


async def test_at_most_once_with_an_expired_lease_asks_a_person(jface: JournalFace) -> None:
    await jface.raw_insert(owned_entry(POS, lease_seconds=-1, owner="dead-worker"))
    count = Counter()
    charge = EffectCall("tool", "search", input={"q": "weather"}, at_most_once=True)
    with pytest.raises(EffectOutcomeUnknownError, match="may or may not have happened") as caught:
        await jface.run(charge, count, POS)
    assert caught.value.idempotency_key == POS.idempotency_key and count.n == 0
    # The person checked the external system: it did happen.
    await jface.call("resolve", POS, "charged")
    assert await jface.run(charge, count, POS) == "charged"
    # Or they want it run again.
    await jface.call("discard", POS)
    assert await jface.run(charge, lambda: count("again"), POS) == "again"
    assert count.n == 1


async def test_an_effect_claimed_at_most_once_asks_a_person_though_the_code_no_longer_says_so(jface: JournalFace) -> None:
    """The dead worker claimed it ``at_most_once``: that promise is the entry's, so a resume whose code dropped the
    flag still does not run it again."""
    await jface.raw_insert(owned_entry(POS, lease_seconds=-1, owner="dead-worker", at_most_once=True))
    count = Counter()
    with pytest.raises(EffectOutcomeUnknownError, match="may or may not have happened"):
        await jface.run(SEARCH, count, POS)
    assert count.n == 0


async def test_the_fence_rejects_a_stale_owners_completion(jface: JournalFace) -> None:
    taker = Counter()

    async def stale_worker() -> str:
        # While this worker runs, its lease expires and another worker takes the position over.
        await jface.raw_update({"chunk": 0}, {"$set": {"lease_until": utcnow() - timedelta(seconds=1)}})
        assert await jface.run(SEARCH, lambda: taker("new owner's result"), POS) == "new owner's result"
        return "stale result"

    assert await jface.run(SEARCH, jface.fn(stale_worker), POS) == "new owner's result"
    [doc] = await jface.raw()
    assert (doc["status"], doc["attempts"], doc["outcome"]["preview"]) == ("completed", 2, "new owner's result")
    assert await jface.run(SEARCH, Counter(), POS) == "new owner's result"
    assert taker.n == 1


async def test_another_effect_at_a_recorded_position_is_nondeterminism(jface: JournalFace) -> None:
    await jface.run(SEARCH, lambda: "sunny", POS)
    count = Counter()
    with pytest.raises(NondeterminismError, match="recorded tool 'search'.*now calls tool 'send_email'"):
        await jface.run(EffectCall("tool", "send_email"), count, POS)
    assert count.n == 0
    rerun = jface.variant(on_nondeterminism="rerun")
    assert await rerun.run(EffectCall("tool", "send_email"), lambda: count("sent"), POS) == "sent"
    assert count.n == 1


async def test_a_changed_input_warns_or_raises(jface: JournalFace) -> None:
    await jface.run(SEARCH, lambda: "sunny", POS)
    changed = EffectCall("tool", "search", input={"q": "rain"})
    with pytest.warns(InputChangedWarning, match="input changed"):
        assert await jface.run(changed, Counter(), POS) == "sunny"
    with pytest.raises(InputChangedError, match="input changed"):
        await jface.variant(on_input_change="raise").run(changed, Counter(), POS)


async def test_an_outcome_larger_than_a_bson_document_round_trips(jface: JournalFace) -> None:
    big = b"\x01\x02" * (17 * 1024 * 1024 // 2 + 5)
    count = Counter()
    assert await jface.run(SEARCH, lambda: count(big), POS) == big
    assert await jface.run(SEARCH, count, POS) == big
    assert count.n == 1
    docs = await jface.raw()
    [entry] = [d for d in docs if d["effect_key"] == "1"]
    assert entry["outcome"]["chunks"] == 3 and len(docs) == 3


async def test_credentials_are_never_stored_in_clear(jface: JournalFace) -> None:
    call = EffectCall(
        "tool", "fetch", input={"url": "https://api", "api_key": "sk-live-123", "headers": {"Authorization": "Bearer abc"}}
    )
    await jface.run(call, lambda: {"rows": 2, "access_token": "tok-456"}, POS)
    [doc] = await jface.raw()
    readable = repr({k: v for k, v in doc.items() if k != "outcome"}) + doc["outcome"]["preview"]
    for secret in ("sk-live-123", "Bearer abc", "tok-456"):
        assert secret not in readable
    assert "[REDACTED]" in doc["input"]["preview"] and "https://api" in doc["input"]["preview"]


async def test_credential_values_echoed_in_errors_and_outcomes_are_scrubbed(jface: JournalFace) -> None:
    call = EffectCall("tool", "fetch", input={"url": "https://api", "auth": {"api_key": "sk-live-123"}})

    def fail() -> None:
        raise PermissionError("401 for https://api?api_key=sk-live-123")

    with pytest.raises(PermissionError):
        await jface.run(call, fail, POS)
    [doc] = await jface.raw()
    assert doc["error"]["message"] == "401 for https://api?api_key=[REDACTED]"
    await jface.run(call, lambda: {"echo": "key sk-live-123 used"}, POS)
    [doc] = await jface.raw()
    assert "sk-live-123" not in doc["outcome"]["preview"] and "key [REDACTED] used" in doc["outcome"]["preview"]


async def test_an_entry_recorded_before_outcome_digests_replays(jface: JournalFace) -> None:
    count = Counter()
    await jface.run(SEARCH, lambda: count({"temp": 21}), POS)
    [doc] = await jface.raw()
    assert doc["outcome"]["digest"].startswith("sha256:")
    await jface.raw_update({"chunk": 0}, {"$unset": {"outcome.digest": ""}})
    assert await jface.run(SEARCH, count, POS) == {"temp": 21}
    assert count.n == 1


async def test_an_encrypting_serde_turns_previews_and_error_messages_off_unless_asked(jface: JournalFace) -> None:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    serde = EncryptedSerializer.from_pycryptodome_aes(key=b"0123456789abcdef")

    def fail() -> None:
        raise ValueError("card 4111 declined")

    second = EffectPosition("t1", "agent/1/case/1", "policy_analysis", "1", "2")
    for face, readable in ((jface.variant(serde=serde), False), (jface.variant(serde=serde, preview_chars=50), True)):
        await face.run(SEARCH, lambda: {"card": "4111"}, POS)
        with pytest.raises(ValueError):
            await face.run(SEARCH, fail, second)
        done, failed = sorted(await face.raw(), key=lambda d: d["effect_key"])
        assert bool(done["input"]["preview"]) is bool(done["outcome"]["preview"]) is readable
        assert failed["error"]["type"] == "ValueError"
        assert ("4111" in failed["error"]["message"]) is readable
        await face.call("discard", POS)
        await face.call("discard", second)


async def test_current_effect_gives_the_position_and_nested_effects_number_under_it(jface: JournalFace) -> None:
    seen = []

    def note_outer() -> None:
        info = current_effect()
        seen.append((info.position.effect_key, info.idempotency_key == info.position.idempotency_key))

    if jface.is_async:

        @effect(kind="inner")
        async def inner() -> str:
            seen.append(current_effect().position.effect_key)
            return "inner"

        @effect(kind="outer")
        async def outer() -> str:
            note_outer()
            return await inner() + await inner()

        with effect_scope(jface.journal, NodeRun()):
            assert await outer() == "innerinner"
    else:

        @effect(kind="inner")
        def inner() -> str:
            seen.append(current_effect().position.effect_key)
            return "inner"

        @effect(kind="outer")
        def outer() -> str:
            note_outer()
            return inner() + inner()

        with effect_scope(jface.journal, NodeRun()):
            assert outer() == "innerinner"
    assert seen == [("1", True), "1/1", "1/2"]
    assert current_effect() is None


async def test_an_effect_outside_a_durable_scope_says_what_to_do(jface: JournalFace) -> None:
    with pytest.raises(NoDurableScopeError, match="effect_scope"):
        await jface.run(SEARCH, Counter())


async def test_the_journal_follows_the_thread(jface: JournalFace, mongo_client: object, db_name: str) -> None:
    saver = MongoDBCheckpointer(mongo_client, db_name=db_name, ttl=3600)
    journal = ActivityJournal.for_checkpointer(saver)
    face = JournalFace(journal, jface.kind, jface.db, lambda **o: journal)
    await face.run(SEARCH, lambda: "sunny", POS)
    [doc] = await face.raw()
    assert doc["expire_at"] > utcnow()  # the thread's TTL
    saver_call = getattr(saver, "acopy_thread" if face.is_async else "copy_thread")
    result = saver_call("t1", "t2")
    if face.is_async:
        await result
    copied = EffectPosition("t2", POS.path, POS.node, POS.occurrence, POS.effect_key)
    assert await face.run(SEARCH, Counter(), copied) == "sunny"
    delete = getattr(saver, "adelete_thread" if face.is_async else "delete_thread")("t1")
    if face.is_async:
        await delete
    assert {d["thread_id"] for d in await face.raw()} == {"t2"}


class Opaque:
    """A return value the default serde cannot write."""


async def test_an_unserializable_outcome_fails_the_first_run_and_says_so_in_the_entry(jface: JournalFace) -> None:
    count = Counter()
    with pytest.raises(OutcomeNotSerializableError, match=r"test_journal_store\.Opaque.*Return a dict") as raised:
        await jface.run(SEARCH, lambda: count(Opaque()), POS)
    assert raised.value.position == POS and count.n == 1
    [doc] = await jface.raw()
    assert doc["status"] == "failed"
    assert (doc["error"]["type"], doc["error"]["terminal"]) == ("OutcomeNotSerializableError", False)
    assert "ran, but the journal cannot record" in doc["error"]["message"]
    # At least once: the next attempt runs it again, and a value the serde can write is kept.
    assert await jface.run(SEARCH, lambda: count({"temp": 21}), POS) == {"temp": 21}
    assert count.n == 2


async def test_an_unserializable_at_most_once_outcome_is_never_run_again(jface: JournalFace) -> None:
    pay = EffectCall("payment", "charge", input={"cents": 100}, at_most_once=True)
    count = Counter()
    with pytest.raises(OutcomeNotSerializableError, match="at_most_once, so it is not run again"):
        await jface.run(pay, lambda: count(Opaque()), POS)
    with pytest.raises(OutcomeNotSerializableError, match="replayed from the activity journal|not run again"):
        await jface.run(pay, lambda: count("charged"), POS)
    assert count.n == 1
    [doc] = await jface.raw()
    assert (doc["status"], doc["error"]["terminal"]) == ("failed", True)
    await jface.call("resolve", POS, "charged by hand")
    assert await jface.run(pay, lambda: count("again"), POS) == "charged by hand"
    assert count.n == 1
