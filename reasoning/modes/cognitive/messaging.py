"""How the cognitive agents talk: CognitiveMessages on a small in-process bus (seed 002, 2.2).

Agents never call each other: the coordinator sends a request to an agent by name and gets
its response; agents send notifications. Every message (request, response, notification,
error) is an `agent.message` event, so the panel and the admin show the agents' conversation
as a timeline: who asked whom what, and how long the answer took. A handler that raises
becomes an ERROR response, which the coordinator turns into a degradation.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from reasoning.agent import summarize
from reasoning.context import RunContext, describe_error

PHASE = "Cognitive"


class MessageType(StrEnum):
    REQUEST = "request"
    RESPONSE = "response"
    NOTIFICATION = "notification"
    ERROR = "error"


_ids = itertools.count(1)


@dataclass
class CognitiveMessage:
    """A message between agents. `correlation_id` pairs a response with its request."""

    sender: str
    recipient: str
    message_type: MessageType
    action: str
    payload: dict[str, Any]
    correlation_id: str
    summary: str = ""
    timestamp: datetime = field(default_factory=lambda: datetime.now(UTC))
    priority: int = 0
    id: str = field(default_factory=lambda: f"m{next(_ids)}")

    def create_response(self, payload: dict[str, Any], summary: str = "") -> CognitiveMessage:
        return CognitiveMessage(
            sender=self.recipient,
            recipient=self.sender,
            message_type=MessageType.RESPONSE,
            action=self.action,
            payload=payload,
            correlation_id=self.correlation_id,
            summary=summary,
            priority=self.priority,
        )

    def create_error(self, error: str) -> CognitiveMessage:
        return CognitiveMessage(
            sender=self.recipient,
            recipient=self.sender,
            message_type=MessageType.ERROR,
            action=self.action,
            payload={"error": error},
            correlation_id=self.correlation_id,
            summary=error,
            priority=self.priority,
        )


@dataclass
class CognitiveContext:
    """The workspace every agent reads and writes: what the run has understood so far."""

    user_query: str
    original_query: str
    conversation_history: list[dict[str, Any]]
    perception: dict[str, Any] = field(default_factory=dict)
    memories: list[Any] = field(default_factory=list)
    accumulated_results: list[dict[str, Any]] = field(default_factory=list)
    current_plan: Any = None
    processing_stage: str = "initialized"
    iteration_count: int = 0
    confidence: float = 0.0

    def update_stage(self, stage: str) -> None:
        self.processing_stage = stage


Handler = Callable[[CognitiveMessage, CognitiveContext], Awaitable[tuple[dict[str, Any], str]]]


class Agent:
    """An agent on the bus: `handle` answers a request with (payload, one-line summary)."""

    name: str = "agent"

    async def handle(
        self, message: CognitiveMessage, workspace: CognitiveContext
    ) -> tuple[dict[str, Any], str]:
        raise NotImplementedError


class MessageError(Exception):
    """An agent answered a request with an error message."""

    def __init__(self, recipient: str, action: str, error: str) -> None:
        super().__init__(f"{recipient} could not {action}: {error}")
        self.recipient = recipient
        self.action = action
        self.error = error


class CognitiveBus:
    """Delivers messages to agents by name and reports each one as an `agent.message` event."""

    def __init__(self, ctx: RunContext, workspace: CognitiveContext) -> None:
        self.ctx = ctx
        self.workspace = workspace
        self.agents: dict[str, Agent] = {}
        self.log: list[CognitiveMessage] = []
        self._correlations = itertools.count(1)

    def register(self, agent: Agent) -> None:
        self.agents[agent.name] = agent

    async def request(
        self,
        sender: str,
        recipient: str,
        action: str,
        payload: dict[str, Any],
        *,
        summary: str,
        priority: int = 0,
    ) -> dict[str, Any]:
        """Ask `recipient` to do `action`; its response payload, or MessageError."""
        message = CognitiveMessage(
            sender=sender,
            recipient=recipient,
            message_type=MessageType.REQUEST,
            action=action,
            payload=payload,
            correlation_id=f"c{next(self._correlations)}",
            summary=summary,
            priority=priority,
        )
        await self._report(message)
        started = time.perf_counter()
        try:
            body, said = await self.agents[recipient].handle(message, self.workspace)
        except Exception as error:
            reply = message.create_error(describe_error(error))
            await self._report(reply, duration_ms=(time.perf_counter() - started) * 1000)
            raise MessageError(recipient, action, reply.payload["error"]) from error
        reply = message.create_response(body, said)
        await self._report(reply, duration_ms=(time.perf_counter() - started) * 1000)
        return body

    async def notify(
        self, sender: str, recipient: str, action: str, payload: dict[str, Any], *, summary: str
    ) -> None:
        """A one-way message (no response expected), recorded like the rest."""
        message = CognitiveMessage(
            sender=sender,
            recipient=recipient,
            message_type=MessageType.NOTIFICATION,
            action=action,
            payload=payload,
            correlation_id=f"c{next(self._correlations)}",
            summary=summary,
        )
        await self._report(message)

    async def _report(self, message: CognitiveMessage, *, duration_ms: float | None = None) -> None:
        self.log.append(message)
        await self.ctx.emit(
            "agent.message",
            PHASE,
            id=message.id,
            correlation_id=message.correlation_id,
            sender=message.sender,
            recipient=message.recipient,
            type=message.message_type.value,
            action=message.action,
            priority=message.priority,
            summary=summarize(message.summary, 240),
            stage=self.workspace.processing_stage,
            **({"duration_ms": round(duration_ms, 1)} if duration_ms is not None else {}),
        )
