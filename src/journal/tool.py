"""``SecureTool``: any LangChain tool, each call journaled once and replayed on resume."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from .context import current_effect_scope
from .documents import EffectCall
from .journal import ActivityJournal


def _tool_call_id(input: Any) -> str | None:
    if isinstance(input, dict) and input.get("type") == "tool_call" and isinstance(input.get("id"), str):
        return input["id"]
    return None


class SecureTool(BaseTool):
    """Wraps a sync or async LangChain tool; works wherever the tool does (``ToolNode``, agents).

    A call made for a tool call (what ``ToolNode`` sends) is keyed by its
    ``tool_call_id``: when the LLM that issued it is a ``SecureLLM`` the id is
    replayed with the response, so tools run concurrently keep stable
    positions. The recorded input is the model-supplied arguments (injected
    state, store and runtime are left out).

    Example::

        tools = [SecureTool(search), SecureTool(send_email, at_most_once=True)]
        graph.add_node("tools", ToolNode(tools))
    """

    tool: BaseTool
    journal: ActivityJournal | None = None
    at_most_once: bool = False

    def __init__(self, tool: BaseTool, **kwargs: Any) -> None:
        fields = {
            "name": tool.name,
            "description": tool.description,
            "args_schema": tool.args_schema,
            "return_direct": tool.return_direct,
            "response_format": tool.response_format,
            "metadata": tool.metadata,
            "tags": tool.tags,
        }
        super().__init__(tool=tool, **{**fields, **kwargs})

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

    def _journal(self) -> ActivityJournal:
        return self.journal or current_effect_scope().journal

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return self._journal().run(self._call(input), lambda: self.tool.invoke(input, config, **kwargs))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self._journal().arun(self._call(input), lambda: self.tool.ainvoke(input, config, **kwargs))

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        # Reached only through BaseTool.run(); journaled like invoke.
        return self.invoke(kwargs or (args[0] if args else {}))

    async def _arun(self, *args: Any, **kwargs: Any) -> Any:
        return await self.ainvoke(kwargs or (args[0] if args else {}))
