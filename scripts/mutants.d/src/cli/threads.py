"""The mutants of src/cli/threads.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: threads writes stored thread ids raw",
        "    rows = escaped(rows)\n",
        "",
        ("tests/test_cli_terminal.py", "-m", "not server", "-k", "threads_and_maintenance"),
    ),
    (
        "issue 25: inspect writes stored text raw",
        "    report = escaped(report)\n",
        "",
        ("tests/test_cli_terminal.py", "-m", "not server", "-k", "inspect"),
    ),
    (
        "issue 25: inspect reads documents unchecked",
        "        problem = document_problem(collection, doc, fields)\n",
        "        problem = None\n",
        ("tests/test_cli_corrupt.py", "-m", "not server"),
    ),
    # -- issue 36: the first hour --
    (
        "the thread table's columns are as wide as the longest id, not its header",
        '        widths = {k: max(len(str(r[k])) for r in [{k: header}, *rows]) for k, header in headers.items()}',
        '        widths = {k: max(len(str(r[k])) for r in rows) for k, header in headers.items()}',
        ("tests/test_cli_threads.py", "-k", "align"),
    ),
    # issue 33: the inspector never shows or does more than the CLI
    (
        "inspect tells replays apart from the web inspector",
        '                effect["replayed"] = (op["path"], node["node"], effect["key"]) in proven',
        '                effect["replayed"] = False',
        ("tests/test_ui_accounts.py",),
    ),
    (
        "inspect prints a level's operations by name, not as they ran",
        "    items = list(branch.items()) if isinstance(branch, dict)",
        "    items = sorted(branch.items()) if isinstance(branch, dict)",
        ("tests/test_ui_accounts.py", "-k", "order"),
    ),
    (
        "issue 33: the CLI's inspect does not say that more entries failed or never finished than were read",
        '    if report.get("more_open"):',
        "    if False:",
        ("tests/test_ui_page_labels.py", "-m", "not server", "-k", "not_completed"),
    ),
)
