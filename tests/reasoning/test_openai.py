"""The real `openai` SDK against a fake OpenAI-compatible server (the way Ollama or vLLM answer)."""

import json

import httpx2
import pytest

from reasoning import AdaptiveReasoningLoop, ExecutionStrategy, ListSink, ReasoningConfig
from reasoning.llm.base import LLMError, LLMRequest, RetryPolicy, ToolDef
from reasoning.llm.openai_client import OpenAIClient
from reasoning.tools.local import builtin_provider
from reasoning.tools.registry import ToolRegistry
from tests.reasoning.fakewire import FakeWire, broken_stream, openai_error, openai_stream, sse
from tests.reasoning.helpers import QUALITY_LAYERS_OFF


async def _no_sleep(seconds: float) -> None:
    return None


def client(wire: FakeWire, retries: int = 2) -> OpenAIClient:
    return OpenAIClient(
        "llama3",
        base_url="http://ollama.test/v1",
        http_client=wire.async_client(),
        retry=RetryPolicy(max_retries=retries, sleep=_no_sleep),
    )


def config(*, analyse: bool = True) -> ReasoningConfig:
    """`analyse`: the local router is never sure, so the analysis model is always asked."""
    return ReasoningConfig(
        **{
            **ReasoningConfig.from_env({"OPENAI_MODEL": "llama3"}, provider="openai").__dict__,
            **QUALITY_LAYERS_OFF,
            **({"router_min_confidence": 1.0, "speculative_direct": False} if analyse else {}),
        }
    )


async def test_a_streamed_answer_with_usage():
    wire = FakeWire(
        openai_stream(text="Hello from llama", prompt_tokens=40, completion_tokens=6, cached_tokens=10)
    )
    response = await client(wire).complete(
        LLMRequest(messages=[{"role": "user", "content": "hi"}], system="Be brief.", temperature=0.2)
    )
    assert response.text == "Hello from llama" and response.stop_reason == "end_turn"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.cache_read_tokens) == (
        30,
        6,
        10,
    )
    body = wire.bodies[0]
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert str(wire.requests[0].url) == "http://ollama.test/v1/chat/completions"


async def test_a_tool_call_round_through_the_engine():
    wire = FakeWire(
        openai_stream(
            tool_calls=[
                (
                    "c0",
                    "record_complexity_analysis",
                    json.dumps(
                        {
                            "complexity_level": "simple",
                            "complexity_score": 0.1,
                            "recommended_strategy": "direct",
                            "rationale": "math",
                        }
                    ),
                )
            ]
        ),
        openai_stream(tool_calls=[("call_1", "calculator", '{"expression": "17*23"}')]),
        openai_stream(text="It is 391."),
        openai_stream(
            tool_calls=[
                (
                    "c9",
                    "record_quality_assessment",
                    json.dumps(
                        {"is_sufficient": True, "confidence": 0.9, "reasoning": "ok", "missing_aspects": []}
                    ),
                )
            ]
        ),
    )
    engine = AdaptiveReasoningLoop(client(wire), ToolRegistry([builtin_provider()]), config())
    result = await engine.run("What is 17*23?")
    assert result.answer == "It is 391." and result.final_strategy == ExecutionStrategy.DIRECT
    first = wire.bodies[0]
    assert first["tool_choice"] == {"type": "function", "function": {"name": "record_complexity_analysis"}}
    round_trip = wire.bodies[2]["messages"]
    assert round_trip[-2]["tool_calls"][0]["function"] == {
        "name": "calculator",
        "arguments": '{"expression": "17*23"}',
    }
    assert round_trip[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "17*23 = 391"}


async def test_429_and_500_are_retried():
    wire = FakeWire(openai_error(429, "slow down"), openai_error(500, "boom"), openai_stream(text="ok"))
    response = await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert response.text == "ok" and response.retries == 2


async def test_500_until_retries_run_out():
    wire = FakeWire(*[openai_error(500, "model crashed")] * 3)
    with pytest.raises(LLMError) as error:
        await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert error.value.kind == "server" and "model crashed" in str(error.value)


async def test_a_stream_cut_midway_is_retried():
    wire = FakeWire(openai_stream(text="Half an ans", cut=True), openai_stream(text="A whole answer"))
    response = await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert response.text == "A whole answer" and response.retries == 1


@pytest.mark.parametrize(
    "error",
    [httpx2.RemoteProtocolError("incomplete chunked read"), httpx2.ReadTimeout("the server went quiet")],
    ids=["dropped", "stalled"],
)
async def test_a_connection_lost_mid_stream_is_retried(error):
    """Transport errors raised while the stream is read escaped the SDK unwrapped, unretried."""
    wire = FakeWire(
        broken_stream(openai_stream(text="Half an ans", cut=True), error),
        openai_stream(text="A whole answer"),
    )
    response = await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert response.text == "A whole answer" and response.retries == 1


