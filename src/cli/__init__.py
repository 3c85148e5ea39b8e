"""``langgraph-durable-mongodb``: inspect threads, checkpoints and the activity journal; settle and delete.

Usage::

    langgraph-durable-mongodb --uri mongodb://localhost:27017 threads --limit 20 --after case-41
    langgraph-durable-mongodb threads --state crashed    # also failed, interrupted, unknown, running, waiting, done
    langgraph-durable-mongodb inspect case-42            # MONGODB_URI from the environment
    langgraph-durable-mongodb journal case-42 --json [--with-outcomes]
    langgraph-durable-mongodb resolve "thread 'case-42' path 'agent/1' node 'pay'#1 effect '1'" '"charged"'
    langgraph-durable-mongodb discard "thread 'case-42' path 'agent/1' node 'pay'#1 effect '1'"
    langgraph-durable-mongodb delete case-42 [--yes]     # also: prune THREAD..., sweep
    langgraph-durable-mongodb doctor --fix
    langgraph-durable-mongodb --db agents import-mongodbsaver --source-db checkpointing_db
    langgraph-durable-mongodb ui [--port 8765] [--allow-writes]   # a web inspector (the ui extra)

Exit codes: 0 ok; 1 ``doctor`` found a problem, ``import-mongodbsaver`` a mismatch, or the library
refused an operation;
2 bad usage or URI, or a deletion nobody confirmed; 3 unknown thread or journal position;
4 the server cannot be reached; 5 the server refused the credentials or the user's rights; 6 ``doctor`` warns
(see ``views.exits``).
"""

from __future__ import annotations

from ..views.exits import (
    EXIT_AUTH,
    EXIT_OK,
    EXIT_PROBLEM,
    EXIT_UNKNOWN_THREAD,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    EXIT_WARNING,
    CliError,
)
from .main import main

__all__ = [
    "EXIT_AUTH", "EXIT_OK", "EXIT_PROBLEM", "EXIT_UNKNOWN_THREAD", "EXIT_UNREACHABLE", "EXIT_USAGE", "EXIT_WARNING",
    "CliError", "main",
]
