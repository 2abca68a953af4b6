"""Choosing the model provider is configuration, not code; the choice is visible and recorded."""

import pytest
from django.test import override_settings

from chat.engine import build_llm
from reasoning import ReasoningConfig
from reasoning.llm.anthropic_client import AnthropicClient
from reasoning.llm.offline import OfflineClient
from reasoning.llm.openai_client import OpenAIClient


@pytest.mark.parametrize(
    ("provider", "extra", "cls", "model"),
    [
        ("offline", {}, OfflineClient, "nexus-offline"),
        ("anthropic", {"ANTHROPIC_API_KEY": "sk-ant-test"}, AnthropicClient, "claude-sonnet-4-6"),
        ("openai", {"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, OpenAIClient, "gpt-4o-mini"),
    ],
)
def test_build_llm_follows_the_setting(provider, extra, cls, model):
    config = ReasoningConfig.from_env({}, provider=provider)
    with override_settings(NEXUS_LLM_PROVIDER=provider, NEXUS_REASONING=config, **extra):
        client = build_llm()
    assert isinstance(client, cls) and client.model == model


@pytest.mark.django_db
def test_the_footer_names_provider_and_models(alice, client_for):
    page = client_for(alice).get("/").content.decode()
    assert "Model: <strong>offline</strong> · nexus-offline" in page
    config = ReasoningConfig.from_env({}, provider="anthropic")
    with override_settings(NEXUS_LLM_PROVIDER="anthropic", NEXUS_REASONING=config):
        page = client_for(alice).get("/").content.decode()
    assert "Model: <strong>anthropic</strong> · claude-sonnet-4-6 (analysis: claude-haiku-4-5)" in page
