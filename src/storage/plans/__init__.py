"""The plan layer: storage logic written once as generators of requests, run by a sync and an async interpreter.

``requests`` (what a plan may yield), ``interpreters`` (who runs it),
``quirks`` (where servers differ), ``faces`` (a storage class's two faces) and
``lease`` (clock, backoff, self-fence). Nothing here knows the checkpointer,
the journal or the run lock. What is not a plan lives beside this package, below
it: ``connections`` (the clients and their lifecycle), ``liveness`` (who holds a
lease, and whether that process is gone) and ``heartbeats`` (what renews a lease).
"""
