"""The inspector's routes: two pages, the same data as JSON under ``/api``, and three writes.

    GET  /                         the threads (?prefix=, ?after=, ?limit=, ?state=: only those in that state)
    GET  /threads/{thread_id}      one thread (?page=N: its journal entries 200 at a time)
    GET  /api/threads              the threads as JSON (same parameters)
    GET  /api/thread?id=THREAD     one thread as JSON (an id may hold "/", so it is a parameter; ?page=N too)
    GET  /api/thread/value?id=THREAD&channel=NAME  one value of its latest state whole (the pages cut it)
    GET  /api/thread/timeline.svg?id=THREAD  its page of effects as bars in time (?page=N too)
    GET  /api/thread/status?id=THREAD  its thread list row: what a live page polls (a few documents read)
    POST /api/resolve?csrf=TOKEN   position, outcome (JSON)
    POST /api/discard?csrf=TOKEN   position
    POST /api/delete?csrf=TOKEN    thread_id

Every request passes ``Guard`` first (host and token); a write also needs ``--allow-writes`` (else 403) and
the CSRF token, in its query or its ``X-CSRF-Token`` header (else 403, before a byte of its body is read), and a
form of at most ``MAX_FORM_BYTES`` (else 413, no more read than that). A form post from a page is answered by a
redirect back to the page; a script's (``Accept: application/json``) by JSON. Templates autoescape everything they show.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from ..errors import DurableMongoError, InvalidInputError
from ..views.exits import EXIT_UNKNOWN_THREAD, CliError
from ..views.plans import MAX_ENTRIES_PAGE, MAX_PAGE, OPEN_SHOWN
from ..views.reader import ThreadViews
from ..views.states import THREAD_STATES, state_named
from ..views.timeline import timeline_svg
from .actions import Actions
from .guard import TOKEN_COOKIE, Guard

HERE = Path(__file__).parent
#: Seconds between two polls of a thread's status while a run holds it (the page reloads when it changed).
REFRESH_SECONDS = 2
#: The largest form a write takes (an outcome is JSON typed by a person).
MAX_FORM_BYTES = 64 * 1024
#: A ``limit`` as a query gives it: ASCII digits, few enough for ``int`` (the range is the views' to check).
LIMIT_TEXT = re.compile(r"[0-9]{1,6}")
#: Sent with every answer: no page of the inspector may be framed (a click-jacker would lay its Delete under
#: their own button), by old browsers (``X-Frame-Options``) and new (CSP ``frame-ancestors``).
NO_FRAMING = {"Content-Security-Policy": "frame-ancestors 'none'", "X-Frame-Options": "DENY"}


def _plain(value: Any) -> Any:
    """``value`` as strict JSON holds it: dates as ISO text, sets as sorted lists, and what a document edited by hand
    may hold and JSON cannot (a NaN or infinite number, bytes, an ``ObjectId``, any other BSON type) as text."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [_plain(v) for v in items]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    return str(value)


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))
    env.filters["q"] = lambda text: quote(str(text), safe="")
    env.filters["shq"] = lambda text: shlex.quote(str(text))
    env.filters["when"] = lambda value: _plain(value) if value is not None else "-"
    return env


