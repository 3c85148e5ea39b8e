"""What the journal keeps of an effect's input and outcome for people: a digest and a redacted preview.

``digest`` fingerprints an input (stable across processes, so a resumed run
can tell whether it calls an effect with the same input). ``preview`` renders
a value as short readable text after ``redact`` has replaced every value whose
key looks like a credential, so secrets never reach the journal in clear.

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

import dataclasses
import enum
import functools
import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime, time
from typing import Any

from langchain_core.messages import BaseMessage
from pydantic import BaseModel

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


def canonical(value: Any, *, ordered: bool = True) -> Any:
    """A JSON-able form of ``value`` that depends on its content only (no ids of objects).

    ``ordered=False`` leaves mappings in their own order, for a caller that sorts keys as it serializes
    (``digest``): it skips re-walking what pydantic's JSON dump already made JSON-able, the bulk of an LLM
    call's input.

    >>> canonical({"b": (1, 2), "a": {3}})
    {'a': [3], 'b': [1, 2]}
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        return _canonical_collection(value, ordered)
    if isinstance(value, (BaseModel, enum.Enum)) or _is_dataclass_instance(value):
        return _canonical_object(value, ordered)
    return _canonical_leaf(value)


def _canonical_collection(
    value: Mapping[Any, Any] | list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any], ordered: bool
) -> Any:
    """A mapping (its keys as text, sorted when ``ordered``), a list or tuple, or a set (sorted) made canonical."""
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda kv: str(kv[0])) if ordered else value.items()
        return {str(k): canonical(v, ordered=ordered) for k, v in items}
    if isinstance(value, (list, tuple)):
        return [canonical(v, ordered=ordered) for v in value]
    return sorted((canonical(v, ordered=ordered) for v in value), key=repr)


