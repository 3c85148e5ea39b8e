"""One life of an explorer history in a child process, on a real server: run the plan's thread until done, or until
its fault SIGKILLs the process (tests/explorer/, tests/test_history_kills.py).

    python -m tests.workers.history_worker '{"uri": "mongodb://...", "db": "d", "plan": "Plan(...)",
        "ledger": "/tmp/x/ledger.jsonl", "result": "/tmp/x/r1.json", "kill": ["upsert checkpoints", 3]}'

- ``plan``: the history (its ``Fault`` ``raise`` and ``node_kill`` fire in their node);
- ``kill``: ``[label, n]``: SIGKILL at the ``n``-th storage request of that label (``lost_reply``: after it ran);
  ``root_step``: SIGKILL at the store of the root checkpoint of that step;
- ``record_delay``: hold each journal ``update`` (a record) that long before it is sent, as a slow server would;
- ``life``: which life of the thread id this is (for the ledger).

Every real execution and every value a node got back goes to the ``ledger`` file; the result file says how the
life ended: ``done`` with the final values, ``unknown`` with the idempotency keys of unknown outcomes, or ``error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient, MongoClient, monitoring

from tests.command_faults import CommandFault, injected, nth_of, stores_root_checkpoint
from tests.explorer import graphs, history, ledger
from tests.explorer.plans import NAMES


class SlowRecords(monitoring.CommandListener):
    """Holds every ``update`` of the journal ``seconds`` before it is sent (the thread sending it sleeps)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        if self.seconds and event.command_name == "update" and event.command.get("update") == "activity_journal":
            time.sleep(self.seconds)

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


def the_fault(spec: dict[str, Any]) -> CommandFault:
    if spec.get("root_step") is not None:
        return CommandFault(stores_root_checkpoint(spec["root_step"]), kill=True)
    if spec.get("kill"):
        label, n = spec["kill"]
        return CommandFault(nth_of(label, n), lost_reply=bool(spec.get("lost_reply")), kill=True)
    return CommandFault(lambda request, index: False)


def main(spec: dict[str, Any]) -> int:
    plan = eval(spec["plan"], NAMES)  # noqa: S307 - the test's own text
    listeners = [SlowRecords(spec.get("record_delay", 0.0))]
    client = MongoClient(spec["uri"], event_listeners=listeners)
    async_client = AsyncMongoClient(spec["uri"], event_listeners=listeners)
    ledger.use(ledger.Ledger(Path(spec["ledger"]), life=spec.get("life", 1)))
    graphs.arm(plan.fault)
    store = history.Store(client, async_client, spec["db"])
    with injected(the_fault(spec)):
        life = asyncio.run(history.Driver(plan, store, stop_on_error=spec.get("stop_on_error", False)).life())
    result = {
        "pid": os.getpid(),
        "status": "unknown" if life.unknown else "done" if life.values is not None else "error",
        "values": life.values and {"notes": life.values.get("notes", [])},
        "unknown": [error.idempotency_key for error in life.unknown],
        "errors": life.errors,
    }
    partial = Path(spec["result"]).with_suffix(".partial")
    partial.write_text(json.dumps(result, default=str))
    partial.replace(spec["result"])
    with contextlib.suppress(Exception):
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
