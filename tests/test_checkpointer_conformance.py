"""LangGraph's own conformance suite (``langgraph-checkpoint-conformance``) on ``MongoDBCheckpointer``.

Each of the package's cases is a test of its own, on every client kind of ``tests/clients.py``: the offline
mongomock pair and the real-server tier. The cases call the async contract (``aput``, ``alist``, ...): on an
async client they call the saver itself, on a sync client ``SyncContract`` answers them with the saver's sync
methods, so both faces pass the same cases. Each case gets a fresh database (the ``face`` fixture).
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import mongomock
import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph_durable_mongodb import MongoDBCheckpointer

from .clients import Face

capabilities = pytest.importorskip(
    "langgraph.checkpoint.conformance.capabilities",
    reason="langgraph-checkpoint-conformance (the test extra) is not installed",
)


def cases_of(capability: Any) -> list[Callable[[BaseCheckpointSaver], Any]]:
    """The package's cases for one capability, in its order (``spec/test_<capability>.py``)."""
    spec = importlib.import_module(f"langgraph.checkpoint.conformance.spec.test_{capability.value}")
    return getattr(spec, f"ALL_{capability.value.upper()}_TESTS")


#: Each case, named as the package names it (each name starts with its capability's: ``put_roundtrip``).
CASES = [
    pytest.param(case, id=case.__name__.removeprefix("test_"))
    for capability in capabilities.Capability
    for case in cases_of(capability)
]


def answered_by(name: str) -> Callable[..., Any]:
    """The async contract method ``a<name>``, answered by the wrapped saver's sync ``name``."""

    async def call(self: SyncContract, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.saver, name)(*args, **kwargs)

    call.__name__ = f"a{name}"
    return call


class SyncContract(BaseCheckpointSaver):
    """The async saver contract over a saver's sync methods: the conformance cases, which call only the async
    contract, then test the sync face."""

    def __init__(self, saver: MongoDBCheckpointer) -> None:
        super().__init__(serde=saver.serde)
        self.saver = saver

    aget_tuple = answered_by("get_tuple")
    aput = answered_by("put")
    aput_writes = answered_by("put_writes")
    adelete_thread = answered_by("delete_thread")
    adelete_for_runs = answered_by("delete_for_runs")
    acopy_thread = answered_by("copy_thread")
    aprune = answered_by("prune")

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for item in self.saver.list(config, **kwargs):
            yield item


def test_the_saver_has_every_capability_the_suite_tests() -> None:
    # a capability the package does not detect is skipped by its own runner: ours has them all
    detected = capabilities.DetectedCapabilities.from_instance(MongoDBCheckpointer(mongomock.MongoClient()))
    assert detected.missing == frozenset()
    assert detected.detected == frozenset(capabilities.Capability)


@pytest.mark.parametrize("case", CASES)
async def test_conformance(face: Face, case: Callable[[BaseCheckpointSaver], Any]) -> None:
    await case(face.saver if face.is_async else SyncContract(face.saver))
