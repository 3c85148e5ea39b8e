"""``SecureLLM``: any LangChain chat model, each response journaled once and replayed on resume."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManager, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, message_chunk_to_message
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from langgraph.constants import TAG_NOSTREAM

from .context import current_effect_scope
from .documents import EffectCall
from .journal import ActivityJournal


def _merge(chunks: list[AIMessageChunk]) -> BaseMessage:
    """What a stream records: its chunks joined into one message (as ``invoke`` would return)."""
    if not chunks:
        return AIMessage(content="")
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    return message_chunk_to_message(merged)


def _replay(message: BaseMessage) -> list[AIMessageChunk]:
    """A recorded message as the one chunk a replayed stream yields."""
    if isinstance(message, AIMessageChunk):
        return [message]
    tool_call_chunks = [
        {"name": c["name"], "args": json.dumps(c["args"]), "id": c.get("id"), "index": i}
        for i, c in enumerate(getattr(message, "tool_calls", None) or [])
    ]
    return [
        AIMessageChunk(
            content=message.content,
            id=message.id,
            additional_kwargs=message.additional_kwargs,
            response_metadata=message.response_metadata,
            tool_call_chunks=tool_call_chunks,
            usage_metadata=getattr(message, "usage_metadata", None),
            chunk_position="last",
        )
    ]


class SecureLLM(BaseChatModel):
    """A chat model whose every response is journaled ("secure"): recorded once, replayed when its node re-runs.

    "Secure" means journaled: a call's response is recorded in the activity
    journal the first time and returned from there when the node runs again
    (resume, retry), so the model is not called again.

    ``invoke``, ``ainvoke``, ``stream``, ``astream``, ``bind_tools`` and
    ``with_structured_output`` keep working (a replayed stream yields the
    recorded message as one chunk), inside a node or an agent constructor
    (``create_agent``, the prebuilt ReAct agent). The ids of a recorded
    response's tool calls then key the ``SecureTool`` effects they trigger.

    Example::

        llm = SecureLLM(ChatOpenAI(model="gpt-4o")).bind_tools([search])
        reply = llm.invoke(state["messages"])   # the same reply on every resume

    Args:
        model: a chat model, or any runnable returning a message (a chat
            model bound to tools, say).
        journal: defaults to the durable scope's (a durable scope is needed either way: it says
            where the call is).
        effect_name: the entry's ``name``; the model's name by default.

    Raises (from ``invoke``, ``stream`` and their async twins):
        NoDurableScopeError: called outside a durable scope (a graph compiled or attached by
            ``DurablePlatform``, or ``effect_scope``).
        Exception: the journal's errors (see ``ActivityJournal.run``) and what the model raises.
    """

    model: Any
    journal: ActivityJournal | None = None
    effect_name: str | None = None

    def __init__(self, model: Runnable | BaseChatModel, **kwargs: Any) -> None:
        super().__init__(model=model, **kwargs)

    @property
    def _chat_model(self) -> Any:
        return self.model.bound if isinstance(self.model, RunnableBinding) else self.model

    @property
    def _llm_type(self) -> str:
        return "secure-" + str(getattr(self._chat_model, "_llm_type", type(self._chat_model).__name__))

    @property
    def _name(self) -> str:
        inner = self._chat_model
        for attr in ("model_name", "model", "model_id"):
            value = getattr(inner, attr, None)
            if isinstance(value, str) and value:
                return self.effect_name or value
        return self.effect_name or type(inner).__name__

    def _journal(self) -> ActivityJournal:
        return self.journal or current_effect_scope().journal

    def _call(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> EffectCall:
        return EffectCall(
            "llm", self._name, input={"messages": messages, "stop": stop, **kwargs}, preview=messages[-1] if messages else ""
        )

    @staticmethod
    def _config(run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None) -> RunnableConfig:
        """The wrapped model's run nests under ours, tagged so LangGraph streams our tokens, not both."""
        if run_manager is None:
            return {"tags": [TAG_NOSTREAM]}
        child = CallbackManager(handlers=[], parent_run_id=run_manager.run_id)
        child.set_handlers(run_manager.inheritable_handlers)
        child.add_tags(run_manager.inheritable_tags)
        child.add_metadata(run_manager.inheritable_metadata)
        child.add_tags([TAG_NOSTREAM], inherit=False)
        return {"callbacks": child}

    # -- the chat model contract ----------------------------------------------------

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        config = self._config(run_manager)
        message = self._journal().run(
            self._call(messages, stop, kwargs), lambda: self.model.invoke(messages, config, stop=stop, **kwargs)
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        config = self._config(run_manager)
        message = await self._journal().arun(
            self._call(messages, stop, kwargs), lambda: self.model.ainvoke(messages, config, stop=stop, **kwargs)
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        config = self._config(run_manager)
        chunks = self._journal().run_stream(
            self._call(messages, stop, kwargs),
            lambda: self.model.stream(messages, config, stop=stop, **kwargs),
            _merge,
            _replay,
        )
        for chunk in chunks:
            generation = ChatGenerationChunk(message=chunk)
            if run_manager:
                run_manager.on_llm_new_token(chunk.text, chunk=generation)
            yield generation

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        config = self._config(run_manager)
        chunks = self._journal().arun_stream(
            self._call(messages, stop, kwargs),
            lambda: self.model.astream(messages, config, stop=stop, **kwargs),
            _merge,
            _replay,
        )
        async for chunk in chunks:
            generation = ChatGenerationChunk(message=chunk)
            if run_manager:
                await run_manager.on_llm_new_token(chunk.text, chunk=generation)
            yield generation

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | Any],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[Any, AIMessage]:
        """Bind tools the way the wrapped model does; its responses stay journaled.

        Args:
            tools: the tools, in any form the wrapped model's ``bind_tools`` accepts.
            tool_choice: passed to the wrapped model's ``bind_tools`` when given.
            **kwargs: passed to the wrapped model's ``bind_tools``.

        Returns:
            A runnable whose calls are journaled like this model's: this model bound to the formatted
            tools, or a ``SecureLLM`` over the wrapped model's binding.

        Raises:
            NotImplementedError: the wrapped model does not support tools (its own error).
        """
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        bound = self.model.bind_tools(tools, **kwargs)
        if isinstance(bound, RunnableBinding) and bound.bound is self.model and not bound.config:
            # The usual case: the model binds formatted tools as call kwargs; bind them to us instead.
            return self.bind(**bound.kwargs)
        return self.model_copy(update={"model": bound})
