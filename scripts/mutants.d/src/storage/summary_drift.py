"""The mutants of src/storage/summary_drift.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 23: the thread summary, kept by the root put's own command
    (
        "building the summaries starts each page's first thread afresh",
        "        folded, pending = _fold(docs, pending)\n",
        "        folded, pending = _fold(docs, None)\n",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "format_1"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: an upgrade overwrites a summary a later checkpoint was counted in",
        '        {**summary_filter(summary["thread_id"]), LATEST: {"$lte": summary[LATEST]}},',
        '        summary_filter(summary["thread_id"]),',
        ("tests/test_thread_summaries.py", "tests/test_storage_migrations.py", "-m", "not server", "-k", "rolls_a_summary_back or rolls_back"),
    ),
    (
        "issue 34: a summary past what the upgrade read is left with the count a racing put started",
        '        elif verdict == "past":\n            past.append(summary["thread_id"])',
        '        elif verdict == "past":\n            pass',
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "rolls_a_summary_back and reads_the_summaries"),
    ),
    (
        "issue 34: a summary write that did not hold is not counted again",
        "        past += [s[\"thread_id\"] for s in behind if _verdict(again.get(s[\"thread_id\"]), s) != \"held\"]\n",
        "",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "rolls_a_summary_back"),
    ),
    (
        "issue 34: a recount sets the count whatever was put since",
        "        if (yield from ask(FencedUpdate(names.checkpoints, *_raise_to(summary)))):\n            return True\n",
        "        yield Upsert(names.checkpoints, [UpdateOne({\"_id\": summary_id(thread_id)}, _raise_to(summary)[1], upsert=True)])\n        return True\n",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "recount_never_loses"),
    ),
    (
        "issue 34: a short summary is taken for a right one",
        '    return "short" if count < folded[COUNT] else "held"',
        '    return "held"',
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "rolls_a_summary_back and before_its_read"),
    ),
    (
        "issue 34: a summary no count can settle is taken for settled",
        "every checkpoint\n    return False\n",
        "every checkpoint\n    return True\n",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "later_checkpoint_than_any"),
    ),
    (
        "issue 34: doctor reads every thread of a large database",
        "        if seconds is not None and time.monotonic() - started >= seconds:",
        "        if False:",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "time_bound"),
    ),
    (
        "issue 34: the thread lists list a thread whose summary is damaged twice",
        "        if docs and not damaged:",
        "        if docs:",
        ("tests/test_cli_corrupt.py", "-m", "not server", "-k", "non_string"),
    ),
)
