"""The real `anthropic` SDK against a fake wire: streaming, tools, caching, retries."""

import json

import httpx2
import pytest

from reasoning import AdaptiveReasoningLoop, ExecutionStrategy, ListSink, ReasoningConfig
from reasoning.llm.anthropic_client import AnthropicClient
from reasoning.llm.base import LLMError, LLMRequest, RetryPolicy, ToolDef
from reasoning.modes.base import ReasoningFailed
from reasoning.tools.local import builtin_provider
from reasoning.tools.registry import ToolRegistry
from tests.reasoning.fakewire import FakeWire, anthropic_error, anthropic_stream, broken_stream
from tests.reasoning.helpers import QUALITY_LAYERS_OFF

# The analysis model is asked only when the local router is unsure; these make it always unsure.
ALWAYS_ANALYSE = {"router_min_confidence": 1.0, "speculative_direct": False}


class Sleeps:
    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def client(wire: FakeWire, *, retries: int = 3, sleeps: Sleeps | None = None) -> AnthropicClient:
    return AnthropicClient(
        "claude-sonnet-4-6",
        api_key="sk-ant-test",
        http_client=wire.async_client(),
        retry=RetryPolicy(max_retries=retries, base_delay=0.5, sleep=sleeps or Sleeps()),
    )


async def test_a_streamed_answer_is_joined_with_usage_and_cache_accounting():
    wire = FakeWire(
        anthropic_stream(
            text="Hello there", input_tokens=20, output_tokens=7, cache_read=900, cache_write=100
        )
    )
    tools = [ToolDef("calculator", "math", {"type": "object"}), ToolDef("clock", "time", {"type": "object"})]
    response = await client(wire).complete(
        LLMRequest(
            messages=[{"role": "user", "content": "hi"}], system="Be brief.", tools=tools, max_tokens=100
        )
    )
    assert response.text == "Hello there" and response.stop_reason == "end_turn"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        20,
        7,
        900,
        100,
    )
    body = wire.bodies[0]
    assert body["stream"] is True and body["model"] == "claude-sonnet-4-6"
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in body["tools"][0] and body["tools"][-1]["cache_control"] == {
        "type": "ephemeral"
    }
    assert "sk-ant-test" in wire.requests[0].headers["authorization"]


async def test_a_tool_use_round_through_the_engine():
    def analysis(request):
        body = json.loads(request.content)
        assert body["tool_choice"] == {"type": "tool", "name": "record_complexity_analysis"}
        assert body["model"] == "claude-haiku-4-5"
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            content=anthropic_stream(
                model="claude-haiku-4-5",
                tool=(
                    "toolu_a",
                    "record_complexity_analysis",
                    {
                        "complexity_level": "simple",
                        "complexity_score": 0.1,
                        "recommended_strategy": "direct",
                        "rationale": "arithmetic",
                    },
                ),
            ),
        )

    wire = FakeWire(
        analysis,
        anthropic_stream(tool=("toolu_1", "calculator", {"expression": "17*23"})),
        anthropic_stream(text="17 × 23 = 391"),
        anthropic_stream(
            tool=(
                "toolu_q",
                "record_quality_assessment",
                {"is_sufficient": True, "confidence": 0.96, "reasoning": "exact", "missing_aspects": []},
            ),
            cache_read=500,
        ),
    )
    sink = ListSink()
    engine = AdaptiveReasoningLoop(
        client(wire),
        ToolRegistry([builtin_provider()]),
        # The model's own tool round (foresight would run the calculator before the answer call).
        ReasoningConfig(**QUALITY_LAYERS_OFF, **ALWAYS_ANALYSE, foresight=False),
    )
    result = await engine.run("What is 17*23?", sink=sink)
    assert result.answer == "17 × 23 = 391" and result.final_strategy == ExecutionStrategy.DIRECT
    tool_round = wire.bodies[2]["messages"]
    assert tool_round[1]["content"][0] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "calculator",
        "input": {"expression": "17*23"},
    }
    assert tool_round[2]["content"][0]["tool_use_id"] == "toolu_1"
    assert tool_round[2]["content"][0]["content"] == "17*23 = 391"
    assert result.usage.cache_read_tokens == 500
    assert next(e.payload["model"] for e in sink.of("llm.call")) == "claude-haiku-4-5"
    assert result.cost > 0


