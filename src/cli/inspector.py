"""``ui``: the web inspector, served from the CLI (the ``ui`` extra:
``pip install 'langgraph-durable-mongodb[ui]'``)."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from ..errors import InvalidInputError
from ..ui import missing_extra
from ..views.exits import EXIT_OK, EXIT_USAGE, CliError


def ui(args: argparse.Namespace, client: Any, out: TextIO) -> int:
    """Serve the inspector on ``--host``/``--port`` until interrupted.

    Args:
        args: the parsed command line (``host``, ``port``, ``allow_remote``, ``token``, ``allow_writes``,
            ``with_outcomes``, ``db``).
        client: a sync client.
        out: where the address is printed.

    Returns:
        ``EXIT_OK`` once stopped.

    Raises:
        CliError: the ``ui`` extra is not installed, naming the command that installs it, or an option was
            refused (a remote ``--host`` without ``--allow-remote``, a short ``--token``): ``EXIT_USAGE``.
    """
    missing = missing_extra()
    if missing:
        raise CliError(
            f"ui needs the ui extra ({', '.join(missing)} not installed): "
            "pip install 'langgraph-durable-mongodb[ui]'", EXIT_USAGE
        )
    from ..ui.serving import serve  # only now: starlette, uvicorn and jinja2 are there

    try:
        serve(
            client, args.db, host=args.host, port=args.port, allow_remote=args.allow_remote, token=args.token,
            allow_writes=args.allow_writes, with_outcomes=args.with_outcomes, out=out,
        )
    except InvalidInputError as error:  # an option refused before anything listened
        raise CliError(str(error), EXIT_USAGE) from None
    return EXIT_OK
