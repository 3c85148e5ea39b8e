"""Issue 44, break 8: values of any depth, size and text never break a claim, a record or a replay.

Text that looks like JSON nested deeper than Python's recursion limit (1,500 ``[``, or 1,500 ``{"a":``: 1.5 KB to
7.5 KB, what a chat message, a fetched page or an email a tool reads can hold) made the redaction walk raise
``RecursionError`` after the effect ran: its outcome was never recorded, so a resume ran it again, an
``at_most_once`` one was left an unknown outcome, and an LLM turn holding such a message failed. Every test counts
the REAL executions. Each failed on main at e322541.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import hashlib
import hmac
import json
import operator
from collections.abc import Mapping
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import START, StateGraph
from pydantic import BaseModel

from langgraph_durable_mongodb.journal import SecureLLM, effect
from langgraph_durable_mongodb.journal import canonical as canonical_module
from langgraph_durable_mongodb.journal.canonical import CYCLE, canonical, canonical_json, digest
from langgraph_durable_mongodb.journal import redaction
from langgraph_durable_mongodb.journal.redaction import ELIDED, SHOWN_DEPTH, credential_values, preview

from .graphs import invoke
from .journal_helpers import scripted

pytestmark = pytest.mark.both_compile_forms

MODES = ["sync", "async"]
#: Text that looks like deeply nested JSON: an array opened 1,500 times, an object opened 1,500 times.
DEEP_TEXTS = {"arrays": "[" * 1500, "objects": '{"a":' * 1500}


class Notes(TypedDict, total=False):
    notes: Annotated[list, operator.add]


class Fails(Exception):
    """The node fails once, after its effect returned: the next run resumes it."""


def failing_once_after(call: Any, mode: str) -> Any:
    """A node that calls ``call()`` (awaited in ``mode`` async), notes the length of what it got back, and fails
    once after its first call returned."""
    failed: list[str] = []

    def after(value: Any) -> Notes:
        if not failed:
            failed.append("once")
            raise Fails("after the effect returned")
        return {"notes": [len(value)]}

    def sync_node(state: Notes) -> Notes:
        return after(call())

    async def async_node(state: Notes) -> Notes:
        return after(await call())

    return sync_node if mode == "sync" else async_node


async def run_twice(platform: Any, node: Any, mode: str, thread: str) -> Any:
    """Run a one-node graph: the first run fails after the effect, the second resumes it."""
    graph = StateGraph(Notes)
    graph.add_node("fetch", node)
    graph.add_edge(START, "fetch")
    app = platform.compile(graph)
    with pytest.raises(Fails):
        await invoke(app, mode, {"notes": []}, thread)
    return await invoke(app, mode, None, thread)


@pytest.mark.parametrize("text", DEEP_TEXTS, ids=str)
@pytest.mark.parametrize("at_most_once", [False, True], ids=["at_least_once", "at_most_once"])
@pytest.mark.parametrize("mode", MODES)
async def test_an_effect_returning_text_that_looks_like_deeply_nested_json_runs_once_across_a_resume(
    platform: Any, mode: str, at_most_once: bool, text: str
) -> None:
    """Before: ``RecursionError`` in the record's preview; the resume ran it again (at least once) or raised
    ``EffectOutcomeUnknownError`` (at most once)."""
    runs: list[str] = []
    returned = DEEP_TEXTS[text]

    @effect(kind="tool", name="fetch_page", at_most_once=at_most_once)
    def fetch() -> str:
        runs.append("run")
        return returned

    @effect(kind="tool", name="fetch_page", at_most_once=at_most_once)
    async def afetch() -> str:
        runs.append("run")
        return returned

    node = failing_once_after(fetch if mode == "sync" else afetch, mode)
    result = await run_twice(platform, node, mode, f"deep-out-{text}")
    assert result["notes"] == [len(returned)]
    assert runs == ["run"]


def nested_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def holding_itself() -> dict:
    value: dict = {"name": "loop", "api_key": "sk-held-123456"}
    value["self"] = value
    return value


#: What an effect may be given that broke its claim: text that looks like deeply nested JSON, a list nested past
#: the recursion limit, a dict holding itself, text holding a lone surrogate (a JSON escape can make one; UTF-8,
#: so BSON, cannot hold it).
GIVEN = {
    **DEEP_TEXTS,
    "list_5000_deep": lambda: nested_list(5000),
    "dict_holding_itself": holding_itself,
    "lone_surrogate": "caf\udce9",
}


@pytest.mark.parametrize("given", GIVEN, ids=str)
@pytest.mark.parametrize("mode", MODES)
async def test_an_effect_given_a_value_of_any_depth_or_text_runs_once_across_a_resume(
    platform: Any, mode: str, given: str
) -> None:
    """Before: ``RecursionError`` in the claim (the input's credential walk, digest and preview), or a preview BSON
    cannot encode; the effect never ran."""
    runs: list[Any] = []
    made = GIVEN[given]
    value = made() if callable(made) else made

    @effect(kind="tool", name="post")
    def post(body: Any) -> str:
        runs.append(body)
        return "ok"

    @effect(kind="tool", name="post")
    async def apost(body: Any) -> str:
        runs.append(body)
        return "ok"

    node = failing_once_after(lambda: post(value) if mode == "sync" else apost(value), mode)
    result = await run_twice(platform, node, mode, f"deep-in-{given}")
    assert result["notes"] == [2]
    assert len(runs) == 1 and runs[0] is value


@pytest.mark.parametrize("text", DEEP_TEXTS, ids=str)
@pytest.mark.parametrize("mode", MODES)
async def test_an_llm_turn_whose_messages_hold_text_that_looks_like_deeply_nested_json_works(
    platform: Any, mode: str, text: str
) -> None:
    """A chat message holding such text, in the call's input and in the model's reply. Before: the turn failed with
    ``RecursionError``, the model having answered."""
    model = scripted(AIMessage(f"you wrote: {DEEP_TEXTS[text]}"))
    llm = SecureLLM(model, effect_name="chat")

    def ask() -> str:
        return llm.invoke([HumanMessage(DEEP_TEXTS[text])]).content

    async def aask() -> str:
        return (await llm.ainvoke([HumanMessage(DEEP_TEXTS[text])])).content

    node = failing_once_after(ask if mode == "sync" else aask, mode)
    result = await run_twice(platform, node, mode, f"deep-llm-{text}")
    assert result["notes"] == [len("you wrote: ") + len(DEEP_TEXTS[text])]
    assert len(model.calls) == 1


# -- canonical forms, digests and previews, at any depth -------------------------------------------------------------


def reference_canonical(value: Any, *, ordered: bool = True) -> Any:
    """``canonical`` as it was at e322541 (a recursion), frozen here: every input digest stored until then was made
    from it, so the loop that replaced it must give the same form wherever it gave one."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda kv: str(kv[0])) if ordered else value.items()
        return {str(k): reference_canonical(v, ordered=ordered) for k, v in items}
    if isinstance(value, (list, tuple)):
        return [reference_canonical(v, ordered=ordered) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((reference_canonical(v, ordered=ordered) for v in value), key=repr)
    if isinstance(value, BaseModel):
        dumped = value.model_dump(mode="json")
        return reference_canonical(dumped) if ordered else dumped
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return reference_canonical({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, ordered=ordered)
    if isinstance(value, enum.Enum):
        return reference_canonical(value.value, ordered=ordered)
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": hashlib.sha256(value).hexdigest()}
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def reference_digest(value: Any, key: bytes | None = None) -> str:
    """``digest`` as it was at e322541, frozen here (see ``reference_canonical``)."""
    text = json.dumps(
        reference_canonical(value, ordered=False), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode()
    if key is None:
        return "sha256:" + hashlib.sha256(text).hexdigest()
    return "hmac-sha256:" + hmac.new(key, text, hashlib.sha256).hexdigest()


class Tone(enum.Enum):
    FORMAL = "formal"
    PAIR = (1, "two")


@dataclasses.dataclass
class Ask:
    z: Any
    a: Any


class Order(BaseModel):
    ref: str
    cents: int
    lines: list = []


class Client:
    """An object the canonical form counts by its type."""


hashable = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=8), st.binary(max_size=8),
)
scalars = st.one_of(
    hashable,
    st.integers(min_value=-(2**80), max_value=2**80),
    st.datetimes(),
    st.dates(),
    st.sampled_from([Tone.FORMAL, Tone.PAIR, Client()]),
    st.text(alphabet=st.sampled_from("a\x00\u202e\u200f\ufeff\"\\é𝄞\n[{"), max_size=12),
)


def containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.one_of(st.text(max_size=6), st.integers(-3, 3), st.sampled_from(["1", "api_key", "$set", "a.b", ""]))
    return st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(keys, children, max_size=4),
        st.frozensets(hashable, max_size=4),
        st.sets(st.tuples(hashable, hashable), max_size=3),
        st.builds(Ask, children, children),
        st.builds(Order, ref=st.text(max_size=6), cents=st.integers(-(2**40), 2**40), lines=st.lists(hashable.filter(lambda v: not isinstance(v, bytes)), max_size=3)),
        st.builds(
            lambda text, args: AIMessage(text, tool_calls=[{"name": "pay", "args": {"a": args}, "id": "c1"}]),
            st.text(max_size=8), st.one_of(st.integers(), st.text(max_size=6), st.lists(st.integers(), max_size=3)),
        ),
        st.builds(HumanMessage, st.text(max_size=8)),
    )


#: The values an effect was given before issue 44: whatever ``digest`` could hash then.
ordinary_values = st.recursive(scalars, containers, max_leaves=24)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=ordinary_values)
@example(value={1: "int", "1": "text", "b": [{2: "two", "2": "deux"}]})  # two keys of one text: the last item wins
@example(value={"1": "text", 1: "int"})
def test_the_digest_and_canonical_form_of_an_ordinary_value_are_what_they_were(value: Any) -> None:
    """Every entry stores its input's digest, and a resume compares the digest of the input it gives: a digest made
    otherwise for an ordinary value would make every recorded input look changed (checked against the walk at
    e322541, frozen above, over generated values, and against digests it gave)."""
    assert digest(value) == reference_digest(value)
    assert digest(value, b"k" * 32) == reference_digest(value, b"k" * 32)
    assert canonical(value) == reference_canonical(value) or canonical(value) != canonical(value)  # NaN != NaN


