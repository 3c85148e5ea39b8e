"""The mutants of src/telemetry/instruments.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 46: until a provider is configured, an effect builds no span and no measure
    (
        "a tracer is taken, and spans built, though no tracer provider is configured",
        'return self.named_by_environment or getattr(self.trace, "_TRACER_PROVIDER", True) is not None',
        "return True",
        ("tests/test_telemetry.py", "-m", "not server", "-k", "no_provider_configured"),
    ),
    (
        "instruments are made, and measures taken, though no meter provider is configured",
        'return self.named_by_environment or getattr(self.metrics_module, "_METER_PROVIDER", True) is not None',
        "return True",
        ("tests/test_telemetry.py", "-m", "not server", "-k", "no_provider_configured"),
    ),
)