async def test_a_simple_question_needing_the_calculator_costs_two_calls_over_the_wire():
    """The calculator runs before the answer call: the request carries its call and result
    (with the tool defined, as the API requires) and asks for text, so no call is spent
    asking for the tool; the evaluator is the second and last call."""
    wire = FakeWire(
        anthropic_stream(text="17 × 23 = 391"),
        anthropic_stream(
            tool=(
                "toolu_q",
                "record_quality_assessment",
                {"is_sufficient": True, "confidence": 0.9, "reasoning": "exact", "missing_aspects": []},
            )
        ),
    )
    sink = ListSink()
    config = ReasoningConfig(**QUALITY_LAYERS_OFF, local_answer_check=False)
    engine = AdaptiveReasoningLoop(client(wire), ToolRegistry([builtin_provider()]), config)
    result = await engine.run("what's 17*23", sink=sink)
    assert result.answer == "17 × 23 = 391" and len(wire.requests) == 2
    answer_call = wire.bodies[0]
    assert answer_call["tool_choice"] == {"type": "none"}
    assert [tool["name"] for tool in answer_call["tools"]] == ["calculator"]
    asked, told = answer_call["messages"][-2:]
    assert asked["content"][0]["input"] == {"expression": "17*23"}
    assert told["content"][0]["content"] == "17*23 = 391"
    assert [e.payload["tool"] for e in sink.of("tool.result")] == ["calculator"]


async def test_streamed_text_reaches_the_page_as_draft_deltas_then_the_approved_answer():
    answer = "Seventeen times twenty-three is 391, computed exactly."
    wire = FakeWire(
        anthropic_stream(text=answer),
        anthropic_stream(
            tool=(
                "toolu_q",
                "record_quality_assessment",
                {"is_sufficient": True, "confidence": 0.9, "reasoning": "exact", "missing_aspects": []},
            )
        ),
    )
    sink = ListSink()
    engine = AdaptiveReasoningLoop(client(wire), None, ReasoningConfig(**QUALITY_LAYERS_OFF))
    result = await engine.run("What is 17 times 23?", sink=sink)
    deltas = sink.of("answer.delta")
    assert result.routed_by == "router" and len(wire.requests) == 2, "no analysis call: the router was sure"
    assert "".join(d.payload["text"] for d in deltas) == answer
    assert [d.payload["offset"] for d in deltas] == [0, len(deltas[0].payload["text"])][: len(deltas)]
    draft = deltas[0].payload["draft"]
    assert {d.payload["draft"] for d in deltas} == {draft} and deltas[0].payload["attempt"] == 1
    kinds = sink.kinds()
    assert kinds.index("answer.delta") < kinds.index("quality.completed") < kinds.index("answer.final")
    assert sink.of("quality.completed")[0].payload["draft"] == draft
    assert sink.of("answer.final")[0].payload["draft"] == draft


async def test_429_then_success_backs_off_with_jitter():
    sleeps = Sleeps()
    wire = FakeWire(
        anthropic_error(429, "rate_limit_error"),
        anthropic_error(500, "api_error"),
        anthropic_stream(text="finally"),
    )
    response = await client(wire, sleeps=sleeps).complete(
        LLMRequest(messages=[{"role": "user", "content": "x"}])
    )
    assert response.text == "finally" and response.retries == 2
    assert len(sleeps.calls) == 2
    assert 0.25 <= sleeps.calls[0] <= 0.5 and 0.5 <= sleeps.calls[1] <= 1.0, "exponential, with jitter"


