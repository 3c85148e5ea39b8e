"""Run one command: connect, dispatch, print, and map failures to exit codes."""

from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from bson import json_util
from pymongo import MongoClient
from pymongo.errors import ConfigurationError, InvalidURI, PyMongoError

from ..schema import CollectionNames
from .doctor import doctor, render_doctor
from .exits import EXIT_OK, EXIT_PROBLEM, EXIT_UNKNOWN_THREAD, EXIT_UNREACHABLE, EXIT_USAGE, CliError
from .parser import parser
from .threads import inspect_thread, render_inspect, threads


def _dump(value: Any, out: TextIO) -> None:
    out.write(json_util.dumps(value, indent=2, json_options=json_util.RELAXED_JSON_OPTIONS) + "\n")


def run(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    names = CollectionNames()
    db = client[args.db]
    as_json = args.json or getattr(args, "json_sub", False)
    if args.command == "threads":
        rows = threads(db, names, args.limit)
        if as_json:
            _dump(rows, out)
        elif not rows:
            out.write("no threads\n")
        else:
            width = max(len(r["thread_id"]) for r in rows)
            out.write(f"{'THREAD':<{width}}  {'STEP':>4}  {'CHECKPOINTS':>11}  UPDATED\n")
            for r in rows:
                out.write(f"{r['thread_id']:<{width}}  {str(r['latest_step']):>4}  {r['checkpoints']:>11}  {r['updated']}\n")
        return EXIT_OK
    if args.command == "inspect":
        report = inspect_thread(db, names, args.thread)
        _dump(report, out) if as_json else render_inspect(report, out)
        return EXIT_OK
    if args.command == "journal":
        docs = list(db[names.journal].find({"thread_id": args.thread}, {"_id": 0}).sort([("path", 1), ("created_at", 1)]))
        if not docs and db[names.checkpoints].count_documents({"thread_id": args.thread}, limit=1) == 0:
            raise CliError(f"unknown thread {args.thread!r}: no checkpoints and no journal entries", EXIT_UNKNOWN_THREAD)
        _dump(docs, out)
        return EXIT_OK
    report = doctor(client, db, names, args.fix)
    _dump(report, out) if as_json else render_doctor(report, out)
    return EXIT_OK if report["ok"] else EXIT_PROBLEM


def main(argv: list[str] | None = None, *, client: Any = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    args = parser().parse_args(argv)
    try:
        if client is None:
            if not args.uri:
                raise CliError("no server given: pass --uri mongodb://host:27017 or set MONGODB_URI", EXIT_USAGE)
            try:
                timeout = {} if "serverselectiontimeoutms" in args.uri.lower() else {"serverSelectionTimeoutMS": 5000}
                client = MongoClient(args.uri, **timeout)
            except (InvalidURI, ConfigurationError, ValueError) as error:
                raise CliError(f"bad MongoDB URI {args.uri!r}: {error}", EXIT_USAGE) from None
        try:
            return run(args, client, out)
        except CliError:
            raise
        except PyMongoError as error:
            raise CliError(f"cannot reach MongoDB at {args.uri}: {error}", EXIT_UNREACHABLE) from None
    except CliError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.code
