"""``@effect``: journal every call of a sync or async function."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast, overload

from .context import current_effect_scope
from .documents import EffectCall
from .journal import ActivityJournal

F = TypeVar("F", bound=Callable[..., Any])


@overload
def effect(fn: F) -> F: ...
@overload
def effect(
    *, kind: str = "effect", name: str | None = None, at_most_once: bool = False, journal: ActivityJournal | None = None
) -> Callable[[F], F]: ...


def effect(
    fn: F | None = None,
    *,
    kind: str = "effect",
    name: str | None = None,
    at_most_once: bool = False,
    journal: ActivityJournal | None = None,
) -> Any:
    """Make each call of ``fn`` journaled ("secure"): run once, its result replayed on every re-run of its node.

    "Secure" means journaled, as for ``SecureLLM`` and ``SecureTool``. The call's arguments are its input (digest
    and redacted preview); its return value is the recorded outcome. ``at_most_once=True`` refuses to run
    again a call whose worker died mid-flight (``EffectOutcomeUnknownError``).
    ``journal`` defaults to the durable scope's.

    Example::

        @effect(kind="payment", at_most_once=True)
        def charge(customer: str, cents: int) -> str:
            return psp.charge(customer, cents, idempotency_key=current_effect().idempotency_key)

    Args:
        fn: the function (sync or async); given when used as a bare ``@effect``.
        kind: the entry's ``kind`` (``"effect"`` by default).
        name: the entry's ``name``; ``fn.__qualname__`` by default.
        at_most_once: never run again a call whose worker died mid-flight.
        journal: the journal to record on.

    Returns:
        The wrapped function (sync or async like ``fn``), or a decorator when ``fn`` is not given.
        A call of the wrapped function returns ``fn``'s result, now or as recorded, and raises
        ``NoDurableScopeError`` outside a durable scope, the journal's errors (see
        ``ActivityJournal.run``) or whatever ``fn`` raises.
    """

    def wrap(fn: F) -> F:
        effect_name = name or fn.__qualname__
        signature = inspect.signature(fn)

        def call_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> EffectCall:
            try:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                arguments: Any = dict(bound.arguments)
            except TypeError:  # fn will raise the same error when it runs
                arguments = {"args": args, "kwargs": kwargs}
            return EffectCall(kind, effect_name, input=arguments, at_most_once=at_most_once)

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                on = journal or current_effect_scope().journal
                return await on.arun(call_of(args, kwargs), lambda: fn(*args, **kwargs))

            return cast(F, run_async)  # fn's signature (functools.wraps)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            return (journal or current_effect_scope().journal).run(call_of(args, kwargs), lambda: fn(*args, **kwargs))

        return cast(F, run)  # fn's signature (functools.wraps)

    return wrap(fn) if fn is not None else wrap
