"""The mutants of src/journal/redaction.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: JSON text not parsed before redaction",
        "    parsed = _json_in(text)\n",
        "    parsed = None\n",
        ("tests/test_journal_redaction.py",),
    ),
    (
        "issue 25: (name, value) credential pairs kept in clear",
        "            if _is_credential_pair(value):\n                return [value[0], REDACTED]\n",
        "",
        ("tests/test_journal_redaction.py",),
    ),
    (
        "issue 25: provider keys in text kept in clear",
        "    text = KEY_PATTERNS.sub(REDACTED, text)\n",
        "",
        ("tests/test_journal_redaction.py",),
    ),
    (
        "issue 25: credential URL query parameters kept in clear",
        "if m[3] and is_credential_key(m[2]) else m[0]",
        "if False else m[0]",
        ("tests/test_journal_redaction.py",),
    ),
    (
        "a credential (name, value) pair's value is not scrubbed from stored text",
        "        return [(value[1], True)]",
        "        return [(v, under_credential) for v in value]",
        ("tests/test_journal_redaction.py",),
    ),
    (
        "the credentials of an input given as JSON text are not scrubbed from stored text",
        "        return None if parsed is None else [(parsed, False)]",
        "        return None",
        ("tests/test_journal_redaction.py",),
    ),
    (
        "issue 25: an echoed secret escaped by JSON or repr survives scrubbing",
        "(secret, json.dumps(secret)[1:-1], repr(secret)[1:-1])",
        "(secret,)",
        ("tests/test_journal_redaction.py",),
    ),
    (
        "issue 25: a message's text not redacted in readable()",
        "        if isinstance(content, str):\n            text = self.text(content, depth)",
        "        if isinstance(content, str):\n            text = content",
        ("tests/test_journal_redaction.py",),
    ),
    (
        "issue 37: a model call's tool-call arguments not looked into for credentials (its fast path for messages)",
        'for call in vars(value).get("tool_calls") or ()]',
        "for call in ()]",
        ("tests/test_journal_redaction.py",),
    ),
    (
        "issue 37: the credential walk drops what it found under a credential key",
        "            found.add(str(item))\n",
        "            pass\n",
        ("tests/test_journal_redaction.py",),
    ),
    # issue 44, break 8: values of any depth never break a claim or a record
    (
        "issue 44: JSON text nested past the parser's recursion limit raises RecursionError",
        "    except (ValueError, RecursionError):",
        "    except ValueError:",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "previewed_as_text"),
    ),
    (
        "issue 44: redact walks a value nested past SHOWN_DEPTH",
        "        if depth <= 0 or id(value) in self.inside:",
        "        if id(value) in self.inside:",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "past_the_recursion_limit"),
    ),
    (
        "issue 44: redact walks a container inside itself again",
        "        if depth <= 0 or id(value) in self.inside:",
        "        if depth <= 0:",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "holding_itself and not resume"),
    ),
    (
        "issue 44: the credential walk looks into a container inside itself again",
        "        if (id(value), under_credential) in walked:\n            return []\n",
        "",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "holding_itself and not resume"),
    ),
    (
        "issue 44: a preview keeps a lone surrogate BSON cannot store",
        '    return text.encode("utf-8", "backslashreplace").decode("utf-8")',
        "    return text",
        ("tests/test_hostile_values.py", "-m", "not server", "-k", "lone_surrogate"),
    ),
    # -- issue 45: the on-call view --
    (
        'many credentials are each replaced by a pass of their own',
        "        self.one_by_one = tuple(sorted(long, key=len, reverse=True)) + tuple(short) if few else tuple(short)",
        '        self.one_by_one = tuple(sorted(long, key=len, reverse=True)) + tuple(short)',
        ('tests/test_ui_hostile.py', '-k', 'scrubbing'),
    ),
    (
        'what a set of credentials compiles to is built again for every text',
        '@functools.lru_cache(maxsize=32)\ndef secret_forms(',
        'def secret_forms(',
        ('tests/test_ui_hostile.py', '-k', 'scrubbing'),
    ),
    (
        'a credential among many is not found where its first characters are',
        '        present = self.by_prefix.keys() & {text[i:i + PREFIX] for i in range(len(text) - PREFIX + 1)}',
        '        present = set()',
        ('tests/test_journal_redaction.py', '-k', 'whatever_their_number'),
    ),
)
