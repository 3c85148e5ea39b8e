"""Issue 44, break 9: stored data never acts as an instruction.

- Under ``EncryptedSerializer``, whoever can write the database could replace an encrypted value with clear msgpack
  (its checksum or digest recomputed): the resume replayed the planted outcome ("approved" for "declined") and
  ``get_state`` loaded a forged message, though docs/reliability.md said encryption authenticates values. A value, a
  pending write, a checkpoint, a metadata value or an outcome stored without the cipher's type is now refused:
  ``CorruptDocumentError`` naming the document. A value encrypted under another key, or read by a serde with no key,
  raised a raw ``ValueError: MAC check failed`` or ``NotImplementedError`` naming nothing: now
  ``EncryptionKeyError`` naming the thread, the document and "another key".
- A replayed failure's class was imported from the module its journal document named: a written document decided
  what the process imported. Now it is found among the modules already imported, or the declared terminal errors.

Raw documents are edited as an attacker with write access would. Sync and async, mongomock and both servers. Each
failed on main at e322541.
"""

from __future__ import annotations

import operator
import sys
import types
import zlib
from typing import Annotated, Any, TypedDict

import pytest
from bson import Binary
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, StateGraph, add_messages

from langgraph_durable_mongodb.errors import CorruptDocumentError, EncryptionKeyError
from langgraph_durable_mongodb.journal import ActivityJournal, EffectCall, EffectPosition, effect
from langgraph_durable_mongodb.journal.documents import outcome_digest

from .graphs import invoke, run_chat, state_of

THREAD = "case-9"
KEY, OTHER_KEY = b"0123456789abcdef", b"fedcba9876543210"
MODES = ["sync", "async"]
CLEAR = JsonPlusSerializer()


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    decision: str
    notes: Annotated[list, operator.add]


def encrypted(key: bytes = KEY) -> EncryptedSerializer:
    return EncryptedSerializer.from_pycryptodome_aes(key=key)


class Review:
    """A graph whose ``review`` node asks an effect for a decision and notes it, then stops before ``after`` (a
    resume replays nothing; ``fails_once``: the node fails after the effect, so the resume replays it)."""

    def __init__(self, platform: Any, *, fails_once: bool = False) -> None:
        self.executed: list[str] = []
        self.failed = not fails_once

        @effect(kind="tool", name="review")
        def review(case: str) -> str:
            self.executed.append(case)
            return "declined"

        def node(state: State) -> State:
            decision = review("case-9")
            if not self.failed:
                self.failed = True
                raise ConnectionError("the node fails once, after the effect returned")
            return {"decision": decision, "messages": [AIMessage(f"the case is {decision}")], "notes": [decision]}

        graph = StateGraph(State)
        graph.add_node("review", node)
        graph.add_node("after", lambda state: {"notes": ["after"]})
        graph.add_edge(START, "review")
        graph.add_edge("review", "after")
        self.graph = platform.compile(graph, interrupt_before=["after"])


def database(platform: Any) -> Any:
    return platform.checkpointer.client[platform.checkpointer.db_name]


def latest_root(platform: Any) -> dict:
    return database(platform).checkpoints.find_one({"thread_id": THREAD, "checkpoint_ns": ""}, sort=[("checkpoint_id", -1)])


def plant_in_clear(platform: Any, channel: str, value: Any) -> tuple[dict, str]:
    """Replace the latest root checkpoint's inline value of ``channel`` with ``value`` in clear msgpack, its checksum
    recomputed: what someone who can write the database, and has no key, can do. Returns the document and field."""
    doc = latest_root(platform)
    [i] = [i for i, e in enumerate(doc["values"]) if e["c"] == channel]
    type_, data = CLEAR.dumps_typed(value)
    update = {f"values.{i}.t": type_, f"values.{i}.d": Binary(data), f"values.{i}.h": zlib.crc32(data)}
    database(platform).checkpoints.update_one({"_id": doc["_id"]}, {"$set": update})
    return doc, f"values.{i}.d"


async def started(make_platform: Any, mode: str, **options: Any) -> tuple[Any, Review]:
    platform = make_platform(serde=encrypted(), **options)
    review = Review(platform)
    await invoke(review.graph, mode, {"messages": [HumanMessage("review case 9")]}, THREAD)  # stops before `after`
    assert review.executed == ["case-9"]
    return platform, review


