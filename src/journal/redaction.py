"""What the journal keeps of an effect's input and outcome for people: a redacted preview (the input's digest:
``canonical.py``).

``preview`` renders a value as short readable text after ``redact`` has
replaced every value whose key looks like a credential, so secrets never reach
the journal in clear. ``redact`` looks ``SHOWN_DEPTH`` deep: a value of any
depth (or holding itself) is previewed without a recursion.

``redact`` finds credentials by key in mappings, in ``(name, value)`` pairs (as
httpx and requests take headers) and in text that is JSON (a tool's result as
``ToolNode`` stores it); in any text, ``redact_text`` also replaces well-known
provider keys (``KEY_PATTERNS``) and the values of URL query parameters with a
credential-looking name (``?api_key=``, ``&token=``). ``scrub`` removes an
input's credential values from stored text that echoes them (as written, or as
JSON or ``repr`` escape them), then applies ``redact_text``.

Example::

    >>> redact({"query": "weather", "api_key": "sk-123"})
    {'query': 'weather', 'api_key': '[REDACTED]'}
    >>> preview({"query": "weather", "api_key": "sk-123"}, limit=60)
    '{"api_key": "[REDACTED]", "query": "weather"}'
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

from .canonical import canonical, canonical_json, is_dataclass_instance

#: Replaces a credential's value in previews.
REDACTED = "[REDACTED]"

#: Keys whose values are treated as credentials (after camelCase becomes snake_case):
#: anything naming a secret, password, credential or API/private/access key, and
#: keys ending in a word such as ``token``, ``auth`` or ``cookie`` (``max_tokens`` is not one).
CREDENTIAL_KEY = re.compile(
    r"secret|passw(or)?d|passphrase|credential|api_?key|private_?key|access_?key"
    r"|(^|_)(token|auth|authorization|bearer|cookie|session_?id|signature|pin|otp|ssn)$",
    re.IGNORECASE,
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")

#: Well-known provider keys, found in any text: OpenAI and Anthropic (``sk-``, ``sk-proj-``, ``sk-ant-``),
#: AWS access key ids (``AKIA``, ``ASIA``), GitHub tokens (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``,
#: ``github_pat_``) and Slack tokens (``xoxb-``, ``xoxa-``, ``xoxp-``, ``xoxr-``, ``xoxs-``).
KEY_PATTERNS = re.compile(
    r"\bsk-[A-Za-z0-9_-]{16,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}"
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"
)
#: A URL query parameter (``?name=value`` or ``&name=value``): its value is redacted when its name is a
#: credential key (``api_key``, ``token``, ``access_token``, ``X-Amz-Signature``, ...).
_QUERY_PARAMETER = re.compile(r"([?&;])([^=&#\s\"'?]+)=([^&#\s\"']*)")


def is_credential_key(key: Any) -> bool:
    """True for keys such as ``password``, ``apiKey``, ``X-Auth-Token``, ``client_secret``.

    >>> [is_credential_key(k) for k in ("apiKey", "X-Auth-Token", "max_tokens", "author")]
    [True, True, False, False]
    """
    return isinstance(key, str) and _is_credential_name(key)


@functools.lru_cache(maxsize=4096)
def _is_credential_name(key: str) -> bool:
    # Cached: every walk asks again for the same few names (a message's fields, a tool's arguments).
    return bool(CREDENTIAL_KEY.search(_CAMEL.sub("_", key).replace("-", "_")))


#: A redactor takes any value and returns one safe to store in clear.
Redactor = Callable[[Any], Any]


#: How deep ``redact`` (and so every preview) looks into a value: past it, a container shows as ``ELIDED``. A preview
#: is cut at a few hundred characters long before; the bound keeps a value nested past Python's recursion limit (JSON
#: text nested 1,500 deep, say) from breaking the claim or the record that previews it.
SHOWN_DEPTH = 64
#: What ``redact`` shows for a container nested past ``SHOWN_DEPTH``, or met again inside itself.
ELIDED = "…"


def _json_in(text: str) -> Any:
    """The object or array ``text`` holds as JSON, else None (also for JSON nested deeper than the parser goes)."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: 1,500 "[" are 1.5 KB of text anyone may send
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


def _is_credential_pair(value: list[Any] | tuple[Any, ...]) -> bool:
    """``("Authorization", "Bearer ...")``: a header or parameter as a ``(name, value)`` pair."""
    return len(value) == 2 and is_credential_key(value[0])


def redact_text(text: str) -> str:
    """``text`` with its credentials replaced by ``REDACTED``: by key when it is JSON, and everywhere the
    well-known provider keys (``KEY_PATTERNS``) and credential-named URL query parameters.

    >>> redact_text('{"access_token": "tok-1", "user": "al"}')
    '{"access_token": "[REDACTED]", "user": "al"}'
    >>> redact_text("GET https://x.example/v1?user=al&api_key=abc123 with sk-proj-AbCdEf0123456789xyz")
    'GET https://x.example/v1?user=al&api_key=[REDACTED] with [REDACTED]'
    """
    return _Redaction().text(text, SHOWN_DEPTH)


def redact(value: Any) -> Any:
    """``value`` with every credential-looking key's value replaced by ``REDACTED``.

    Mappings, sequences, pydantic models and dataclasses are walked, ``SHOWN_DEPTH`` deep (a container past it, or
    inside itself, becomes ``ELIDED``); a ``(name, value)`` pair with a credential-looking name has its value
    redacted; text goes through ``redact_text``; messages become their readable text (see ``readable``).
    """
    return _Redaction().value(value, SHOWN_DEPTH)


def readable(message: BaseMessage) -> str:
    """A message as a person reads it: ``role: text``, then its tool calls (arguments redacted).

    >>> from langchain_core.messages import AIMessage
    >>> readable(AIMessage("On it.", tool_calls=[
    ...     {"name": "login", "args": {"user": "al", "password": "x"}, "id": "c1"}]))
    'ai: On it. [login({"password": "[REDACTED]", "user": "al"})]'
    """
    return _Redaction().message(message, SHOWN_DEPTH)


class _Redaction:
    """One walk of ``redact``: the containers it is inside, each walked with how deep it may still go."""

    def __init__(self) -> None:
        self.inside: set[int] = set()

    def value(self, value: Any, depth: int) -> Any:
        if isinstance(value, str):
            return self.text(value, depth)
        if isinstance(value, (Mapping, list, tuple)):
            return self.collection(value, depth)
        if isinstance(value, BaseMessage):
            return self.message(value, depth)
        if isinstance(value, BaseModel) or is_dataclass_instance(value):
            return self.value(canonical(value), depth)
        return value

    def text(self, text: str, depth: int) -> str:
        parsed = _json_in(text)
        if parsed is not None:
            safe = self.value(parsed, depth)
            if safe != parsed:  # compares no deeper than ``depth``: past it, ``safe`` holds ``ELIDED``
                text = canonical_json(canonical(safe))
        text = KEY_PATTERNS.sub(REDACTED, text)
        return _QUERY_PARAMETER.sub(
            lambda m: f"{m[1]}{m[2]}={REDACTED}" if m[3] and is_credential_key(m[2]) else m[0], text
        )

    def collection(self, value: Mapping[Any, Any] | list[Any] | tuple[Any, ...], depth: int) -> Any:
        """A mapping (by key), a ``(name, value)`` pair (by name) or another list or tuple (each item), redacted."""
        if depth <= 0 or id(value) in self.inside:
            return ELIDED
        self.inside.add(id(value))
        try:
            if isinstance(value, Mapping):
                return {k: REDACTED if is_credential_key(k) else self.value(v, depth - 1) for k, v in value.items()}
            if _is_credential_pair(value):
                return [value[0], REDACTED]
            return [self.value(v, depth - 1) for v in value]
        finally:
            self.inside.discard(id(value))

    def message(self, message: BaseMessage, depth: int) -> str:
        content = message.content
        if isinstance(content, str):
            text = self.text(content, depth)
        else:
            text = canonical_json(canonical(self.value(content, depth)))
        calls = "".join(
            f" [{c['name']}({canonical_json(canonical(self.value(c['args'], depth)))})]"
            for c in getattr(message, "tool_calls", None) or []
        )
        return f"{message.type}: {text}{calls}"


def credential_values(value: Any, *, under_credential: bool = False) -> frozenset[str]:
    """The text of every value under a credential-looking key of ``value`` (``redact``'s keys), at least
    4 characters long: what ``scrub`` removes from stored text that may echo it (an error message).

    >>> sorted(credential_values({"url": "https://x", "api_key": "sk-123", "auth": {"user": "al", "pin": 1234}}))
    ['1234', 'sk-123']
    """
    # A loop over a stack, not a recursion: a model call's input holds a thread's whole history, walked at every
    # call, and a call and a set per value cost more than the walk itself.
    found: set[str] = set()
    walked: dict[tuple[int, bool], Any] = {}
    pending = [(value, under_credential)]
    while pending:
        item, under = pending.pop()
        inner = _credential_walk(item, under, walked)
        if inner is not None:
            pending.extend(inner)
        elif under and _is_scalar(item):
            found.add(str(item))
    return frozenset(v for v in found if len(v) >= 4)


def _credential_walk(
    value: Any, under_credential: bool, walked: dict[tuple[int, bool], Any]
) -> list[tuple[Any, bool]] | None:
    """The values ``credential_values`` looks into inside ``value``, each with whether it sits under a credential
    key; None for a value it looks at as it is (text that holds no JSON, a number, ...). ``walked``: the containers
    looked into already (held, so that no other object takes their ids): a container inside itself is looked into
    once."""
    if value is None or isinstance(value, (bool, int, float)):
        return None
    if isinstance(value, str):
        parsed = None if under_credential else _json_in(value)
        return None if parsed is None else [(parsed, False)]
    if isinstance(value, BaseMessage):
        # Read from the fields, not with getattr: pydantic answers a missing attribute slowly, by raising.
        return [(call.get("args"), under_credential) for call in vars(value).get("tool_calls") or ()]
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        if (id(value), under_credential) in walked:
            return []
        walked[id(value), under_credential] = value
        return _credential_walk_collection(value, under_credential)
    if isinstance(value, BaseModel) or is_dataclass_instance(value):
        return [(canonical(value), under_credential)]
    return None


def _credential_walk_collection(
    value: Mapping[Any, Any] | list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any], under_credential: bool
) -> list[tuple[Any, bool]]:
    """``_credential_walk`` of a mapping (a credential key puts its value under it), a ``(name, value)`` pair with
    a credential name (its value), or another list, tuple or set (its items)."""
    if isinstance(value, Mapping):
        return [(v, under_credential or is_credential_key(k)) for k, v in value.items()]
    if isinstance(value, (list, tuple)) and _is_credential_pair(value):
        return [(value[1], True)]
    return [(v, under_credential) for v in value]


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def scrub(text: str, secrets: frozenset[str] | set[str] = frozenset()) -> str:
    """``text`` with every occurrence of each of ``secrets`` replaced by ``REDACTED`` (the longest at a place
    first), as written or escaped as JSON or ``repr`` write it (a ``"`` or ``\\`` in a secret), then
    ``redact_text``. One pass over the text whatever the number of secrets (``SecretForms``, built once per set).

    >>> scrub("401 for https://x/?user=sk-123", {"sk-123"})
    '401 for https://x/?user=[REDACTED]'
    >>> scrub('{"echo": "pa\\\\"ss"}', {'pa"ss'})
    '{"echo": "[REDACTED]"}'
    """
    if secrets:
        text = secret_forms(frozenset(secrets)).replace(text)
    return redact_text(text)