async def test_retry_after_header_is_respected():
    sleeps = Sleeps()
    limited = httpx2.Response(
        429,
        headers={"retry-after": "3"},
        json={"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
    )
    wire = FakeWire(limited, anthropic_stream(text="ok"))
    await client(wire, sleeps=sleeps).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert sleeps.calls[0] >= 3


async def test_529_until_retries_run_out_raises_overloaded():
    wire = FakeWire(*[anthropic_error(529, "overloaded_error")] * 3)
    with pytest.raises(LLMError) as error:
        await client(wire, retries=2).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert error.value.kind == "overloaded" and error.value.retryable and len(wire.requests) == 3
    assert "overloaded" in error.value.user_message()


async def test_overloaded_mid_stream_is_retried():
    broken = anthropic_stream(text="partial", cut_after=2) + (
        b'event: error\ndata: {"type": "error", '
        b'"error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    )
    wire = FakeWire(broken, anthropic_stream(text="whole answer"))
    response = await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert response.text == "whole answer" and response.retries == 1


async def test_a_stream_cut_off_before_message_stop_is_retried_not_taken_for_the_answer():
    # The connection drops after two deltas: no error event, no message_delta, no message_stop.
    cut = anthropic_stream(text="The answer is 391 and the time", cut_after=4)
    wire = FakeWire(cut, anthropic_stream(text="The answer is 391; in Tokyo it is 21:00."))
    response = await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert response.text == "The answer is 391; in Tokyo it is 21:00." and response.retries == 1


@pytest.mark.parametrize(
    "error",
    [
        httpx2.RemoteProtocolError("peer closed connection without sending complete message body"),
        httpx2.ReadTimeout("the model went quiet for longer than the timeout"),
        httpx2.ReadError("connection reset by peer"),
    ],
    ids=["dropped", "stalled", "reset"],
)
async def test_a_connection_lost_mid_stream_is_retried_as_a_connection_error(error):
    """The SDK does not wrap transport errors raised while a stream is read: a connection a
    proxy dropped, or a model silent past LLM_TIMEOUT_SECONDS after its first bytes, escaped
    as raw httpx errors, were never retried, and under load skipped quality checks, fell
    back to unreasoned answers or failed runs with "could not produce an answer"."""
    partial = anthropic_stream(text="The answer is 391 and the time", cut_after=4)
    wire = FakeWire(broken_stream(partial, error), anthropic_stream(text="The answer is 391 in Tokyo."))
    response = await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert response.text == "The answer is 391 in Tokyo." and response.retries == 1
    wire = FakeWire(*[broken_stream(partial, error)] * 2)
    with pytest.raises(LLMError) as raised:
        await client(wire, retries=1).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    expected = "timeout" if isinstance(error, httpx2.TimeoutException) else "connection"
    assert raised.value.kind == expected and raised.value.retries == 1


async def test_the_tokens_of_an_attempt_cut_off_mid_stream_are_counted_with_the_retry():
    """Found by a review: the provider bills a stream that broke after it began, but only the
    retried attempt's tokens reached the run's usage and cost (and so the budgets)."""
    cut = anthropic_stream(text="The answer is 391 and the time", input_tokens=900, cut_after=4)
    wire = FakeWire(cut, anthropic_stream(text="The answer is 391.", input_tokens=900, output_tokens=7))
    response = await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1800, 8)
    wire = FakeWire(*[cut] * 3)
    with pytest.raises(LLMError) as error:
        await client(wire, retries=2).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert error.value.usage.input_tokens == 2700, "a call that failed in the end is billed too"


async def test_tool_input_cut_off_by_max_tokens_is_malformed_not_half_the_arguments():
    events = anthropic_stream(
        tool=("toolu_1", "calculator", '{"expression": "17*23", "note": "tw'),
        input_tokens=40,
        output_tokens=64,
        cache_read=30,
        stop_reason="max_tokens",
    )
    response = await client(FakeWire(events)).complete(
        LLMRequest(messages=[{"role": "user", "content": "x"}], max_tokens=64)
    )
    (call,) = response.tool_calls
    assert call.malformed == '{"expression": "17*23", "note": "tw' and call.arguments == {}
    assert response.stop_reason == "max_tokens"
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (40, 64, 30)


async def test_an_unknown_model_or_an_oversized_request_is_said_in_words_a_person_can_act_on():
    """Found by a review: both showed the raw API text behind "The model call failed: Anthropic
    API error 404: …", with nothing about what to change; neither is retried."""
    wire = FakeWire(anthropic_error(404, "not_found_error", "model: claude-sonet-4-6"))
    with pytest.raises(LLMError) as error:
        await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    said = error.value.user_message()
    assert "does not know the configured model" in said and "claude-sonet-4-6" in said
    assert len(wire.requests) == 1
    wire = FakeWire(anthropic_error(413, "request_too_large", "Request exceeds the maximum size"))
    with pytest.raises(LLMError) as error:
        await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert "too large" in error.value.user_message() and "Start a new chat" in error.value.user_message()
    assert len(wire.requests) == 1


async def test_timeouts_and_bad_requests():
    wire = FakeWire(httpx2.ReadTimeout("slow"), httpx2.ReadTimeout("slow"))
    with pytest.raises(LLMError) as error:
        await client(wire, retries=1).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert error.value.kind == "timeout"
    wire = FakeWire(anthropic_error(400, "invalid_request_error", "max_tokens too large"))
    with pytest.raises(LLMError) as error:
        await client(wire).complete(LLMRequest(messages=[{"role": "user", "content": "x"}]))
    assert error.value.kind == "bad_request" and len(wire.requests) == 1, "not retried"
    assert "max_tokens too large" in str(error.value)


async def test_engine_answers_through_the_fallback_when_analysis_is_overloaded():
    overloaded = [anthropic_error(529, "overloaded_error")] * 2
    wire = FakeWire(
        *overloaded,
        anthropic_stream(
            tool=("t1", "record_plan", {"subtasks": [{"id": "step_1", "description": "Say hi"}]})
        ),
        anthropic_stream(text="Hi!"),
        anthropic_stream(
            tool=(
                "t2",
                "record_quality_assessment",
                {"is_sufficient": True, "confidence": 0.9, "reasoning": "fine", "missing_aspects": []},
            )
        ),
    )
    sink = ListSink()
    engine = AdaptiveReasoningLoop(
        client(wire, retries=1), None, ReasoningConfig(**QUALITY_LAYERS_OFF, **ALWAYS_ANALYSE)
    )
    result = await engine.run("Say hi", sink=sink)
    assert result.answer == "Hi!"
    assert sink.of("component.degraded")[0].payload["component"] == "complexity_analysis"


def test_with_model_shares_the_connection():
    base = AnthropicClient("claude-sonnet-4-6", api_key="k")
    cheap = base.with_model("claude-haiku-4-5")
    assert cheap.model == "claude-haiku-4-5" and cheap._sdk is base._sdk


@pytest.mark.parametrize(
    ("stop_reason", "notice"), [("max_tokens", "length limit"), ("refusal", "declined to continue")]
)
async def test_an_answer_the_model_did_not_finish_says_so(stop_reason, notice):
    """An answer cut off by max_tokens, or stopped by the API's refusal, ends mid-sentence:
    the person is told, instead of reading half an answer as a whole one."""
    cut = "Closures capture variables from the enclosing scope, so a function defined in"
    wire = FakeWire(
        anthropic_stream(text=cut, stop_reason=stop_reason),
        anthropic_stream(
            tool=(
                "toolu_q",
                "record_quality_assessment",
                {"is_sufficient": True, "confidence": 0.9, "reasoning": "ok", "missing_aspects": []},
            )
        ),
    )
    engine = AdaptiveReasoningLoop(
        client(wire), None, ReasoningConfig(**QUALITY_LAYERS_OFF, force_strategy=ExecutionStrategy.DIRECT)
    )
    result = await engine.run("What is a closure?", sink=ListSink())
    assert result.answer.startswith(cut) and result.answer != cut
    assert notice in result.answer


async def test_a_provider_that_keeps_timing_out_fails_the_run_after_one_retry_not_ten():
    """Each timeout costs the whole LLM_TIMEOUT_SECONDS (120 s by default): four retries of
    it, then the plain fallback's four more, kept a person waiting half an hour. A timeout
    is retried once, and the run then fails with the provider's message."""
    wire = FakeWire(*[httpx2.ReadTimeout("slow")] * 10)
    engine = AdaptiveReasoningLoop(client(wire, retries=4), None, ReasoningConfig(**QUALITY_LAYERS_OFF))
    with pytest.raises(ReasoningFailed) as failure:
        await engine.run("What is 17 times 23?", sink=ListSink())
    assert failure.value.user_message == "The model provider did not answer in time."
    assert len(wire.requests) == 2, "the call and one retry; no plain fallback repeating them"


async def test_a_provider_that_stopped_answering_is_not_asked_again_by_the_runs_later_components():
    """Found by a review under load: a model that hung on every call kept a run "Analyzing…"
    for the whole run time limit; each component (analysis, plan, answer) waited out the timeout
    twice and degraded, and the next one asked the same silent provider again."""
    wire = FakeWire(*[httpx2.ReadTimeout("slow")] * 10)
    engine = AdaptiveReasoningLoop(
        client(wire, retries=4), None, ReasoningConfig(**QUALITY_LAYERS_OFF, **ALWAYS_ANALYSE)
    )
    sink = ListSink()
    with pytest.raises(ReasoningFailed) as failure:
        await engine.run("Compare three database indexing strategies for a library system", sink=sink)
    assert failure.value.user_message == "The model provider did not answer in time."
    assert len(wire.requests) == 2, "the analysis call and its one retry; nothing after it asks again"


async def test_a_rejected_api_key_fails_the_run_at_once():
    wire = FakeWire(*[anthropic_error(401, "authentication_error", "invalid x-api-key")] * 3)
    engine = AdaptiveReasoningLoop(client(wire), None, ReasoningConfig(**QUALITY_LAYERS_OFF))
    with pytest.raises(ReasoningFailed) as failure:
        await engine.run("What is 17 times 23?", sink=ListSink())
    assert "rejected the API key" in failure.value.user_message and len(wire.requests) == 1
