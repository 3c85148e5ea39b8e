"""The mutants of src/ui/app.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 22: SecureLLM streams when the wrapped model would, and runs it inside its own callback run
    (
        "ui writes without --allow-writes",
        "            if not guard.allow_writes:\n",
        "            if False:\n",
        ("tests/test_ui_api.py", "-k", "allow_writes"),
    ),
    (
        "ui writes without the CSRF token",
        "            if not guard.csrf_valid(",
        "            if False and not guard.csrf_valid(",
        ("tests/test_ui_api.py", "-k", "csrf"),
    ),
    (
        "ui serves a remote client without its token",
        "        if not self.guard.token_valid(presented):",
        "        if False:",
        ("tests/test_ui_api.py", "-k", "token"),
    ),
    (
        "ui serves a host name that is not loopback",
        "        if not self.guard.host_allowed(",
        "        if False and not self.guard.host_allowed(",
        ("tests/test_ui_api.py", "-k", "loopback"),
    ),
    # issue 33: the inspector never shows or does more than the CLI
    (
        "ui pages may be framed",
        "        response.headers.update(NO_FRAMING)\n",
        "",
        ("tests/test_ui_guards.py", "-k", "framed"),
    ),
    (
        "ui takes any limit str.isdigit accepts",
        "    if not LIMIT_TEXT.fullmatch(limit):",
        "    if not limit.isdigit():",
        ("tests/test_ui_guards.py", "-k", "odd_limit"),
    ),
    # issue 33: entries paged, whole values on request, the timeline
    (
        'ui takes any page str.isdigit accepts',
        '    if not LIMIT_TEXT.fullmatch(page) or not 1 <= int(page) <= MAX_ENTRIES_PAGE:',
        '    if not page.isdigit() or not 1 <= int(page) <= MAX_ENTRIES_PAGE:',
        ('tests/test_ui_bounds.py', '-k', 'odd_page'),
    ),
    (
        'ui takes page 0',
        '    if not LIMIT_TEXT.fullmatch(page) or not 1 <= int(page) <= MAX_ENTRIES_PAGE:',
        '    if not LIMIT_TEXT.fullmatch(page):',
        ('tests/test_ui_bounds.py', '-k', 'odd_page'),
    ),
    # -- issue 45: the on-call view --
    (
        'a write route reads a body its length says is too large',
        '    if length and (not length.isdigit() or int(length) > MAX_FORM_BYTES):\n        return None\n',
        '',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'write_route'),
    ),
    (
        'a write route reads a body of no stated length past its limit',
        '        if len(body) > MAX_FORM_BYTES:\n            return None\n',
        '',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'write_route'),
    ),
    (
        'a write route reads its body before checking the CSRF token',
        '            if not guard.csrf_valid(request.headers.get("x-csrf-token") or request.query_params.get("csrf")):',
        '            if not guard.csrf_valid(request.headers.get("x-csrf-token") or request.query_params.get("csrf") or _field(await _form(request) or {}, "csrf")):',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'write_route'),
    ),
    (
        'the JSON carries a NaN',
        '        return value if math.isfinite(value) else str(value)',
        '        return value',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'nan'),
    ),
    (
        'the JSON carries bytes raw',
        '        return f"<{len(value)} bytes>"',
        '        return value',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'bytes'),
    ),
    (
        'the JSON carries an ObjectId raw',
        '    return str(value)\n\n\ndef _environment',
        '    return value\n\n\ndef _environment',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'object'),
    ),
    (
        'the web list is not filtered by state',
        '            "state": params.get("state") or None}',
        '            "state": None}',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'filter'),
    ),
    (
        'a failure the views did not foresee answers bare text',
        '    handlers = {DurableMongoError: _refused, CliError: _refused, Exception: _failed}',
        '    handlers = {DurableMongoError: _refused, CliError: _refused}',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'no_check'),
    ),
)
