"""Prompt files load, fill, and fail clearly."""

import pytest

from reasoning.prompts import PROMPTS_DIR, PromptError, format_prompt, load_prompt, split_prompt

PROMPTS = ["complexity_analysis", "quality_check", "planning", "evaluation", "synthesis", "filter", "system"]


@pytest.mark.parametrize("name", PROMPTS)
def test_every_prompt_exists_and_names_its_inputs(name):
    text = load_prompt(f"reasoning/{name}.txt")
    if name != "system":
        instructions, user = split_prompt(text)
        assert instructions and "${query}" in user, "static instructions first (cacheable), input after"


def test_format_fills_placeholders():
    assert format_prompt("Q: ${query} (${n})", query="hi", n=3) == "Q: hi (3)"
    assert format_prompt("${items}", items=["a", "b"]) == "- a\n- b"


def test_a_missing_variable_names_it_and_what_was_given():
    with pytest.raises(PromptError) as error:
        format_prompt("${query} ${tools}", query="x", context="y")
    assert "'tools'" in str(error.value) and "context, query" in str(error.value)


def test_a_missing_prompt_file_is_a_clear_error(tmp_path):
    with pytest.raises(PromptError, match="not found"):
        load_prompt("reasoning/nope.txt", tmp_path)
    assert (PROMPTS_DIR / "reasoning").is_dir()


async def test_engine_with_a_missing_prompt_still_answers_through_fallbacks(tmp_path):
    from reasoning import AdaptiveReasoningLoop, ReasoningConfig
    from reasoning.llm.scripted import ScriptedClient

    (tmp_path / "reasoning").mkdir()
    (tmp_path / "reasoning" / "system.txt").write_text("You are helpful.")
    llm = ScriptedClient(by_component={"planning": [], "agent": ["answer"]})
    config = ReasoningConfig(router_min_confidence=1.0, speculative_direct=False)
    engine = AdaptiveReasoningLoop(llm, None, config, prompts_dir=tmp_path)
    # Leans medium and asks for work: the light strategy plans, so the planner's prompt is missed too.
    result = await engine.run("Compare Redis and Memcached and benchmark them.")
    assert result.answer == "answer"
    assert {"complexity_analysis", "planner", "evaluator"} <= set(result.degraded)
