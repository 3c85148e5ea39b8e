"""Commands that delete, from the shell: asking first (``confirm``) and the report (they run in ``views.commands``)."""

from __future__ import annotations

from typing import Any, TextIO

from ..views.exits import EXIT_USAGE, CliError
from .terminal import escaped


def confirm(question: str, yes: bool, stdin: TextIO, prompt: TextIO) -> bool:
    """Whether to go ahead: ``--yes``, or a person's ``y`` on a terminal.

    Args:
        question: what is about to happen, as a question.
        yes: ``--yes`` was given.
        stdin: where the answer comes from.
        prompt: where the question goes (stderr: stdout stays for the command's output).

    Returns:
        True to go ahead.

    Raises:
        CliError: no ``--yes`` and ``stdin`` is not a terminal, so nobody can answer (``EXIT_USAGE``).
    """
    if yes:
        return True
    if not stdin.isatty():
        raise CliError(f"{question} Nobody can answer (stdin is not a terminal): pass --yes to go ahead", EXIT_USAGE)
    prompt.write(f"{question} [y/N] ")
    prompt.flush()
    return stdin.readline().strip().lower() in ("y", "yes")


def render_maintenance(report: dict[str, Any], out: TextIO) -> None:
    """``delete``/``sweep``: the threads deleted; ``prune``: each thread's checkpoints before and after (escaped)."""
    report = escaped(report)
    if "pruned" in report:
        pruned = [
            f"pruned {t}: {report['checkpoints'][t]['before']} -> {report['checkpoints'][t]['after']} checkpoints\n"
            for t in report["pruned"]
        ]
        out.write("".join(pruned) or "nothing pruned\n")
        return
    out.write("".join(f"deleted {thread_id}\n" for thread_id in report["deleted"]) or "nothing deleted\n")
