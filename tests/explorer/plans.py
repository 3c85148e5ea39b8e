"""A history, as drawn: the graph's stages, what is done between runs, and the fault. Plain frozen dataclasses, so a
shrunk history prints as code that builds it again (``EXPLORE_REPLAY`` takes that text back)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st

from .values import Hostile, Values, values

#: What an effect is: an ``@effect`` function, an ``at_most_once`` one, a ``SecureTool`` call, a ``SecureLLM`` call.
EFFECT_KINDS = ("effect", "once", "tool", "llm")
#: What a stage of the root graph is (see graphs.py).
STAGE_KINDS = (
    "node", "parallel", "child", "function", "send", "interrupt", "retry", "react", "task", "entrypoint", "pool",
    "child_interrupt",
)
#: How the nodes run and call their effects: sync nodes and effects, async ones, or async nodes calling sync effects.
MODES = ("sync", "async", "mixed")
#: Who calls the graph (see history.Driver): the sync API from plain code (a thread with no event loop) or from a
#: coroutine (an ``async def`` handler, a Jupyter cell), or ``batch``; an async graph is awaited in every case.
CALLERS = ("plain", "coroutine", "batch")
#: The stages an ``update_state`` is made at (``Stage.edit``): their node interrupts after its first effect.
INTERRUPTING = ("interrupt", "child_interrupt")
#: The stages that may repeat (``Stage.loops``).
LOOPING = ("node", "parallel", "child", "send")


@dataclass(frozen=True)
class Stage:
    """One stage of the root graph's chain.

    ``effects``: the effects each of its working nodes calls, in order. ``loops``: visits of the stage (a node or a
    child looping on itself, parallel branches or a fan-out joined and started again). ``width``: parallel branches or ``Send`` items. ``depth``: how deep its compiled
    children nest (``child`` and ``function``). ``edit``: at an ``interrupt`` (at the root, or ``child_interrupt``
    inside a compiled child, edited through the child's config), the ``update_state`` made before the resume:
    ``""`` none, ``"plain"`` without ``as_node``, ``"as_node"`` as the interrupted node.
    """

    kind: str
    effects: tuple[str, ...] = ("effect",)
    loops: int = 1
    width: int = 2
    depth: int = 1
    edit: str = ""


@dataclass(frozen=True)
class Fault:
    """What goes wrong, once per history.

    ``kind``: ``"none"``; ``"raise"``, an exception in ``node``'s visit ``visit`` after its effect ``after`` (0:
    before any); ``"command"``, the storage request at ``at`` (a fraction of the fault-free run's requests) fails,
    not sent or (``lost_reply``) sent and its reply lost; ``"kill"``, a SIGKILL of the child process at its command
    point ``at`` (a fraction of the fault-free run's points). ``resume``: ``"same"`` platform or a ``"new"`` one on
    the same database (another process).
    """

    kind: str = "none"
    node: str = ""
    visit: int = 1
    after: int = 0
    at: float = 0.0
    lost_reply: bool = False
    resume: str = "same"


@dataclass(frozen=True)
class Plan:
    """A whole history: the graph, how it runs (``mode`` of its nodes and effects, ``MODES``; ``caller``,
    ``CALLERS``; ``form`` of compile; ``durability``), the fault, how late each record trailing its effect is
    written (``slow``, seconds: a busy server), whether each task's writes are stored after the checkpoint LangGraph
    saves beside them (``writes="late"``: its background executor's other order), whether the thread id is deleted
    and reused after it (``reuse``),
    whether it is copied (``copy_thread``) once its first run stopped and both threads resumed (``copy``), whether,
    once done, the thread is forked (``fork``: ``"changed"`` sends ``Command(update=..., resume=...)`` to the
    checkpoint of its first interrupt, which the thread has moved past, changing every effect's input), the golden
    database of an older storage format it starts from (``golden``, a name of goldens.py: its stages and form are the
    golden's), and the hostile ``values`` its effects are given and return and its state holds (values.py; None:
    plain ones)."""

    stages: tuple[Stage, ...]
    mode: str = "sync"
    form: str = "platform.compile"
    durability: str = "sync"
    fault: Fault = field(default_factory=Fault)
    reuse: bool = False
    caller: str = "coroutine"
    slow: float = 0.0
    writes: str = ""
    fork: str = ""
    copy: bool = False
    golden: str = ""
    values: Values | None = None


#: The names a printed plan is made of: ``eval(repr(plan), NAMES)`` makes it again (``EXPLORE_REPLAY``).
NAMES = {"Plan": Plan, "Stage": Stage, "Fault": Fault, "Values": Values, "Hostile": Hostile}


def stage_nodes(index: int, stage: Stage) -> list[str]:
    """The names of the nodes of ``stage`` that call effects (see graphs.py), each visit counted on its own."""
    base = f"s{index}"
    if stage.kind == "parallel":
        return [f"{base}b{j}" for j in range(stage.width)]
    if stage.kind in ("child", "function"):
        return [f"{base}d{stage.depth}"]
    if stage.kind == "entrypoint":
        return [f"{base}e"]
    if stage.kind == "send":
        return [f"{base}w"]
    if stage.kind in INTERRUPTING:
        return [f"{base}p", f"{base}q"]
    if stage.kind == "react":
        return [f"{base}llm"]
    return [base]


effects = st.lists(st.sampled_from(EFFECT_KINDS), min_size=1, max_size=3).map(tuple)


@st.composite
def stages(draw: st.DrawFn) -> Stage:
    kind = draw(st.sampled_from(STAGE_KINDS))
    return Stage(
        kind,
        effects=draw(effects),
        loops=draw(st.integers(1, 4)) if kind in LOOPING else 1,
        width=draw(st.integers(2, 3)) if kind in ("parallel", "send") else 2,
        depth=draw(st.integers(1, 3)) if kind in ("child", "function") else 1,
        edit=draw(st.sampled_from(["", "plain", "as_node"])) if kind in INTERRUPTING else "",
    )


@st.composite
def faults(draw: st.DrawFn, stages: tuple[Stage, ...], kinds: tuple[str, ...]) -> Fault:
    kind = draw(st.sampled_from(kinds))
    resume = draw(st.sampled_from(["same", "new"]))
    if kind == "raise":
        index = draw(st.integers(0, len(stages) - 1))
        stage = stages[index]
        return Fault(
            "raise", node=draw(st.sampled_from(stage_nodes(index, stage))), visit=draw(st.integers(1, stage.loops)),
            after=draw(st.integers(0, len(stage.effects))), resume=resume,
        )
    if kind in ("command", "kill"):
        at = draw(st.integers(0, 999)) / 1000
        return Fault(kind, at=at, lost_reply=kind == "command" and draw(st.booleans()), resume=resume)
    return Fault()


#: One history in 2 ** GOLDEN_COINS starts from a golden database of an older storage format (goldens.py): as many
#: coins all heads (Hypothesis draws booleans evenly, small integers more often than large ones).
GOLDEN_COINS = 3


@st.composite
def plans(
    draw: st.DrawFn, fault_kinds: tuple[str, ...] = ("none", "raise", "command", "command"), hostile: bool = True
) -> Plan:
    """A history; one in three with hostile values (``hostile``: ever); one in eight from a golden database."""
    from .goldens import GOLDENS  # imports this module

    if "kill" not in fault_kinds and all(draw(st.booleans()) for _ in range(GOLDEN_COINS)):  # shrinks to no golden
        golden = draw(st.sampled_from(GOLDENS)).plan()  # its graph and form; its fault was the old code's
        return Plan(
            golden.stages, mode=draw(st.sampled_from(["sync", "async"])), form=golden.form,
            durability=draw(st.sampled_from(["sync", "async"])), reuse=draw(st.booleans()), copy=draw(st.booleans()),
            golden=golden.golden,
        )
    drawn = tuple(draw(st.lists(stages(), min_size=1, max_size=3)))
    interrupts = any(stage.kind in INTERRUPTING for stage in drawn)
    return Plan(
        drawn,
        mode=draw(st.sampled_from(MODES)),
        form=draw(st.sampled_from(["platform.compile", "plain compile"])),
        durability=draw(st.sampled_from(["sync", "async"])),
        fault=draw(faults(drawn, fault_kinds)),
        reuse=draw(st.booleans()),
        caller=draw(st.sampled_from(CALLERS)),
        slow=draw(st.sampled_from([0.0, 0.0, 0.005, 0.03])),
        writes=draw(st.sampled_from(["", "late"])),
        fork=draw(st.sampled_from(["", "changed"])) if interrupts else "",
        copy="kill" not in fault_kinds and draw(st.booleans()),
        values=draw(values()) if hostile and draw(st.integers(0, 2)) == 2 else None,  # shrinks to none
    )
