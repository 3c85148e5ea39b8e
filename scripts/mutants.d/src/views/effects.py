"""The mutants of src/views/effects.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "the page's Resolve and Discard send a visit's label instead of its stored key",
        '    fields.update({k: v for k, v in mapping(entry.get("visit")).items() if k in ("path", "occurrence")})\n',
        "",
        ("tests/test_ui_page_labels.py", "-m", "not server", "-k", "proves_them"),
    ),
    (
        "an effect's text is not scrubbed of the thread's credential values",
        '    return value if value is None or secrets is None else scrub(value, secrets)',
        '    return value',
        ('tests/test_ui_hostile.py', '-k', 'echoes'),
    ),
)
