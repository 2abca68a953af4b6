"""The real SDKs against a loopback HTTP server whose stream stalls or drops mid-answer: the
faults a real network makes, which surface inside the SDK's stream, not at its request."""

import pytest

from reasoning.llm.anthropic_client import AnthropicClient
from reasoning.llm.base import LLMError, LLMRequest, RetryPolicy
from tests.reasoning.fakewire import LoopbackWire, anthropic_stream

QUESTION = LLMRequest(messages=[{"role": "user", "content": "x"}])


async def _no_sleep(seconds: float) -> None:
    return None


def anthropic(base_url: str, *, retries: int = 2, timeout: float = 10.0) -> AnthropicClient:
    return AnthropicClient(
        "claude-sonnet-4-6",
        api_key="sk-ant-test",
        base_url=base_url,
        timeout=timeout,
        retry=RetryPolicy(max_retries=retries, sleep=_no_sleep),
    )


@pytest.mark.parametrize(("then", "timeout"), [("drop", 10.0), ("stall", 0.5)])
async def test_an_anthropic_stream_that_drops_or_stalls_midway_is_retried(then, timeout):
    partial = anthropic_stream(text="The answer is 391 and the time", cut_after=4)
    async with LoopbackWire((partial, then), (anthropic_stream(text="The whole answer."), "end")) as url:
        response = await anthropic(url, timeout=timeout).complete(QUESTION)
    assert response.text == "The whole answer." and response.retries == 1


@pytest.mark.parametrize(
    ("then", "timeout", "kind"), [("drop", 10.0, "connection"), ("stall", 0.5, "timeout")]
)
async def test_an_anthropic_stream_that_keeps_failing_midway_is_a_model_error(then, timeout, kind):
    partial = anthropic_stream(text="The answer is", cut_after=4)
    async with LoopbackWire((partial, then), (partial, then)) as url:
        with pytest.raises(LLMError) as error:
            await anthropic(url, retries=1, timeout=timeout).complete(QUESTION)
    assert error.value.kind == kind and error.value.retries == 1
    assert error.value.user_message() != "The reasoning engine could not produce an answer."
