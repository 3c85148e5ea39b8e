"""What the library tells OpenTelemetry: a span per journaled effect, the run locks' takes and losses, the
checkpoint stores and the waits for a root checkpoint, and the metrics an on-call team graphs and alerts on.

Beneath every layer that emits (``journal``, ``runs``, ``checkpointer``): it imports nothing of the library but
``errors``, and ``opentelemetry`` only lazily, when the first span or measure is asked for, and only if
``opentelemetry-api`` is installed (the ``otel`` extra). Until an application configures a tracer or a meter
provider, an effect costs one check of each (``instruments.py``). docs/observability.md lists what is emitted.
"""
