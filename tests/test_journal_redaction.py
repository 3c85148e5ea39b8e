"""Digests and redacted previews of effect inputs and outcomes (no database)."""

from __future__ import annotations

import doctest
import importlib
import json
import random
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage

from langgraph_durable_mongodb.journal import digest, preview, redact
from langgraph_durable_mongodb.journal.redaction import FEW_FORMS, REDACTED, credential_values, is_credential_key, readable, scrub


@pytest.mark.parametrize("module", ["canonical", "position", "redaction"])
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


def test_the_credentials_in_a_model_s_tool_calls_are_scrubbed_where_echoed() -> None:
    """A model call's input is the thread's messages: the arguments of each tool call an AI message made are looked
    into for credentials (a plain or streamed message alike), and nothing else of a message is taken for one."""
    chunk = AIMessageChunk(
        content="", tool_call_chunks=[{"name": "pay", "args": '{"card_pin": "98765"}', "id": "c2", "index": 0}]
    )
    messages = [
        HumanMessage("my password is not here"),
        AIMessage("", tool_calls=[{"name": "login", "args": {"user": "al", "password": "hunter22"}, "id": "c1"}]),
        ToolMessage('{"ok": true}', tool_call_id="c1"),
        chunk,
    ]
    assert credential_values({"messages": messages, "stop": None}) == {"hunter22", "98765"}
    assert scrub("echo: hunter22 and 98765", credential_values(messages)) == f"echo: {REDACTED} and {REDACTED}"


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

    from langgraph_durable_mongodb.journal import canonical

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
    ordered = json.dumps(canonical.canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical.digest(value) == "sha256:" + hashlib.sha256(ordered.encode()).hexdigest()


# --- issue 25: the common shapes key-based redaction missed -------------------------------------------------

TOKEN = "tok-live-9f8e7d6c5b"
PROVIDER_KEYS = (
    "sk-AbCdEfGhIjKlMnOpQrStUvWx0123",  # OpenAI (legacy)
    "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56",  # OpenAI project key
    "sk-ant-api03-Ab12Cd34Ef56Gh78Ij90",  # Anthropic
    "AKIAIOSFODNN7EXAMPLE",  # AWS access key id
    "ghp_0123456789abcdefghijABCDEFGHIJ012345",  # GitHub
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",  # GitHub fine-grained
    "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",  # Slack bot
)


def test_json_text_is_parsed_and_redacted_by_key() -> None:
    text = json.dumps({"access_token": TOKEN, "expires_in": 3600, "nested": [{"client_secret": TOKEN}]})
    assert TOKEN not in preview(text) and "3600" in preview(text)
    assert redact(text) == json.dumps({"access_token": REDACTED, "expires_in": 3600, "nested": [{"client_secret": REDACTED}]})
    assert redact('{"query": "weather"}') == '{"query": "weather"}'  # nothing to redact: the text is kept as it is
    assert redact("{not json, api_key: x}") == "{not json, api_key: x}"


def test_a_tool_message_holding_json_is_redacted_in_readable_text() -> None:
    message = ToolMessage(json.dumps({"access_token": TOKEN}), tool_call_id="c1")
    assert readable(message) == 'tool: {"access_token": "[REDACTED]"}'
    blocks = HumanMessage([{"type": "text", "text": f"use {PROVIDER_KEYS[1]}"}])
    assert PROVIDER_KEYS[1] not in readable(blocks)
    assert TOKEN not in preview([HumanMessage("look it up"), message])  # an LLM call's input


@pytest.mark.parametrize(
    "pairs",
    [
        [("Authorization", f"Bearer {TOKEN}")],
        [("Accept", "application/json"), ("X-Api-Key", TOKEN)],
        (("cookie", TOKEN),),
        {"headers": [["Proxy-Authorization", TOKEN]]},
    ],
)
def test_name_value_pairs_are_redacted(pairs: Any) -> None:
    assert TOKEN not in preview(pairs)
    assert TOKEN in credential_values(pairs) or f"Bearer {TOKEN}" in credential_values(pairs)
    assert preview([("Accept", "application/json")]) == '[["Accept", "application/json"]]'


def test_the_credentials_of_an_input_given_as_json_text_are_scrubbed_where_echoed() -> None:
    """A tool called with its arguments as JSON text: the values under its credential keys are scrubbed from stored
    text that echoes them (an error message), as for arguments given as a dict."""
    secrets = credential_values('{"user": "al", "api_key": "live-1234"}')
    assert secrets == {"live-1234"}
    assert scrub("401: key live-1234 refused", secrets) == f"401: key {REDACTED} refused"


@pytest.mark.parametrize("secret", ['pa"ss-word', "pa\\ss-word", "it's-a-\"mix\\"])
def test_an_echoed_secret_with_quotes_or_backslashes_is_scrubbed(secret: str) -> None:
    secrets = credential_values({"password": secret})
    assert secret not in preview({"echo": secret}, secrets=secrets)
    assert json.dumps(secret)[1:-1] not in preview({"echo": secret}, secrets=secrets)
    assert preview({"echo": secret}, secrets=secrets) == '{"echo": "[REDACTED]"}'
    for message in (f"bad login {json.dumps({'pw': secret})}", f"bad login {secret!r}", f"bad login {secret}"):
        assert scrub(message, secrets).count(REDACTED) == 1, scrub(message, secrets)


@pytest.mark.parametrize("key", PROVIDER_KEYS)
def test_well_known_provider_keys_are_redacted_in_any_text(key: str) -> None:
    said = f"my key is {key}, thanks"
    assert redact(said) == f"my key is {REDACTED}, thanks"
    assert preview([HumanMessage(said)]) == f"[\"human: my key is {REDACTED}, thanks\"]"
    assert scrub(f"401: invalid key {key}") == f"401: invalid key {REDACTED}"


@pytest.mark.parametrize(
    "url, shown",
    [
        (f"https://api.example/v1?api_key={TOKEN}", f"https://api.example/v1?api_key={REDACTED}"),
        (f"https://api.example/v1?user=al&token={TOKEN}#top", f"https://api.example/v1?user=al&token={REDACTED}#top"),
        (f"https://s3.example/o?X-Amz-Signature={TOKEN}&X-Amz-Expires=60", f"https://s3.example/o?X-Amz-Signature={REDACTED}&X-Amz-Expires=60"),
        (f"https://api.example/v1?access_token={TOKEN}&max_tokens=5", f"https://api.example/v1?access_token={REDACTED}&max_tokens=5"),
        ("https://api.example/v1?q=weather&page=2", "https://api.example/v1?q=weather&page=2"),
    ],
)
def test_credential_query_parameters_in_urls_are_redacted(url: str, shown: str) -> None:
    assert redact({"url": url}) == {"url": shown}
    assert scrub(f"GET {url} failed") == f"GET {shown} failed"


@pytest.mark.parametrize("text", ["task-management-tool-abcdefgh", "risk-assessment-results-2026", "AKIA", "ghp_short"])
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize("count", [3, FEW_FORMS + 1, 5000])
def test_scrub_removes_every_secret_echoed_whatever_their_number(count: int) -> None:
    """One after the other for a few, in one pass for more: every secret echoed anywhere is gone, the longest at a
    place first (a secret holding another is removed whole), quoted or escaped forms too, the rest of the text kept."""
    rng = random.Random(count)
    secrets = {f"tok-{rng.randrange(10**9):09d}" for _ in range(count)} | {"tok-12345678", "tok-1234", 'pa"ss\\word'}
    echoed = rng.sample(sorted(secrets), min(40, len(secrets))) + ["tok-12345678", "tok-1234", json.dumps('pa"ss\\word')[1:-1]]
    text = " | ".join(f"seen {s} here" for s in echoed) + " tok-12 plain"
    scrubbed = scrub(text, frozenset(secrets))
    assert not any(s in scrubbed for s in secrets), scrubbed
    assert scrubbed.count(REDACTED) == len(echoed) and scrubbed.endswith("tok-12 plain") and "[REDACTED]5678" not in scrubbed
