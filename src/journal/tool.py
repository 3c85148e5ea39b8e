"""``SecureTool``: any LangChain tool, each call journaled once and replayed on resume."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from .context import Journal, current_effect_scope
from .documents import EffectCall
from .journal import ActivityJournal
from .observe import observed_config


def _tool_call_id(input: Any) -> str | None:
    if not isinstance(input, dict) or input.get("type") != "tool_call":
        return None
    tool_call_id = input.get("id")
    return tool_call_id if isinstance(tool_call_id, str) else None


class _Replayed(BaseTool):
    """The callback run of a replayed ``SecureTool`` call: LangChain's tool run, returning the recorded outcome."""

    outcome: Any

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        return self.outcome

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        return self.outcome


class SecureTool(BaseTool):
    """A LangChain tool whose every call is journaled ("secure"): run once, replayed when its node re-runs.

    "Secure" means journaled: the first call at a position runs the tool and
    records its result; a resume or retry of the node returns the recorded
    result without running the tool again. It wraps a sync or async tool and
    works wherever the tool does (``ToolNode``, agents).

    A call made for a tool call (what ``ToolNode`` sends) is keyed by its
    ``tool_call_id``: when the LLM that issued it is a ``SecureLLM`` the id is
    replayed with the response, so tools run concurrently keep stable
    positions. The recorded input is the model-supplied arguments (injected
    state, store and runtime are left out).

    Callbacks see one tool run per call, whose metadata ``durable`` holds ``replayed``, ``path``, ``node``,
    ``effect_key`` and ``idempotency_key``: the wrapped tool's run when it runs, or on a replay a run of the
    same name (``on_tool_start``/``on_tool_end``, tagged ``durable:replayed``) that returns the recorded result.

    Example::

        tools = [SecureTool(search), SecureTool(send_email, at_most_once=True)]
        graph.add_node("tools", ToolNode(tools))

    Args:
        tool: the tool to wrap; its name, description, schema and metadata are kept.
        journal: defaults to the durable scope's (a durable scope is needed either way).
        at_most_once: never run again a call whose worker died mid-flight
            (``EffectOutcomeUnknownError`` for a person to settle).
    """

    tool: BaseTool
    journal: ActivityJournal | None = None
    at_most_once: bool = False

    def __init__(
        self, tool: BaseTool, *, journal: ActivityJournal | None = None, at_most_once: bool = False, **kwargs: Any
    ) -> None:
        fields = {
            "name": tool.name,
            "description": tool.description,
            "args_schema": tool.args_schema,
            "return_direct": tool.return_direct,
            "response_format": tool.response_format,
            "metadata": tool.metadata,
            "tags": tool.tags,
        }
        super().__init__(tool=tool, journal=journal, at_most_once=at_most_once, **{**fields, **kwargs})

    def _call(self, input: Any) -> EffectCall:
        tool_call_id = _tool_call_id(input)
        args = input["args"] if tool_call_id is not None else input
        return EffectCall(
            "tool", self.name, input=self._model_args(args), tool_call_id=tool_call_id, at_most_once=self.at_most_once
        )

    def _model_args(self, args: Any) -> Any:
        """The arguments the model chose: injected ones (state, runtime, ...) are not the call's input."""
        schema = self.tool.tool_call_schema
        if not isinstance(args, dict):
            return args
        if isinstance(schema, type) and issubclass(schema, BaseModel):
            return {k: v for k, v in args.items() if k in schema.model_fields}
        if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
            return {k: v for k, v in args.items() if k in schema["properties"]}
        return args

    def _journal(self) -> Journal:
        return self.journal or current_effect_scope().journal

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the tool once at its journal position, or return the result recorded there.

        Args:
            input: the tool's arguments, or a tool call (``{"type": "tool_call", "id", "args", ...}``),
                which is keyed by its id.
            config: passed to the tool.
            **kwargs: passed to the tool's ``invoke``.

        Returns:
            What the tool returned (a ``ToolMessage`` for a tool call), now or when it was recorded.

        Raises:
            NoDurableScopeError: no durable scope is running (a graph compiled or attached by
                ``DurablePlatform``, or ``effect_scope``), or no LangGraph task runs here.
            Exception: the journal's errors (see ``ActivityJournal.run``: ``NondeterminismError``,
                ``EffectInProgressError``, ``EffectOutcomeUnknownError``, ``RunLockLostError``, ...) and
                whatever the tool raises.
        """
        return self._journal().run(
            self._call(input),
            lambda: self.tool.invoke(input, observed_config(config), **kwargs),
            replay=lambda outcome: self._replayed(outcome).invoke(input, observed_config(config), **kwargs),
        )

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Async ``invoke`` on the journal's async client: same arguments, return and errors."""
        return await self._journal().arun(
            self._call(input),
            lambda: self.tool.ainvoke(input, observed_config(config), **kwargs),
            replay=lambda outcome: self._replayed(outcome).ainvoke(input, observed_config(config), **kwargs),
        )

    def _replayed(self, outcome: Any) -> _Replayed:
        """A tool like this one whose run returns ``outcome``: what callbacks see of a replay."""
        return _Replayed(
            name=self.name,
            description=self.description,
            args_schema=self.args_schema,
            metadata=self.metadata,
            tags=self.tags,
            outcome=outcome,
        )

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        # Reached only through BaseTool.run(); journaled like invoke.
        return self.invoke(kwargs or (args[0] if args else {}))

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        return await self.ainvoke(kwargs or (args[0] if args else {}))
