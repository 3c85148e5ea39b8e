"""The mutants of src/journal/context.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "effects skip their claim in a run that does not hold the run lock",
        "    exclusive = bool(scope.guard(thread_id)) if scope.guard is not None else False",
        "    exclusive = True",
        ("tests/test_journal_costs.py", "-m", "not server", "-k", "without_the_run_lock"),
    ),
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "a run without a checkpointer that does not say so runs its effects unjournaled",
        "        if runs_without_checkpointer(config) and means_unjournaled(config):",
        "        if runs_without_checkpointer(config):",
        ("tests/test_stateless_runs.py", "-k", "does_not_say_so or bare_thread_pool"),
    ),
    # -- issue 47: typed plans --
    (
        "an ActivityJournal called without a position in an unjournaled run is not refused with a typed error",
        "    if scope.locator is None:\n        raise NoDurableScopeError(",
        "    if False:\n        raise NoDurableScopeError(",
        ("tests/test_stateless_runs.py", "-k", "without_a_position"),
    ),
)
