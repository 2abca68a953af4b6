"""Finished runs made directly as rows, for usage and quality statistics (no engine)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from chat.models import ChatSession, LLMCall, Message, ReasoningRun


def finished_run(
    owner,
    *,
    at: datetime,
    latency_ms: int = 1000,
    quality: float | None = 0.9,
    escalations: int = 0,
    strategy: str = "direct",
    model: str = "claude-sonnet",
    tokens: tuple[int, int, int, int] = (100, 50, 0, 0),
    cost: str = "0.01",
    status: str = ReasoningRun.Status.SUCCEEDED,
    calls: tuple[str, ...] = (),
    confidence: float | None = None,
) -> ReasoningRun:
    """One finished run; `calls` names the models of its LLMCall rows (tokens split evenly)."""
    session = ChatSession.objects.create(owner=owner, title="usage")
    message = Message.objects.create(
        session=session, role=Message.Role.USER, content="question", created_at=at
    )
    run = ReasoningRun.objects.create(
        session=session,
        user_message=message,
        status=status,
        query="question",
        initial_strategy="direct",
        final_strategy=strategy,
        escalation_count=escalations,
        final_quality=quality,
        confidence=confidence,
        input_tokens=tokens[0],
        output_tokens=tokens[1],
        cache_read_tokens=tokens[2],
        cache_write_tokens=tokens[3],
        cost=Decimal(cost),
        latency_ms=latency_ms,
        model=model,
        created_at=at,
        started_at=at,
        finished_at=at,
    )
    for name in calls:
        LLMCall.objects.create(
            run=run,
            component="agent",
            model=name,
            input_tokens=tokens[0] // len(calls),
            output_tokens=tokens[1] // len(calls),
            cache_read_tokens=tokens[2] // len(calls),
            cache_write_tokens=tokens[3] // len(calls),
            latency_ms=latency_ms / len(calls),
            cost=Decimal(cost) / len(calls),
            created_at=at,
        )
    return run
