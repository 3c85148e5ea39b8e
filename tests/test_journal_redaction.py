"""Digests and redacted previews of effect inputs and outcomes (no database)."""

from __future__ import annotations

import doctest
import importlib

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langgraph_durable_mongodb.journal import digest, preview, redact
from langgraph_durable_mongodb.journal.redaction import REDACTED, is_credential_key


@pytest.mark.parametrize("module", ["position", "redaction"])
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(f"langgraph_durable_mongodb.journal.{module}"))
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("password", True),
        ("api_key", True),
        ("apiKey", True),
        ("X-Auth-Token", True),
        ("client_secret", True),
        ("Authorization", True),
        ("refresh_token", True),
        ("private_key", True),
        ("sessionId", True),
        ("max_tokens", False),
        ("author", False),
        ("query", False),
        ("token_count", False),
        ("keyword", False),
    ],
)
def test_credential_keys(key: str, secret: bool) -> None:
    assert is_credential_key(key) is secret


def test_redaction_walks_nested_values_and_messages() -> None:
    value = {"q": "x", "auth": {"user": "al", "password": "pw"}, "calls": [{"apiKey": "k"}]}
    assert redact(value) == {"q": "x", "auth": REDACTED, "calls": [{"apiKey": REDACTED}]}
    call = {"name": "login", "args": {"user": "al", "password": "pw"}, "id": "c1"}
    assert "pw" not in preview([HumanMessage("log in"), AIMessage("", tool_calls=[call])])


def test_digest_depends_on_content_only() -> None:
    class Client:
        pass

    assert digest({"a": [1, 2], "client": Client()}) == digest({"client": Client(), "a": (1, 2)})
    assert digest([HumanMessage("hi", id="m1")]) != digest([HumanMessage("hello", id="m1")])


def test_previews_are_short_and_can_be_turned_off() -> None:
    assert len(preview("x" * 1000, limit=50)) == 50
    assert preview({"a": 1}, limit=0) == ""


def test_the_digest_is_the_sha256_of_the_ordered_canonical_json_whatever_the_input_s_shape() -> None:
    """``digest`` skips re-walking pydantic dumps; it must still hash exactly the ordered canonical form, or
    every recorded input digest would stop matching."""
    import dataclasses
    import enum
    import hashlib
    import json

    from langgraph_durable_mongodb.journal import redaction

    class Tone(enum.Enum):
        FORMAL = "formal"

    @dataclasses.dataclass
    class Ask:
        z: int
        a: tuple

    value = {
        "messages": [HumanMessage("hi", additional_kwargs={"b": 1, "a": {"d": 2, "c": 3}}), AIMessage("yo", id="m1")],
        2: {"set": {3, 1, 2}, "tone": Tone.FORMAL, "ask": Ask(1, (2, {"y": 1, "x": 0})), "raw": b"\x00"},
        "b": None,
        "a": [1.5, True, "s"],
    }
    ordered = json.dumps(redaction.canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert redaction.digest(value) == "sha256:" + hashlib.sha256(ordered.encode()).hexdigest()
