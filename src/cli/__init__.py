"""``langgraph-durable-mongodb``: inspect threads, checkpoints and the activity journal.

Usage::

    langgraph-durable-mongodb --uri mongodb://localhost:27017 threads
    langgraph-durable-mongodb inspect case-42            # MONGODB_URI from the environment
    langgraph-durable-mongodb journal case-42 --json
    langgraph-durable-mongodb doctor --fix

Exit codes: 0 ok; 1 ``doctor`` found a problem; 2 bad usage or URI;
3 unknown thread; 4 the server cannot be reached.
"""

from __future__ import annotations

from .exits import EXIT_OK, EXIT_PROBLEM, EXIT_UNKNOWN_THREAD, EXIT_UNREACHABLE, EXIT_USAGE, CliError
from .main import main

__all__ = ["EXIT_OK", "EXIT_PROBLEM", "EXIT_UNKNOWN_THREAD", "EXIT_UNREACHABLE", "EXIT_USAGE", "CliError", "main"]
