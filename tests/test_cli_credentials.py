"""The CLI never prints a MongoDB password, and says a refused login or right is one (exit 5).

Offline: URIs that cannot be parsed or reached, and pymongo's own ``OperationFailure`` with MongoDB's codes.
On servers: a FerretDB started with authentication enforced (wrong password, no credentials, the right ones),
and mongo-java-server, which has no authentication at all (a URI with credentials is refused, never echoed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import mongomock
import pytest
from pymongo.errors import AutoReconnect, OperationFailure, ServerSelectionTimeoutError

from langgraph_durable_mongodb.cli import EXIT_AUTH, EXIT_PROBLEM, EXIT_UNREACHABLE, EXIT_USAGE, EXIT_WARNING
from langgraph_durable_mongodb.cli.main import exit_code
from langgraph_durable_mongodb.storage.connections import masked_uri
from langgraph_durable_mongodb.storage.server_errors import translated, typed_server_errors
from tests.cli_helpers import run
from tests.conftest import in_ci, why_not_startable
from tests.servers import ferretdb

SECRET = "Pa55-w0rd"


def _no_secret(text: str) -> str:
    assert SECRET not in text and "Pa55" not in text, text
    return text


@pytest.mark.parametrize(
    "uri, shown",
    [
        (f"mongodb://admin:{SECRET}@127.0.0.1:1/", "mongodb://***@127.0.0.1:1/"),
        (f"mongodb+srv://admin:{SECRET}@cluster0.example.net/db?retryWrites=true", "mongodb+srv://***@cluster0.example.net/db?retryWrites=true"),
        (f"mongodb://admin:{SECRET}@h1:1,h2:2/?replicaSet=rs", "mongodb://***@h1:1,h2:2/?replicaSet=rs"),
        # unescaped @ and / in the password: everything up to the last @ goes, as pymongo masks a proxy URL
        (f"mongodb://admin:{SECRET}@x/y@127.0.0.1:1/", "mongodb://***@127.0.0.1:1/"),
        (f"admin:{SECRET}@127.0.0.1", "admin:***@127.0.0.1"),  # no scheme
        (f"mongodb://h:1/?tls=true&tlsCertificateKeyFilePassword={SECRET}", "mongodb://h:1/?tls=true&tlsCertificateKeyFilePassword=<redacted>"),
        (f"mongodb://h:1/?proxyUsername=u;proxyPassword={SECRET}", "mongodb://h:1/?proxyUsername=<redacted>;proxyPassword=<redacted>"),
        (f"mongodb://h:1/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:{SECRET}",
         "mongodb://h:1/?authMechanism=MONGODB-AWS&authMechanismProperties=<redacted>"),
        ("mongodb://127.0.0.1:27017/agents", "mongodb://127.0.0.1:27017/agents"),
    ],
)
def test_masked_uri_hides_the_password_and_secret_options(uri: str, shown: str) -> None:
    assert masked_uri(uri) == shown


@pytest.mark.parametrize("command", ["threads", "doctor", "inspect", "journal"])
def test_an_unreachable_server_exits_4_without_the_password(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    uri = f"mongodb://admin:{SECRET}@127.0.0.1:1/?serverSelectionTimeoutMS=200"
    args = [command, "t"] if command in ("inspect", "journal") else [command]
    assert run(None, "--uri", uri, *args)[0] == EXIT_UNREACHABLE
    err = _no_secret(capsys.readouterr().err)
    assert "cannot reach MongoDB at mongodb://***@127.0.0.1:1/" in err
    monkeypatch.setenv("MONGODB_URI", uri)  # the same URI from the environment
    assert run(None, *args)[0] == EXIT_UNREACHABLE
    assert "cannot reach MongoDB at mongodb://***@" in _no_secret(capsys.readouterr().err)


@pytest.mark.parametrize(
    "uri",
    [
        f"admin:{SECRET}@127.0.0.1:27017",  # no scheme
        f"mongodb://admin:{SECRET}@x@127.0.0.1:1/",  # an unescaped @: InvalidURI
        f"mongodb://admin:{SECRET}@127.0.0.1:99999/",  # a port out of range: ValueError
        f"mongodb://admin:{SECRET}@h1:1,h2:2/?directConnection=true",  # ConfigurationError
    ],
)
def test_a_bad_uri_exits_2_without_the_password(uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(None, "--uri", uri, "threads")[0] == EXIT_USAGE
    err = _no_secret(capsys.readouterr().err)
    assert "bad MongoDB URI" in err and "***@" in err


def _refusal(code: int, errmsg: str) -> OperationFailure:
    # pymongo's own exception, as it raises it for a server reply {ok: 0, code, errmsg}
    return OperationFailure(errmsg, code, {"ok": 0.0, "errmsg": errmsg, "code": code})


@pytest.mark.parametrize(
    "error, code, says",
    [
        (_refusal(18, "Authentication failed."), EXIT_AUTH, "authentication failed: check the user name, the password"),
        (_refusal(13, "not authorized on langgraph to execute command"), EXIT_AUTH, "lacks a role"),
        (_refusal(11, "Could not find user"), EXIT_AUTH, "the user does not exist"),
        (_refusal(59, "no such command: 'saslStart'"), EXIT_PROBLEM, "refused the command: no such command"),
        (ServerSelectionTimeoutError("127.0.0.1:1: [Errno 111] Connection refused"), EXIT_UNREACHABLE, "cannot reach"),
        (AutoReconnect("127.0.0.1:1: connection closed"), EXIT_UNREACHABLE, "cannot reach"),
    ],
)
def test_server_errors_are_classified_by_what_went_wrong(error: Exception, code: int, says: str) -> None:
    typed = translated(error, f"mongodb://admin:{SECRET}@127.0.0.1:1/")
    assert exit_code(typed) == code
    assert says in _no_secret(str(typed)) and "MongoDB at mongodb://***@127.0.0.1:1/" in str(typed)
    with pytest.raises(type(typed)) as raised, typed_server_errors(None):
        raise error
    assert str(raised.value) == str(typed).replace(" at mongodb://***@127.0.0.1:1/", "")
    assert raised.value.__cause__ is None and raised.value.__suppress_context__  # pymongo's own left out of the chain


@pytest.mark.parametrize("code, exit_code", [(18, EXIT_AUTH), (13, EXIT_AUTH), (2, EXIT_PROBLEM)])
def test_a_refusal_by_the_server_reaches_the_exit_code(
    code: int, exit_code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise _refusal(code, "refused")

    monkeypatch.setattr(mongomock.collection.Collection, "find", refuse)
    assert run(mongomock.MongoClient(), "threads")[0] == exit_code
    assert f"'code': {code}" in capsys.readouterr().err


# --- on servers ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ferretdb_with_auth() -> Iterator[str]:
    """A FerretDB that enforces authentication, user ``admin`` with password ``SECRET``; its URI without credentials."""
    why = why_not_startable("ferretdb")
    if why:
        pytest.fail(why, pytrace=False) if in_ci(os.environ) else pytest.skip(why)
    server = ferretdb.start(user=("admin", SECRET))
    try:
        yield server.uri
    finally:
        ferretdb.stop(server)


@pytest.mark.server
def test_a_wrong_password_on_a_server_that_checks_it_exits_5(ferretdb_with_auth: str, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = ferretdb_with_auth.replace("mongodb://", f"mongodb://admin:{SECRET}-wrong@")
    for command in ("threads", "doctor"):
        assert run(None, "--uri", wrong, command)[0] == EXIT_AUTH
        err = _no_secret(capsys.readouterr().err)
        assert "refused: authentication failed" in err and "'code': 18" in err and "mongodb://***@127.0.0.1:" in err


@pytest.mark.server
def test_no_credentials_on_a_server_that_needs_them_exits_5(ferretdb_with_auth: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(None, "--uri", ferretdb_with_auth, "threads")[0] == EXIT_AUTH
    err = capsys.readouterr().err
    assert "lacks a role" in err and "'code': 13" in err


@pytest.mark.server
def test_the_right_password_works_and_is_never_printed(ferretdb_with_auth: str, capsys: pytest.CaptureFixture[str]) -> None:
    right = ferretdb_with_auth.replace("mongodb://", f"mongodb://admin:{SECRET}@")
    code, out = run(None, "--uri", right, "--db", "cli_auth", "doctor", "--fix")
    assert code == EXIT_WARNING and "run one worker per thread" in out, capsys.readouterr().err  # FerretDB's warning
    assert "connection  ok" in _no_secret(out)
    _no_secret(capsys.readouterr().err)


@pytest.mark.server
def test_credentials_on_a_server_without_authentication_are_never_printed(
    mongo_java_server_uri: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # mongo-java-server implements no authentication: it answers saslStart with CommandNotFound (59)
    uri = mongo_java_server_uri.replace("mongodb://", f"mongodb://admin:{SECRET}@")
    assert run(None, "--uri", uri, "threads")[0] == EXIT_PROBLEM
    err = _no_secret(capsys.readouterr().err)
    assert "refused the command: no such command: 'saslStart'" in err and "mongodb://***@127.0.0.1:" in err


def test_the_demo_prints_where_it_stores_without_the_password() -> None:
    from langgraph_durable_mongodb import demo

    client, platform, where = demo.open_platform(f"mongodb://admin:{SECRET}@127.0.0.1:1/?serverSelectionTimeoutMS=1", "demo")
    try:
        assert _no_secret(where) == "mongodb://***@127.0.0.1:1/?serverSelectionTimeoutMS=1"
    finally:
        client.close()
