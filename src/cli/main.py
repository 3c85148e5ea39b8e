"""Run one command: connect, dispatch, print, and map failures to exit codes."""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any, TextIO

from bson import json_util
from pymongo import MongoClient
from pymongo.errors import ConfigurationError, ConnectionFailure, InvalidURI, OperationFailure, PyMongoError

from ..connections import DRIVER_INFO, database_name, masked_uri
from ..checkpointer import MongoDBCheckpointer
from ..errors import DurableMongoError, InvalidInputError
from ..schema import CollectionNames
from .doctor import doctor, render_doctor
from .exits import EXIT_AUTH, EXIT_OK, EXIT_PROBLEM, EXIT_UNKNOWN_THREAD, EXIT_UNREACHABLE, EXIT_USAGE, CliError
from .inspector import ui
from . import migrate
from .journal import discard, journal_documents, parse_outcome, parse_position, resolve
from .maintenance import confirm, delete, prune, render_maintenance, sweep
from .parser import parser
from .terminal import escaped, printable
from .threads import databases_with_threads, inspect_thread, render_inspect, render_threads, threads

#: What a MongoDB URI starts with.
URI_SCHEMES = ("mongodb://", "mongodb+srv://")
#: MongoDB's codes for a refused login or right (UserNotFound, Unauthorized, AuthenticationFailed), and what to fix.
AUTH_CODES = {
    11: "the user does not exist: check the user name and authSource",
    13: "the user lacks a role this command needs: grant readWrite on the database (dbAdmin for doctor --fix)",
    18: "authentication failed: check the user name, the password, authSource and authMechanism",
}


def _dump(value: Any, out: TextIO) -> None:
    out.write(json_util.dumps(value, indent=2, json_options=json_util.RELAXED_JSON_OPTIONS) + "\n")


def run(args: argparse.Namespace, client: Any, out: TextIO, stdin: TextIO) -> int:
    names = CollectionNames()
    db = client[args.db]
    as_json = args.json or getattr(args, "json_sub", False)
    if args.command == "threads":
        rows, more, problems = threads(db, names, args.limit, args.after)
        _dump(rows, out) if as_json else render_threads(rows, more, out)
        if not rows and not problems and args.after is None:
            _say_where_threads_are(client, args.db, names)
        return _report(problems)
    if args.command == "inspect":
        report = inspect_thread(db, names, args.thread)
        _dump(report, out) if as_json else render_inspect(report, out)
        return _report(report["problems"])
    if args.command == "journal":
        _dump(journal_documents(db, names, args.thread, args.with_outcomes), out)
        return EXIT_OK
    if args.command in ("resolve", "discard"):
        pos = parse_position(args.position)
        if args.command == "resolve":
            settled = resolve(client, args.db, names, pos, parse_outcome(args.outcome))
        else:
            settled = discard(client, args.db, names, pos)
        if as_json:
            _dump(settled, out)
        else:
            out.write(printable(f"{settled['now']} {settled['kind']} {settled['name']!r} at {pos} (was {settled['was']})") + "\n")
        return EXIT_OK
    if args.command in ("delete", "prune", "sweep"):
        saver = MongoDBCheckpointer(client, db_name=args.db, collections=names, auto_setup=False)
        ask = functools.partial(confirm, yes=args.yes, stdin=stdin, prompt=sys.stderr)
        if args.command == "delete":
            report = delete(saver, names, args.threads, ask)
        elif args.command == "prune":
            report = prune(saver, names, args.threads, ask)
        else:
            report = sweep(saver, ask)
        _dump(report, out) if as_json else render_maintenance(report, out)
        return EXIT_OK
    if args.command == "ui":
        return ui(args, client, out)
    if args.command == "import-mongodbsaver":
        try:
            imported = migrate.command(client, args, sys.stderr)
        except InvalidInputError as error:
            raise CliError(str(error), EXIT_USAGE) from None
        _dump(imported.as_dict(), out) if as_json else migrate.render(escaped(imported), out)
        if not imported.ok:
            return EXIT_PROBLEM
        return EXIT_UNKNOWN_THREAD if imported.unknown_threads else EXIT_OK
    report = doctor(client, db, names, args.fix, uri=args.uri)
    _dump(report, out) if as_json else render_doctor(report, out)
    return EXIT_OK if report["ok"] else EXIT_PROBLEM


def _report(problems: list[str]) -> int:
    """Print the documents that could not be read (the rest was shown): ``EXIT_PROBLEM`` if any."""
    for problem in problems:
        print(f"error: {printable(problem)}", file=sys.stderr)
    return EXIT_PROBLEM if problems else EXIT_OK


def _say_where_threads_are(client: Any, db_name: str, names: CollectionNames) -> None:
    elsewhere = [name for name in databases_with_threads(client, names) if name != db_name]
    where = f"threads are in {', '.join(elsewhere)}: pass --db NAME" if elsewhere else "nor in any other database"
    print(printable(f"no threads in database {db_name!r}; {where}"), file=sys.stderr)


def server_error(error: PyMongoError, uri: str | None) -> CliError:
    """What the CLI says about a server's failure, and its exit code; the URI is masked (``masked_uri``).

    Args:
        error: what pymongo raised (its messages carry hosts, never credentials).
        uri: the URI connected to (None for a client passed in).

    Returns:
        ``EXIT_AUTH`` for a refused login or right (``AUTH_CODES``), ``EXIT_UNREACHABLE`` for a connection
        failure, ``EXIT_PROBLEM`` for any other refused command.
    """
    where = f"MongoDB at {masked_uri(uri)}" if uri else "MongoDB"
    if isinstance(error, OperationFailure) and error.code in AUTH_CODES:
        return CliError(f"{where} refused: {AUTH_CODES[error.code]} ({error})", EXIT_AUTH)
    if isinstance(error, ConnectionFailure):
        return CliError(f"cannot reach {where}: {error}", EXIT_UNREACHABLE)
    return CliError(f"{where} refused the command: {error}", EXIT_PROBLEM)


def main(
    argv: list[str] | None = None, *, client: Any = None, out: TextIO | None = None, stdin: TextIO | None = None
) -> int:
    out, stdin = out or sys.stdout, stdin or sys.stdin
    args = parser().parse_args(argv)
    try:
        if client is None:
            if not args.uri:
                raise CliError("no server given: pass --uri mongodb://host:27017 or set MONGODB_URI", EXIT_USAGE)
            if not args.uri.startswith(URI_SCHEMES):  # pymongo would take it for a host name and time out
                raise CliError(
                    f"bad MongoDB URI {masked_uri(args.uri)!r}: it must start with mongodb:// or mongodb+srv://", EXIT_USAGE
                )
            try:
                timeout = {} if "serverselectiontimeoutms" in args.uri.lower() else {"serverSelectionTimeoutMS": 5000}
                client = MongoClient(args.uri, driver=DRIVER_INFO, **timeout)
            except (InvalidURI, ConfigurationError, ValueError) as error:
                raise CliError(f"bad MongoDB URI {masked_uri(args.uri)!r}: {error}", EXIT_USAGE) from None
        args.db = database_name(args.uri, args.db)  # the one rule: --db, the URI's path, $MONGODB_DB, langgraph
        try:
            return run(args, client, out, stdin)
        except CliError:
            raise
        except DurableMongoError as error:  # the library refused, saying why
            raise CliError(str(error), EXIT_PROBLEM) from None
        except PyMongoError as error:
            raise server_error(error, args.uri) from None
    except CliError as error:
        print(f"error: {printable(str(error))}", file=sys.stderr)
        return error.code
