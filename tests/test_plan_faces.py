"""A plan started before its face is set up (``faces.started``: its input checked before the face's first plan) meets
each request's failure at the ``yield`` that asked for it, as a plan run directly does: its ``except``, ``with`` and
``finally`` blocks run then. Before, the wrapper raised the failure past the suspended plan, whose ``finally`` ran
only when it was collected: an effect whose record failed on a journal's first call kept its task's writes held."""

from __future__ import annotations

import asyncio
import concurrent.futures
from typing import Any

import mongomock
import pytest

from langgraph_durable_mongodb.storage.plans.faces import TwoFaces, started
from langgraph_durable_mongodb.storage.plans.interpreters import AsyncInterpreter, SyncInterpreter
from langgraph_durable_mongodb.storage.plans.requests import Join, Plan, Sleep


def failing() -> Join:
    """A request that fails on either face: a wait for work that failed."""
    failed: concurrent.futures.Future[None] = concurrent.futures.Future()
    failed.set_exception(ValueError("the work failed"))
    return Join((failed,))


def handling(seen: list[str]) -> Plan:
    try:
        yield failing()
    except ValueError:
        seen.append("except")
        return "handled"
    return "not raised"


def cleaning_up(seen: list[str]) -> Plan:
    try:
        yield Sleep(0)
        yield failing()
    finally:
        seen.append("finally")


def run(plan: Plan, face: str) -> Any:
    db = mongomock.MongoClient().db
    if face == "sync":
        return SyncInterpreter(db).run(plan)
    return asyncio.run(AsyncInterpreter(db).run(plan))


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_started_plan_handles_a_failed_request_where_it_asked(face: str) -> None:
    seen: list[str] = []
    assert run(started(handling(seen)), face) == "handled"
    assert seen == ["except"]


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_started_plan_s_finally_runs_before_the_failure_reaches_its_caller(face: str) -> None:
    seen: list[str] = []
    plan = started(cleaning_up(seen))
    with pytest.raises(ValueError):
        run(plan, face)
    assert seen == ["finally"]  # now, not when the plan is collected (the plan is still referenced here)


class Store(TwoFaces):
    """A storage class whose faces' first plan (the format check) fails, or is cancelled, as ``setup`` says."""

    def __init__(self, setup: Plan | None = None) -> None:
        self._first = setup
        db = mongomock.MongoClient().db
        self._init_faces(db, db, auto_setup=False, guard=lambda: self._first)


def cancelled() -> Plan:
    yield Sleep(0)
    raise asyncio.CancelledError  # as when the node running the plan is cancelled while the face is set up


@pytest.mark.parametrize("face", ["sync", "async"])
def test_a_started_plan_whose_face_cannot_be_set_up_is_closed_before_the_error_reaches_its_caller(face: str) -> None:
    """Started before the face's first plan, which fails (a lost connection, a cancellation): the plan is closed where
    its first request stopped it, so its ``with`` and ``finally`` blocks run (an effect's hold on its task's writes was
    left held, and the task's writes waited forever)."""
    seen: list[str] = []
    store = Store(cancelled())
    plan = cleaning_up(seen)
    with pytest.raises(asyncio.CancelledError):
        store._run(plan) if face == "sync" else asyncio.run(store._arun(plan))  # noqa: SLF001
    assert seen == ["finally"]


def test_each_interpreter_executes_every_request_type_its_face_has() -> None:
    """The dispatch tables come from one table of method names: a request type a face lacks a method for would be a
    ``TypeError`` at run time, so both tables are checked against every ``Request`` subclass here."""
    from langgraph_durable_mongodb.storage.plans import interpreters, requests

    every = {t for t in vars(requests).values() if isinstance(t, type) and issubclass(t, requests.Request)}
    every -= {requests.Request, requests.Emit}  # Emit goes to the caller of iterate(), never executed
    assert set(interpreters.AsyncInterpreter._HANDLERS) == every
    assert set(interpreters.SyncInterpreter._HANDLERS) == every - {requests.Detach, requests.Await}
    with pytest.raises(TypeError, match="not a request this interpreter executes"):
        interpreters.SyncInterpreter(mongomock.MongoClient()["dispatch"]).execute(requests.Detach(iter(())))
