"""The cognitive mode in headless Chromium: the agents' conversation and recalled memory in the
reasoning panel, live; then the Memory page, where deleting is forgetting.

Reuses test_browser's page fixture, on a site whose AGENT_MODE is cognitive.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import Site
from tests.e2e.test_browser import ask, page  # noqa: F401  - the shared browser fixture

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def slow_site(tmp_path: Path) -> Iterator[Site]:
    """test_browser's site, answering in the cognitive mode."""
    site = Site.prepared(tmp_path, OFFLINE_LATENCY_MS="100", AGENT_MODE="cognitive")
    site.start_web()
    yield site
    site.stop()


def test_the_agents_timeline_and_the_memory_page(page: Page):  # noqa: F811
    page.locator("#app").evaluate("app => app.dataset.traceOpen = 'true'")
    ask(page, "What is 6*7?")  # an exchange that has nothing to do with what is deleted below
    expect(page.locator(".answer .markdown").last).to_contain_text("42", timeout=45000)
    ask(page, "Remember that our staging database is db-2 in Frankfurt.")
    expect(page.locator(".answer .markdown")).to_have_count(2, timeout=45000)
    ask(page, "Which staging database do we use?")
    expect(page.locator(".answer .markdown")).to_have_count(3, timeout=45000)
    expect(page.locator(".answer .markdown").last).to_contain_text("db-2 in Frankfurt", timeout=45000)
    trace = page.locator("ol.trace").last
    messages = trace.locator(".ev-agent-message")
    expect(messages.first).to_contain_text("cortex asks perception")
    expect(trace).to_contain_text("perception answers cortex")
    expect(trace).to_contain_text("motor answers cortex")
    expect(trace.locator(".ev-memory-recalled")).to_contain_text("db-2 in Frankfurt")

    page.click("text=Memory")
    expect(page.locator("h1")).to_have_text("What Nexus remembers about you")
    fact = page.locator("tr.memory-item", has_text="Fact").filter(has_text="db-2 in Frankfurt")
    expect(fact).to_have_count(1)
    page.on("dialog", lambda dialog: dialog.accept())  # deleting asks first
    fact.locator("button", has_text="Delete").click()
    expect(page.locator(".flash")).to_contain_text("will not recall it again")
    # The exchanges that told it and repeated it went with it; the unrelated one stays.
    expect(page.locator(".flash")).to_contain_text("2 conversation summaries")
    expect(page.locator("tr.memory-item", has_text="Fact")).to_have_count(0)
    expect(page.locator(".memory-text", has_text="Frankfurt")).to_have_count(0)
    expect(page.locator(".memory-table")).to_contain_text("6*7")
    page.click("text=Forget everything")
    expect(page.locator(".memory-table")).to_contain_text("Nexus remembers nothing about you yet.")
