"""Routing questions to DIRECT, LIGHT or DEEP without a model call (seed 000's triage)."""

from reasoning.routing.router import RouteDecision, Router

__all__ = ["RouteDecision", "Router"]