#: How many forms of secrets ``SecretForms`` replaces one after the other (each a pass of ``str.replace``, in C);
#: more are found in one pass, by their first ``PREFIX`` characters.
FEW_FORMS = 16
#: The characters a secret is first looked for by (``credential_values`` keeps none shorter).
PREFIX = 4


class SecretForms:
    """The forms of a set of secrets (as written, JSON- and ``repr``-escaped), ready to be replaced in a text.

    A few are replaced one after the other. More are found in one pass: the text's ``PREFIX``-character slices are
    gathered once, those that start a form are looked up (by set intersection), and at each place they occur the
    forms starting there are tried longest first, one length at a time: the work grows with the text and the
    lengths of the forms, never with their number.

    Args:
        secrets: the secrets.
    """

    def __init__(self, secrets: frozenset[str]) -> None:
        forms = {form for secret in secrets for form in (secret, json.dumps(secret)[1:-1], repr(secret)[1:-1]) if form}
        short = sorted((f for f in forms if len(f) < PREFIX), key=len, reverse=True)
        long = [f for f in forms if len(f) >= PREFIX]
        few = len(forms) <= FEW_FORMS
        self.one_by_one = tuple(sorted(long, key=len, reverse=True)) + tuple(short) if few else tuple(short)
        self.longest = max(map(len, forms), default=0)
        grouped: dict[str, dict[int, set[str]]] = {}
        for form in long if len(forms) > FEW_FORMS else ():
            grouped.setdefault(form[:PREFIX], {}).setdefault(len(form), set()).add(form)
        #: By first characters: the forms starting with them, by length, longest first.
        self.by_prefix = {
            p: tuple(sorted(((n, frozenset(f)) for n, f in by_len.items()), reverse=True))
            for p, by_len in grouped.items()
        }

    def replace(self, text: str) -> str:
        """``text`` with every form replaced by ``REDACTED``."""
        for form in self.one_by_one:
            text = text.replace(form, REDACTED)
        if not self.by_prefix or len(text) < PREFIX:
            return text
        present = self.by_prefix.keys() & {text[i:i + PREFIX] for i in range(len(text) - PREFIX + 1)}
        if not present:
            return text
        places = sorted(at for prefix in present for at in _occurrences(text, prefix))
        parts, done = [], 0
        for at in places:
            if at < done:
                continue
            length = next((n for n, forms in self.by_prefix[text[at:at + PREFIX]] if text[at:at + n] in forms), 0)
            if length:
                parts += [text[done:at], REDACTED]
                done = at + length
        return "".join(parts) + text[done:]


