"""The command line: global options and one subparser per command."""

from __future__ import annotations

import argparse
import os

from . import __doc__ as USAGE


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="langgraph-durable-mongodb", description=USAGE.split("\n\n")[0])
    parser.add_argument("--uri", default=os.environ.get("MONGODB_URI"), help="MongoDB URI (default: $MONGODB_URI)")
    parser.add_argument("--db", default="langgraph", help="database name (default: langgraph)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("threads", help="threads with their latest step, checkpoint count and last update")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true", dest="json_sub")
    p = sub.add_parser("inspect", help="checkpoints per namespace and the operation tree of a thread")
    p.add_argument("thread")
    p.add_argument("--json", action="store_true", dest="json_sub")
    p = sub.add_parser("journal", help="the raw journal documents of a thread")
    p.add_argument("thread")
    p.add_argument("--json", action="store_true", dest="json_sub")
    p = sub.add_parser("doctor", help="connection, server features and indexes")
    p.add_argument("--fix", action="store_true", help="create missing indexes")
    p.add_argument("--json", action="store_true", dest="json_sub")
    return parser
