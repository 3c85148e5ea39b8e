"""The mutants of scripts/mutants.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "a mutated file keeps the bytecode cached for the text it replaced",
        "    Path(importlib.util.cache_from_source(str(source))).unlink(missing_ok=True)",
        "    pass",
        ("tests/test_mutants.py::test_a_mutant_the_size_of_the_text_it_replaced_runs_instead_of_its_cached_bytecode",),
    ),
)