class _Guarded(BaseHTTPMiddleware):
    """Host and token first: nothing else runs for a request that fails them."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        super().__init__(app)
        self.guard = guard

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await self._answer(request, call_next)
        response.headers.update(NO_FRAMING)
        return response

    async def _answer(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if not self.guard.host_allowed(request.headers.get("host", "")):
            return PlainTextResponse("this inspector answers only to a loopback host name (127.0.0.1, localhost)", 403)
        bearer = request.headers.get("authorization", "")
        presented = (
            bearer[len("Bearer "):] if bearer.startswith("Bearer ")
            else request.query_params.get("token") or request.cookies.get(TOKEN_COOKIE)
        )
        if not self.guard.token_valid(presented):
            return PlainTextResponse("a token is required: open the address ui printed (with ?token=...)", 401)
        response = await call_next(request)
        if self.guard.token is not None and request.query_params.get("token"):
            response.set_cookie(TOKEN_COOKIE, self.guard.token, httponly=True, samesite="strict")
        return response


def create_app(views: ThreadViews, actions: Actions, guard: Guard) -> Starlette:
    """The inspector as an ASGI application.

    Args:
        views: reads the database.
        actions: writes to it (used only under ``guard.allow_writes``).
        guard: host, token and CSRF rules.

    Returns:
        The Starlette application.
    """
    env = _environment()

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        context.update(allow_writes=guard.allow_writes, csrf=guard.csrf, with_outcomes=views.with_outcomes)
        return HTMLResponse(env.get_template(name).render(**context), status)

    def threads_page(request: Request) -> Response:
        found = views.threads(**_page_args(request))
        return page("threads.html", listing=found, prefix=request.query_params.get("prefix", ""),
                    state=state_named(request.query_params.get("state")), states=THREAD_STATES)

    def thread_page(request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        found = views.thread(thread_id, _entries_page(request))
        if found is None:
            return page("missing.html", 404, thread_id=thread_id)
        live = found["state"] == "running" or found["claims"]
        poll = "/api/thread/status?id=" + quote(thread_id, safe="") if live else None
        return page("thread.html", thread=found, refresh=REFRESH_SECONDS, poll=poll,
                    done=request.query_params.get("done"), open_shown=OPEN_SHOWN)

    def threads_api(request: Request) -> Response:
        return JSONResponse(_plain(views.threads(**_page_args(request))))

    def one_thread(
        read: Callable[..., dict[str, Any] | None], missing: str, *, paged: bool = False
    ) -> Callable[[Request], Response]:
        """A JSON route of one thread (``?id=``, and ``?page=`` when ``paged``): what ``read`` answers, or 404
        saying ``missing``."""
        def endpoint(request: Request) -> Response:
            thread_id = request.query_params.get("id", "")
            found = read(thread_id, _entries_page(request)) if paged else read(thread_id)
            if found is None:
                return JSONResponse({"error": f"unknown thread {thread_id!r}: {missing}"}, 404)
            return JSONResponse(_plain(found))
        return endpoint

    thread_api = one_thread(views.thread, "no checkpoints and no journal entries", paged=True)
    status_api = one_thread(views.status, "no thread summary")

    def timeline_api(request: Request) -> Response:
        thread_id = request.query_params.get("id", "")
        found = views.thread(thread_id, _entries_page(request))
        if found is None:
            return JSONResponse({"error": f"unknown thread {thread_id!r}: no checkpoints and no journal entries"}, 404)
        svg = timeline_svg(found["operations"], found["timeline"], found["state"], found["runs"])
        return Response(svg, media_type="image/svg+xml")

    def value_api(request: Request) -> Response:
        thread_id, channel = request.query_params.get("id", ""), request.query_params.get("channel", "")
        found = views.value(thread_id, channel)
        if found is None:
            return JSONResponse({"error": f"thread {thread_id!r} has no value {channel!r} in its latest state"}, 404)
        return JSONResponse(found)

    def write(
        act: Callable[[dict[str, str]], tuple[dict[str, Any], str]]
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            if not guard.allow_writes:
                return JSONResponse(
                    {"error": "writes are off: start ui with --allow-writes to resolve, discard or delete"}, 403
                )
            # the token is in the query or a header, never in the body: a request without it reads nothing
            if not guard.csrf_valid(request.headers.get("x-csrf-token") or request.query_params.get("csrf")):
                return JSONResponse({"error": "missing or wrong CSRF token: reload the page and try again"}, 403)
            form = await _form(request)
            if form is None:
                return JSONResponse({"error": f"the form is larger than {MAX_FORM_BYTES} bytes"}, 413)
            done, back = await run_in_threadpool(act, form)
            if "application/json" in request.headers.get("accept", ""):
                return JSONResponse(_plain(done))
            return RedirectResponse(back + ("?done=" + quote(_said(done)) if back != "/" else ""), 303)
        return endpoint

    def resolved(form: dict[str, str]) -> tuple[dict[str, Any], str]:
        done = actions.resolve(_field(form, "position"), _field(form, "outcome"))
        return done, _thread_url(done["position"]["thread_id"])

    def discarded(form: dict[str, str]) -> tuple[dict[str, Any], str]:
        done = actions.discard(_field(form, "position"))
        return done, _thread_url(done["position"]["thread_id"])

    def deleted(form: dict[str, str]) -> tuple[dict[str, Any], str]:
        return actions.delete(_field(form, "thread_id")), "/"

    routes = [
        Route("/", threads_page),
        Route("/threads/{thread_id:path}", thread_page),
        Route("/api/threads", threads_api),
        Route("/api/thread", thread_api),
        Route("/api/thread/status", status_api),
        Route("/api/thread/value", value_api),
        Route("/api/thread/timeline.svg", timeline_api),
        Route("/api/resolve", write(resolved), methods=["POST"]),
        Route("/api/discard", write(discarded), methods=["POST"]),
        Route("/api/delete", write(deleted), methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    handlers = {DurableMongoError: _refused, CliError: _refused, Exception: _failed}
    return Starlette(routes=routes, middleware=[Middleware(_Guarded, guard=guard)], exception_handlers=handlers)


def _page_args(request: Request) -> dict[str, Any]:
    """``prefix``, ``after`` and ``limit`` from the query, checked (``InvalidInputError`` names the bad one)."""
    params = request.query_params
    limit = params.get("limit", "50")
    if not LIMIT_TEXT.fullmatch(limit):  # not str.isdigit: "²" is a digit int() refuses, and 5,000 digits too
        raise InvalidInputError(f"limit must be a whole number from 1 to {MAX_PAGE}, got {limit!r:.40}")
    return {"prefix": params.get("prefix", ""), "after": params.get("after") or None, "limit": int(limit),
            "state": params.get("state") or None}


def _entries_page(request: Request) -> int:
    """``page`` from the query (1 when absent), checked as ``limit`` is (``InvalidInputError`` when odd)."""
    page = request.query_params.get("page", "1")
    if not LIMIT_TEXT.fullmatch(page) or not 1 <= int(page) <= MAX_ENTRIES_PAGE:
        raise InvalidInputError(f"page must be a whole number from 1 to {MAX_ENTRIES_PAGE}, got {page!r:.40}")
    return int(page)


async def _form(request: Request) -> dict[str, str] | None:
    """A page's form (``application/x-www-form-urlencoded``): each field's first value, or None when it is larger
    than ``MAX_FORM_BYTES`` (said by its length before a byte is read, else found reading no more than that)."""
    length = request.headers.get("content-length", "")
    if length and (not length.isdigit() or int(length) > MAX_FORM_BYTES):
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    return {name: values[0] for name, values in parse_qs(body.decode("utf-8", "replace")).items()}


def _field(form: Mapping[str, str], name: str) -> str:
    value = form.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"the form field {name!r} is missing")
    return value


def _thread_url(thread_id: str) -> str:
    return "/threads/" + quote(thread_id, safe="")


def _said(done: dict[str, Any]) -> str:
    return f"{done.get('now')} {done.get('kind')} {done.get('name')!r} (was {done.get('was')})"


async def _failed(request: Request, error: Exception) -> Response:
    """Whatever else went wrong, said as JSON (500): the request and the error's type, not its message (it may
    quote a stored value, unscrubbed). Starlette still raises it after, for the server's log."""
    return JSONResponse(
        {"error": f"the inspector could not answer {request.url.path}: {type(error).__name__} (see its log)"}, 500
    )


async def _refused(request: Request, error: Exception) -> Response:
    """The library's and the CLI's refusals, said as JSON: 404 for an unknown thread or position, 400 for bad
    input, 409 for anything else the library refused (a foreign format, an entry that changed)."""
    if isinstance(error, CliError):
        status = 404 if error.code == EXIT_UNKNOWN_THREAD else 400
    else:
        status = 400 if isinstance(error, InvalidInputError) else 409
    return JSONResponse({"error": str(error)}, status)