def test_digests_stored_before_issue_44_are_given_again() -> None:
    """Digests e322541 gave, written down: the same values digest the same today."""
    assert digest({"a": 1}) == "sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    assert digest([HumanMessage("hi", id="m1")]) == "sha256:" + hashlib.sha256(
        json.dumps(reference_canonical([HumanMessage("hi", id="m1")], ordered=False), sort_keys=True,
                   separators=(",", ":"), ensure_ascii=False).encode()
    ).hexdigest()
    assert digest({"q": float("nan"), "n": [1.5, None, True]}) == (
        "sha256:27c6f582f255f5ee34938f4b343035aed4dbd880b1e3c523fe89227f8cd93f8f"
    )


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=8)),
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(st.text(max_size=6), children, max_size=4)),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=json_values, sort_keys=st.booleans(), separators=st.sampled_from([(",", ":"), (", ", ": ")]))
def test_the_json_written_by_the_loop_is_the_json_the_c_encoder_writes(
    value: Any, sort_keys: bool, separators: tuple[str, str]
) -> None:
    """A canonical form too deep for the C encoder is written by a loop: to the same text, byte for byte."""
    expected = json.dumps(value, ensure_ascii=False, sort_keys=sort_keys, separators=separators)
    assert canonical_module._json_by_loop(value, sort_keys, separators) == expected


