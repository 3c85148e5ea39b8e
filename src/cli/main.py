"""Run one command: connect, dispatch, print, and map failures to exit codes."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from bson import json_util

from ..checkpointer import MongoDBCheckpointer
from ..errors import AccessDeniedError, DurableMongoError, InvalidURIError, ServerUnreachableError
from ..storage.connections import command_client, database_name
from ..storage.schema import CollectionNames
from ..storage.server_errors import typed_server_errors
from ..views.commands import delete, discard, parse_outcome, parse_position, prune, resolve, sweep
from ..views.exits import EXIT_AUTH, EXIT_OK, EXIT_PROBLEM, EXIT_UNREACHABLE, EXIT_USAGE, EXIT_WARNING, CliError
from ..views.reader import ThreadViews
from ..views.stored import ThreadDocuments
from . import importer
from .doctor import doctor, render_doctor
from .inspector import ui
from .journal import journal_documents
from .maintenance import confirm, render_maintenance
from .parser import parser
from .terminal import escaped, printable
from .threads import SHOWN_BY_INSPECT, inspect_thread, listed_row, mark_replayed, render_inspect, render_threads

#: The exit code of each typed error the CLI reports (checked in this order); any other library error: ``EXIT_PROBLEM``.
EXIT_CODES: tuple[tuple[type[DurableMongoError], int], ...] = (
    (InvalidURIError, EXIT_USAGE),
    (ServerUnreachableError, EXIT_UNREACHABLE),
    (AccessDeniedError, EXIT_AUTH),
)


def exit_code(error: DurableMongoError) -> int:
    """The exit code of a library error (``EXIT_CODES``; ``EXIT_PROBLEM`` for the others: the library refused)."""
    return next((code for kind, code in EXIT_CODES if isinstance(error, kind)), EXIT_PROBLEM)


@dataclass
class Invocation:
    """One run of a command: what was parsed, the client, and where it reads and writes."""

    args: argparse.Namespace
    client: Any
    out: TextIO
    stdin: TextIO
    names: CollectionNames = field(default_factory=CollectionNames)

    @functools.cached_property
    def views(self) -> ThreadViews:
        """The threads as the web inspector shows them (the same state, names and runs)."""
        return ThreadViews(self.client, self.args.db, self.names, upgrade=True)

    @functools.cached_property
    def stored(self) -> ThreadDocuments:
        """The database's documents, read through ``views.stored``."""
        return ThreadDocuments(self.client, self.args.db, self.names)

    def dump(self, value: Any) -> None:
        """``value`` as JSON (BSON types in relaxed Extended JSON)."""
        self.out.write(json_util.dumps(value, indent=2, json_options=json_util.RELAXED_JSON_OPTIONS) + "\n")

    def show(self, report: Any, render: Callable[[Any, TextIO], object]) -> None:
        """``report`` as JSON with ``--json``, else as ``render`` writes it for a person."""
        if self.args.json or getattr(self.args, "json_sub", False):
            self.dump(report)
        else:
            render(report, self.out)


def _threads(call: Invocation) -> int:
    args = call.args
    found = call.views.threads(after=args.after, limit=args.limit, state=args.state)
    rows = [listed_row(row) for row in found["threads"]]
    call.show(rows, lambda rows, out: render_threads(rows, found, out, state=args.state))
    if not rows and not found["problems"] and args.after is None and not args.state:
        _say_where_threads_are(call.stored, args.db)
    return _report(found["problems"])


def _inspect(call: Invocation) -> int:
    report = inspect_thread(call.stored, call.args.thread)
    shown = call.views.thread(call.args.thread) or {}  # as the web inspector says it
    report.update({field: shown.get(field) for field in SHOWN_BY_INSPECT})
    mark_replayed(report["operations"], shown.get("operations", []))
    call.show(report, render_inspect)
    return _report(report["problems"])


def _journal(call: Invocation) -> int:
    call.dump(journal_documents(call.stored, call.args.thread, call.args.with_outcomes))
    return EXIT_OK


def _settle(call: Invocation) -> int:
    """``resolve`` or ``discard`` one position."""
    args, pos = call.args, parse_position(call.args.position)
    if args.command == "resolve":
        settled = resolve(call.client, args.db, call.names, pos, parse_outcome(args.outcome))
    else:
        settled = discard(call.client, args.db, call.names, pos)
    call.show(settled, lambda settled, out: out.write(
        printable(f"{settled['now']} {settled['kind']} {settled['name']!r} at {pos} (was {settled['was']})") + "\n"
    ))
    return EXIT_OK


