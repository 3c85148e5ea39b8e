"""The mutants of src/_lru.py: (name, old text, new text, the tests that must kill it), run by scripts/mutants.py."""

MUTANTS = (
    # issue 35: one bounded map
    (
        "a bounded map forgets nothing: what a saver remembers grows without end",
        "        while self.capacity is not None and len(self) > self.capacity:",
        "        while False:",
        ("tests/test_lru.py",),
    ),
    (
        "a use does not make a key recent: the bounded map forgets what is in use",
        "        self.move_to_end(key)\n        return self[key]",
        "        return self[key]",
        ("tests/test_lru.py",),
    ),
)
