"""The saver port (``journal/ports.py``): ``MongoDBCheckpointer`` has every member the journal, the locator and
the platform's served scopes ask of it, with the parameters they pass. The port is static only, so this test is
what fails when the checkpointer drops or renames a member the journal calls."""

from __future__ import annotations

import inspect

import mongomock
import pytest

from langgraph_durable_mongodb.checkpointer import MongoDBCheckpointer
from langgraph_durable_mongodb.journal.ports import JournalSaver, RootCheckpoints


def _members(port: type) -> dict[str, object]:
    members: dict[str, object] = {}
    for klass in reversed(port.__mro__):
        if klass in (object,) or klass.__name__ in ("Protocol", "Generic"):
            continue
        members.update({name: None for name in getattr(klass, "__annotations__", {})})
        members.update({name: value for name, value in vars(klass).items() if inspect.isfunction(value) and not name.startswith("_")})
    return members


@pytest.mark.parametrize("port", [RootCheckpoints, JournalSaver])
def test_the_checkpointer_fills_the_port(port: type) -> None:
    saver = MongoDBCheckpointer(mongomock.MongoClient(), db_name="ports", ttl={"default_ttl": 1})
    members = _members(port)
    assert "origin_of" in members and ("serde" in members) == (port is JournalSaver)
    for name, declared in members.items():
        assert hasattr(saver, name), f"MongoDBCheckpointer has no {name!r}, which {port.__name__} asks for"
        if declared is None:
            continue
        filled = getattr(saver, name)
        assert inspect.iscoroutinefunction(filled) == inspect.iscoroutinefunction(declared), name
        wanted = list(inspect.signature(declared).parameters)[1:]
        assert list(inspect.signature(filled).parameters) == wanted, name