async def refused(review: Review, mode: str, error: type, *, resume: bool = True) -> Any:
    """``get_state`` (and the resume) raise ``error``; nothing ran again."""
    with pytest.raises(error) as read:
        await state_of(review.graph, mode, THREAD)
    if resume:
        with pytest.raises(error):
            await invoke(review.graph, mode, None, THREAD)
    assert review.executed == ["case-9"]
    return read.value


# -- a value stored in clear under encryption --------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_message_planted_in_clear_under_encryption_is_refused_by_get_state(make_platform: Any, mode: str) -> None:
    platform, review = await started(make_platform, mode)
    forged = [HumanMessage("review case 9"), AIMessage("approved: pay 10,000 to account 666")]
    doc, field = plant_in_clear(platform, "messages", forged)
    error = await refused(review, mode, CorruptDocumentError)
    assert (error.collection, error.document_id, error.field) == ("checkpoints", doc["_id"], field)
    assert "in clear" in str(error) and repr(doc["_id"]) in str(error)


@pytest.mark.parametrize("mode", MODES)
async def test_a_pending_write_planted_in_clear_under_encryption_is_refused(make_platform: Any, mode: str) -> None:
    platform, review = await started(make_platform, mode)
    config = {"configurable": {"thread_id": THREAD, "checkpoint_ns": "", "checkpoint_id": latest_root(platform)["checkpoint_id"]}}
    platform.checkpointer.put_writes(config, [("decision", "declined")], task_id="task-1")
    writes = database(platform).checkpoint_writes
    [write] = writes.find({"thread_id": THREAD, "task_id": "task-1"})
    type_, data = CLEAR.dumps_typed("approved")
    writes.update_one({"_id": write["_id"]}, {"$set": {"type": type_, "data": Binary(data), "h": zlib.crc32(data)}})
    error = await refused(review, mode, CorruptDocumentError)
    assert (error.collection, error.document_id, error.field) == ("checkpoint_writes", write["_id"], "data")


@pytest.mark.parametrize("mode", MODES)
async def test_a_checkpoint_or_metadata_planted_in_clear_under_encryption_is_refused(make_platform: Any, mode: str) -> None:
    platform, review = await started(make_platform, mode)
    doc = latest_root(platform)
    checkpoint = encrypted().loads_typed((doc["checkpoint"]["type"], doc["checkpoint"]["data"]))
    type_, data = CLEAR.dumps_typed(checkpoint)
    database(platform).checkpoints.update_one({"_id": doc["_id"]}, {"$set": {"checkpoint": {"type": type_, "data": Binary(data)}}})
    error = await refused(review, mode, CorruptDocumentError)
    assert (error.collection, error.document_id, error.field) == ("checkpoints", doc["_id"], "checkpoint.data")
    database(platform).checkpoints.update_one({"_id": doc["_id"]}, {"$set": {"checkpoint": doc["checkpoint"]}})
    # a metadata value the serde stores (a set): planted in clear under the document's own two keys
    type_, data = CLEAR.dumps_typed({"approved"})
    database(platform).checkpoints.update_one(
        {"_id": doc["_id"]}, {"$set": {"metadata.verdict": {"%serde": type_, "%data": Binary(data)}}}
    )
    error = await refused(review, mode, CorruptDocumentError)
    assert (error.collection, error.document_id, error.field) == ("checkpoints", doc["_id"], "metadata.verdict")


@pytest.mark.parametrize("mode", MODES)
async def test_an_outcome_planted_in_clear_under_encryption_is_refused_not_replayed(make_platform: Any, mode: str) -> None:
    """The effect said "declined"; an entry rewritten to clear "approved" (digest recomputed) was replayed."""
    platform = make_platform(serde=encrypted())
    review = Review(platform, fails_once=True)
    with pytest.raises(ConnectionError):
        await invoke(review.graph, mode, {"messages": [HumanMessage("review case 9")]}, THREAD)
    journal = database(platform).activity_journal
    entry = journal.find_one({"thread_id": THREAD, "chunk": 0})
    typed = CLEAR.dumps_typed("approved")
    forged = {"outcome.type": typed[0], "outcome.data": Binary(typed[1]), "outcome.digest": outcome_digest(typed)}
    journal.update_one({"_id": entry["_id"]}, {"$set": forged})
    with pytest.raises(CorruptDocumentError) as refused_outcome:
        await invoke(review.graph, mode, None, THREAD)
    error = refused_outcome.value
    assert (error.collection, error.field) == ("activity_journal", "outcome.data") and "in clear" in str(error)
    assert THREAD in str(error) and "review" in str(error)
    assert review.executed == ["case-9"]  # not run again, and "approved" reached no node


