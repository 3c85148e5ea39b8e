"""The mutants of src/journal/labels.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "labels number a Send group's tasks in the sequence of its edge-triggered ones",
        '        yield (parent, name, match["index"] is not None), match',
        "        yield (parent, name, False), match",
        ("tests/test_journal_labels.py",),
    ),
    (
        "labels order the steps of a child's run as text",
        "    step = int(base[1:]) if numbered else 0",
        "    step = 0",
        ("tests/test_journal_labels.py",),
    ),
    # -- issue 44: effects inside LangGraph's @task --
    (
        "labels read a checkpoint id that begins with c or s as a step or a call",
        "    numbered = base[:1] in (STEP_PREFIX, CALL_PREFIX) and base[1:].isdigit()",
        "    numbered = base[:1] in (STEP_PREFIX, CALL_PREFIX)",
        ("tests/test_journal_labels.py", "-k", "begin_like"),
    ),
)
