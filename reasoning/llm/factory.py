"""Build the configured provider's client from explicit values (the host reads settings)."""

from __future__ import annotations

from reasoning.llm.base import LLMClient, RetryPolicy

PROVIDERS = ("anthropic", "openai", "offline")


def make_client(
    provider: str,
    *,
    model: str,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout: float = 120.0,
    max_retries: int = 4,
    offline_latency: float = 0.0,
    offline_jitter: float = 0.0,
) -> LLMClient:
    retry = RetryPolicy(max_retries=max_retries)
    if provider == "anthropic":
        from reasoning.llm.anthropic_client import AnthropicClient

        return AnthropicClient(model, api_key=api_key, base_url=base_url, timeout=timeout, retry=retry)
    if provider == "openai":
        from reasoning.llm.openai_client import OpenAIClient

        return OpenAIClient(model, api_key=api_key, base_url=base_url, timeout=timeout, retry=retry)
    if provider == "offline":
        from reasoning.llm.offline import OfflineClient

        return OfflineClient(model, latency=offline_latency, jitter=offline_jitter)
    raise ValueError(f"unknown LLM provider {provider!r}; valid providers: {', '.join(PROVIDERS)}")