def _canonical_object(value: Any, ordered: bool) -> Any:
    """A pydantic model, a dataclass instance or an enum member made canonical: by its fields, or its value."""
    if isinstance(value, BaseModel):
        dumped = value.model_dump(mode="json")  # JSON types only, string keys
        return canonical(dumped) if ordered else dumped
    if _is_dataclass_instance(value):
        return canonical({f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, ordered=ordered)
    return canonical(value.value, ordered=ordered)


def _canonical_leaf(value: Any) -> Any:
    """Any other value made canonical: a date or time as ISO text, bytes by their digest, the rest by its type."""
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": hashlib.sha256(value).hexdigest()}
    # Anything else (a client, a callback, ...) counts by its type: its repr
    # may hold a memory address, which would change the digest on every run.
    return f"<{type(value).__module__}.{type(value).__qualname__}>"


def _is_dataclass_instance(value: Any) -> bool:
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


def digest(value: Any, key: bytes | None = None) -> str:
    """``sha256:<hex>`` of ``value``'s canonical JSON; ``hmac-sha256:<hex>`` keyed by ``key`` when given.

    A plain digest of a short secret (a PIN, a card number) is found by trying every value; keyed, it
    is not, without the key.

    >>> digest({"a": 1}) == digest({"a": 1}) != digest({"a": 2})
    True
    >>> digest({"a": 1}, b"k1") != digest({"a": 1}, b"k2")
    True
    """
    text = json.dumps(canonical(value, ordered=False), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    if key is None:
        return "sha256:" + hashlib.sha256(text).hexdigest()
    return "hmac-sha256:" + hmac.new(key, text, hashlib.sha256).hexdigest()


def _json_in(text: str) -> Any:
    """The object or array ``text`` holds as JSON, else None."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
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
    parsed = _json_in(text)
    if parsed is not None:
        safe = redact(parsed)
        if safe != parsed:
            text = json.dumps(canonical(safe), ensure_ascii=False)
    text = KEY_PATTERNS.sub(REDACTED, text)
    return _QUERY_PARAMETER.sub(
        lambda m: f"{m[1]}{m[2]}={REDACTED}" if m[3] and is_credential_key(m[2]) else m[0], text
    )


def redact(value: Any) -> Any:
    """``value`` with every credential-looking key's value replaced by ``REDACTED``.

    Mappings, sequences, pydantic models and dataclasses are walked; a ``(name, value)`` pair with a
    credential-looking name has its value redacted; text goes through ``redact_text``; messages
    become their readable text (see ``readable``).
    """
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, (Mapping, list, tuple)):
        return _redact_collection(value)
    if isinstance(value, BaseMessage):
        return readable(value)
    if isinstance(value, BaseModel) or _is_dataclass_instance(value):
        return redact(canonical(value))
    return value


def _redact_collection(value: Mapping[Any, Any] | list[Any] | tuple[Any, ...]) -> Any:
    """``redact`` of a mapping (by key), a ``(name, value)`` pair (by name) or another list or tuple (each item)."""
    if isinstance(value, Mapping):
        return {k: REDACTED if is_credential_key(k) else redact(v) for k, v in value.items()}
    if _is_credential_pair(value):
        return [value[0], REDACTED]
    return [redact(v) for v in value]


def credential_values(value: Any, *, under_credential: bool = False) -> frozenset[str]:
    """The text of every value under a credential-looking key of ``value`` (``redact``'s keys), at least
    4 characters long: what ``scrub`` removes from stored text that may echo it (an error message).

    >>> sorted(credential_values({"url": "https://x", "api_key": "sk-123", "auth": {"user": "al", "pin": 1234}}))
    ['1234', 'sk-123']
    """
    # A loop over a stack, not a recursion: a model call's input holds a thread's whole history, walked at every
    # call, and a call and a set per value cost more than the walk itself.
    found: set[str] = set()
    pending = [(value, under_credential)]
    while pending:
        item, under = pending.pop()
        inner = _credential_walk(item, under)
        if inner is not None:
            pending.extend(inner)
        elif under and _is_scalar(item):
            found.add(str(item))
    return frozenset(v for v in found if len(v) >= 4)


def _credential_walk(value: Any, under_credential: bool) -> list[tuple[Any, bool]] | None:
    """The values ``credential_values`` looks into inside ``value``, each with whether it sits under a credential
    key; None for a value it looks at as it is (text that holds no JSON, a number, ...)."""
    if value is None or isinstance(value, (bool, int, float)):
        return None
    if isinstance(value, str):
        parsed = None if under_credential else _json_in(value)
        return None if parsed is None else [(parsed, False)]
    if isinstance(value, BaseMessage):
        # Read from the fields, not with getattr: pydantic answers a missing attribute slowly, by raising.
        return [(call.get("args"), under_credential) for call in vars(value).get("tool_calls") or ()]
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        return _credential_walk_collection(value, under_credential)
    if isinstance(value, BaseModel) or _is_dataclass_instance(value):
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
        self.one_by_one = tuple(sorted(long, key=len, reverse=True)) + tuple(short) if len(forms) <= FEW_FORMS else tuple(short)
        self.longest = max(map(len, forms), default=0)
        grouped: dict[str, dict[int, set[str]]] = {}
        for form in long if len(forms) > FEW_FORMS else ():
            grouped.setdefault(form[:PREFIX], {}).setdefault(len(form), set()).add(form)
        #: By first characters: the forms starting with them, by length, longest first.
        self.by_prefix = {p: tuple(sorted(((n, frozenset(f)) for n, f in by_len.items()), reverse=True)) for p, by_len in grouped.items()}

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


def readable(message: BaseMessage) -> str:
    """A message as a person reads it: ``role: text``, then its tool calls (arguments redacted).

    >>> from langchain_core.messages import AIMessage
    >>> readable(AIMessage("On it.", tool_calls=[{"name": "login", "args": {"user": "al", "password": "x"}, "id": "c1"}]))
    'ai: On it. [login({"password": "[REDACTED]", "user": "al"})]'
    """
    content = redact_text(message.content) if isinstance(message.content, str) else json.dumps(
        canonical(redact(message.content)), ensure_ascii=False, default=str
    )
    calls = "".join(
        f" [{c['name']}({json.dumps(canonical(redact(c['args'])), ensure_ascii=False)})]"
        for c in getattr(message, "tool_calls", None) or []
    )
    return f"{message.type}: {content}{calls}"


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
    text = safe if isinstance(safe, str) else json.dumps(canonical(safe), ensure_ascii=False, default=str)
    text = scrub(text, secrets)
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"
