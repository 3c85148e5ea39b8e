"""``import-mongodbsaver``: the command line of ``migrate.import_mongodbsaver`` (arguments, progress bar, report)."""

from __future__ import annotations

from typing import Any

from .._bson import require_db_name
from ..checkpointer import MongoDBCheckpointer
from ..errors import InvalidInputError
from ..migrate import ImportReport, import_mongodbsaver
from ..views.exits import EXIT_OK, EXIT_PROBLEM, EXIT_UNKNOWN_THREAD, EXIT_USAGE, CliError


def add_arguments(parser: Any) -> None:
    """The ``import-mongodbsaver`` subcommand's arguments (on its ``argparse`` parser)."""
    parser.add_argument("--source-db", required=True, help="the MongoDBSaver database (its default: checkpointing_db)")
    parser.add_argument("--checkpoint-collection", default="checkpoints")
    parser.add_argument("--writes-collection", default="checkpoint_writes")
    parser.add_argument("--thread", action="append", dest="threads", help="only this thread (repeatable)")
    parser.add_argument("--batch-size", type=int, default=100, help="source checkpoints per query")


class ProgressBar:
    """``progress(done, total)`` drawn by tqdm on ``out``: only on a terminal (see ``progress_bar``)."""

    def __init__(self, out: Any) -> None:
        from tqdm import tqdm

        self._bar = tqdm(desc="importing", unit="checkpoint", file=out, total=0, leave=True)

    def __call__(self, done: int, total: int) -> None:
        self._bar.total = total
        self._bar.update(done - self._bar.n)
        if done >= total:
            self._bar.close()


def progress_bar(err: Any) -> ProgressBar | None:
    """A bar on ``err`` when it is a terminal and tqdm is installed (the ``cli`` extra); None otherwise, so
    logs, pipes and ``--json`` get no redrawn line."""
    if not getattr(err, "isatty", lambda: False)():
        return None
    try:
        return ProgressBar(err)
    except ImportError:
        return None


def command(client: Any, args: Any, err: Any) -> ImportReport:
    """Run ``import-mongodbsaver`` as parsed: from ``args.source_db`` into ``args.db``, a bar on ``err`` if a terminal.

    Raises:
        CliError: an argument was refused (``EXIT_USAGE``): nothing was read or written.
    """
    try:
        saver = MongoDBCheckpointer(client, db_name=args.db)
        return import_mongodbsaver(
            client[require_db_name(args.source_db)],
            saver,
            checkpoint_collection=args.checkpoint_collection,
            writes_collection=args.writes_collection,
            thread_ids=args.threads,
            batch_size=args.batch_size,
            progress=progress_bar(err),
        )
    except InvalidInputError as error:
        raise CliError(str(error), EXIT_USAGE) from None


def exit_code(report: ImportReport) -> int:
    """``EXIT_PROBLEM`` on a mismatch, else ``EXIT_UNKNOWN_THREAD`` when a thread asked for is not in the source."""
    if not report.ok:
        return EXIT_PROBLEM
    return EXIT_UNKNOWN_THREAD if report.unknown_threads else EXIT_OK


def render(report: ImportReport, out: Any) -> None:
    """The report as the CLI prints it."""
    rows = [
        ("threads", report.threads),
        ("checkpoints", f"{report.checkpoints_imported} imported, {report.checkpoints_present} already present"),
        ("writes", f"{report.writes_imported} imported, {report.writes_present} already present"),
        ("verified", f"{report.verified} checkpoints against {report.reader}"),
        ("mismatches", len(report.mismatches)),
    ]
    if report.unknown_threads:
        rows.append(("unknown", ", ".join(map(repr, report.unknown_threads)) + ": not in the source"))
    for label, value in rows:
        out.write(f"{label:<12}{value}\n")
    for line in report.mismatches:
        out.write(f"  {line}\n")
