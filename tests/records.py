"""The journal's records watched and slowed down, for the tests of records that trail their effects: a record held
back (``slow_records``), the entries completed in the database (``completed``), what the journal held when each
``put_writes`` sent its writes (``watch_writes``), and a task's writes stored after the next checkpoint's save
failed (``writes_after_a_failed_save``)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from langgraph_durable_mongodb import ActivityJournal
from langgraph_durable_mongodb.storage.plans.requests import Sleep

#: How long each record waits before it is written: far longer than anything a test does meanwhile.
SLOW = 0.3


def slow_records(journal: Any, monkeypatch: pytest.MonkeyPatch, seconds: float = SLOW) -> None:
    record = journal._record  # noqa: SLF001 - the plan every record goes through

    def delayed(*args: Any, **kwargs: Any) -> Any:
        yield Sleep(seconds)
        return (yield from record(*args, **kwargs))

    monkeypatch.setattr(journal, "_record", delayed)


def completed(journal: ActivityJournal, thread_id: str) -> list[str]:
    """The names of the thread's completed entries, read from the database."""
    return [e["name"] for e in journal.entries(thread_id) if e.get("status") == "completed"]


def watch_writes(platform: Any, thread: str, monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The thread's completed entries as each ``put_writes`` sends its writes (read from the database then)."""
    saver, seen = platform.checkpointer, []
    plan = saver._store.put_writes_plan  # noqa: SLF001 - the plan both faces of put_writes run

    def watched(*args: Any, **kwargs: Any) -> Any:
        inner = plan(*args, **kwargs)
        try:
            request = next(inner)
            while True:
                if getattr(request, "collection", None) == saver.collections.writes:
                    seen.append(sorted(completed(platform.journal, thread)))
                request = inner.send((yield request))
        except StopIteration as done:
            return done.value

    monkeypatch.setattr(saver._store, "put_writes_plan", watched)  # noqa: SLF001
    return seen


def writes_after_a_failed_save(platform: Any, monkeypatch: pytest.MonkeyPatch, timeout: float = 5.0) -> threading.Event:
    """LangGraph stores a task's writes and the next checkpoint in the background side by side: this forces the
    order in which the checkpoint's save meets a failed record first. Each ``put_writes`` waits (up to ``timeout``)
    until a ``put`` has raised; the event returned says whether one did."""
    store, failed = platform.checkpointer._store, threading.Event()  # noqa: SLF001 - the plans both faces run
    put, put_writes = store.put_plan, store.put_writes_plan

    def put_watched(*args: Any, **kwargs: Any) -> Any:
        try:
            return (yield from put(*args, **kwargs))
        except Exception:
            failed.set()
            raise

    def put_writes_later(*args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + timeout
        while not failed.is_set() and time.monotonic() < deadline:
            yield Sleep(0.01)
        return (yield from put_writes(*args, **kwargs))

    monkeypatch.setattr(store, "put_plan", put_watched)
    monkeypatch.setattr(store, "put_writes_plan", put_writes_later)
    return failed
