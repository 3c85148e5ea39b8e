"""One run of a golden's thread under the code of an older storage format (tests/explorer/goldens.py), in a child
process of ``scripts/golden-histories``, run by the interpreter of a throwaway venv holding that code.

    <old venv>/bin/python -m tests.workers.golden_worker '{"uri": "mongodb://...", "db": "d",
        "golden": "format2 platform.compile effect", "ledger": "/tmp/x/ledger.jsonl", "action": "start"}'

- ``action`` ``start``: the thread's first run, SIGKILLed right after the golden's effect called its provider (its
  ledger record written and fsynced), or stopped at the interrupt; ``drain``: a resume (``invoke(None)``) to the
  interrupt, as an operator drains a run in flight with the version that started it.

It imports the package under test only through tests/explorer/graphs.py's public names and ``DurablePlatform``,
which every format's code has, and checks first that the package is the old code it was asked for.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient, MongoClient

from tests.explorer import goldens, graphs, ledger


def old_package(expected_format: int) -> Any:
    """The package this interpreter imports: the old code, installed outside this checkout, of ``expected_format``."""
    import langgraph_durable_mongodb

    where = Path(langgraph_durable_mongodb.__file__).resolve()
    checkout = Path(__file__).resolve().parent.parent.parent
    if checkout in where.parents:
        raise SystemExit(f"golden_worker: the package comes from this checkout ({where}), not the old code")
    try:
        from langgraph_durable_mongodb.storage_format import FORMAT_VERSION
    except ImportError:
        from langgraph_durable_mongodb.storage.format import FORMAT_VERSION
    if FORMAT_VERSION != expected_format:
        raise SystemExit(f"golden_worker: the package at {where} writes format {FORMAT_VERSION}, not {expected_format}")
    return langgraph_durable_mongodb


def kill_after(slot: tuple[str, int | None, int, int] | None) -> None:
    """SIGKILL this process right after the effect at ``slot`` called its provider (``graphs.execute`` ran)."""
    if slot is None:
        return
    execute = graphs.execute

    def executing(node: str, item: Any, visit: int, idx: int, name: str, once: bool = False, plain: bool = False) -> str:
        value = execute(node, item, visit, idx, name, once, plain)
        if (node, item, visit, idx) == slot:
            ledger.current().add("fault", what=f"SIGKILL right after {name} (item {item}) called its provider")
            os.kill(os.getpid(), signal.SIGKILL)
        return value

    graphs.execute = executing


def main(spec: dict[str, Any]) -> int:
    golden = goldens.BY_NAME[spec["golden"]]
    old_package(golden.format)
    from langgraph_durable_mongodb.platform import DurablePlatform

    plan = golden.plan()
    ledger.use(ledger.Ledger(Path(spec["ledger"])))
    client, async_client = MongoClient(spec["uri"]), AsyncMongoClient(spec["uri"])
    platform = DurablePlatform(
        client, async_client=async_client, db_name=spec["db"],
        journal_options={"lease_seconds": 0.5, "wait_seconds": 5.0}, run_wait_seconds=2.0,
    )
    builder = graphs.build(plan)
    graph = platform.compile(builder) if plan.form == "platform.compile" else builder.compile(checkpointer=platform.checkpointer)
    config = {"configurable": {"thread_id": goldens.THREAD}}
    if spec["action"] == "start":
        kill_after(goldens.KILLS[golden.stop])
        graph.invoke({"notes": []}, config, durability=plan.durability)
    else:
        graph.invoke(None, config, durability=plan.durability)
    interrupted = [t.name for t in graph.get_state(config).tasks if t.interrupts]
    if interrupted != ["s3q"]:
        raise SystemExit(f"golden_worker: the run stopped at {interrupted}, not at the interrupt in s3q")
    if platform.run_locks is not None:
        platform.run_locks.wait_releases(10)  # a sync run's release is sent in the background
    platform.close()
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
