"""The inspector's routes without a browser (Starlette's TestClient, sync: the server is the only async code
here): the JSON API, 403 on writes without --allow-writes or without the CSRF token, the token of a remote
inspector, the loopback Host check, escaping, and bad input refused before any query."""

from __future__ import annotations

import mongomock
import pytest
from starlette.testclient import TestClient

from langgraph_durable_mongodb.cli import main
from langgraph_durable_mongodb.errors import InvalidInputError
from langgraph_durable_mongodb.storage.schema import CollectionNames
from langgraph_durable_mongodb.ui.actions import Actions
from langgraph_durable_mongodb.ui.app import create_app
from langgraph_durable_mongodb.ui.guard import Guard, guard_for
from langgraph_durable_mongodb.views.reader import ThreadViews
from tests.ui_helpers import INJECTION, OWNER, PATH, position, seed

DB = "ui_api"


@pytest.fixture(scope="module")
def seeded() -> mongomock.MongoClient:
    client = mongomock.MongoClient()
    seed(client, DB)
    return client


def _client(db: mongomock.MongoClient, guard: Guard, base_url: str = "http://127.0.0.1:8765") -> TestClient:
    names = CollectionNames()
    app = create_app(ThreadViews(db, DB, names), Actions(db, DB, names), guard)
    return TestClient(app, base_url=base_url)


def test_the_thread_list_as_json(seeded: mongomock.MongoClient) -> None:
    listing = _client(seeded, Guard()).get("/api/threads").json()
    rows = {row["thread_id"]: row for row in listing["threads"]}
    assert set(rows) == {"case-42", "case-43", INJECTION}
    assert rows["case-42"]["state"] == "done" and rows["case-42"]["effects"]["completed"] == 2
    assert rows["case-43"]["effects"]["in flight"] == 1 and rows["case-43"]["effects"]["outcome unknown"] == 1
    assert _client(seeded, Guard()).get("/api/threads", params={"prefix": "case-4", "limit": 1}).json()["next_after"] == "case-42"


def test_one_thread_as_json_shows_paths_effects_claims_and_the_replay(seeded: mongomock.MongoClient) -> None:
    thread = _client(seeded, Guard()).get("/api/thread", params={"id": "case-42"}).json()
    [op] = thread["operations"]
    assert op["path"] == PATH
    effects = {e["name"]: e for e in op["nodes"][0]["effects"]}
    assert effects["lookup_policy"]["state"] == "completed" and effects["lookup_policy"]["replayed"]
    assert thread["replayed"] == 2 and "replayed" not in thread["effects"] and thread["timeline"][0]["step"] == 2
    claims = _client(seeded, Guard()).get("/api/thread", params={"id": "case-43"}).json()["claims"]
    assert [c["holder"]["owner"] for c in claims] == [OWNER]
    assert _client(seeded, Guard()).get("/api/thread", params={"id": "nope"}).status_code == 404


def test_markup_in_a_thread_id_is_escaped(seeded: mongomock.MongoClient) -> None:
    http = _client(seeded, Guard())
    for page in (http.get("/").text, http.get("/threads/" + INJECTION.replace("/", "%2F")).text):
        assert INJECTION not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_writes_answer_403_without_allow_writes(seeded: mongomock.MongoClient) -> None:
    guard = Guard(allow_writes=False)
    answer = _client(seeded, guard).post("/api/discard", params={"csrf": guard.csrf}, data={"position": position("2")})
    assert answer.status_code == 403 and "--allow-writes" in answer.json()["error"]
    assert _client(seeded, guard).post("/api/delete", params={"csrf": guard.csrf}, data={"thread_id": "case-43"}).status_code == 403
    assert "case-43" in {r["thread_id"] for r in _client(seeded, guard).get("/api/threads").json()["threads"]}


