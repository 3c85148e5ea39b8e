"""The mutants of src/_langgraph.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 20: an edit made as the interrupted node completes it; its next visit is a new occurrence
    (
        "a run given no durability is taken for a synchronous one (its effects would not wait for the store)",
        'configurable.get(CONFIG_KEY_DURABILITY, "async")',
        'configurable.get(CONFIG_KEY_DURABILITY)',
        ("tests/test_langgraph_internals.py", "-k", "without_a_durability"),
    ),
    # -- issue 32: positions named by LangGraph's identity of the work --
    (
        "an Agent Server run is not taken for one meaning to run unjournaled",
        "    return isinstance(config, dict) and bool((config.get(\"metadata\") or {}).get(AGENT_SERVER_MARK))",
        "    return False",
        ("tests/test_stateless_runs.py", "-k", "agent"),
    ),
    # -- issue 45: the on-call view --
    (
        "the views decode with LangGraph's default serde, which builds whatever a document names",
        '        super().__init__(allowed_msgpack_modules=None, __unpack_ext_hook__=_shown_extension)',
        '        super().__init__()',
        ('tests/test_ui_hostile.py', '-m', 'not server', '-k', 'crafted'),
    ),
    (
        "a Send's tool call from create_agent (a list of one) is not named",
        '    if isinstance(arg, (list, tuple)) and len(arg) == 1:\n        arg = arg[0]\n',
        '',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'named and agent'),
    ),
    (
        'a task of a checkpoint that failed reads as due',
        '    if ERROR in channels:\n        return "failed"\n',
        '',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'named and send'),
    ),
    (
        "an effect's interrupt() is taken for its failure",
        '    return (kind, module) in _INTERRUPTS',
        '    return False',
        ('tests/test_views_states.py', '-m', 'not server', '-k', 'approval'),
    ),
)
