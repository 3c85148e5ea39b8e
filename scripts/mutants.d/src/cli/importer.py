"""The mutants of src/cli/importer.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 22: SecureLLM streams when the wrapped model would, and runs it inside its own callback run
    (
        "import-mongodbsaver draws its bar into logs and pipes",
        '    if not getattr(err, "isatty", lambda: False)():',
        "    if False:",
        ("tests/test_mongodbsaver_import.py", "-k", "progress_bar"),
    ),
)
