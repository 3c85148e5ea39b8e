"""One rule names the database everywhere: ``db_name=``/``--db``, else the URI's path, else ``MONGODB_DB``, else ``langgraph``.

``DurablePlatform.from_conn_string``, ``MongoDBCheckpointer.from_conn_string`` (sync and async blocks), the server
factory and the CLI (``--db`` before or after the command) are run on the tier's servers; where each wrote or read
is checked in the raw databases. A URI passed where a client belongs is refused, naming ``from_conn_string``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from pymongo import MongoClient

from langgraph_durable_mongodb import DurablePlatform, MongoDBCheckpointer
from langgraph_durable_mongodb.storage.connections import database_name
from langgraph_durable_mongodb.errors import InvalidInputError
from langgraph_durable_mongodb.server import database_of

from .cli_helpers import run
from .clients import with_database
from .graphs import note_graph


@pytest.mark.parametrize(
    ("uri", "db_name", "environ", "expected"),
    [
        ("mongodb://h/agents", "given", {"MONGODB_DB": "env"}, "given"),
        ("mongodb://h/agents", None, {"MONGODB_DB": "env"}, "agents"),
        ("mongodb://h/agents?retryWrites=false", None, {}, "agents"),
        ("mongodb://h/", None, {"MONGODB_DB": "env"}, "env"),
        ("mongodb://h", None, {}, "langgraph"),
        (None, None, {"MONGODB_DB": "env"}, "env"),
    ],
)
def test_the_rule(uri: str | None, db_name: str | None, environ: dict[str, str], expected: str) -> None:
    assert database_name(uri, db_name, environ) == expected
    if db_name is None and uri is not None:
        assert database_of(uri, environ) == expected  # the server factory's


@pytest.fixture
def names(mongodb_uri: str) -> Iterator[tuple[str, str]]:
    """Two fresh database names on the server (the URI's, and another), dropped afterwards."""
    pair = (f"path_{uuid.uuid4().hex[:12]}", f"other_{uuid.uuid4().hex[:12]}")
    yield pair
    with MongoClient(mongodb_uri) as client:
        for name in pair:
            client.drop_database(name)


def threads_in(uri: str, db: str) -> list[str]:
    with MongoClient(uri) as client:
        return sorted(client[db]["checkpoints"].distinct("thread_id"))


async def run_graph(opener: Any, is_async: bool, make_graph: Any, thread_id: str) -> None:
    config = {"configurable": {"thread_id": thread_id}}
    if is_async:
        async with opener as opened:
            await make_graph(opened).ainvoke({"notes": []}, config)
    else:
        with opener as opened:
            make_graph(opened).invoke({"notes": []}, config)


FORMS = {
    "platform": (DurablePlatform.from_conn_string, lambda platform: platform.compile(note_graph())),
    "checkpointer": (MongoDBCheckpointer.from_conn_string, lambda saver: note_graph().compile(checkpointer=saver)),
}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("is_async", [False, True], ids=["with", "async with"])
async def test_from_conn_string_takes_the_database_from_the_uri_unless_db_name_says(
    mongodb_uri: str, names: tuple[str, str], form: str, is_async: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MONGODB_DB", names[1])  # the URI's path wins over it
    open_, make_graph = FORMS[form]
    path, other = names
    await run_graph(open_(with_database(mongodb_uri, path)), is_async, make_graph, "by-path")
    await run_graph(open_(with_database(mongodb_uri, path), db_name=other), is_async, make_graph, "by-name")
    await run_graph(open_(mongodb_uri), is_async, make_graph, "by-env")  # no path: MONGODB_DB
    assert threads_in(mongodb_uri, path) == ["by-path"]
    assert threads_in(mongodb_uri, other) == ["by-env", "by-name"]


def test_the_cli_reads_the_database_of_the_uri_and_takes_db_after_the_command(
    mongodb_uri: str, names: tuple[str, str]
) -> None:
    path, other = names
    for db in names:
        with MongoDBCheckpointer.from_conn_string(mongodb_uri, db_name=db) as saver:
            note_graph().compile(checkpointer=saver).invoke({"notes": []}, {"configurable": {"thread_id": f"in-{db}"}})
    code, out = run(None, "--uri", with_database(mongodb_uri, path), "--json", "threads")
    assert code == 0 and f"in-{path}" in out and f"in-{other}" not in out
    code, out = run(None, "--uri", with_database(mongodb_uri, path), "threads", "--db", other, "--json")
    assert code == 0 and f"in-{other}" in out and f"in-{path}" not in out
    code, out = run(None, "threads", "--uri", mongodb_uri, "--db", path, "--json")
    assert code == 0 and f"in-{path}" in out


@pytest.mark.parametrize("where", ["client", "async_client"])
@pytest.mark.parametrize("owner", [DurablePlatform, MongoDBCheckpointer])
def test_a_uri_where_a_client_belongs_is_refused_naming_from_conn_string(owner: type, where: str) -> None:
    uri = "mongodb://admin:s3cret@localhost:27017/agents"
    with pytest.raises(InvalidInputError, match="from_conn_string") as caught:
        owner(**{where: uri})
    assert "s3cret" not in str(caught.value)
