"""How the views show a value: as JSON text, folded past ``FOLD_CHARS``, and redacted as the journal's previews
are (``redacted_values``) unless the inspector runs ``--with-outcomes``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..journal.redaction import credential_values, redact, scrub, secret_forms

#: Characters of a value shown before it is folded.
FOLD_CHARS = 240
#: The most characters of one value a page or its JSON carries: past them it is cut (``cut``), so a 15 MB state
#: value costs no more than this to send.
MAX_SHOWN_CHARS = 20_000
#: Characters scrubbed past a window, besides the longest secret: a provider key (``KEY_PATTERNS``) cut at the
#: window's end is still long enough there to be found.
SCRUB_MARGIN = 64
#: The most characters of one value sent whole on request (``full_text``): past them it is refused.
MAX_FULL_CHARS = 2_000_000


def shown(value: Any, secrets: frozenset[str] | None = None) -> dict[str, Any]:
    """``value`` as text for a page: JSON where it can be, ``repr`` for the rest; ``folded`` past ``FOLD_CHARS``
    and cut at ``MAX_SHOWN_CHARS``. With ``secrets``, only the window shown is scrubbed of them and of what
    ``redact_text`` finds (``redaction.scrub``), a margin past it included so that a cut never splits a secret out of
    reach: the work grows with the window, not with the value.

    Args:
        value: what to show.
        secrets: when given, the text is scrubbed of them and of what ``redact_text`` finds (``redaction.scrub``).

    Returns:
        ``{"text", "folded", "summary", "chars" (the whole text's), "cut" (whether ``text`` is its start only)}``.
    """
    text = _text(value)
    chars = len(text)
    if secrets is not None:
        margin = secret_forms(secrets).longest + SCRUB_MARGIN if secrets else SCRUB_MARGIN
        text = scrub(text[: MAX_SHOWN_CHARS + margin], secrets)
    cut = chars > MAX_SHOWN_CHARS
    return {
        "text": text[:MAX_SHOWN_CHARS], "folded": len(text) > FOLD_CHARS,
        "summary": text[:FOLD_CHARS].replace("\n", " "),
        "chars": chars, "cut": cut,
    }


def _text(value: Any) -> str:
    """``value`` as JSON text where it can be, ``repr`` for the rest: indented when it is short enough to be shown
    whole, else on one line (Python's C encoder writes no indent: a large value costs no more than it must)."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=repr)
        return json.dumps(value, ensure_ascii=False, indent=1, default=repr) if len(text) <= FOLD_CHARS * 10 else text
    except (TypeError, ValueError, RecursionError):
        return repr(value)


def full_text(values: Mapping[str, Any], name: str, *, redacted: bool) -> str:
    """One channel value whole, as ``shown`` writes it before cutting: redacted as ``redacted_values`` does when
    ``redacted`` (the same rules, the other values' credentials scrubbed from it too).

    Args:
        values: the channel values, by name.
        name: the one to show (a key of ``values``).
        redacted: whether to redact it (the inspector without ``--with-outcomes``).

    Returns:
        Its text, whole.
    """
    if not redacted:
        return _text(values[name])
    return scrub(_text(redact(values[name])), credential_values(dict(values)))


def redacted_values(values: Mapping[str, Any], secrets: frozenset[str] | None = None) -> dict[str, dict[str, Any]]:
    """Channel values as the journal's previews show values: credentials redacted by key (``redaction.redact``:
    tool call arguments and JSON text included), provider keys found in any text, and every credential value
    scrubbed wherever another value echoes it (a tool's result repeating its argument).

    Args:
        values: the channel values, by name.
        secrets: their credential values, when the caller has them (``redaction.credential_values``).

    Returns:
        ``shown`` of each, by name.
    """
    secrets = credential_values(dict(values)) if secrets is None else secrets
    return {name: shown(redact(value), secrets) for name, value in values.items()}
