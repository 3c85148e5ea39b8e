"""The mutants of src/storage/visit_keys.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "the upgrade from format 2 ignores the root_key its root-level entries carry",
        '    stood_for = doc.get("root_key") if depth == 0 else None',
        "    stood_for = None",
        ("tests/test_format_upgrade.py", "-m", "not server", "-k", "resumes_after_the_upgrade"),
    ),
    (
        "the upgrade from format 2 keys a Send's task as an edge-triggered one",
        '    send = ordinal["index"] is not None',
        "    send = False",
        ("tests/test_format_upgrade.py", "-m", "not server", "-k", "resumes_after_the_upgrade"),
    ),
    (
        "issue 44: a damaged entry copied keeps the source's key",
        '    else:\n        del doc["idempotency_key"]',
        "",
        ("tests/test_copied_keys.py", "-m", "not server", "-k", "damaged"),
    ),
    (
        "issue 44: a released run lock holds the upgrade back",
        '    return (yield from ask(Find(names.runs, {"owner": {"$ne": None}}, fields, [("thread_id", 1)], shown + 1)))',
        '    return (yield from ask(Find(names.runs, {}, fields, [("thread_id", 1)], shown + 1)))',
        ("tests/test_upgrade_in_flight.py", "-m", "not server", "-k", "at_an_interrupt and format2"),
    ),
)
