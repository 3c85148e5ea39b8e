"""The mutants of src/storage/server_errors.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 25: nothing secret printed or stored in clear, nothing lost in silence
    (
        "issue 25: a refused login reported as another failure",
        "    if isinstance(error, OperationFailure) and error.code in AUTH_CODES:",
        "    if False:",
        ("tests/test_cli_credentials.py",),
    ),
)
