"""The mutants of src/cli/doctor.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: doctor writes the server's strings raw",
        "    report = escaped(report)\n",
        "",
        ("tests/test_cli_terminal.py", "-m", "not server", "-k", "doctor"),
    ),
    # issue 35: doctor says where the fences cannot hold
    (
        "doctor gives no advice on a server whose conditional updates are not atomic",
        '    return [] if report["features"].get("atomic_updates", True) else [NOT_ATOMIC]',
        "    return []",
        ("tests/test_cli.py", "-m", "server", "-k", "doctor_on_a_real_server"),
    ),
)
