"""The mutants of src/views/plans.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 23: the thread summary, kept by the root put's own command
    (
        "the thread list pages summaries out of thread id order",
        'SUMMARY_PROJECTION, sort=[("thread_id", 1)], limit=',
        'SUMMARY_PROJECTION, sort=[("latest", -1)], limit=',
        ("tests/test_views_servers.py", "tests/test_cli_threads.py", "-m", "not server"),
    ),
    # -- issue 34: stored data comes back as it was and never acts as an instruction --
    (
        "issue 34: the thread lists hide a thread whose summary is missing",
        "    missing = yield from unsummarized_plan(names, condition, [s.get(\"thread_id\") for s in found], limit + 1)",
        "    missing: list = []",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "summary_is_missing"),
    ),
    (
        "issue 34: the thread lists page past an unsummarized thread",
        '        condition["$lt"] = min(condition.get("$lt", found[limit]["thread_id"]), found[limit]["thread_id"])',
        "        pass",
        ("tests/test_thread_summaries.py", "-m", "not server", "-k", "summary_is_missing"),
    ),
    # issue 33: the inspector never shows or does more than the CLI
    (
        "the views send a lone surrogate to the server",
        '        text.encode("utf-8")\n',
        "        pass\n",
        ("tests/test_ui_guards.py", "-k", "surrogate"),
    ),
    (
        "a prefix ending in U+10FFFF lists every id after it",
        '    kept = prefix.rstrip("\\U0010ffff")\n    if not kept:',
        '    kept = prefix\n    if kept[-1] == "\\U0010ffff":',
        ("tests/test_ui_guards.py", "-k", "unicode_edges and not server"),
    ),
    (
        "a prefix ending in U+D7FF is bounded by a surrogate",
        "chr(0xE000 if 0xD800 <= following <= 0xDFFF else following)",
        "chr(following)",
        ("tests/test_ui_guards.py", "-k", "unicode_edges and not server"),
    ),
    (
        "the thread list keeps ids a server ordering UTF-16 returns past the prefix",
        '    listed = [s for s in listed if not isinstance(s.get("thread_id"), str) or s["thread_id"].startswith(prefix)]\n',
        "",
        ("tests/test_ui_guards.py", "-k", "unicode_edges_on_a_server"),
    ),
    (
        "the thread list reads every journal entry of its page's threads",
        '        Find(names.journal, {**entries, "status": {"$nin": list(FINISHED)}}, ENTRY_STATE_PROJECTION),',
        '        Find(names.journal, {**entries, "status": {"$nin": []}}, ENTRY_STATE_PROJECTION),',
        ("tests/test_ui_bounds.py",),
    ),
    # issue 33: entries paged, whole values on request, the timeline
    (
        "a thread's page reads every journal entry after its start",
        '{"$skip": skip}, {"$limit": ENTRIES_PAGE + 1},\n',
        '{"$skip": skip},\n',
        ('tests/test_ui_bounds.py', '-k', 'page_of_entries and not server or paged'),
    ),
    (
        'the views take a page number out of range',
        'not isinstance(page, int) or not 1 <= page <= MAX_ENTRIES_PAGE:',
        'not isinstance(page, int):',
        ('tests/test_ui_bounds.py', '-k', 'odd_page'),
    ),
    (
        'the views take a bool or text as a page number',
        '    if isinstance(page, bool) or not isinstance(page, int) or not 1',
        '    if not 1',
        ('tests/test_ui_bounds.py', '-k', 'odd_page'),
    ),
    (
        "a later page numbers its visits from its own first entry",
        "    shown = labelled(page, number=first_page)\n",
        "    shown = labelled(page)\n",
        ("tests/test_ui_page_labels.py", "-m", "not server", "-k", "proves_them"),
    ),
    (
        "an unfinished or failed entry keeps its stored key though its visit is labelled on the page",
        "        if named is None:\n            return labelled([entry], number=False)[0]\n",
        "        return labelled([entry], number=False)[0]\n",
        ("tests/test_ui_page_labels.py", "-m", "not server", "-k", "proves_them"),
    ),
    (
        "a thread page reads all its entries not completed",
        "             sort=[(\"_id\", -1)], limit=OPEN_SHOWN + 1),",
        "             sort=[(\"_id\", -1)]),",
        ("tests/test_ui_page_labels.py", "-m", "not server", "-k", "not_completed"),
    ),
    (
        "issue 25: threads names a bad thread id with an operator query",
        'Find(names.checkpoints, {"thread_id": {"$eq": thread_id}, "checkpoint_ns": SUMMARY_NS}, limit=1)',
        'Find(names.checkpoints, {"thread_id": thread_id, "checkpoint_ns": SUMMARY_NS}, limit=1)',
        ("tests/test_cli_corrupt.py", "-m", "not server", "-k", "threads"),
    ),
    (
        'the thread list counts an interrupted effect as failed',
        '{"$group": {"_id": {"thread_id": "$thread_id", **FINISHED_GROUP}, "n": {"$sum": 1}}},',
        '{"$group": {"_id": {"thread_id": "$thread_id", "status": "$status"}, "n": {"$sum": 1}}},',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'approval'),
    ),
)
