"""The mutants of src/ui/guard.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 22: SecureLLM streams when the wrapped model would, and runs it inside its own callback run
    (
        "ui listens on a remote host without --allow-remote",
        "    if not allow_remote:\n",
        "    if False:\n",
        ("tests/test_ui_api.py", "-k", "remote"),
    ),
)
