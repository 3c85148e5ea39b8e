"""The mutants of src/journal/documents.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "journal take-over condition",
        '    fence = entry_filter(pos, fence=entry["fence"], status=entry["status"])\n'
        '    if entry["status"] == "started":\n'
        '        fence["lease_until"] = entry["lease_until"]',
        "    fence = entry_filter(pos)",
        ("tests/test_journal_fences.py",),
    ),
    (
        "journal take-over ignores a renewal after its read",
        '        fence["lease_until"] = entry["lease_until"]',
        "        pass",
        ("tests/test_journal_fences.py",),
    ),
    (
        "a journal entry is checked for the claim's fields only, not for its status's own",
        "    return _claim_problem(entry) or _input_problem(entry) or _status_problem(entry, status)",
        "    return _claim_problem(entry) or _input_problem(entry)",
        ("tests/test_journal_entry_problem.py",),
    ),
    (
        "a journal entry without a fence is acted on",
        '("fence", True)',
        '("fence", False)',
        ("tests/test_journal_entry_problem.py",),
    ),
    (
        "a completed entry whose outcome counts no chunk is replayed",
        ' or outcome.get("chunks", 1) < 1:',
        ":",
        ("tests/test_journal_entry_problem.py",),
    ),
    (
        "journal renewal fence (an expired lease renews)",
        'return {**held_fence(pos, fence), "lease_until": {"$gt": now}}',
        "return held_fence(pos, fence)",
        ("tests/test_journal_fences.py",),
    ),
    # issue 21: the journal follows the recorded history under stalls, cancellations and handled failures
    (
        "a claim the self-fence frees is not marked as never run",
        '    if not_run:\n        fields["not_run"] = True\n',
        "",
        ("tests/test_self_fencing.py", "-m", "not server", "-k", "outlived"),
    ),
    # -- issue 46: outcomes awaiting a person, counted once --
    (
        "an outcome unknown is marked, and counted, by every run that read it unmarked",
        'marked = {**held_fence(pos, fence), "unknown_since": {"$exists": False}}',
        "marked = held_fence(pos, fence)",
        ("tests/test_telemetry.py", "-m", "not server", "-k", "read_the_entry_unmarked"),
    ),
    (
        "a person's decision counts an outcome off the awaiting ones though it was never marked unknown",
        'return {**entry_filter(pos), "unknown_since": {"$exists": True}}, {"$unset"',
        'return entry_filter(pos), {"$unset"',
        ("tests/test_telemetry.py", "-m", "not server", "-k", "counted_once_until"),
    ),
)