def _occurrences(text: str, part: str) -> Iterable[int]:
    """Where ``part`` starts in ``text`` (overlapping occurrences included)."""
    at = text.find(part)
    while at >= 0:
        yield at
        at = text.find(part, at + 1)


@functools.lru_cache(maxsize=32)
def secret_forms(secrets: frozenset[str]) -> SecretForms:
    """The ``SecretForms`` of ``secrets``, built once for a set a page shows many texts with."""
    return SecretForms(secrets)


def preview(
    value: Any, *, limit: int = 300, redactor: Redactor = redact, secrets: frozenset[str] | set[str] = frozenset()
) -> str:
    """Short readable text of ``value`` after ``redactor``, ``secrets`` scrubbed; at most ``limit`` characters
    (none if 0).

    >>> preview("x" * 10, limit=5)
    'xxxx…'
    """
    if limit <= 0:
        return ""
    safe = redactor(value)
    text = safe if isinstance(safe, str) else canonical_json(canonical(safe))
    text = scrub(text, secrets)
    return storable(text if len(text) <= limit else text[: max(limit - 1, 0)] + "…")


def storable(text: str) -> str:
    """``text`` as a BSON string can hold it: a lone surrogate (which UTF-8 cannot encode, though a Python string, a
    JSON escape, can hold one) written as its escape, ``\\udc80``; any other text as it is.

    >>> storable("ok \\udc80") == "ok \\\\udc80"
    True
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
