"""The mutants of src/views/timeline.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 33: entries paged, whole values on request, the timeline
    (
        "the timeline's bars are not coloured by state",
        'classes = f"bar state-{str(effect.get(\'state\', \'\')).replace(\' \', \'-\')}"\n',
        'classes = "bar"\n',
        ('tests/test_ui_timeline.py',),
    ),
    (
        'the timeline does not indent nested paths',
        '{"x": 4 + 12 * depth,',
        '{"x": 4,',
        ('tests/test_ui_timeline.py',),
    ),
    (
        'the timeline does not mark a proven replay',
        'classes += " replayed" if effect.get("replayed") else ""\n',
        'classes += ""\n',
        ('tests/test_ui_browser.py', '-k', 'timeline'),
    ),
    (
        "the timeline marks a finished run as stopped",
        "    if stop not in STOPS:\n        return\n",
        "",
        ("tests/test_ui_timeline.py", "-m", "not server", "-k", "stopped"),
    ),
    (
        "the timeline places an aware checkpoint time as if it were UTC",
        '    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value',
        "    return value.replace(tzinfo=None)",
        ("tests/test_ui_timeline.py", "-m", "not server", "-k", "stopped"),
    ),
    # -- issue 45: the on-call view --
    (
        'the timeline writes characters XML cannot hold',
        '    return _NOT_XML.sub(lambda m: m[0].encode("unicode_escape", "backslashreplace").decode("ascii"), str(value))',
        '    return str(value)',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'control'),
    ),
)
