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


class CountingWire:
    """A fake Anthropic API on a real socket (HTTP/1.1, keep-alive) that counts the TCP
    connections its callers open."""

    def __init__(self) -> None:
        import http.server
        import threading

        from tests.reasoning.fakewire import anthropic_stream

        wire = self
        self.connections = 0
        body = anthropic_stream(text="Hello")

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                wire.connections += 1
                super().setup()

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_runs_on_one_worker_share_the_providers_connection():
    """Each run used to build its own SDK client: a new TLS context (about 17 ms of CPU) and
    new connections to the provider for every run. Runs on one event loop now share one."""
    import asyncio

    from reasoning.llm.base import LLMRequest

    wire = CountingWire()
    config = ReasoningConfig.from_env({}, provider="anthropic")
    request = LLMRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=10)

    async def three_runs() -> list[str]:
        return [(await build_llm().complete(request)).text for _ in range(3)]

    try:
        with override_settings(
            NEXUS_LLM_PROVIDER="anthropic",
            NEXUS_REASONING=config,
            ANTHROPIC_API_KEY="sk-ant-test",
            ANTHROPIC_BASE_URL=wire.url,
        ):
            assert asyncio.run(three_runs()) == ["Hello"] * 3
            assert wire.connections == 1
            # Another loop (another worker process's, or a test's) gets its own client.
            assert asyncio.run(three_runs()) == ["Hello"] * 3
            assert wire.connections == 2
            # A changed setting takes effect on the next run.
            with override_settings(ANTHROPIC_BASE_URL=wire.url + "/"):

                async def model_of_next_run() -> str:
                    first = build_llm()
                    await first.complete(request)
                    return str(first._sdk.base_url)

                assert asyncio.run(model_of_next_run()).endswith("/")
    finally:
        wire.close()
