"""The mutants of src/cli/maintenance.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "CLI deletes without asking (no --yes, no terminal)",
        "    if yes:\n        return True",
        "    if True:\n        return True",
        ("tests/test_cli_maintenance.py", "-m", "not server"),
    ),
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: delete and prune write stored thread ids raw",
        "    report = escaped(report)\n",
        "",
        ("tests/test_cli_terminal.py", "-m", "not server", "-k", "threads_and_maintenance"),
    ),
)
