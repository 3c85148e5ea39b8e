"""One run's binding to the platform: its durable scope and effect scope, in every task that runs its nodes.

A run on the platform checkpointer binds its scopes when it starts
(``DurablePlatform._run_starts``), in the context of the call that reads its first
checkpoint. LangGraph runs a step's nodes in tasks (or threads) that inherit that
context, so one binding usually reaches every node. A caller that pulls each step
of an ``astream`` in an asyncio task of its own (Agent Server does:
``langgraph_api.asyncio.wait_if_not_done``) gives later steps a context without
it; ``RunBinding`` binds the run again there.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import BaseCallbackHandler

from ._langgraph import StartingRun
from .journal import EffectScope
from .journal.context import activate_effect_scope
from .resolver import DurableScope
from .resolver.scope import maybe_durable_scope, task_trace_handler


class RunBinding(BaseCallbackHandler):
    """Re-binds one run's durable scope and effect scope in every task that starts a node of the run.

    Given to the run's callback manager after the trace router, it is called, inline, in each task
    that starts a node (or any chain) of the run. Where the run's binding is in the context, the
    router has handed the start to the run's trace and nothing is left to do. Where it is not, it
    binds the run's scopes in this task's context, which the node and everything it starts inherit,
    and hands the start to the trace itself: each start reaches the trace once.
    """

    run_inline = True

    def __init__(self, thread_id: str, scope: DurableScope, effects: EffectScope) -> None:
        self.thread_id, self.scope, self.effects = thread_id, scope, effects

    def on_chain_start(self, serialized: Any, inputs: Any, *, metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        thread_id = (metadata or {}).get("thread_id")
        if thread_id is None or str(thread_id) != self.thread_id or maybe_durable_scope(self.thread_id) is self.scope:
            return
        self.scope.activate(self.thread_id)
        activate_effect_scope(self.effects, self.thread_id)
        self.scope.trace.on_chain_start(serialized, inputs, metadata=metadata, **kwargs)


def bind_run(run: StartingRun, thread_id: str, scope: DurableScope, effects: EffectScope) -> None:
    """Bind a starting run's scopes in the current context, and in every task that later starts one of its nodes."""
    scope.activate(thread_id)
    activate_effect_scope(effects, thread_id)
    run.add_callback_handler(task_trace_handler())
    run.add_callback_handler(RunBinding(thread_id, scope, effects))
