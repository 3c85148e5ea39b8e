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
(``langgraph_api.asyncio.wait_if_not_done``), so what a run binds when it starts
(in the first step's task) is not in the context of the tasks that run its later
steps. The served platform's runs therefore re-bind their durable scope in every
task that starts one of their nodes (``_RunBinding``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from pymongo import AsyncMongoClient, MongoClient, uri_parser

from ._langgraph import StartingRun
from ._plans.owner import identity
from .checkpointer import MongoDBCheckpointer
from .errors import ClientConfigurationError
from .journal import EffectScope
from .journal.context import activate_effect_scope
from .platform import DurablePlatform
from .resolver import DurableScope
from .resolver.scope import maybe_durable_scope
from .run_lock import check_held

__all__ = ["checkpointer", "database_of"]


def database_of(uri: str, environ: dict[str, str] | None = None) -> str:
    """The database a server platform uses: the URI's path, else ``MONGODB_DB``, else ``langgraph``."""
    environ = dict(os.environ) if environ is None else environ
    return uri_parser.parse_uri(uri).get("database") or environ.get("MONGODB_DB") or "langgraph"


class _RunBinding(BaseCallbackHandler):
    """Re-binds one run's durable scope and effect scope in every task that starts a node of the run.

    Given to the run's callback manager after the platform's trace router, it is called, inline, in
    each task that starts a node (or any chain) of the run. Where the run's binding is in the context,
    the router has handed the start to the run's trace and nothing is left to do. Where it is not (a
    step pulled from another asyncio task than the first), it binds the run's scopes in this task's
    context, which the node and everything it starts inherit, and hands the start to the trace itself:
    each start reaches the trace once.
    """

    run_inline = True

    def __init__(self, thread_id: str, scope: DurableScope, effects: EffectScope) -> None:
        self.thread_id, self.scope, self.effects = thread_id, scope, effects

    def on_chain_start(self, serialized: Any, inputs: Any, *, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        thread_id = (metadata or {}).get("thread_id")
        if thread_id is None or str(thread_id) != self.thread_id or maybe_durable_scope(self.thread_id) is self.scope:
            return
        self.scope.activate(self.thread_id)
        activate_effect_scope(self.effects, self.thread_id)
        self.scope.trace.on_chain_start(serialized, inputs, metadata=metadata, **kwargs)


class _ServedPlatform(DurablePlatform):
    """The platform Agent Server's runs save with: a run stays bound whichever asyncio task pulls its steps."""

    def _run_starts(self, run: StartingRun, config: Any) -> None:
        super()._run_starts(run, config)
        thread_id = (config.get("configurable") or {}).get("thread_id")
        scope = None if thread_id is None else maybe_durable_scope(str(thread_id))
        if scope is None:
            return
        guard = check_held if self.run_locks is not None else None
        run.add_callback_handler(_RunBinding(str(thread_id), scope, EffectScope(self.journal, self.locator, guard)))


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
            "langgraph_durable_mongodb.server:checkpointer needs MONGODB_URI (e.g. mongodb://localhost:27017/agents) "
            "in the server's environment (.env, or the deployment's secrets)"
        )
    client, async_client = MongoClient(uri), AsyncMongoClient(uri)
    try:
        platform = _ServedPlatform(client, async_client=async_client, db_name=database_of(uri), exclusive_runs=False)
        await platform.asetup()
        # A claim names its process (boot id, pid namespace, start time: read from /proc once per process).
        # Read them here, off the event loop: `langgraph dev` fails a run that blocks its loop (blockbuster).
        await asyncio.to_thread(identity)
        yield platform.checkpointer
    finally:
        client.close()
        await async_client.close()