def test_a_value_nested_past_the_recursion_limit_has_a_canonical_form_a_digest_and_a_preview() -> None:
    deep = nested_list(5000)
    assert digest(deep) == digest(nested_list(5000)) != digest(nested_list(4999))
    text = canonical_json(canonical(deep))
    assert text == "[" * 5001 + "]" * 5001  # 5,000 lists around an empty one
    model = AIMessage("", tool_calls=[{"name": "pay", "args": {"a": nested_list(3000)}, "id": "c1"}])
    assert digest(model) == digest(model.model_copy()) and digest(model, b"k" * 32).startswith("hmac-sha256:")
    shown = preview(deep, limit=10_000)
    assert shown.startswith("[" * SHOWN_DEPTH + json.dumps(ELIDED, ensure_ascii=False))


@pytest.mark.parametrize("text", DEEP_TEXTS, ids=str)
def test_text_that_looks_like_deeply_nested_json_is_previewed_as_text(text: str) -> None:
    """The parser gives up on it (``RecursionError``): it is text, previewed and scrubbed as text is."""
    deep = DEEP_TEXTS[text] + " sk-proj-AbCdEf0123456789xyz"
    assert preview(deep, limit=10_000) == DEEP_TEXTS[text] + " [REDACTED]"
    assert credential_values({"body": deep}) == frozenset()
    assert redaction.redact_text(json.dumps({"api_key": "hunter22", "body": DEEP_TEXTS[text]})) == json.dumps(
        {"api_key": "[REDACTED]", "body": DEEP_TEXTS[text]}
    )


