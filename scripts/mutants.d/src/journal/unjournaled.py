"""The mutants of src/journal/unjournaled.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 20: an edit made as the interrupted node completes it; its next visit is a new occurrence
    (
        "a run on another saver is taken for a run without a checkpointer (its effects would run unjournaled)",
        "    return _langgraph.task_writer(configurable) is not None and _langgraph.run_checkpointer(configurable) is None",
        "    return _langgraph.task_writer(configurable) is not None",
        ("tests/test_stateless_runs.py", "-k", "still_refused"),
    ),
    (
        "every run without a checkpointer is logged, not the first of its graph",
        "        if graph in _logged:\n            return\n",
        "",
        ("tests/test_stateless_runs.py", "-k", "says_so_once"),
    ),
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "a run that opted in is not taken for one meaning to run unjournaled",
        " or (config.get(\"configurable\") or {}).get(UNJOURNALED) is True",
        "",
        ("tests/test_stateless_runs.py", "-k", "opted"),
    ),
)
