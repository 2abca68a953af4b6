"""The real SDKs against a loopback HTTP server whose stream stalls or drops mid-answer: the
faults a real network makes, which surface inside the SDK's stream, not at its request."""

import pytest

from reasoning.llm.anthropic_client import AnthropicClient
from reasoning.llm.base import LLMError, LLMRequest, RetryPolicy
from reasoning.llm.openai_client import OpenAIClient
from tests.reasoning.fakewire import LoopbackWire, anthropic_stream, openai_stream

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


def openai(base_url: str, *, retries: int = 2) -> OpenAIClient:
    return OpenAIClient(
        "llama3",
        base_url=f"{base_url}/v1",
        timeout=10.0,
        retry=RetryPolicy(max_retries=retries, sleep=_no_sleep),
    )


# How vLLM and Ollama report a failure after the stream began: an `error` object as a data line.
OPENAI_ERROR_MIDWAY = openai_stream(text="Half an ans", cut=True) + (
    b'data: {"error": {"message": "model runner has unexpectedly stopped", "type": "server_error", '
    b'"code": 500}}\n\n'
)


async def test_an_openai_compatible_error_midway_is_retried():
    async with LoopbackWire(
        (OPENAI_ERROR_MIDWAY, "end"), (openai_stream(text="A whole answer"), "end")
    ) as url:
        response = await openai(url).complete(QUESTION)
    assert response.text == "A whole answer" and response.retries == 1


async def test_an_openai_compatible_error_midway_until_retries_run_out_is_a_model_error():
    async with LoopbackWire((OPENAI_ERROR_MIDWAY, "end"), (OPENAI_ERROR_MIDWAY, "end")) as url:
        with pytest.raises(LLMError) as error:
            await openai(url, retries=1).complete(QUESTION)
    assert error.value.kind == "server" and error.value.retries == 1
    assert "model runner has unexpectedly stopped" in str(error.value)