async def test_malformed_tool_arguments_go_back_to_the_model():
    wire = FakeWire(
        openai_stream(tool_calls=[("call_1", "calculator", '{"expression": 17*')]),
        openai_stream(text="Let me answer without the tool: 391."),
    )
    sink = ListSink()
    engine = AdaptiveReasoningLoop(client(wire), ToolRegistry([builtin_provider()]), config())
    await engine.run("17*23?", sink=sink, force_strategy=ExecutionStrategy.DIRECT)
    result = sink.of("tool.result")[0].payload
    assert not result["success"] and "not a JSON object" in result["error"]
    assert wire.bodies[1]["messages"][-1]["role"] == "tool"


async def test_a_model_without_tool_support_answers_in_json_mode():
    wire = FakeWire(
        openai_error(400, "registry.ollama.ai/library/gemma:2b does not support tools"),
        openai_stream(
            text='Here: {"is_sufficient": false, "confidence": 0.4, "reasoning": "thin", '
            '"missing_aspects": ["depth"]}'
        ),
        openai_stream(
            text='{"is_sufficient": true, "confidence": 0.8, "reasoning": "fine", "missing_aspects": []}'
        ),
    )
    llm = client(wire)
    tool = ToolDef("record_quality_assessment", "judge", {"type": "object", "properties": {}})
    request = LLMRequest(
        messages=[{"role": "user", "content": "Judge this."}],
        tools=[tool],
        tool_choice={"type": "tool", "name": tool.name},
    )
    response = await llm.complete(request)
    assert '"confidence": 0.4' in response.text and not llm.supports_tools
    retry = wire.bodies[1]
    assert "tools" not in retry and retry["response_format"] == {"type": "json_object"}
    assert "JSON schema" in retry["messages"][-1]["content"]
    second = await llm.complete(request)
    assert "tools" not in wire.bodies[2] and '"confidence": 0.8' in second.text


async def test_engine_runs_on_a_model_without_tools():
    wire = FakeWire(
        openai_error(400, "model does not support tools"),
        openai_stream(
            text='{"complexity_level": "simple", "complexity_score": 0.1, '
            '"recommended_strategy": "direct", "rationale": "easy"}'
        ),
        openai_stream(text="Paris is the capital of France."),
        openai_stream(
            text='{"is_sufficient": true, "confidence": 0.9, "reasoning": "ok", "missing_aspects": []}'
        ),
    )
    result = await AdaptiveReasoningLoop(client(wire), ToolRegistry([builtin_provider()]), config()).run(
        "Capital of France?"
    )
    assert result.answer == "Paris is the capital of France." and result.degraded == []
    assert "tools" not in wire.bodies[2]


async def test_streamed_chunks_become_draft_deltas():
    wire = FakeWire(
        openai_stream(text="The capital of France is Paris."),
        openai_stream(
            text='{"is_sufficient": true, "confidence": 0.9, "reasoning": "ok", "missing_aspects": []}'
        ),
    )
    sink = ListSink()
    result = await AdaptiveReasoningLoop(client(wire), None, config(analyse=False)).run(
        "What is the capital of France?", sink=sink
    )
    deltas = sink.of("answer.delta")
    assert deltas and "".join(d.payload["text"] for d in deltas) == result.answer
    assert sink.of("answer.final")[0].payload["draft"] == deltas[0].payload["draft"]


async def test_json_with_trailing_commas_from_a_model_without_tools_is_read():
    """Small local models in JSON mode often leave a comma before a closing bracket; the
    evaluation is read, not dropped for the fallback that accepts any answer."""
    wire = FakeWire(
        openai_error(400, "model does not support tools"),
        openai_stream(
            text='```json\n{"complexity_level": "simple", "recommended_strategy": "direct", '
            '"rationale": "easy",}\n```'
        ),
        openai_stream(text="Paris is the capital of France."),
        openai_stream(
            text='{"is_sufficient": true, "confidence": 0.9, "reasoning": "ok, fine", '
            '"missing_aspects": ["none, really",],}'
        ),
    )
    result = await AdaptiveReasoningLoop(client(wire), ToolRegistry([builtin_provider()]), config()).run(
        "Capital of France?"
    )
    assert result.answer == "Paris is the capital of France." and result.degraded == []
    assert result.quality == 0.9


async def test_a_tool_name_repeated_in_every_delta_is_one_name():
    """Some OpenAI-compatible servers send the function's name again with each piece of its
    arguments; the name is the tool's, not the pieces joined."""

    def chunk(function: dict, finish: str | None = None) -> tuple[None, dict]:
        delta = {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": function}]}
        return None, {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "llama3",
            "choices": [{"index": 0, "delta": delta if function else {}, "finish_reason": finish}],
        }

    wire = FakeWire(
        sse(
            [
                chunk({"name": "calculator", "arguments": '{"expression": '}),
                chunk({"name": "calculator", "arguments": '"17*23"}'}),
                chunk({}, "tool_calls"),
                (None, "[DONE]"),
            ]
        )
    )
    response = await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    (call,) = response.tool_calls
    assert (call.name, call.arguments) == ("calculator", {"expression": "17*23"})
