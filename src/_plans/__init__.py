"""The plan layer: storage logic written once as generators of requests, run by a sync and an async interpreter.

``requests`` (what a plan may yield), ``interpreters`` (who runs it),
``quirks`` (where servers differ), ``faces`` (a storage class's two faces),
``lease`` (clock, backoff, renewal) and ``owner`` (who holds a lease). Nothing
here knows the checkpointer, the journal or the run lock.
"""
