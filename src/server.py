"""Agent Server's checkpointer: ``langgraph.json`` names ``langgraph_durable_mongodb.server.checkpointer``.

Agent Server (``langgraph dev``, LangSmith deployments) loads the graphs from
``"graphs"`` and runs them on the checkpointer this factory yields: a
``DurablePlatform``'s. Export your graphs compiled *without* a checkpointer
(``builder.compile()``; children with ``checkpointer=None``): the server lends
this one to every run, and each run binds the durable scope when it starts, so
``SecureLLM``, ``SecureTool`` and ``@effect`` record and replay there as
anywhere::

    {
      "dependencies": ["."],
      "graphs": {"agent": "./agent.py:graph"},
      "checkpointer": {"path": "langgraph_durable_mongodb.server.checkpointer"}
    }

A ``"ttl"`` block in ``"checkpointer"`` applies to the threads this checkpointer
stores (see ``ttl_of``)::

    "checkpointer": {
      "path": "langgraph_durable_mongodb.server.checkpointer",
      "ttl": {"strategy": "keep_latest", "default_ttl": 1440, "sweep_interval_minutes": 60, "sweep_limit": 1000}
    }

langgraph-api keeps that block for its own threads table (``langgraph dev``'s
in-memory runtime never sweeps it) and hands the checkpointer nothing but
``aprune``/``adelete_thread`` calls; so this factory reads the block from the
environment langgraph-api reads it from, and with ``sweep_interval_minutes`` runs
the checkpointer's sweeper for the server's lifetime.

Name it with dots (langgraph-api imports ``module.attribute``; a colon would be
read as part of the attribute's name). The platform reads ``MONGODB_URI``; its
database is the URI's path (``mongodb://host/agents``), else ``MONGODB_DB``, else
``langgraph``. It creates its indexes when the server starts and closes its
clients when it stops. The run lock is off (``exclusive_runs=False``): Agent
Server already runs one run per thread at a time (its run queue), and a second
lock could only add a wait.

Agent Server pulls each step of a run's stream in an asyncio task of its own
(``langgraph_api.asyncio.wait_if_not_done``): nothing needs binding there, since
a node finds the platform from its own config (the checkpointer Agent Server
lends it wraps ours, ``_langgraph.run_checkpointer``).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from .checkpointer import MongoDBCheckpointer
from .errors import ClientConfigurationError, InvalidInputError
from .platform import DurablePlatform
from .storage.connections import database_name
from .storage.liveness import identity

__all__ = ["checkpointer", "database_of", "ttl_of"]


def database_of(uri: str, environ: Mapping[str, str] | None = None) -> str:
    """The database a server platform uses: the URI's path, else ``MONGODB_DB``, else ``langgraph``.

    The rule of ``from_conn_string`` and the CLI too (``connections.database_name``).
    """
    return database_name(uri, None, environ)


def ttl_of(environ: Mapping[str, str] | None = None) -> Any:
    """The TTL langgraph-api configured: ``LANGGRAPH_THREAD_TTL``, else ``langgraph.json``'s ``checkpointer.ttl``.

    langgraph-api reads them in that order: ``LANGGRAPH_THREAD_TTL`` (minutes, or a JSON block), then the
    ``"ttl"`` of the ``LANGGRAPH_CHECKPOINTER`` JSON that ``langgraph dev`` and ``langgraph build`` set from
    ``langgraph.json``. A bare number, in either, is minutes, as ``LANGGRAPH_THREAD_TTL`` is to langgraph-api:
    delete, swept every 5.1 minutes. (langgraph-api takes the checkpointer's ``"ttl"`` as its thread TTL
    block, whose numbers are all minutes; it parses no bare number there.)

    Args:
        environ: the environment (``os.environ`` by default).

    Returns:
        The block, for ``MongoDBCheckpointer(ttl=...)``; None when neither is set.

    Raises:
        InvalidInputError: a variable is not valid JSON (or a number).
    """
    environ = os.environ if environ is None else environ
    try:
        if raw := environ.get("LANGGRAPH_THREAD_TTL", "").strip():
            return json.loads(raw) if raw.startswith("{") else _minutes(float(raw))
        if raw := environ.get("LANGGRAPH_CHECKPOINTER", "").strip():
            ttl = json.loads(raw).get("ttl")
            return _minutes(ttl) if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) else ttl
    except (ValueError, AttributeError) as exc:
        raise InvalidInputError(
            f"LANGGRAPH_THREAD_TTL or LANGGRAPH_CHECKPOINTER is not a TTL langgraph-api reads: {exc}"
        ) from exc
    return None


def _minutes(ttl: float) -> dict[str, Any]:
    """A bare number of minutes, as langgraph-api reads ``LANGGRAPH_THREAD_TTL=60``."""
    return {"strategy": "delete", "default_ttl": ttl, "sweep_interval_minutes": 5.1}


@asynccontextmanager
async def checkpointer() -> AsyncIterator[MongoDBCheckpointer]:
    """Yield the checkpointer of a ``DurablePlatform`` on ``MONGODB_URI`` for the server's lifetime.

    Returns:
        An async context manager, as ``langgraph.json``'s ``checkpointer.path`` expects.

    Raises:
        ClientConfigurationError: ``MONGODB_URI`` is not set.
        InvalidInputError: the TTL block (``ttl_of``) is malformed; raised before any query.
    """
    uri = os.environ.get("MONGODB_URI", "").strip()
    if not uri:
        raise ClientConfigurationError(
            "langgraph_durable_mongodb.server.checkpointer needs MONGODB_URI (e.g. mongodb://localhost:27017/agents) "
            "in the server's environment (.env, or the deployment's secrets)"
        )
    ttl = ttl_of()
    async with DurablePlatform.from_conn_string(
        uri, db_name=database_of(uri), exclusive_runs=False, ttl=ttl
    ) as platform:
        await platform.asetup()
        # A claim names its process (boot id, pid namespace, start time: read from /proc once per process).
        # Read them here, off the event loop: `langgraph dev` fails a run that blocks its loop (blockbuster).
        await asyncio.to_thread(identity)
        saver = platform.checkpointer
        if saver.ttl_config is not None and saver.ttl_config.sweep_interval_minutes is not None:
            await saver.astart_sweeper()  # stopped by the platform's aclose() when the block ends
        yield saver
