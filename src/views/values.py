"""How the views show a value: as JSON text, folded past ``FOLD_CHARS``, and redacted as the journal's previews
are (``redacted_values``) unless the inspector runs ``--with-outcomes``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..journal.redaction import credential_values, redact, scrub

#: Characters of a value shown before it is folded.
FOLD_CHARS = 240


def shown(value: Any, secrets: frozenset[str] | None = None) -> dict[str, Any]:
    """``value`` as text for a page: JSON where it can be, ``repr`` for the rest; ``folded`` past ``FOLD_CHARS``.

    Args:
        value: what to show.
        secrets: when given, the text is scrubbed of them and of what ``redact_text`` finds (``redaction.scrub``).

    Returns:
        ``{"text", "folded", "summary"}``.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, indent=1, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    if secrets is not None:
        text = scrub(text, secrets)
    return {"text": text, "folded": len(text) > FOLD_CHARS, "summary": text[:FOLD_CHARS].replace("\n", " ")}


def redacted_values(values: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Channel values as the journal's previews show values: credentials redacted by key (``redaction.redact``:
    tool call arguments and JSON text included), provider keys found in any text, and every credential value
    scrubbed wherever another value echoes it (a tool's result repeating its argument).

    Args:
        values: the channel values, by name.

    Returns:
        ``shown`` of each, by name.
    """
    secrets = credential_values(dict(values))
    return {name: shown(redact(value), secrets) for name, value in values.items()}
