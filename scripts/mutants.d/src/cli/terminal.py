"""The mutants of src/cli/terminal.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: control characters written raw to the terminal",
        "    if text.isprintable():\n        return text",
        "    if True:\n        return text",
        ("tests/test_cli_terminal.py", "-m", "not server"),
    ),
)
