"""Running Nexus for a team, in headless Chromium: the usage dashboard draws its charts, a
budget set in the admin refuses the next message inline, saying when it resets."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from tests.e2e.conftest import PASSWORD, Site, manage, sign_in
from tests.e2e.test_browser import CHROMIUM_ARGS, DOCS, ask

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def team_browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, Page]]:
    """One embedded site and one signed-in browser page for the module's tests, in order."""
    import shutil

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        from tests.e2e.conftest import unavailable

        unavailable("Chromium is not installed (apt-get install chromium)")
    site = Site.prepared(Path(tmp_path_factory.mktemp("teamops")), OFFLINE_LATENCY_MS="20")
    site.start_web()
    errors: list[str] = []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
            page.on(
                "console",
                lambda m: errors.append(f"{m.text} {m.location.get('url')}") if m.type == "error" else None,
            )
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
            sign_in(page, site)
            yield site, page
            browser.close()
    finally:
        site.stop()
    # The admin's pages have no icon link, so Chromium asks for /favicon.ico (a 404 not ours).
    assert [e for e in errors if "/favicon.ico" not in e] == [], "no script errors or CSP violations"


def test_the_dashboard_draws_a_chart_above_each_table(team_browser):
    site, page = team_browser
    page.click("text=Start a chat")
    ask(page, "What is 17*23?")
    expect(page.locator(".answer .markdown").last).to_contain_text("391", timeout=20000)
    page.goto(site.url + "/usage/")
    expect(page.locator("#total-runs")).to_have_text("1")
    for table in ("day", "user", "model", "strategy", "calls"):
        expect(page.locator(f"#by-{table} canvas")).to_have_attribute("data-drawn", "true")
        expect(page.locator(f"#by-{table} table tbody tr")).not_to_have_count(0)
    expect(page.locator("#by-user tbody")).to_contain_text("admin")
    with page.expect_download() as download:
        page.click("#by-day a.csv")
    assert download.value.suggested_filename.startswith("nexus-usage-day-")
    if os.environ.get("NEXUS_SCREENSHOTS") == "1":
        DOCS.mkdir(exist_ok=True)
        page.screenshot(path=str(DOCS / "usage-dashboard.png"), full_page=True)


def test_a_budget_set_in_the_admin_refuses_the_next_message_inline(team_browser):
    site, page = team_browser
    page.goto(site.url + "/admin/teamops/budget/add/")
    page.select_option("#id_user", label="admin")
    page.select_option("#id_period", "day")
    page.select_option("#id_metric", "tokens")
    page.fill("#id_limit", "1")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_contain_text("was added successfully")
    expect(page.locator("#result_list")).to_contain_text("1 tokens")
    page.goto(site.url + "/")
    ask(page, "And what is 2+2?")
    error = page.locator("#composer-error")
    expect(error).to_contain_text("Your daily budget of 1 tokens is used up")
    expect(error).to_contain_text("It resets on")
    (
        expect(page.locator("#composer-input")).to_have_value("And what is 2+2?"),
        "the message is kept to send later",
    )
    expect(page.locator(".turn")).to_have_count(1), "nothing was sent"
    page.goto(site.url + "/usage/mine/")
    expect(page.locator(".usage-budgets li.over")).to_contain_text("Yours, daily")


def test_a_teammate_opens_a_shared_link_and_the_owner_sees_it(team_browser):
    site, page = team_browser
    manage(
        site.env,
        "shell",
        "-c",
        f"from django.contrib.auth import get_user_model; "
        f"get_user_model().objects.create_user('bob', password='{PASSWORD}')",
    )
    page.goto(site.url + "/")
    page.click("#share-dialog summary")
    page.check("#share-dialog input[name=include_trace]")
    page.click("#share-dialog button[type=submit]")
    link = page.locator("#share-dialog .share-link input").first
    page.click("#share-dialog summary")
    url = link.input_value()
    assert "/shared/" in url
    teammate = page.context.browser.new_context().new_page()
    teammate.goto(url)
    teammate.fill("#id_username", "bob")
    teammate.fill("#id_password", PASSWORD)
    teammate.click("button[type=submit]")
    expect(teammate.locator(".shared-answer")).to_contain_text("391")
    expect(teammate.locator("meta[name=robots]")).to_have_attribute("content", "noindex, nofollow, noarchive")
    teammate.click("text=Reasoning steps")
    expect(teammate.locator(".shared-trace")).to_contain_text("Tool called")
    # A title with a long unbroken token (a pasted URL) made the page 3,000 px wide on a phone;
    # a question lost the line breaks it was typed with.
    manage(
        site.env,
        "shell",
        "-c",
        "from chat.models import ChatSession; "
        "ChatSession.objects.update(title='https://example.com/' + 'x' * 180)",
    )
    teammate.set_viewport_size({"width": 390, "height": 844})
    teammate.reload()
    assert teammate.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), (
        "no sideways scroll"
    )
    white = teammate.locator(".shared-question .shared-text").first.evaluate(
        "e => getComputedStyle(e).whiteSpace"
    )
    assert white == "pre-wrap"
    teammate.context.close()
    page.reload()
    page.click("#share-dialog summary")
    expect(page.locator("#share-dialog .share-opening")).to_contain_text("bob opened it 2×")  # and the reload
    page.click("#share-dialog button.danger")
    expect(page.locator("#share-dialog .share-link.revoked")).to_have_count(1)
