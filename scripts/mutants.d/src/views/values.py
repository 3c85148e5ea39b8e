"""The mutants of src/views/values.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 33: the inspector never shows or does more than the CLI
    (
        "ui state values keep credentials by key",
        "shown(redact(value), secrets)",
        "shown(value, secrets)",
        ("tests/test_ui_guards.py", "-k", "redacted"),
    ),
    (
        "ui state values keep a credential another value echoes",
        "    secrets = credential_values(dict(values)) if secrets is None else secrets\n",
        "    secrets = frozenset()\n",
        ("tests/test_ui_guards.py", "-k", "redacted"),
    ),
    (
        "a large value is sent whole",
        '        "text": text[:MAX_SHOWN_CHARS], "folded"',
        '        "text": text, "folded"',
        ("tests/test_ui_bounds.py", "-k", "large"),
    ),
    # issue 33: entries paged, whole values on request, the timeline
    (
        'a whole value keeps credentials by key',
        '    return scrub(_text(redact(values[name])), credential_values(dict(values)))',
        '    return scrub(_text(values[name]), credential_values(dict(values)))',
        ('tests/test_ui_bounds.py', '-k', 'whole_on_request'),
    ),
    (
        'a whole value keeps a credential another value holds',
        '    return scrub(_text(redact(values[name])), credential_values(dict(values)))',
        '    return scrub(_text(redact(values[name])), frozenset())',
        ('tests/test_ui_bounds.py', '-k', 'whole_on_request'),
    ),
    # -- issue 45: the on-call view --
    (
        'a value is scrubbed whole, not in the window shown',
        '        text = scrub(text[: MAX_SHOWN_CHARS + margin], secrets)',
        '        text = scrub(text, secrets)',
        ('tests/test_ui_bounds.py', '-k', 'scrubbed_window'),
    ),
)