def test_a_write_needs_the_csrf_token(seeded: mongomock.MongoClient) -> None:
    guard = Guard(allow_writes=True)
    answer = _client(seeded, guard).post("/api/resolve", params={"csrf": "forged"}, data={"position": position("2"), "outcome": '"sent"'})
    assert answer.status_code == 403 and "CSRF" in answer.json()["error"]
    states = {e["name"]: e["state"] for e in _client(seeded, guard).get("/api/thread", params={"id": "case-43"}).json()["claims"]}
    assert "charge_card" in states  # nothing changed


def test_resolve_records_the_outcome_as_the_cli_does() -> None:
    db = mongomock.MongoClient()
    seed(db, DB, with_demo=False)
    guard = Guard(allow_writes=True)
    http = _client(db, guard)
    answer = http.post("/api/resolve", params={"csrf": guard.csrf}, data={"position": position("2"), "outcome": '"sent"'},
                       headers={"accept": "application/json"})
    assert answer.status_code == 200 and answer.json()["was"] == "started" and answer.json()["now"] == "completed"
    assert http.get("/api/threads").json()["threads"][0]["effects"]["outcome unknown"] == 0
    answer = http.post("/api/delete", params={"csrf": guard.csrf}, data={"thread_id": "case-43"}, follow_redirects=False)
    assert answer.status_code == 303 and "case-43" not in {r["thread_id"] for r in http.get("/api/threads").json()["threads"]}
    assert http.post("/api/discard", params={"csrf": guard.csrf}, data={"position": "nothing"}).status_code == 400


def test_a_remote_inspector_needs_its_token(seeded: mongomock.MongoClient) -> None:
    with pytest.raises(InvalidInputError, match="--allow-remote"):
        guard_for("0.0.0.0", allow_remote=False, token=None, allow_writes=False)
    guard, made = guard_for("0.0.0.0", allow_remote=True, token=None, allow_writes=False)
    assert made and guard.token
    http = _client(seeded, guard, base_url="http://inspector.example:8765")
    assert http.get("/api/threads").status_code == 401
    assert http.get("/api/threads", headers={"authorization": "Bearer wrong-token-0123456789"}).status_code == 401
    assert http.get("/api/threads", headers={"authorization": f"Bearer {guard.token}"}).status_code == 200
    assert http.get("/", params={"token": guard.token}).status_code == 200
    assert http.get("/api/threads").status_code == 200  # the cookie the token set


def test_a_loopback_inspector_answers_only_to_a_loopback_host(seeded: mongomock.MongoClient) -> None:
    assert _client(seeded, Guard(), base_url="http://rebound.example:8765").get("/").status_code == 403
    assert _client(seeded, Guard(), base_url="http://localhost:8765").get("/").status_code == 200


@pytest.mark.parametrize("query", [{"limit": "0"}, {"limit": "x"}, {"limit": "501"}])
def test_bad_input_is_refused_before_any_query(seeded: mongomock.MongoClient, query: dict[str, str]) -> None:
    answer = _client(seeded, Guard()).get("/api/threads", params=query)
    assert answer.status_code == 400 and "limit" in answer.json()["error"]


def test_views_refuse_a_thread_id_that_is_not_a_string() -> None:
    views = ThreadViews(mongomock.MongoClient(), DB)
    with pytest.raises(InvalidInputError):
        views.thread({"$gt": ""})  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        views.threads(prefix={"$ne": None})  # type: ignore[arg-type]


def test_ui_says_how_to_install_its_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from langgraph_durable_mongodb.cli import inspector

    monkeypatch.setattr(inspector, "missing_extra", lambda: ["jinja2"])
    assert main(["--db", DB, "ui"], client=mongomock.MongoClient()) == 2
    assert "pip install 'langgraph-durable-mongodb[ui]'" in capsys.readouterr().err


def test_ui_refuses_a_remote_host_without_allow_remote(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", DB, "ui", "--host", "0.0.0.0"], client=mongomock.MongoClient()) == 2
    assert "--allow-remote" in capsys.readouterr().err
