"""One engine interface: every mode takes the structured input, tools, sink and resume state."""

import inspect

import pytest

from reasoning import ListSink, Mode, ReasoningConfig, ResumeState, RunInput, create_mode
from reasoning.llm.offline import OfflineClient
from reasoning.modes import MODE_NAMES
from reasoning.tools.local import builtin_provider
from reasoning.tools.registry import ToolRegistry


@pytest.mark.parametrize("name", MODE_NAMES)
async def test_every_mode_answers_through_the_same_call(name):
    mode = create_mode(name, OfflineClient(), ReasoningConfig.from_env({}, provider="offline"))
    assert isinstance(mode, Mode) and mode.name == name
    sink = ListSink()
    result = await mode.run(
        RunInput.of("What is 17*23?", conversation=[{"role": "user", "content": "Hi"}]),
        tools=ToolRegistry([builtin_provider()]),
        sink=sink,
        resume=ResumeState(next_sequence=7),
    )
    assert "391" in result.answer and sink.events[0].sequence == 7
    assert bool(sink.of("thought")) == (name == "reasoning_driven"), "seed 003's style shows its thoughts"


def test_an_unknown_mode_is_refused_by_name():
    with pytest.raises(ValueError, match="valid modes: adaptive, reasoning_driven, cognitive"):
        create_mode("telepathic", OfflineClient(), ReasoningConfig())


def test_the_interface_is_small():
    parameters = list(inspect.signature(Mode.run).parameters)
    assert parameters == [
        "self",
        "run_input",
        "tools",
        "sink",
        "resume",
        "lessons",
        "checkpoint",
        "budget",
        "memory",
    ]


def test_no_mixins_remain():
    from reasoning.modes.adaptive.run import AdaptiveRun

    assert AdaptiveRun.__bases__ == (object,), "a run context passed to plain objects"
