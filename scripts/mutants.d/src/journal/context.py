"""The mutants of src/journal/context.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "a node of a strict msgpack run finds no effect scope (its saver is a clone of the platform's)",
        '        served = _served.get(getattr(saver, "base_saver", saver))',
        "        served = _served.get(saver)",
        ("tests/test_journal_serde_modes.py", "-m", "not server", "-k", "plain"),
    ),
    (
        "a served platform is kept alive by being served, with its checkpointer and clients",
        "_held_weakly(scope_for) if inspect.ismethod(scope_for) else (lambda: scope_for)",
        "(lambda: scope_for)",
        ("tests/test_platform_forms.py", "-m", "not server", "-k", "gone_leaves"),
    ),
    (
        "effects skip their claim in a run that does not hold the run lock",
        "    exclusive = bool(scope.guard(thread_id)) if scope.guard is not None else False",
        "    exclusive = True",
        ("tests/test_journal_costs.py", "-m", "not server", "-k", "without_the_run_lock"),
    ),
    # -- issue 36: the first hour --
    (
        "the platform is served through weakref.WeakMethod, which prints at interpreter exit",
        "    _served[checkpointer] = _held_weakly(scope_for) if",
        "    _served[checkpointer] = weakref.WeakMethod(scope_for) if",
        ("tests/test_platform_forms.py", "-k", "noise"),
    ),
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "a run without a checkpointer that does not say so runs its effects unjournaled",
        "        if runs_without_checkpointer(config) and means_unjournaled(config):",
        "        if runs_without_checkpointer(config):",
        ("tests/test_stateless_runs.py", "-k", "does_not_say_so or bare_thread_pool"),
    ),
)