def _maintain(call: Invocation) -> int:
    """``delete``, ``prune`` or ``sweep``, asked first."""
    args = call.args
    saver = MongoDBCheckpointer(call.client, db_name=args.db, collections=call.names, auto_setup=False)
    ask = functools.partial(confirm, yes=args.yes, stdin=call.stdin, prompt=sys.stderr)
    if args.command == "delete":
        report = delete(saver, call.names, args.threads, ask)
    elif args.command == "prune":
        report = prune(saver, call.names, args.threads, ask)
    else:
        report = sweep(saver, ask)
    call.show(report, render_maintenance)
    return EXIT_OK


def _ui(call: Invocation) -> int:
    return ui(call.args, call.client, call.out)


def _import(call: Invocation) -> int:
    imported = importer.command(call.client, call.args, sys.stderr)
    call.show(imported.as_dict(), lambda report, out: importer.render(escaped(imported), out))
    return importer.exit_code(imported)


def _doctor(call: Invocation) -> int:
    report = doctor(call.client, call.args.db, call.names, call.args.fix, uri=call.args.uri, repair=call.args.repair)
    call.show(report, render_doctor)
    if not report["ok"]:
        return EXIT_PROBLEM
    return EXIT_WARNING if report["warnings"] else EXIT_OK


#: Each command's step, by the name the parser gives it.
COMMANDS: dict[str, Callable[[Invocation], int]] = {
    "threads": _threads, "inspect": _inspect, "journal": _journal, "resolve": _settle, "discard": _settle,
    "delete": _maintain, "prune": _maintain, "sweep": _maintain, "ui": _ui, "import-mongodbsaver": _import,
    "doctor": _doctor,
}


def run(args: argparse.Namespace, client: Any, out: TextIO, stdin: TextIO) -> int:
    """Run the parsed command on ``client``; its exit code."""
    return COMMANDS[args.command](Invocation(args, client, out, stdin))


def _report(problems: list[str]) -> int:
    """Print the documents that could not be read (the rest was shown): ``EXIT_PROBLEM`` if any."""
    for problem in problems:
        print(f"error: {printable(problem)}", file=sys.stderr)
    return EXIT_PROBLEM if problems else EXIT_OK


def _say_where_threads_are(stored: ThreadDocuments, db_name: str) -> None:
    elsewhere = [name for name in stored.databases_with_threads() if name != db_name]
    where = f"threads are in {', '.join(elsewhere)}: pass --db NAME" if elsewhere else "nor in any other database"
    print(printable(f"no threads in database {db_name!r}; {where}"), file=sys.stderr)


def _connect(uri: str | None) -> Any:
    """The client for ``--uri`` (or ``MONGODB_URI``).

    Raises:
        CliError: no URI was given (``EXIT_USAGE``).
        InvalidURIError: the URI is not one pymongo can use.
    """
    if not uri:
        raise CliError("no server given: pass --uri mongodb://host:27017 or set MONGODB_URI", EXIT_USAGE)
    return command_client(uri)


def main(
    argv: list[str] | None = None, *, client: Any = None, out: TextIO | None = None, stdin: TextIO | None = None
) -> int:
    """The ``langgraph-durable-mongodb`` command: parse ``argv``, connect (unless ``client`` is given), run.

    Args:
        argv: the arguments (``sys.argv[1:]`` when None).
        client: a sync client to use instead of one opened for ``--uri``.
        out: where the command writes (stdout when None); errors and questions go to stderr.
        stdin: where answers are read (stdin when None).

    Returns:
        The exit code (``views.exits``); a failure is printed to stderr as ``error: ...``.
    """
    out, stdin = out or sys.stdout, stdin or sys.stdin
    args = parser().parse_args(argv)
    try:
        client = client if client is not None else _connect(args.uri)
        args.db = database_name(args.uri, args.db)  # the one rule: --db, the URI's path, $MONGODB_DB, langgraph
        with typed_server_errors(args.uri):
            return run(args, client, out, stdin)
    except DurableMongoError as error:  # the library refused, saying why
        return _fail(CliError(str(error), exit_code(error)))
    except CliError as error:
        return _fail(error)
    except BrokenPipeError:  # the reader went away (``inspect t | head``): what it wanted was written
        _quiet(out)
        return EXIT_OK


def _quiet(out: TextIO) -> None:
    """Send what is left of ``out`` nowhere, so that its flush at exit raises no ``BrokenPipeError`` again."""
    # not a file (a test's StringIO): nothing is flushed at exit
    with contextlib.suppress(AttributeError, OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())


def _fail(error: CliError) -> int:
    print(f"error: {printable(str(error))}", file=sys.stderr)
    return error.code
