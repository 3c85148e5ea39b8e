"""``SecureLLM``: any LangChain chat model, each response journaled once and replayed on resume."""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManager, CallbackManagerForLLMRun, Callbacks
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    BaseMessageChunk,
    ToolCallChunk,
    message_chunk_to_message,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult, LLMResult, RunInfo
from langchain_core.runnables import Runnable, RunnableBinding, RunnableConfig
from langgraph.constants import TAG_NOSTREAM

from ..runs.context import current_run, entered
from .context import Journal, current_effect_scope
from .documents import EffectCall
from .journal import ActivityJournal
from .observe import observed, observed_config

M = TypeVar("M", bound=BaseMessage)
#: Call kwargs LangChain keeps for tracing and never passes to the model: not part of the call's input.
_TRACING_ONLY = ("ls_structured_output_format", "structured_output_format")


def _merge(chunks: Sequence[BaseMessageChunk]) -> BaseMessage:
    """What a stream records: its chunks joined into one message (as ``invoke`` would return)."""
    if not chunks:
        return AIMessage(content="")
    merged = chunks[0]
    for chunk in chunks[1:]:
        merged = merged + chunk
    return message_chunk_to_message(merged)


def _as_chunks(message: BaseMessage) -> list[AIMessageChunk]:
    """What a wrapped runnable's ``stream`` yielded, as chunks: a model that cannot stream yields its message."""
    return [message] if isinstance(message, AIMessageChunk) else _replay(message)


async def _limited(
    model: BaseChatModel, chunks: AsyncIterator[ChatGenerationChunk]
) -> AsyncIterator[ChatGenerationChunk]:
    """``chunks``, pulled once ``model``'s rate limiter lets the call through."""
    if model.rate_limiter:
        await model.rate_limiter.aacquire(blocking=True)
    async for chunk in chunks:
        yield chunk


