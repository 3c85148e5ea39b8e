"""A long effect while the platform redelivers the run (issue 44, item 3). Real-server tier.

A tool call runs for several leases (``lookup_claim``, 6 s; leases of 1.5 s, renewed every third of it) while Agent
Server, or any queue that took the run for lost, hands the thread to a second worker process. The call must run
once: the second worker waits for the first and replays its outcome, or is refused with a typed error it can retry
on (``ThreadBusyError`` by the run lock, ``EffectInProgressError`` by the journal's claim when runs are not
exclusive, as under Agent Server's plain compile). Executions are read from the effects' own log, outside MongoDB.

Without the run lock the two runs, once past the long call, go on side by side: each writes its own next root
checkpoint, and the effects after are new visits of each (a fork, docs/platform.md: ``exclusive_runs=False``
leaves one run per thread to the caller). With it, the second run waits and finds the thread done.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from .workers.durable_worker import EFFECTS
from .workers.harness import workers_on

LONG = "lookup_claim"
LEASE = 1.5
LONG_SECONDS = 6.0


@pytest.fixture
def workers(mongodb_uri: str, tmp_path: Any) -> Any:
    with workers_on(mongodb_uri, tmp_path, lease_seconds=LEASE, long_effect=LONG, long_seconds=LONG_SECONDS) as w:
        yield w


def started(workers: Any, thread: str, timeout: float = 60.0) -> None:
    """Return once the first worker's long effect is under way (it notes its start beside the effects' log)."""
    marker = workers.tmp / f"{thread}.log.started"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if marker.exists() and marker.read_text().strip():
            return
        time.sleep(0.05)
    raise AssertionError(f"{LONG} never started")


def executions_of(workers: Any, thread: str, name: str) -> list[Any]:
    return [e for e in workers.log(thread) if e.name == name]


@pytest.mark.parametrize("exclusive", [True, False], ids=["run lock", "journal claims only"])
def test_a_redelivered_run_waits_for_the_long_effect_and_replays_it(workers: Any, exclusive: bool) -> None:
    thread = f"long-{'x' if exclusive else 'j'}"
    spec = workers.spec(thread, exclusive_runs=exclusive, run_lease_seconds=LEASE)
    first = workers.start(spec, "spawn")
    started(workers, thread)
    time.sleep(LEASE * 2)  # two leases into the long call: a lapsed renewal would show now
    second = workers.run(workers.spec(thread, exclusive_runs=exclusive, run_lease_seconds=LEASE, wait_seconds=60.0))
    first_outcome = workers.wait(spec, first)
    assert first_outcome.done and second.done, (first_outcome.result, second.result)
    assert len(executions_of(workers, thread, LONG)) == 1
    upto = EFFECTS[: EFFECTS.index(LONG) + 1]  # the effects the two runs met at the same positions
    assert {name: len(executions_of(workers, thread, name)) for name in upto} == dict.fromkeys(upto, 1)
    if exclusive:  # the second run waited for the lock, then found the thread done
        assert second.result["values"] == first_outcome.result["values"]
        assert {name: len(executions_of(workers, thread, name)) for name in EFFECTS} == dict.fromkeys(EFFECTS, 1)


@pytest.mark.parametrize(
    "exclusive, error", [(True, "ThreadBusyError"), (False, "EffectInProgressError")], ids=["run lock", "journal claims only"]
)
def test_a_redelivered_run_that_cannot_wait_is_refused_with_a_typed_error(workers: Any, exclusive: bool, error: str) -> None:
    thread = f"busy-{'x' if exclusive else 'j'}"
    spec = workers.spec(thread, exclusive_runs=exclusive, run_lease_seconds=LEASE)
    first = workers.start(spec, "spawn")
    started(workers, thread)
    time.sleep(LEASE * 2)
    second = workers.run(workers.spec(thread, exclusive_runs=exclusive, run_lease_seconds=LEASE, run_wait_seconds=0.5, wait_seconds=0.5))
    assert not second.done and error in second.result["error"], second.result
    assert workers.wait(spec, first).done
    assert len(executions_of(workers, thread, LONG)) == 1