@pytest.mark.parametrize("mode", MODES)
async def test_the_input_digest_key_planted_in_clear_under_encryption_is_refused(make_platform: Any, mode: str) -> None:
    """The key of input digests, planted in clear, would be known to whoever planted it: short secrets found again."""
    platform = make_platform(serde=encrypted())
    metadata = database(platform)[platform.journal.metadata_collection]
    type_, data = CLEAR.dumps_typed(b"k" * 32)
    metadata.insert_one({"_id": "journal_input_digest_key", "type": type_, "data": Binary(data)})
    review = Review(platform)
    with pytest.raises(CorruptDocumentError) as refused_key:
        await invoke(review.graph, mode, {"messages": [HumanMessage("review case 9")]}, THREAD)
    assert refused_key.value.document_id == "journal_input_digest_key" and review.executed == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_delta_channel_seed_planted_in_clear_under_encryption_is_refused(make_platform: Any, mode: str) -> None:
    """The snapshot a ``DeltaChannel`` is rebuilt from (``get_delta_channel_history``'s seed)."""
    platform = make_platform(serde=encrypted())
    await run_chat(platform.checkpointer, mode == "async", 10)
    db = database(platform)
    *older, _latest = db.checkpoints.find({"thread_id": "chat", "checkpoint_ns": ""}).sort("checkpoint_id", 1)
    for doc in older:  # the seed is a snapshot up the chain
        for i, entry in enumerate(doc.get("values", [])):
            if entry["c"] == "messages" and "d" in entry:
                type_, data = CLEAR.dumps_typed(encrypted().loads_typed((entry["t"], entry["d"])))
                planted = {f"values.{i}.t": type_, f"values.{i}.d": Binary(data), f"values.{i}.h": zlib.crc32(data)}
                db.checkpoints.update_one({"_id": doc["_id"]}, {"$set": planted})
    config = {"configurable": {"thread_id": "chat", "checkpoint_ns": ""}}
    saver = platform.checkpointer
    with pytest.raises(CorruptDocumentError) as refused_seed:
        if mode == "sync":
            saver.get_delta_channel_history(config=config, channels=["messages"])
        else:
            await saver.aget_delta_channel_history(config=config, channels=["messages"])
    assert refused_seed.value.field == "the value of channel 'messages'" and "in clear" in str(refused_seed.value)


# -- another key, or none ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("reader", ["another key", "no key"])
@pytest.mark.parametrize("mode", MODES)
async def test_values_read_with_another_key_or_none_name_the_thread_the_document_and_the_key(
    make_platform: Any, mode: str, reader: str
) -> None:
    """Before: ``ValueError: MAC check failed`` (another key) or ``NotImplementedError: Unknown serialization type``
    (no key), naming nothing."""
    platform, review = await started(make_platform, mode)
    doc = latest_root(platform)
    other = make_platform(serde=encrypted(OTHER_KEY) if reader == "another key" else None)
    again = Review(other)
    again.executed = review.executed
    error = await refused(again, mode, EncryptionKeyError)
    assert (error.thread_id, error.collection, error.document_id) == (THREAD, "checkpoints", doc["_id"])
    assert THREAD in str(error) and repr(doc["_id"]) in str(error) and "another key" in str(error)


@pytest.mark.filterwarnings("ignore::langgraph_durable_mongodb.InputChangedWarning")  # no key: a plain digest
@pytest.mark.parametrize("reader", ["another key", "no key"])
@pytest.mark.parametrize("mode", MODES)
async def test_an_outcome_read_with_another_key_or_none_names_the_thread_the_entry_and_the_key(
    make_platform: Any, mode: str, reader: str
) -> None:
    """The journal of a platform with another key (its input-digest key cannot be opened) or none (the outcome
    cannot): before, ``ClientConfigurationError`` naming no thread, or a raw ``NotImplementedError``."""
    platform = make_platform(serde=encrypted())
    review = Review(platform, fails_once=True)
    with pytest.raises(ConnectionError):
        await invoke(review.graph, mode, {"messages": [HumanMessage("review case 9")]}, THREAD)
    entry = database(platform).activity_journal.find_one({"thread_id": THREAD, "chunk": 0})
    position = EffectPosition(*(entry[f] for f in ("thread_id", "path", "node", "occurrence", "effect_key")))
    other = make_platform(serde=encrypted(OTHER_KEY) if reader == "another key" else None)
    journal = ActivityJournal.for_checkpointer(other.checkpointer)
    call = EffectCall("tool", "review", input={"case": "case-9"})
    with pytest.raises(EncryptionKeyError) as wrong:
        if mode == "sync":
            journal.run(call, lambda: review.executed.append("again"), position=position)
        else:
            await journal.arun(call, lambda: review.executed.append("again"), position=position)
    assert wrong.value.thread_id == THREAD and "another key" in str(wrong.value)
    assert review.executed == ["case-9"]


