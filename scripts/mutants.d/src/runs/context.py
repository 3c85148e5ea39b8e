"""The mutants of src/runs/context.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 35: what a run's code carries, in one context
    (
        "a run context's block never puts its field back",
        "        _RUN.set(_with(_RUN.get(), self._index, self._before))\n",
        "        pass\n",
        ("tests/test_journal_store.py", "-m", "not server", "-k", "nested_effects_number_under_it"),
    ),
    (
        "a run context's block puts back every other field as empty",
        "_RUN.set(_with(_RUN.get(), self._index, self._before))",
        "_RUN.set(_with(RunContext(), self._index, self._before))",
        ("tests/test_run_context.py", "-m", "not server", "-k", "generator_yielding"),
    ),
)
