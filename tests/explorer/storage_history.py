"""The storage-history dimension: a history that starts from a golden database of an older storage format
(goldens.py), as that format's code left it, and goes on with today's code, which upgrades it when it opens it.

- A golden whose run was killed under ``platform.compile`` still holds its thread's run lock: today's code must
  refuse to upgrade it (``RunsInFlightError`` naming the thread) and write nothing. The operator then drains it as
  docs/storage.md says, with the old code: the history goes on from the golden's drained dump (the old code
  resumed it to its interrupt).
- Any other golden is upgraded by the first call and resumed to the end.

The old code's ledger (every execution, with the idempotency key its provider saw) opens the history's ledger, so
the oracle judges the history whole: an effect in flight across the upgrade runs again under the key recorded
before the crash, or not at all (``one_key``, ``runs_once``), and what the upgrade did is judged as ``upgrade``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from typing import Any

from bson import json_util

from langgraph_durable_mongodb import RunsInFlightError

from . import goldens, ledger
from .plans import Plan


@functools.lru_cache(maxsize=None)
def _file(format_version: int) -> dict[str, Any]:
    return json_util.loads(goldens.path(format_version).read_text())


def dumped(golden: goldens.Golden, variant: str) -> dict[str, Any]:
    """``{"db": {collection: documents}, "ledger": records}`` of ``golden``: ``in_flight`` (as its run stopped) or
    ``drained`` (resumed to its interrupt by the old code). Copies: a history may change them."""
    return copy.deepcopy(_file(golden.format)["goldens"][golden.name][variant])


def load(db: Any, database: dict[str, list[dict[str, Any]]]) -> None:
    """Write a dumped ``database`` into ``db`` (an empty database), collection by collection."""
    for name, docs in database.items():
        if docs:
            db[name].insert_many(copy.deepcopy(docs))
        else:
            db.create_collection(name)


def changes(db: Any, database: dict[str, list[dict[str, Any]]]) -> list[str]:
    """How ``db`` differs from the dumped ``database`` it was loaded from (every document compared)."""
    found = []
    for name in sorted(set(db.list_collection_names()) | set(database)):
        now = sorted(db[name].find(), key=repr)
        if now != sorted(database.get(name, []), key=repr):
            found.append(f"{name}: {len(database.get(name, []))} documents dumped, {len(now)} now, or changed")
    return found


def start(plan: Plan, store: Any, history_ledger: ledger.Ledger, refused: Any) -> tuple[str, list[str]]:
    """Load ``plan``'s golden into ``store`` and its old ledger into ``history_ledger``; for a run in flight, check that
    ``refused()`` (a first call of today's code on it) raises ``RunsInFlightError`` and writes nothing, then load the
    drained dump in its place. Returns the fault the old code's run met (``kill`` or ``""``) and what the upgrade
    did wrong, in words."""
    golden = goldens.BY_NAME[plan.golden]
    first = dumped(golden, "in_flight")
    load(store.client[store.db_name], first["db"])
    history_ledger.records.extend(first["ledger"])
    problems: list[str] = []
    if golden.in_flight:
        problems = refusal(golden, store, first["db"], refused)
        drained = dumped(golden, "drained")
        store.drop()
        load(store.client[store.db_name], drained["db"])
        history_ledger.records.extend(drained["ledger"][len(first["ledger"]):])
    return ("kill" if goldens.KILLS[golden.stop] else ""), problems


def refusal(golden: goldens.Golden, store: Any, database: dict[str, list[dict[str, Any]]], refused: Any) -> list[str]:
    """What is wrong with today's code's first call on a database with a run in flight: it must raise
    ``RunsInFlightError`` naming the thread, and leave every document as it was."""
    try:
        asyncio.run(refused())
    except RunsInFlightError as error:
        problems = [] if error.thread_ids == (goldens.THREAD,) else [f"refused naming {error.thread_ids}"]
    except Exception as error:  # noqa: BLE001 - judged: anything but the refusal is a problem
        problems = [f"a run in flight of format {golden.format}: the first call raised {type(error).__name__}: {error}"]
    else:
        problems = [f"a run in flight of format {golden.format} was upgraded, not refused"]
    return problems + [f"the refused database changed: {c}" for c in changes(store.client[store.db_name], database)]
