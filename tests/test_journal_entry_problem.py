"""Which entry documents the journal refuses to act on (``entry_problem``), and what it says of each (no database).

A refused entry raises ``CorruptJournalEntryError`` before its effect runs (``test_bad_input`` shows that through a
graph); here each field's check is pinned with the words a person reads.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from bson import Binary

from langgraph_durable_mongodb.journal.documents import entry_problem

_LEASE = datetime(2030, 1, 1)
_OUTCOME = {"type": "json", "data": Binary(b"{}"), "digest": "sha256:00", "preview": "{}"}
_ERROR = {"type": "ValueError", "module": "builtins", "message": "no", "terminal": False}


def entry(written: str = "completed", **changes: Any) -> dict[str, Any]:
    """A sound entry as the journal writes it ``written`` (its status), with ``changes`` applied (a value of
    ``...`` removes the field)."""
    doc: dict[str, Any] = {
        "thread_id": "t", "path": "agent/1", "node": "n", "occurrence": "1", "effect_key": "1", "chunk": 0,
        "kind": "tool", "name": "lookup", "status": written, "owner": "o1", "fence": 1, "attempts": 1,
        "input": {"digest": "sha256:11", "preview": "{}"},
    }
    doc.update({"started": {"lease_until": _LEASE}, "completed": {"outcome": dict(_OUTCOME)}, "failed": {"error": dict(_ERROR)}}[written])
    doc.update(changes)
    return {k: v for k, v in doc.items() if v is not ...}


@pytest.mark.parametrize("doc", [entry("started"), entry("completed"), entry("failed"), entry(replays=2, attempts=...)])
def test_the_entries_the_journal_writes_are_sound(doc: dict[str, Any]) -> None:
    assert entry_problem(doc) is None


REFUSED = {
    "not-a-document": (["x"], "the entry is a list, not a document"),
    "unknown-status": (entry(status="paused"), "its status is 'paused', not one of started, completed, failed"),
    "unhashable-status": (entry(status=["started"]), "its status is ['started'], not one of started, completed, failed"),
    "kind-missing": (entry(kind=...), "its kind is None, not a string"),
    "name-a-number": (entry(name=3), "its name is 3, not a string"),
    "owner-missing": (entry(owner=...), "its owner is None, not a string"),
    "attempts-a-string": (entry(attempts="x"), "its attempts is 'x', not an integer"),
    "attempts-a-bool": (entry(attempts=True), "its attempts is True, not an integer"),
    "fence-missing": (entry(fence=...), "its fence is None, not an integer"),
    "replays-a-float": (entry(replays=1.0), "its replays is 1.0, not an integer"),
    "input-a-string": (entry(input="x"), "its input is 'x', not a document with a string digest"),
    "input-digest-a-number": (entry(input={"digest": 1}), "its input is {'digest': 1}, not a document with a string digest"),
    "started-without-lease": (entry("started", lease_until=...), "it is started but its lease_until is None, not a date"),
    "completed-without-outcome": (entry(outcome=...), "it is completed but its outcome is None, not a document"),
    "outcome-data-a-string": (
        entry(outcome={**_OUTCOME, "data": "{}"}), "it is completed but its outcome has no string type and bytes data"
    ),
    "outcome-type-missing": (
        entry(outcome={"data": Binary(b"{}")}), "it is completed but its outcome has no string type and bytes data"
    ),
    "outcome-chunks-zero": (entry(outcome={**_OUTCOME, "chunks": 0}), "its outcome.chunks is 0, not a positive integer"),
    "outcome-chunks-a-string": (
        entry(outcome={**_OUTCOME, "chunks": "2"}), "its outcome.chunks is '2', not a positive integer"
    ),
    "outcome-digest-a-number": (entry(outcome={**_OUTCOME, "digest": 7}), "its outcome.digest is 7, not a string"),
    "failed-without-error": (entry("failed", error=...), "it is failed but its error is None, not a document"),
    "error-message-a-number": (
        entry("failed", error={**_ERROR, "message": 1}),
        "its error does not have a string type, module and message and a boolean terminal",
    ),
    "error-terminal-a-string": (
        entry("failed", error={**_ERROR, "terminal": "yes"}),
        "its error does not have a string type, module and message and a boolean terminal",
    ),
    "fields-before-status": (entry("started", kind=1, lease_until=...), "its kind is 1, not a string"),
}


@pytest.mark.parametrize(("doc", "problem"), REFUSED.values(), ids=REFUSED.keys())
def test_an_entry_the_journal_never_writes_is_refused_with_its_first_problem(doc: Any, problem: str) -> None:
    assert entry_problem(doc) == problem
