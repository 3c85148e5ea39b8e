"""The mutants of src/journal/tool.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "a replayed SecureTool call runs no tool callbacks",
        "replay=lambda outcome: self._replayed(outcome).invoke(input, observed_config(config), **kwargs),",
        "replay=lambda outcome: outcome,",
        ("tests/test_journal_callbacks.py", "-m", "not server", "-k", "tool_callbacks"),
    ),
)
