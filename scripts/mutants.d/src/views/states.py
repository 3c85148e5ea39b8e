"""The mutants of src/views/states.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 33: the inspector never shows or does more than the CLI
    (
        "a crashed run shows as interrupted",
        '    if ((due or interrupted) and left_held) or (due and not interrupted and effects.get("abandoned")):',
        "    if False:",
        ("tests/test_ui_stops.py", "-k", "crashed"),
    ),
    (
        "an interrupted thread whose lock was released shows as crashed",
        '    left_held = lock is not None and lock.get("owner") is not None  # a run that stops releases its lock',
        "    left_held = lock is not None",
        ("tests/test_ui_stops.py", "-k", "crashed"),
    ),
    (
        "an effect never completed shows as replayed",
        '    if entry.get("status") != "completed":\n        return False\n    counted',
        "    counted",
        ("tests/test_ui_accounts.py",),
    ),
    # -- issue 45: the on-call view --
    (
        'a Send is not taken for a task of the latest checkpoint',
        '    for task in checkpoint_tasks(channels, sends):',
        '    for task in checkpoint_tasks([c for c in channels if c != "__pregel_tasks"], sends):',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'edge_or_by_a_send'),
    ),
    (
        'Send packets not read on the list are judged by the writes of the first one',
        '            "status": task_outcome(written.get(task.path, ())) if task.name is not None else "due",',
        '            "status": task_outcome(written.get(task.path, ())),',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'every_shape and fanout'),
    ),
    (
        'a holder that stopped renewing its lock is taken for a running one',
        '        return "waiting for a lock" if lock_stalled(lock, now) else "running"',
        '        return "running"',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'renewing'),
    ),
    (
        'an outcome unknown is taken for a crash',
        '    return "outcome unknown" if effects.get("outcome unknown") else None',
        '    return None',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'every_shape and react'),
    ),
)
