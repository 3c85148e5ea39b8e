"""The mutants of src/resolver/running.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "a retried function node's subgraph runs keep LangGraph's counter, which goes on across attempts",
        "        run = observed\n",
        "        run = segment.counter\n",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "retr"),
    ),
    (
        "a child compiled with checkpointer=True is resolved as if its occurrences could be told apart",
        "    _refuse_own_history(ns)\n",
        "",
        ("tests/test_platform_replay.py", "-m", "not server", "-k", "built_while_it_runs"),
    ),
    # -- issue 44: edits inside children --
    (
        "a node an edit inside a child completed continues the visit it completed",
        "    return edit.shift if edit is not None and level.segment.name not in edit.completed else 0",
        "    return edit.shift if edit is not None else 0",
        ("tests/test_operator_actions.py", "-m", "not server", "-k", "every_visit_after and stored"),
    ),
)