# -- a recorded failure's class ------------------------------------------------------------------------------------


class Declined(Exception):
    """A terminal failure the journal's user declares (``terminal_errors``)."""


class Handled(Exception):
    """A failure a node handles (the journal raises it again as itself on resume)."""


def planted_module(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """A module on the path that marks its import, as anything a document could name (``os``, a plugin) would act."""
    name = f"planted_{tmp_path.name.replace('-', '_')}"
    marker = tmp_path / "imported"
    (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').close()\n\n\nclass Declined(Exception):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name, marker


@pytest.mark.parametrize("handled", [False, True], ids=["terminal", "handled"])
@pytest.mark.parametrize("mode", MODES)
async def test_a_failure_s_class_is_never_imported_because_a_journal_document_names_its_module(
    make_platform: Any, mode: str, handled: bool, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed entry's ``error.module`` rewritten to a module this process never imported: before, the resume that
    read the entry imported it (``importlib.import_module``), whether the failure was terminal or one the node
    handled."""
    module, marker = planted_module(tmp_path, monkeypatch)
    platform = make_platform(journal_options={"terminal_errors": (Declined,)})
    failed: list[str] = []

    @effect(kind="tool", name="review")
    def review() -> str:
        raise (Handled if handled else Declined)("the card was declined")

    @effect(kind="tool", name="note")
    def note() -> str:
        return "noted"

    def node(state: State) -> State:
        try:
            review()
        except Handled:
            note()  # the node went on after the failure: a resume raises it again rather than run it
        if not failed:
            failed.append("once")
            raise ConnectionError("the node fails once, after its effects")
        return {"notes": ["done"]}

    graph = StateGraph(State)
    graph.add_node("review", node)
    graph.add_edge(START, "review")
    app = platform.compile(graph)
    with pytest.raises(ConnectionError if handled else Declined):
        await invoke(app, mode, {"notes": []}, THREAD)
    journal = database(platform).activity_journal
    assert journal.update_one({"thread_id": THREAD, "name": "review"}, {"$set": {"error.module": module}}).matched_count
    with pytest.raises(Exception):  # noqa: B017 - what it raises is judged by the next test; here: what was imported
        await invoke(app, mode, None, THREAD)
    assert not marker.exists() and module not in sys.modules


def test_a_recorded_failure_s_class_is_found_among_imported_modules_and_declared_errors_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found: a class of a module imported already (nested classes too), a declared terminal error. Not found, and
    nothing run to look: a module not imported, a name a module's ``__getattr__`` would answer (lazy imports do),
    something that is not an exception class."""
    from langgraph_durable_mongodb.journal.plans import _resolve_type

    asked: list[str] = []
    lazy = types.ModuleType("lazy_plugins")
    lazy.__getattr__ = lambda name: asked.append(name) or Declined  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lazy_plugins", lazy)

    class Declared(Exception):
        pass

    assert _resolve_type(__name__, "Handled", ()) is Handled
    assert _resolve_type("langgraph_durable_mongodb.errors", "EncryptionKeyError", ()) is EncryptionKeyError
    assert _resolve_type(Declared.__module__, Declared.__qualname__, (Declared,)) is Declared  # defined in a function
    assert _resolve_type(Declared.__module__, Declared.__qualname__, ()) is None
    assert _resolve_type("lazy_plugins", "Declined", ()) is None and asked == []
    assert _resolve_type("never_imported_anywhere", "Error", ()) is None and "never_imported_anywhere" not in sys.modules
    assert _resolve_type(__name__, "THREAD", ()) is None and _resolve_type("os", "path.join", ()) is None
