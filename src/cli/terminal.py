"""What the CLI writes to a terminal: stored text with its control characters escaped.

Thread ids, node names, paths, statuses, error types and the server's own strings are data: written raw, one
could clear the screen (``\\x1b[2J``), hide a link behind other text (OSC 8), reorder text (U+202E) or forge
table rows (``\\n``). Every character Python does not call printable (C0 and C1 controls, DEL, format
characters such as bidirectional overrides, line and paragraph separators) is written as its Python escape
(``\\x1b``, ``\\n``, ``\\u202e``), as ``--json`` writes it escaped; everything else, other scripts included,
is written as it is.
"""

from __future__ import annotations

import dataclasses
from typing import TypeVar, cast

T = TypeVar("T")


def printable(text: str) -> str:
    """``text`` with every character that is not printable written as its escape.

    Args:
        text: any text.

    Returns:
        The text, safe to write to a terminal on one line.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def escaped(report: T) -> T:
    """``report`` with ``printable`` applied to every string in it, before it is rendered for a person.

    Args:
        report: a string, or a dict, list, tuple or dataclass holding them (at any depth); other values
            (numbers, dates, None) are kept.

    Returns:
        A copy of the same shape.
    """
    if isinstance(report, str):
        return cast(T, printable(report))
    if isinstance(report, dict):
        return cast(T, {escaped(key): escaped(value) for key, value in report.items()})
    if isinstance(report, (list, tuple)):
        return type(report)(escaped(value) for value in report)
    if dataclasses.is_dataclass(report) and not isinstance(report, type):
        changes = {f.name: escaped(getattr(report, f.name)) for f in dataclasses.fields(report) if f.init}
        return dataclasses.replace(report, **changes)
    return report
