"""The mutants of src/views/commands.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "resolve settles the position as written, not the entry's stored key",
        "    _journal(client, db_name, names).resolve(EffectPosition(**settled[\"position\"]), outcome)",
        "    _journal(client, db_name, names).resolve(pos, outcome)",
        ("tests/test_cli_journal.py", "-m", "not server", "-k", "at_its_key_or_its_labels"),
    ),
)
