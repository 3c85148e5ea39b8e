"""Security: credentials in effect inputs, encryption at rest, thread isolation.
Embedded (mongomock) and the real-server tier; the command-level isolation proof needs pymongo (server tier).

Everything is checked on the documents as stored, read raw.
"""

from __future__ import annotations

import json

import operator
import uuid
from typing import Annotated, Any, TypedDict

import bson
import pytest
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from pymongo import monitoring

from langgraph_durable_mongodb.journal import SecureLLM, SecureTool, digest, effect
from langgraph_durable_mongodb.platform import DurablePlatform
from langgraph_durable_mongodb.storage.thread_summaries import NOT_SUMMARY

from .clients import on_servers, tier_uri
from .journal_helpers import scripted
from .workers import durable_worker

PLATFORMS = ["embedded", *on_servers("server")]
PER_THREAD = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "activity_journal")
KEY = b"0123456789abcdef"
SECRETS = ("sk-live-5f2a9c", "hunter2-pass", "Bearer eyJhbGciOi", "cs-77d1e0", "tok-9b8a7c", "4111-2222-3333-4444")


@pytest.fixture(params=PLATFORMS)
def make_platform(request: pytest.FixtureRequest) -> Any:
    """``make_platform(**options)`` on mongomock or on the server, every database dropped afterwards."""
    made = []

    def make(**options: Any) -> DurablePlatform:
        if request.param == "embedded":
            platform = DurablePlatform.embedded(**options)
        else:
            from pymongo import AsyncMongoClient, MongoClient

            uri = tier_uri(request)
            client = MongoClient(uri, event_listeners=options.pop("event_listeners", []))
            platform = DurablePlatform(
                client, async_client=AsyncMongoClient(uri), db_name=f"rel_sec_{uuid.uuid4().hex[:12]}", **options
            )
        made.append(platform)
        return platform

    make.kind = request.param
    yield make
    for platform in made:
        if request.param == "server":
            platform.checkpointer.client.drop_database(platform.checkpointer.db_name)


def raw_documents(platform: DurablePlatform) -> dict[str, list[dict]]:
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    return {c: list(db[c].find({})) for c in PER_THREAD}


def in_clear(value: str, documents: Any) -> bool:
    """Whether ``value`` appears as stored in the documents (their BSON bytes) or in a bytes value."""
    items = documents if isinstance(documents, list) else [documents]
    stored = b"".join(bson.encode(d) if isinstance(d, dict) else bytes(d) for d in items)
    return value.encode() in stored


class State(TypedDict, total=False):
    out: list
    card: str


def credential_graph(platform: DurablePlatform, fail: bool = False) -> Any:
    @effect(kind="tool", name="fetch_statement")
    def fetch(url: str, api_key: str, auth: dict, client_secret: str, user: dict) -> dict:
        if fail:
            raise PermissionError(f"401 Unauthorized for {url}?api_key={api_key}")
        return {"rows": 2, "account": user["name"]}

    def node(s: State) -> State:
        got = fetch(
            "https://bank.example/v1",
            api_key=SECRETS[0],
            auth={"password": SECRETS[1], "headers": {"Authorization": SECRETS[2], "X-Auth-Token": SECRETS[4]}},
            client_secret=SECRETS[3],
            user={"name": "ann", "apiKey": SECRETS[0]},
        )
        return {"out": [got]}

    g = StateGraph(State)
    g.add_node("fetch", node)
    g.add_edge(START, "fetch")
    return platform.compile(g)


def test_credential_inputs_never_appear_in_clear_in_journal_documents(make_platform: Any) -> None:
    platform = make_platform()
    credential_graph(platform).invoke({"out": []}, {"configurable": {"thread_id": "t"}})
    [entry] = raw_documents(platform)["activity_journal"]
    assert entry["status"] == "completed"
    for secret in SECRETS[:5]:
        assert not in_clear(secret, entry), secret
    assert entry["input"]["preview"].count("[REDACTED]") == 4  # api_key, auth (all of it), client_secret, apiKey
    assert "bank.example" in entry["input"]["preview"] and "ann" in entry["input"]["preview"]


