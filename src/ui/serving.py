"""Serve the inspector with uvicorn until interrupted."""

from __future__ import annotations

from typing import Any, TextIO
from urllib.parse import quote

import uvicorn

from ..storage.schema import CollectionNames
from ..views.reader import ThreadViews, require_our_format
from .actions import Actions
from .app import create_app
from .guard import guard_for


def serve(
    client: Any, db_name: str, *, host: str, port: int, allow_remote: bool = False, token: str | None = None,
    allow_writes: bool = False, with_outcomes: bool = False, out: TextIO,
) -> None:
    """Check the options and the database, print the address, and serve until interrupted.

    Args:
        client: a sync client.
        db_name: the database.
        host, port: where to listen.
        allow_remote: let a non-loopback ``host`` be used (a token is then required).
        token: the token requests must carry (made and printed when remote and not given).
        allow_writes: enable resolve, discard and delete.
        with_outcomes: show the serialized outcomes (decoded; encrypted ones as ``encrypted``).
        out: where the address goes.

    Raises:
        InvalidInputError: a non-loopback host without ``allow_remote``, or a short token; nothing listened.
        IncompatibleStorageError: the database holds another format, or, without ``allow_writes``, an older
            version of ours (read-only, the inspector writes nothing: the message says how to upgrade it).
    """
    guard, made = guard_for(host, allow_remote=allow_remote, token=token, allow_writes=allow_writes)
    names = CollectionNames()
    views = ThreadViews(client, db_name, names, with_outcomes=with_outcomes, upgrade=allow_writes)
    require_our_format(views.db, names, upgrade=allow_writes)  # and the server answers: before the address is printed
    app = create_app(views, Actions(client, db_name, names), guard)
    shown = f"[{host}]" if ":" in host else host
    address = f"http://{shown}:{port}/" + (f"?token={quote(guard.token)}" if guard.token and made else "")
    mode = "read and write (--allow-writes)" if allow_writes else "read-only"
    out.write(f"inspecting database {db_name!r} at {address} ({mode}); Ctrl-C stops\n")
    out.flush()
    uvicorn.run(app, host=host, port=port, log_level="warning")
