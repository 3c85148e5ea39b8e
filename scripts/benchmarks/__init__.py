"""scripts/bench's package: one module per section, what they share in ``common``, the command line in
``__main__`` (see its docstring)."""