def test_a_credential_echoed_in_an_error_message_is_not_stored_in_clear(make_platform: Any) -> None:
    platform = make_platform()
    with pytest.raises(PermissionError):
        credential_graph(platform, fail=True).invoke({"out": []}, {"configurable": {"thread_id": "t"}})
    [entry] = raw_documents(platform)["activity_journal"]
    assert entry["status"] == "failed"
    assert not in_clear(SECRETS[0], entry)


def encrypted_run(platform: DurablePlatform) -> None:
    @effect(kind="tool", name="read_card")
    def read_card(customer: str) -> dict:
        return {"card": SECRETS[5], "holder": "MARKER-HOLDER"}

    class Card(TypedDict, total=False):
        card: str
        log: Annotated[list, operator.add]

    crashed = []

    def node(s: Card) -> Card:
        card = read_card("ann")
        if not crashed:  # the node fails once after the effect: its journal outcome is replayed
            crashed.append(1)
            raise ConnectionError("lost")
        return {"card": card["card"], "log": [card["holder"]]}

    g = StateGraph(Card)
    g.add_node("read", node)
    g.add_node("after", lambda s: {"log": ["MARKER-AFTER"]})
    g.add_edge(START, "read")
    g.add_edge("read", "after")
    graph = platform.compile(g)
    config = {"configurable": {"thread_id": "secret"}}
    with pytest.raises(ConnectionError):
        graph.invoke({"card": "MARKER-INPUT", "log": []}, config)
    assert graph.invoke(None, config) == {"card": SECRETS[5], "log": ["MARKER-HOLDER", "MARKER-AFTER"]}


MARKERS = (SECRETS[5], "MARKER-HOLDER", "MARKER-AFTER", "MARKER-INPUT")


def test_encrypted_serializer_encrypts_channel_values_writes_and_journal_outcomes(make_platform: Any) -> None:
    platform = make_platform(serde=EncryptedSerializer.from_pycryptodome_aes(key=KEY))
    platform.checkpointer.inline_value_bytes = 0  # new values in blobs, unchanged ones copied inline: both encrypted
    encrypted_run(platform)
    docs = raw_documents(platform)
    assert docs["checkpoint_writes"] and docs["checkpoint_blobs"] and docs["activity_journal"]
    for coll in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
        for marker in MARKERS:
            assert not in_clear(marker, docs[coll]), (coll, marker)
    [entry] = docs["activity_journal"]
    assert entry["outcome"]["type"].endswith("+aes")  # the serde's type names the cipher
    for marker in MARKERS:
        assert not in_clear(marker, entry["outcome"]["data"]), marker
    # And the key is needed: without it the stored outcome cannot be read back.
    plain = DurablePlatform(platform.checkpointer.client, async_client=platform.checkpointer.async_client,
                            db_name=platform.checkpointer.db_name)
    with pytest.raises(Exception):  # noqa: B017 - whatever the serde raises for data it cannot decrypt
        plain.checkpointer.serde.loads_typed((entry["outcome"]["type"], entry["outcome"]["data"]))


def test_with_encryption_no_readable_copy_of_an_outcome_is_kept(make_platform: Any) -> None:
    platform = make_platform(serde=EncryptedSerializer.from_pycryptodome_aes(key=KEY))
    encrypted_run(platform)
    [entry] = raw_documents(platform)["activity_journal"]
    for marker in MARKERS:
        assert not in_clear(marker, entry), marker


def threads_in_key(ident: Any) -> list[Any]:
    """The thread each ``_id`` of a filter names: a checkpointer document's ``_id`` is its key
    (``key_id``: a JSON array whose first element is the thread), matched by equality or ``$in``."""
    idents = ident["$in"] if isinstance(ident, dict) and set(ident) == {"$in"} else [ident]
    out = []
    for one in idents:
        try:
            key = json.loads(one) if isinstance(one, str) else None
        except ValueError:
            key = None
        out.append(key[0] if isinstance(key, list) and key else "<not a key>")
    return out


def threads_named(query: dict) -> list[Any]:
    """The ``thread_id`` each branch of a filter names (``$or``/``$and`` branches one by one, ``_id`` keys)."""
    branches = [b for op in ("$or", "$and") for b in query.get(op, [])]
    if "thread_id" not in query and "_id" in query and not branches:
        return threads_in_key(query["_id"])
    if "thread_id" in query or not branches:
        return [query.get("thread_id", "<none>")]
    return [t for b in branches for t in threads_named(b)]


