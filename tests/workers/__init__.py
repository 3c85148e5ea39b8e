"""Child-process workers of the reliability suite (tests/test_reliability_*.py)."""