def _replay(message: BaseMessage) -> list[AIMessageChunk]:
    """A recorded message as the one chunk a replayed stream yields."""
    if isinstance(message, AIMessageChunk):
        return [message]
    tool_call_chunks: list[ToolCallChunk] = [
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


@dataclass
class _Turn:
    """One journaled call of a ``SecureLLM``, as its callback run shows it.

    A real call shows each message as the wrapped model returned it, ``usage_metadata`` included: that run is
    the only one, so usage counts once. A replay used nothing: its run shows the recorded message without
    ``usage_metadata``, and the caller gets it back with it (``restore``).
    """

    recorded: BaseMessage | None = None  # a replay: the outcome to show instead of calling the model
    message: BaseMessage | None = None  # a real call: what the wrapped model returned
    _usage: dict[int, tuple[BaseMessage, Any]] = field(default_factory=dict)

    def show(self, message: M) -> M:
        """``message`` as callbacks see it."""
        usage = getattr(message, "usage_metadata", None)
        if self.recorded is None or not usage:
            return message
        shown = message.model_copy(update={"usage_metadata": None})
        self._usage[id(shown)] = (shown, usage)
        return shown

    def restore(self, message: M) -> M:
        """A message LangChain built from a shown one, with the usage the shown one left out."""
        shown, usage = self._usage.get(id(message), (None, None))
        return message.model_copy(update={"usage_metadata": usage}) if shown is message else message

    def restored(self, chunks: Iterator[M]) -> Iterator[M]:
        """``chunks`` (pulled with this turn current), restored."""
        while True:
            with entered("turn", self):
                chunk = next(chunks, None)
            if chunk is None:
                return
            yield self.restore(chunk)

    async def arestored(self, chunks: AsyncIterator[M]) -> AsyncIterator[M]:
        """``restored`` for an async stream."""
        while True:
            with entered("turn", self):
                chunk = await anext(chunks, None)
            if chunk is None:
                return
            yield self.restore(chunk)


def _current_turn() -> _Turn:
    turn: _Turn | None = current_run().turn
    if turn is None:
        raise NotImplementedError(
            "SecureLLM journals the calls made through invoke, ainvoke, batch, stream, astream, generate and "
            "agenerate; this entry point opens its callback run before the journal can say whether it replays"
        )
    return turn


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

    Each call opens one callback run, after the journal said whether it replays: its metadata ``durable``
    holds ``replayed``, ``path``, ``node``, ``effect_key`` and ``idempotency_key``, and a replay is tagged
    ``durable:replayed``. A wrapped chat model runs inside that run (its ``_generate``/``_stream``, not its
    ``invoke``), so callbacks, ``astream_events`` and ``stream_mode="messages"`` see each real call once, with
    the tokens and usage the bare model shows; it streams exactly when the bare model would. A replay
    shows the recorded message without ``usage_metadata`` (it used nothing); the message returned keeps it.
    The wrapped model's own cache is not consulted (the journal is this model's cache); its rate limiter is.
    Any other runnable (a chat model bound with a config, say) runs through ``invoke``/``stream`` in a run
    nested under ours.

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

    def __init__(
        self,
        model: Runnable[LanguageModelInput, BaseMessage],
        *,
        journal: ActivityJournal | None = None,
        effect_name: str | None = None,
        **kwargs: Any,
    ) -> None:
        # pydantic's __init__ takes this model's fields; mypy knows only BaseChatModel's
        super().__init__(model=model, journal=journal, effect_name=effect_name, **kwargs)  # type: ignore[call-arg]

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        """The wrapped model's name (``ChatOpenAI``, ...), unless this one was named: callbacks, ``astream_events``
        and traces show the model's runs under the name they would carry without the journal, so filters written
        for the bare model keep matching. The ``durable`` metadata and tags say the run is journaled.

        Args:
            suffix: appended to the name, as LangChain's ``Runnable.get_name``.
            name: a name to use instead.

        Returns:
            The name the model's runs carry.
        """
        if name is None and self.name is None and hasattr(self._chat_model, "get_name"):
            wrapped: str = self._chat_model.get_name(suffix)
            return wrapped
        return super().get_name(suffix, name=name)

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

    def _journal(self) -> Journal:
        return self.journal or current_effect_scope().journal

    def _call(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> EffectCall:
        args = {k: v for k, v in kwargs.items() if k not in _TRACING_ONLY}
        preview = messages[-1] if messages else ""
        return EffectCall("llm", self._name, input={"messages": messages, "stop": stop, **args}, preview=preview)

    # -- the entry points: read the journal, then open the callback run ---------------

    def generate(
        self,
        messages: list[list[BaseMessage]],
        stop: list[str] | None = None,
        callbacks: Callbacks = None,
        *,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_name: str | None = None,
        run_id: uuid.UUID | None = None,
        **kwargs: Any,
    ) -> LLMResult:
        """Journal each prompt's call, then show it to callbacks in a run of its own (``invoke`` and ``batch`` come
        here).

        Args:
            messages: the prompts, each journaled as one call, in order.
            stop: as for ``BaseChatModel.generate``.
            callbacks: as for ``BaseChatModel.generate``.
            tags: as for ``BaseChatModel.generate``; a replay's run gets the ``durable`` tag too.
            metadata: as for ``BaseChatModel.generate``; the run gets the ``durable`` metadata too.
            run_name: as for ``BaseChatModel.generate``.
            run_id: names the first prompt's run.
            **kwargs: passed to the wrapped model (and recorded as the call's input).

        Returns:
            One generation per prompt: the message the model returned, now or when it was recorded.

        Raises:
            NoDurableScopeError: called outside a durable scope.
            Exception: the journal's errors (see ``ActivityJournal.run``) and what the model raises.
        """
        parent = cast(BaseChatModel, super())  # the proxy mypy cannot type: BaseChatModel's methods
        runs: list[RunInfo] = []
        outcomes: list[BaseMessage] = []
        for i, prompt in enumerate(messages):

            def show(recorded: BaseMessage | None = None, prompt: list[BaseMessage] = prompt, i: int = i) -> Any:
                turn = _Turn(recorded)
                with entered("turn", turn):
                    result = parent.generate(
                        [prompt], stop, callbacks, **self._run_options(tags, metadata, run_name, run_id, i), **kwargs
                    )
                runs.extend(result.run or [])
                return recorded if recorded is not None else turn.message

            outcomes.append(self._journal().run(self._call(prompt, stop, kwargs), show, replay=show))
        return LLMResult(generations=[[ChatGeneration(message=m)] for m in outcomes], run=runs)

    async def agenerate(
        self,
        messages: list[list[BaseMessage]],
        stop: list[str] | None = None,
        callbacks: Callbacks = None,
        *,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        run_name: str | None = None,
        run_id: uuid.UUID | None = None,
        **kwargs: Any,
    ) -> LLMResult:
        """Async ``generate`` (``ainvoke`` and ``abatch`` come here): same arguments, return and errors; the
        prompts are journaled one after the other."""
        parent = cast(BaseChatModel, super())  # the proxy mypy cannot type: BaseChatModel's methods
        runs: list[RunInfo] = []
        outcomes: list[BaseMessage] = []
        for i, prompt in enumerate(messages):

            async def show(recorded: BaseMessage | None = None, prompt: list[BaseMessage] = prompt, i: int = i) -> Any:
                turn = _Turn(recorded)
                with entered("turn", turn):
                    result = await parent.agenerate(
                        [prompt], stop, callbacks, **self._run_options(tags, metadata, run_name, run_id, i), **kwargs
                    )
                runs.extend(result.run or [])
                return recorded if recorded is not None else turn.message

            outcomes.append(await self._journal().arun(self._call(prompt, stop, kwargs), show, replay=show))
        return LLMResult(generations=[[ChatGeneration(message=m)] for m in outcomes], run=runs)

    @staticmethod
    def _run_options(
        tags: list[str] | None, metadata: dict[str, Any] | None, run_name: str | None, run_id: uuid.UUID | None, i: int
    ) -> dict[str, Any]:
        """The callback run's options, for the effect running or replayed now."""
        tags, metadata = observed(tags, metadata)
        return {"tags": tags, "metadata": metadata, "run_name": run_name, "run_id": run_id if i == 0 else None}

    def stream(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> Iterator[AIMessageChunk]:
        """Journal the streamed call, then show it to callbacks in a run of its own; a replay yields one chunk.

        Args:
            input: as for ``BaseChatModel.stream``.
            config: as for ``BaseChatModel.stream``.
            stop: as for ``BaseChatModel.stream``.
            **kwargs: as for ``BaseChatModel.stream``.

        Returns:
            The chunks as the model streams them, or the recorded message as one chunk.

        Raises:
            NoDurableScopeError: called outside a durable scope.
            Exception: the journal's errors (see ``ActivityJournal.run_stream``) and what the model raises.
        """
        if not self._should_stream(async_api=False, **{**kwargs, "stream": True}):
            yield from super().stream(input, config, stop=stop, **kwargs)  # it invokes: journaled by generate
            return
        parent = cast(BaseChatModel, super())  # the proxy mypy cannot type: BaseChatModel's methods

        def show(recorded: BaseMessage | None = None) -> Iterator[AIMessageChunk]:
            return _Turn(recorded).restored(parent.stream(input, observed_config(config), stop=stop, **kwargs))

        call = self._call(self._convert_input(input).to_messages(), stop, kwargs)
        yield from self._journal().run_stream(call, show, _merge, lambda message: list(show(message)))

    async def astream(
        self,
        input: LanguageModelInput,
        config: RunnableConfig | None = None,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[AIMessageChunk]:
        """Async ``stream``: same arguments, chunks and errors."""
        if not self._should_stream(async_api=True, **{**kwargs, "stream": True}):
            # it invokes: journaled by agenerate
            async for chunk in super().astream(input, config, stop=stop, **kwargs):
                yield chunk
            return
        parent = cast(BaseChatModel, super())  # the proxy mypy cannot type: BaseChatModel's methods

        def show(recorded: BaseMessage | None = None) -> AsyncIterator[AIMessageChunk]:
            return _Turn(recorded).arestored(parent.astream(input, observed_config(config), stop=stop, **kwargs))

        async def replay(message: BaseMessage) -> list[AIMessageChunk]:
            return [chunk async for chunk in show(message)]

        call = self._call(self._convert_input(input).to_messages(), stop, kwargs)
        async for chunk in self._journal().arun_stream(call, show, _merge, replay):
            yield chunk

    # -- the chat model contract: inside the run, the model's reply or the recorded one ---

    def _direct(self) -> tuple[BaseChatModel, Mapping[str, Any]] | None:
        """The wrapped chat model and the call kwargs bound to it, when its ``_generate``/``_stream`` can run inside
        our callback run (so each call shows as one run); ``None`` for any other runnable."""
        model = self.model
        bound: Mapping[str, Any] = {}
        if type(model) is RunnableBinding and not model.config and not model.config_factories:
            bound, model = model.kwargs, model.bound
        return (model, bound) if isinstance(model, BaseChatModel) else None

    def _should_stream(self, *, async_api: bool, run_manager: Any = None, **kwargs: Any) -> bool:
        """Stream when, and only when, the wrapped chat model would: a model with only ``_generate`` is invoked."""
        model, bound = self._direct() or (self._chat_model, {})
        if not isinstance(model, BaseChatModel):
            return super()._should_stream(async_api=async_api, run_manager=run_manager, **kwargs)
        return model._should_stream(async_api=async_api, run_manager=run_manager, **{**bound, **kwargs})

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        """The wrapped model's tracing parameters (provider, model name): our run is the one tracers see."""
        direct = self._direct()
        return direct[0]._get_ls_params(stop=stop, **kwargs) if direct else super()._get_ls_params(stop=stop, **kwargs)

    @staticmethod
    def _config(run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None) -> RunnableConfig:
        """For a wrapped runnable that is no chat model: its run nests under ours, tagged so LangGraph streams our
        tokens, not both (without our run, as in ``stream``, it says where the call is itself)."""
        if run_manager is None:
            return observed_config({"tags": [TAG_NOSTREAM]})
        child = CallbackManager(handlers=[], parent_run_id=run_manager.run_id)
        child.set_handlers(run_manager.inheritable_handlers)
        child.add_tags(run_manager.inheritable_tags)
        child.add_metadata(run_manager.inheritable_metadata)
        child.add_tags([TAG_NOSTREAM], inherit=False)
        return {"callbacks": child}

    @staticmethod
    def _manager(
        method: Callable[..., Any], run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None
    ) -> dict[str, Any]:
        """``run_manager=`` for a model's ``_generate`` that takes it (as ``BaseChatModel`` decides)."""
        return {"run_manager": run_manager} if "run_manager" in inspect.signature(method).parameters else {}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = _current_turn()
        message, direct = turn.recorded, self._direct()
        if message is None and direct is not None:
            model, bound = direct
            if model.rate_limiter:
                model.rate_limiter.acquire(blocking=True)
            generate = model._generate
            result = generate(messages, stop=stop, **self._manager(generate, run_manager), **{**bound, **kwargs})
            message = turn.message = result.generations[0].message
        elif message is None:
            message = turn.message = self.model.invoke(messages, self._config(run_manager), stop=stop, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=turn.show(message))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        turn = _current_turn()
        message, direct = turn.recorded, self._direct()
        if message is None and direct is not None:
            model, bound = direct
            if model.rate_limiter:
                await model.rate_limiter.aacquire(blocking=True)
            generate = model._agenerate
            result = await generate(messages, stop=stop, **self._manager(generate, run_manager), **{**bound, **kwargs})
            message = turn.message = result.generations[0].message
        elif message is None:
            message = turn.message = await self.model.ainvoke(messages, self._config(run_manager), stop=stop, **kwargs)
        return ChatResult(generations=[ChatGeneration(message=turn.show(message))])

    def _chunks(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: CallbackManagerForLLMRun | None,
        kwargs: dict[str, Any],
    ) -> Iterator[ChatGenerationChunk]:
        """A real call's chunks: the wrapped chat model's own ``_stream`` in our run, else its ``stream``."""
        direct = self._direct()
        if direct is not None:
            model, bound = direct
            if model.rate_limiter:
                model.rate_limiter.acquire(blocking=True)
            return model._stream(messages, stop=stop, run_manager=run_manager, **{**bound, **kwargs})
        streamed = self.model.stream(messages, self._config(run_manager), stop=stop, **kwargs)
        return (ChatGenerationChunk(message=chunk) for message in streamed for chunk in _as_chunks(message))

    def _achunks(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None,
        run_manager: AsyncCallbackManagerForLLMRun | None,
        kwargs: dict[str, Any],
    ) -> AsyncIterator[ChatGenerationChunk]:
        """Async ``_chunks``."""
        direct = self._direct()
        if direct is not None:
            model, bound = direct
            return _limited(model, model._astream(messages, stop=stop, run_manager=run_manager, **{**bound, **kwargs}))
        streamed = self.model.astream(messages, self._config(run_manager), stop=stop, **kwargs)
        return (ChatGenerationChunk(message=chunk) async for message in streamed for chunk in _as_chunks(message))

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        turn = _current_turn()
        if turn.recorded is not None:
            yield from (ChatGenerationChunk(message=turn.show(chunk)) for chunk in _replay(turn.recorded))
            return
        streamed: list[BaseMessageChunk] = []
        for generation in self._chunks(messages, stop, run_manager, kwargs):
            streamed.append(generation.message)
            yield generation
        turn.message = _merge(streamed)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        turn = _current_turn()
        if turn.recorded is not None:
            for chunk in _replay(turn.recorded):
                yield ChatGenerationChunk(message=turn.show(chunk))
            return
        streamed: list[BaseMessageChunk] = []
        async for generation in self._achunks(messages, stop, run_manager, kwargs):
            streamed.append(generation.message)
            yield generation
        turn.message = _merge(streamed)

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
