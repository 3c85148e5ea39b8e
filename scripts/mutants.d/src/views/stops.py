"""The mutants of src/views/stops.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 33: the inspector never shows or does more than the CLI
    (
        "why a thread stopped shows the error's message unredacted",
        "    return message if secrets is None else scrub(message, secrets)",
        "    return message",
        ("tests/test_ui_stops.py", "-k", "failed_thread"),
    ),
    (
        "why a thread stopped shows an interrupt's value unredacted",
        "    return shown(redact(value), secrets | credential_values(value))",
        "    return shown(value)",
        ("tests/test_ui_stops.py", "-k", "interrupt"),
    ),
)
