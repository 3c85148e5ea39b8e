"""The mutants of src/journal/attempt.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "journal digest matching (an effect takes the entry at its ordinal whatever it recorded)",
        "            elif (same := self._first_free(matching, wanted)) is not None:\n"
        "                key = same\n",
        "",
        ("tests/test_journal_matching.py", "-m", "not server"),
    ),
    # -- records trailing their effects, roots foreseen (issue 20) --
    (
        "a retry does not wait for the records of the attempt before it",
        "Attempt(number, trail=attempt.trail if attempt is not None else None)",
        "Attempt(number)",
        ("tests/test_trailing_records.py", "-m", "not server", "-k", "retry_meets"),
    ),
)
