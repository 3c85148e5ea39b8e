"""The command line: global options and one subparser per command."""

from __future__ import annotations

import argparse
import os
from importlib.metadata import version

from ..storage.format import FORMAT_VERSION
from . import __doc__ as USAGE
from .importer import add_arguments as import_arguments


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="langgraph-durable-mongodb", description=USAGE.split("\n\n")[0])
    _where(parser, os.environ.get("MONGODB_URI"), None)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument(
        "--version", action="version",
        version=f"%(prog)s {version('langgraph-durable-mongodb')} (writes storage format {FORMAT_VERSION})",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p = _command(sub, "threads", "threads in id order with their state, latest step, checkpoint count and last update")
    p.add_argument("--limit", type=_positive, default=50, help="threads per page (default: 50)")
    p.add_argument(
        "--state", help="only threads in this state: running, waiting, unknown, failed, crashed, interrupted or done"
    )
    p.add_argument("--after", metavar="THREAD_ID", help="the page after this thread (the last one listed)")
    p = _command(sub, "inspect", "checkpoints per namespace and the operation tree of a thread")
    p.add_argument("thread")
    p = _command(sub, "journal", "the raw journal documents of a thread")
    p.add_argument("thread")
    p.add_argument("--with-outcomes", action="store_true", help="include the serialized outcomes (large)")
    p = _command(sub, "resolve", "record what an effect returned at a position EffectOutcomeUnknownError named")
    p.add_argument("position", help="as the error prints it: \"thread 't' path 'agent/1' node 'charge'#1 effect '1'\"")
    p.add_argument("outcome", help="the outcome as JSON, e.g. '\"charged\"' or '{\"id\": \"ch_1\"}'")
    p = _command(sub, "discard", "forget a position's entry, so its effect runs again on the next attempt")
    p.add_argument("position", help="as the error prints it: \"thread 't' path 'agent/1' node 'charge'#1 effect '1'\"")
    p = _command(sub, "delete", "delete threads whole, in every per-thread collection (checkpoints, writes, journal)")
    p.add_argument("threads", nargs="+", metavar="thread")
    p.add_argument("--yes", action="store_true", help="do not ask first")
    p = _command(sub, "prune", "keep only each namespace's latest checkpoint of threads (the journal stays)")
    p.add_argument("threads", nargs="+", metavar="thread")
    p.add_argument("--yes", action="store_true", help="do not ask first")
    p = _command(sub, "sweep", "delete every thread past its TTL (for servers whose TTL monitor does not)")
    p.add_argument("--yes", action="store_true", help="do not ask first")
    p = _command(sub, "doctor", "connection, server features, concerns, indexes and thread summaries")
    p.add_argument("--fix", action="store_true", help="create missing indexes")
    p.add_argument(
        "--repair", action="store_true",
        help="rebuild the thread summaries that are missing or short (safe beside running writers)",
    )
    p = _command(sub, "import-mongodbsaver", "copy threads from a MongoDBSaver database into --db, then verify")
    import_arguments(p)
    p = _command(sub, "ui", "a local web inspector of threads, checkpoints and effects (the ui extra)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1, loopback)")
    p.add_argument("--port", type=_positive, default=8765, help="port (default: 8765)")
    p.add_argument("--allow-remote", action="store_true", help="allow a --host other than loopback (needs a token)")
    p.add_argument("--token", help="the token every request must carry (made and printed when remote and not given)")
    p.add_argument(
        "--allow-writes", action="store_true", help="enable resolve, discard and delete (else they answer 403)"
    )
    p.add_argument(
        "--with-outcomes", action="store_true", help="show the serialized outcomes (encrypted ones stay encrypted)"
    )
    return parser


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], name: str, help: str
) -> argparse.ArgumentParser:
    command = sub.add_parser(name, help=help)
    _where(command, argparse.SUPPRESS, argparse.SUPPRESS)  # after the command too: given there, they win
    command.add_argument("--json", action="store_true", dest="json_sub", help="machine-readable output")
    return command


def _where(parser: argparse.ArgumentParser, uri: str | None, db: str | None) -> None:
    """``--uri`` and ``--db``, with these defaults."""
    parser.add_argument("--uri", default=uri, help="MongoDB URI (default: $MONGODB_URI)")
    parser.add_argument(
        "--db", default=db, help="database name (default: the URI's path, else $MONGODB_DB, else langgraph)"
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value
