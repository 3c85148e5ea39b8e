"""``platform`` in both compile forms, for the modules that import it (no tests here).

A test module that imports the ``platform`` fixture from here runs each of its tests on
``platform.compile(builder)`` and on the plain ``builder.compile(checkpointer=platform.checkpointer)``,
embedded and on the server tier (``make_platform``); elsewhere ``platform`` is tests/clients.py's.
"""

from __future__ import annotations

from typing import Any

import pytest

from langgraph_durable_mongodb.platform import DurablePlatform


class PlainCompile:
    """A platform whose ``compile`` is the plain form: ``builder.compile(checkpointer=platform.checkpointer)``."""

    def __init__(self, platform: DurablePlatform) -> None:
        self.platform = platform

    def compile(self, builder: Any, **kwargs: Any) -> Any:
        return builder.compile(checkpointer=self.platform.checkpointer, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.platform, name)


@pytest.fixture(params=["platform.compile", "plain compile"])
def platform(make_platform: Any, request: pytest.FixtureRequest) -> Any:
    """Every test runs on both forms: ``platform.compile(builder)`` and ``builder.compile(checkpointer=...)``."""
    real = make_platform()
    return real if request.param == "platform.compile" else PlainCompile(real)
