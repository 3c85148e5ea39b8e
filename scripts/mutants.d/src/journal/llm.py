"""The mutants of src/journal/llm.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    (
        "a replayed call's callback run reports the usage the real call used",
        'shown = message.model_copy(update={"usage_metadata": None})',
        "shown = message",
        ("tests/test_journal_callbacks.py", "-m", "not server", "-k", "counts_its_tokens_once"),
    ),
    # issue 22: SecureLLM streams when the wrapped model would, and runs it inside its own callback run
    (
        "SecureLLM streams though the wrapped model cannot",
        "        if not isinstance(model, BaseChatModel):\n            return super()._should_stream(",
        "        if True:\n            return super()._should_stream(",
        ("tests/test_journal_streaming.py",),
    ),
    (
        "SecureLLM nests the wrapped model's run under its own",
        "        return (model, bound) if isinstance(model, BaseChatModel) else None",
        "        return None",
        ("tests/test_journal_streaming.py", "tests/test_journal_callbacks.py"),
    ),
    (
        "SecureLLM runs a binding with a config inside its own run",
        "        if type(model) is RunnableBinding and not model.config and not model.config_factories:",
        "        if isinstance(model, RunnableBinding):",
        ("tests/test_journal_streaming.py",),
    ),
    (
        "SecureLLM's one run of a real call hides the tokens it used",
        "        if self.recorded is None or not usage:",
        "        if not usage:",
        ("tests/test_journal_callbacks.py", "-k", "counts_its_tokens_once or says_where_it_is"),
    ),
    # -- issue 36: the first hour --
    (
        "SecureLLM's runs and events are named SecureLLM, not the wrapped model",
        '        if name is None and self.name is None and hasattr(self._chat_model, "get_name"):',
        "        if False:",
        ("tests/test_journal_streaming.py", "-k", "each_call_shows_once"),
    ),
)
