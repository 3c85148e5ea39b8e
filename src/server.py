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

Name it with dots (langgraph-api imports ``module.attribute``; a colon would be
read as part of the attribute's name). The platform reads ``MONGODB_URI``; its
database is the URI's path (``mongodb://host/agents``), else ``MONGODB_DB``, else
``langgraph``. It creates its indexes when the server starts and closes its
clients when it stops. The run lock is off (``exclusive_runs=False``): Agent
Server already runs one run per thread at a time (its run queue), and a second
lock could only add a wait.

Agent Server pulls each step of a run's stream in an asyncio task of its own
(``langgraph_api.asyncio.wait_if_not_done``); the platform re-binds a run's scope
in each such task (see ``DurablePlatform._run_starts``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from pymongo import uri_parser

from ._plans.owner import identity
from .checkpointer import MongoDBCheckpointer
from .errors import ClientConfigurationError
from .platform import DurablePlatform

__all__ = ["checkpointer", "database_of"]


def database_of(uri: str, environ: dict[str, str] | None = None) -> str:
    """The database a server platform uses: the URI's path, else ``MONGODB_DB``, else ``langgraph``."""
    environ = dict(os.environ) if environ is None else environ
    return uri_parser.parse_uri(uri).get("database") or environ.get("MONGODB_DB") or "langgraph"


@asynccontextmanager
async def checkpointer() -> AsyncIterator[MongoDBCheckpointer]:
    """Yield the checkpointer of a ``DurablePlatform`` on ``MONGODB_URI`` for the server's lifetime.

    Returns:
        An async context manager, as ``langgraph.json``'s ``checkpointer.path`` expects.

    Raises:
        ClientConfigurationError: ``MONGODB_URI`` is not set.
    """
    uri = os.environ.get("MONGODB_URI", "").strip()
    if not uri:
        raise ClientConfigurationError(
            "langgraph_durable_mongodb.server.checkpointer needs MONGODB_URI (e.g. mongodb://localhost:27017/agents) "
            "in the server's environment (.env, or the deployment's secrets)"
        )
    async with DurablePlatform.from_conn_string(uri, db_name=database_of(uri), exclusive_runs=False) as platform:
        await platform.asetup()
        # A claim names its process (boot id, pid namespace, start time: read from /proc once per process).
        # Read them here, off the event loop: `langgraph dev` fails a run that blocks its loop (blockbuster).
        await asyncio.to_thread(identity)
        yield platform.checkpointer
