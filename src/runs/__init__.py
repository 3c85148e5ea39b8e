"""One run per thread: the run lock."""
