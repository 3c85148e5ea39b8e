"""The activity journal: LLM and tool effects recorded once, replayed when a node re-runs.

LangGraph re-runs a whole node on resume (after an exception, a crash,
``interrupt()`` then ``Command(resume=...)``, a ``RetryPolicy`` retry). Calls
made through ``SecureLLM``, ``SecureTool`` and ``@effect`` are recorded in the
``activity_journal`` collection beside the checkpoints, one document per
effect position, and replayed instead of run again.

Example::

    journal = ActivityJournal.for_checkpointer(saver)
    llm = SecureLLM(ChatOpenAI(model="gpt-4o")).bind_tools([search])
    tools = ToolNode([SecureTool(search)])
    with durable_scope(resolver), effect_scope(journal, ResolverLocator()):  # DurablePlatform does this
        graph.invoke(inputs, config)
"""

from ..resolver.position import NodePosition
from .canonical import digest
from .context import EffectInfo, EffectScope, current_effect, current_effect_scope, effect_scope
from .documents import EffectCall
from .effect import effect
from .journal import ActivityJournal
from .llm import SecureLLM
from .locator import NodeLocator, ResolverLocator, langgraph_task
from .position import EffectPosition
from .redaction import preview, redact
from .tool import SecureTool

__all__ = [
    "ActivityJournal",
    "EffectCall",
    "EffectInfo",
    "EffectPosition",
    "EffectScope",
    "NodeLocator",
    "NodePosition",
    "ResolverLocator",
    "SecureLLM",
    "SecureTool",
    "current_effect",
    "current_effect_scope",
    "digest",
    "effect",
    "effect_scope",
    "langgraph_task",
    "preview",
    "redact",
]
