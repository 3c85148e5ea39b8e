"""What the ``langgraph_durable_mongodb`` logger says, silent unless the application configures logging: a test
per row of the logging table (docs/configuration.md).

DEBUG for every replay (position, idempotency key), on the claim path and under the run lock; INFO for a take-over
of an effect a dead worker started, and of a run lock whose lease expired; WARNING for an effect's lost lease and
an outcome that cannot be known (``at_most_once``). Sync and async faces (offline where the dead owner is a process
of this host). The rest of the table is tested beside what it logs: the lost run lock's WARNING in
tests/test_run_lock_fence.py, the INFO of a graph run without any checkpointer in tests/test_stateless_runs.py.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import pytest
from langgraph.graph import START, StateGraph

import langgraph_durable_mongodb
from langgraph_durable_mongodb.errors import EffectOutcomeUnknownError
from langgraph_durable_mongodb.journal import effect

from .clients import offline
from .graphs import Notes, config
from .journal_helpers import POS, SEARCH, JournalFace, linux_only, owned_entry
from .journal_steps import Stepper, effect_plan, expire, is_invoke

LOGGER = "langgraph_durable_mongodb"


def test_silent_by_default_and_versioned() -> None:
    handlers = logging.getLogger(LOGGER).handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)  # no "No handlers could be found", no lastResort
    from importlib.metadata import version

    assert langgraph_durable_mongodb.__version__ == version("langgraph-durable-mongodb")


@offline
async def test_every_replay_is_logged_at_debug_with_its_position_and_key(
    jface: JournalFace, caplog: pytest.LogCaptureFixture
) -> None:
    assert await jface.run(SEARCH, lambda: "sunny", POS) == "sunny"
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        for _ in range(2):
            assert await jface.run(SEARCH, lambda: "ran again", POS) == "sunny"
    replays = [r for r in caplog.records if r.levelno == logging.DEBUG and "replaying" in r.getMessage()]
    assert len(replays) == 2 and all(r.name.startswith(LOGGER) for r in replays)
    assert str(POS) in replays[0].getMessage() and POS.idempotency_key in replays[0].getMessage()


@linux_only
@offline
async def test_a_take_over_is_logged_at_info(jface: JournalFace, dead_pid: int, caplog: pytest.LogCaptureFixture) -> None:  # noqa: F811
    await jface.raw_insert(owned_entry(owner_pid=dead_pid))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        assert await jface.variant(wait_seconds=30).run(SEARCH, lambda: "ran again", POS) == "ran again"
    [record] = [r for r in caplog.records if "running it again" in r.getMessage()]
    assert record.levelno == logging.INFO and str(POS) in record.getMessage() and str(dead_pid) in record.getMessage()


@linux_only
@offline
async def test_an_outcome_that_cannot_be_known_is_logged_at_warning(
    jface: JournalFace, dead_pid: int, caplog: pytest.LogCaptureFixture  # noqa: F811
) -> None:
    await jface.raw_insert(owned_entry(owner_pid=dead_pid))
    with caplog.at_level(logging.WARNING, logger=LOGGER), pytest.raises(EffectOutcomeUnknownError):
        await jface.variant(wait_seconds=30).run(replace(SEARCH, at_most_once=True), lambda: "never", POS)
    [record] = [r for r in caplog.records if "outcome unknown" in r.getMessage()]
    assert record.levelno == logging.WARNING and POS.idempotency_key in record.getMessage()


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_replay_under_the_run_lock_is_logged_at_debug_too(make_platform: Any, face: str, caplog: pytest.LogCaptureFixture) -> None:
    """``platform.compile``'s runs hold the thread's run lock: they replay from the entries their node read, with
    no claim. Those replays are logged as the claim path's are."""
    platform, crashed = make_platform(), []

    @effect(kind="tool", name="lookup")
    def lookup(ref: str) -> str:
        return f"found {ref}"

    def node(state: Notes) -> Notes:
        found = lookup("P-7")
        if not crashed:
            crashed.append(1)
            raise ConnectionError("worker lost")
        return {"notes": [found]}

    builder = StateGraph(Notes)
    builder.add_node("work", node)
    builder.add_edge(START, "work")
    graph, cfg = platform.compile(builder), config("logged")
    with pytest.raises(ConnectionError):
        graph.invoke({"notes": []}, cfg) if face == "sync" else await graph.ainvoke({"notes": []}, cfg)
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        out = graph.invoke(None, cfg) if face == "sync" else await graph.ainvoke(None, cfg)
    assert out["notes"] == ["found P-7"]
    [entry] = platform.journal.entries("logged")
    [record] = [r for r in caplog.records if r.levelno == logging.DEBUG and "replaying tool 'lookup'" in r.getMessage()]
    assert entry["idempotency_key"] in record.getMessage() and "node 'work'" in record.getMessage()


@offline
async def test_a_lost_effect_lease_is_logged_at_warning(jface: JournalFace, caplog: pytest.LogCaptureFixture) -> None:
    """The effect ran, but its lease expired and another worker took the position over before the record: the
    record is fenced out, and that is said with the position."""
    first = Stepper(jface, effect_plan(jface, lambda: "first"))
    await first.until(is_invoke)  # claimed, about to run
    await expire(jface)
    second = Stepper(jface, effect_plan(jface, lambda: "second"))
    await second.until(is_invoke)  # took the position over
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert await first.finish() == "first"
    [record] = [r for r in caplog.records if "lease lost" in r.getMessage()]
    assert record.levelno == logging.WARNING and str(POS) in record.getMessage()
    assert await second.finish() == "second"


@pytest.mark.parametrize("face", ["sync", "async"])
async def test_a_run_lock_taken_over_is_logged_at_info(
    make_platform: Any, face: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A run takes over the lock of a run whose lease expired, and says whose it took."""
    from datetime import timedelta

    from langgraph_durable_mongodb.storage.plans.lease import utcnow

    platform = make_platform()
    platform.setup()
    runs = platform.checkpointer.client[platform.checkpointer.db_name]["thread_runs"]
    runs.insert_one({
        "thread_id": "held", "fence": 4, "owner": "gone", "owner_host": "worker-9", "owner_pid": 4242,
        "lease_until": utcnow() - timedelta(seconds=5), "started_at": utcnow() - timedelta(minutes=1),
    })

    @effect(kind="tool", name="lookup")
    def lookup(ref: str) -> str:
        return ref

    builder = StateGraph(Notes)
    builder.add_node("work", lambda state: {"notes": [lookup("x")]})
    builder.add_edge(START, "work")
    graph = platform.compile(builder)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        if face == "sync":
            graph.invoke({"notes": []}, config("held"))
        else:
            await graph.ainvoke({"notes": []}, config("held"))
    [record] = [r for r in caplog.records if "took over the run lock" in r.getMessage()]
    assert record.levelno == logging.INFO
    assert "'held'" in record.getMessage() and "worker-9" in record.getMessage() and "4242" in record.getMessage()
