"""The run context (issue 35): one immutable ``RunContext`` in one ContextVar, a field changed for a block.

What the code of a run carries (the bound effect scope, the running effect, the model turn being pulled, the run
locks held) used to live in four ContextVars, each set and reset on its own. These tests pin what the one
context must keep of that: a field is put back on its own (a generator yielding inside its block does not undo
what its caller entered meanwhile), tasks and threads see a copy, and nothing they enter comes back.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator

import pytest

from langgraph_durable_mongodb.journal import current_effect
from langgraph_durable_mongodb.runs.context import RunContext, current_run, entered


def test_a_block_changes_one_field_and_puts_it_back() -> None:
    assert current_run() == RunContext()
    with entered("turn", "t1"):
        with entered("effect", "e1"):
            assert (current_run().turn, current_run().effect) == ("t1", "e1")
        assert (current_run().turn, current_run().effect) == ("t1", None)
    assert current_run() == RunContext()


def test_a_generator_yielding_inside_its_block_leaves_its_callers_fields_alone() -> None:
    """A stream's generator enters ``effect`` and yields inside that block, while its caller pulls it inside a
    ``turn`` block: when the caller's block ends, only ``turn`` is put back, and the generator's effect stays until
    the generator resumes and ends its own block. Resetting the whole context instead would lose one or the other."""

    def stream() -> Iterator[str]:
        with entered("effect", "streaming"):
            yield "chunk"
        yield "after"

    chunks = stream()
    with entered("locks", {"held": True}):
        with entered("turn", "pulling"):
            assert next(chunks) == "chunk"
            assert current_run().effect == "streaming"
        assert (current_run().turn, current_run().effect, current_run().locks) == (None, "streaming", {"held": True})
        assert next(chunks) == "after"
        assert (current_run().effect, current_run().locks) == (None, {"held": True})
    assert current_run() == RunContext()


def test_threads_see_a_copy_and_nothing_they_enter_comes_back() -> None:
    seen: list[object] = []

    def worker() -> None:
        seen.append(current_run().effect)
        with entered("turn", "in the thread"):
            seen.append(current_run().turn)

    def left_entered() -> None:
        entered("effect", "left behind").__enter__()  # a block never ended, in the copy only

    with entered("effect", "outer"):
        thread = threading.Thread(target=contextvars.copy_context().run, args=(worker,))
        thread.start()
        thread.join()
        contextvars.copy_context().run(left_entered)
        assert current_run().effect == "outer"
    assert seen == ["outer", "in the thread"] and current_run() == RunContext()


async def test_asyncio_tasks_see_a_copy_and_nothing_they_enter_comes_back() -> None:
    async def child(name: str) -> tuple[object, object]:
        inherited = current_run().effect
        with entered("turn", name):
            await asyncio.sleep(0)
            return inherited, current_run().turn

    with entered("effect", "outer"):
        results = await asyncio.gather(child("a"), child("b"))
        assert (current_run().effect, current_run().turn) == ("outer", None)
    assert results == [("outer", "a"), ("outer", "b")] and current_run() == RunContext()


def test_the_public_accessor_reads_the_run_context() -> None:
    assert current_effect() is None
    with entered("effect", "an EffectInfo"):
        assert current_effect() == "an EffectInfo"


def test_a_field_that_does_not_exist_is_refused() -> None:
    with pytest.raises(KeyError, match="effects"):
        entered("effects", None)