def budget(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str, calls: int) -> None:
    """Fail the test once ``owner.name`` has been called ``calls`` times: a walk that never ends fails fast."""
    original = getattr(owner, name)
    count = [0]

    def counted(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        assert count[0] <= calls, f"{name} called more than {calls} times: the walk does not end"
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)


def test_a_value_holding_itself_has_a_canonical_form_and_its_credentials_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``RecursionError`` (digest, preview), and the credential walk never ended (its memory grew past
    13 GB in a minute)."""
    budget(monkeypatch, canonical_module._Walk, "enter", 10_000)
    budget(monkeypatch, redaction, "_credential_walk_collection", 10_000)
    value = holding_itself()
    assert canonical(value) == {"api_key": "sk-held-123456", "name": "loop", "self": CYCLE}
    assert digest(value) == digest(holding_itself())
    assert credential_values(value) == {"sk-held-123456"}
    assert redaction.redact(value) == {"name": "loop", "api_key": "[REDACTED]", "self": ELIDED}
    twice: list = []
    twice.extend([twice, twice])  # walked without its cycle noted, it doubles at every level
    assert canonical(twice) == [CYCLE, CYCLE] and redaction.redact(twice) == [ELIDED, ELIDED]
    shared: list = [1]
    assert canonical([shared, shared]) == [[1], [1]]  # a value met twice, not inside itself, is no cycle


def test_text_holding_a_lone_surrogate_is_digested_and_previewed_as_bson_can_store_it() -> None:
    """UTF-8 (so BSON, so every stored string) cannot hold a lone surrogate; a JSON escape can make one."""
    value = {"note": json.loads('"caf\\udce9"')}
    assert digest(value) != digest({"note": "café"})
    shown = preview(value)
    assert shown == '{"note": "caf\\udce9"}'
    shown.encode("utf-8")


@pytest.mark.parametrize("mode", MODES)
async def test_an_outcome_whose_preview_cannot_be_made_is_recorded_without_one(make_platform: Any, mode: str) -> None:
    """A redactor of the user's that fails (or a value whose ``str`` raises): the outcome is recorded, its preview
    empty, and the effect runs once across a resume."""

    def redactor(value: Any) -> Any:
        raise RecursionError("a redactor that recurses")

    platform = make_platform(journal_options={"redactor": redactor})
    runs: list[str] = []

    @effect(kind="tool", name="fetch")
    def fetch() -> str:
        runs.append("run")
        return "page"

    @effect(kind="tool", name="fetch")
    async def afetch() -> str:
        runs.append("run")
        return "page"

    node = failing_once_after(fetch if mode == "sync" else afetch, mode)
    result = await run_twice(platform, node, mode, "no-preview")
    assert result["notes"] == [4] and runs == ["run"]
    [entry] = raw_entries(platform)
    assert entry["status"] == "completed" and entry["outcome"]["preview"] == "" and entry["input"]["preview"] == ""


@pytest.mark.parametrize("mode", MODES)
async def test_an_error_message_holding_a_lone_surrogate_is_recorded(make_platform: Any, mode: str) -> None:
    """An at_most_once effect fails with a message holding a lone surrogate (text decoded from JSON can): its failure
    is recorded as BSON can store it. Before, on a server, the record raised ``UnicodeEncodeError``, the entry stayed
    started and the resume met an unknown outcome."""
    platform = make_platform()
    runs: list[str] = []

    @effect(kind="payment", name="charge", at_most_once=True)
    def charge() -> str:
        runs.append("run")
        raise LookupError("no card for caf\udce9")

    @effect(kind="payment", name="charge", at_most_once=True)
    async def acharge() -> str:
        runs.append("run")
        raise LookupError("no card for caf\udce9")

    def sync_node(state: Notes) -> Notes:
        try:
            charge()
        except LookupError:
            return {"notes": ["declined"]}
        return {"notes": ["charged"]}

    async def async_node(state: Notes) -> Notes:
        try:
            await acharge()
        except LookupError:
            return {"notes": ["declined"]}
        return {"notes": ["charged"]}

    graph = StateGraph(Notes)
    graph.add_node("pay", sync_node if mode == "sync" else async_node)
    graph.add_edge(START, "pay")
    result = await invoke(platform.compile(graph), mode, {"notes": []}, "lone-error")
    assert result["notes"] == ["declined"] and runs == ["run"]
    [entry] = raw_entries(platform)
    assert entry["status"] == "failed" and entry["error"]["message"] == "no card for caf\\udce9"


def raw_entries(platform: Any) -> list[dict[str, Any]]:
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    return list(db["activity_journal"].find({"chunk": 0}))