def is_format_probe(cmd: Any) -> bool:
    """The storage-format check of an unstamped database: the shape of one checkpoint, no values."""
    return (
        cmd.get("filter") == {"checkpoint_ns": NOT_SUMMARY} and cmd.get("limit") == 1
        and set(cmd.get("projection", {})) == {"_id", "type", "ts"}
    )


class Queries(monitoring.CommandListener):
    """Every command's thread filter, as sent to the server."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any]] = []
        self.format_probes = 0

    def started(self, event: Any) -> None:
        cmd, name = event.command, event.command_name
        coll = cmd.get(name) if isinstance(cmd.get(name), str) else None
        if coll not in PER_THREAD:
            return
        if name == "find" and is_format_probe(cmd):
            self.format_probes += 1
            return
        if name in ("find", "count", "distinct"):
            filters = [cmd.get("filter", cmd.get("query", {}))]
        elif name == "update":
            filters = [u["q"] for u in cmd["updates"]]
        elif name == "delete":
            filters = [d["q"] for d in cmd["deletes"]]
        elif name == "insert":
            filters = list(cmd["documents"])
        elif name == "aggregate":
            filters = [cmd["pipeline"][0].get("$match", {})] if cmd["pipeline"] else [{}]
        else:
            return
        self.seen += [(name, coll, thread) for f in filters for thread in threads_named(f)]

    def succeeded(self, event: Any) -> None:
        pass

    def failed(self, event: Any) -> None:
        pass


@pytest.mark.parametrize("make_platform", on_servers("server"), indirect=True)
def test_no_query_reaches_beyond_its_thread(make_platform: Any) -> None:
    """Every read and write a run sends (checkpoints, journal, ordinals; a crash, a resume, history, delete)
    names its one thread by equality: proven on the commands pymongo sends (so: on a real server)."""
    queries = Queries()
    platform = make_platform(event_listeners=[queries])
    durable_worker.configure(log=None)
    graph = platform.compile(durable_worker.build_graph())
    threads = ["a", "{'$ne': None}", ".*", "$where"]
    for thread in threads:
        config = {"configurable": {"thread_id": thread}}
        graph.invoke(durable_worker.inputs(thread), config)
        list(graph.get_state_history(config))
        platform.journal.entries(thread)
    platform.checkpointer.copy_thread("a", "copy")
    platform.checkpointer.delete_thread(".*")
    assert queries.seen
    assert queries.format_probes == 1, "the format check reads one checkpoint's shape once, on the unstamped database"
    off = [q for q in queries.seen if not isinstance(q[2], str) or q[2] not in (*threads, "copy")]
    assert off == [], f"queries that do not name one thread by equality: {off[:10]}"
    remaining = raw_documents(platform)
    assert {d["thread_id"] for docs in remaining.values() for d in docs} == {"a", "{'$ne': None}", "$where", "copy"}


def pin_graph(platform: DurablePlatform, runs: list, crash: bool) -> Any:
    @effect(kind="tool", name="verify_pin")
    def verify(pin: str) -> bool:
        runs.append(pin)
        return True

    def node(s: State) -> State:
        ok = verify("4821")
        if crash:
            raise ConnectionError("lost")
        return {"out": [ok]}

    g = StateGraph(State)
    g.add_node("verify", node)
    g.add_edge(START, "verify")
    return platform.compile(g)


def test_with_encryption_input_digests_are_keyed_so_a_short_secret_cannot_be_guessed(make_platform: Any) -> None:
    serde = EncryptedSerializer.from_pycryptodome_aes(key=KEY)
    platform, runs = make_platform(serde=serde), []
    config = {"configurable": {"thread_id": "pin"}}
    with pytest.raises(ConnectionError):
        pin_graph(platform, runs, crash=True).invoke({"out": []}, config)
    [entry] = raw_documents(platform)["activity_journal"]
    guesses = {digest({"pin": f"{n:04d}"}) for n in range(10_000)}  # every 4-digit PIN, unkeyed
    assert entry["input"]["digest"].startswith("hmac-sha256:") and entry["input"]["digest"] not in guesses
    db = platform.checkpointer.client[platform.checkpointer.db_name]
    [stored_key] = db["durable_metadata"].find({"_id": "journal_input_digest_key"})
    assert stored_key["type"].endswith("+aes")  # the digest key itself is stored encrypted

    # Another process with the same encryption key reads the same digest key: the effect replays.
    same = DurablePlatform(
        platform.checkpointer.client, async_client=platform.checkpointer.async_client,
        db_name=platform.checkpointer.db_name, serde=serde, journal_options={"on_input_change": "raise"},
    )
    assert pin_graph(same, runs, crash=False).invoke(None, config) == {"out": [True]}
    assert runs == ["4821"]


# --- issue 25: the shapes key-based redaction missed, as stored --------------------------------------------

TOKEN = "tok-live-9f8e7d6c5b"
PASTED = ("sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56", "AKIAIOSFODNN7EXAMPLE", "ghp_0123456789abcdefghijABCDEFGHIJ012345",
          "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp", "qp-secret-77aa")
ECHOED = 'pa"ss\\word-1'


class Chat(TypedDict, total=False):
    messages: Annotated[list, add_messages]


def shapes_graph(platform: DurablePlatform, mode: str) -> Any:
    """An agent whose tool (through ToolNode) returns a token, then a call with headers as (name, value) pairs
    and an echoed password; the model is called again with the tool's result in its input."""

    @tool
    def issue_token(user: str) -> dict:
        """Issue a token."""
        return {"access_token": TOKEN, "user": user}

    @effect(kind="tool", name="call_api")
    def call_api(url: str, headers: list, password: str) -> dict:
        return {"status": 200, "echo": password}

    calls = [{"name": "issue_token", "args": {"user": "ann"}, "id": "c1"}]
    llm = SecureLLM(scripted(AIMessage("", tool_calls=calls), AIMessage("done"))).bind_tools([issue_token])

    def agent(state: Chat) -> Chat:
        return {"messages": [llm.invoke(state["messages"])]}

    async def aagent(state: Chat) -> Chat:
        return {"messages": [await llm.ainvoke(state["messages"])]}

    def after(state: Chat) -> Chat:
        call_api(f"https://api.example/v1?api_key={TOKEN}", [("Authorization", f"Bearer {TOKEN}")], ECHOED)
        return {}

    g = StateGraph(Chat)
    g.add_node("agent", aagent if mode == "async" else agent)
    g.add_node("tools", ToolNode([SecureTool(issue_token)]))
    g.add_node("after", after)
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", tools_condition, {"tools": "tools", "__end__": "after"})
    g.add_edge("tools", "agent")
    return platform.compile(g)


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_common_shapes_of_a_secret_are_redacted_as_stored(make_platform: Any, mode: str) -> None:
    platform = make_platform()
    graph = shapes_graph(platform, mode)
    said = "use " + " and ".join(PASTED[:4]) + f" on https://x.example/?user=ann&token={PASTED[4]}"
    config = {"configurable": {"thread_id": "shapes"}}
    inputs = {"messages": [HumanMessage(said)]}
    await graph.ainvoke(inputs, config) if mode == "async" else graph.invoke(inputs, config)
    entries = [e for e in raw_documents(platform)["activity_journal"] if e.get("chunk") == 0]
    llm_calls = sorted((e for e in entries if e["kind"] == "llm"), key=lambda e: e["occurrence"])
    assert len(llm_calls) == 2
    for entry in llm_calls:  # inputs are digested and previewed only: no secret anywhere in the entry
        for secret in (*PASTED, TOKEN):
            assert not in_clear(secret, entry), (secret, entry["input"]["preview"])
    assert '"access_token": "[REDACTED]"' in llm_calls[1]["input"]["preview"]  # the tool's result, in the next call
    [issued] = [e for e in entries if e["name"] == "issue_token"]
    assert TOKEN not in issued["outcome"]["preview"] and "ann" in issued["outcome"]["preview"]
    [api] = [e for e in entries if e["name"] == "call_api"]
    assert TOKEN not in api["input"]["preview"] and "Authorization" in api["input"]["preview"]
    assert ECHOED not in api["outcome"]["preview"] and json.dumps(ECHOED)[1:-1] not in api["outcome"]["preview"]
    assert api["outcome"]["preview"] == '{"echo": "[REDACTED]", "status": 200}'
