"""The admin as an auditor uses it, in headless Chromium: the run list at 1400 px and 390 px,
a run page that reads top-down, the attempt diff, and search. One site and one browser for
the module. Screenshots go to docs/ only with NEXUS_SCREENSHOTS=1 (so tests leave the tree clean).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.e2e.conftest import PASSWORD, Site, unavailable
from tests.e2e.test_browser import CHROMIUM_ARGS, DOCS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ESCALATING = "What is 17*23 and what time is it in Tokyo?"
# Its answer, 4277, cannot appear in a clock reading (the other run tells the time in Tokyo;
# a plain "42" matched it whenever the minute was 42).
PLAIN = "What is 611*7?"


@pytest.fixture(scope="module")
def audit_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """An embedded site whose runs start DIRECT, so the two-part question escalates."""
    site = Site.prepared(tmp_path_factory.mktemp("audit"), FORCE_REASONING_STRATEGY="direct")
    site.start_web()
    client = site.login()
    for question in (ESCALATING, PLAIN):
        site.ask(client, site.new_session(client), question)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        listing = client.get("/admin/chat/reasoningrun/", params={"status__exact": "succeeded"}).text
        if "2 reasoning runs" in listing:
            break
        time.sleep(0.3)
    else:
        raise AssertionError("the two runs did not finish")
    yield site
    site.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    import shutil

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        unavailable("Chromium is not installed (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def admin_page(browser: Browser, site: Site, width: int, height: int = 900) -> tuple[Page, list[str]]:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(site.url + "/admin/login/?next=/admin/chat/reasoningrun/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    expect(page.locator("#result_list")).to_be_visible()
    return page, errors


def screenshot(page: Page, name: str) -> None:
    if os.environ.get("NEXUS_SCREENSHOTS") == "1":
        DOCS.mkdir(exist_ok=True)
        page.screenshot(path=str(DOCS / name), full_page=False)


def no_page_scroll(page: Page, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width + 1, "the page scrolls sideways"


def test_run_list_and_run_page_read_top_down_at_1400_px(audit_site: Site, browser: Browser):
    page, errors = admin_page(browser, audit_site, 1400)
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(2)
    for box in rows.evaluate_all("rows => rows.map(r => r.getBoundingClientRect().height)"):
        assert box < 45, f"a run's row wraps ({box:.0f} px tall)"
    no_page_scroll(page, 1400)
    # Every column shows without scrolling the list sideways (Status read "Succee" beside the
    # admin's app list and a question column of half the width).
    width, room = page.locator("#changelist .results").evaluate("r => [r.scrollWidth, r.clientWidth]")
    assert width <= room + 1, f"the run list is {width} px wide in {room} px"
    question = page.locator("td.field-question .nexus-clip, th.field-question .nexus-clip").first
    expect(question).to_have_attribute("title", re.compile(r"What is"))
    page.get_by_role("link", name=ESCALATING).click()
    card = page.locator(".nexus-card")
    expect(card).to_be_visible()
    expect(card.locator(".nexus-card-answer .markdown strong", has_text="391")).to_be_visible()
    expect(card).to_contain_text("DIRECT (rejected")
    expect(card).to_contain_text("LIGHT (approved")
    first_section = page.locator("fieldset.nexus-section").first
    assert card.bounding_box()["y"] < first_section.bounding_box()["y"], "the summary comes first"
    tools = page.locator("fieldset.nexus-section details", has_text="Tool executions (")
    expect(tools.locator("table")).to_be_hidden()
    tools.locator("summary").click()
    expect(tools.locator("table")).to_be_visible()
    expect(tools.locator("table")).to_contain_text("Asia/Tokyo")
    tools.locator("summary").click()
    # The analysis and outcome fields say what each value is (they showed bare "0.65", "answer").
    for section, label in (("Analysis", "Final strategy"), ("Outcome details", "Final quality")):
        details = page.locator(f"fieldset details:has(> summary :text-is('{section}'))")
        details.locator("summary").click()
        expect(details.locator("label", has_text=label)).to_be_visible()
        details.locator("summary").click()
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 2500, f"the run page is {height} px tall"
    screenshot(page, "audit-run.png")
    assert [e for e in errors if "Content Security Policy" in e] == []
    page.context.close()


def test_the_attempt_diff_shows_what_the_escalation_changed(audit_site: Site, browser: Browser):
    page, errors = admin_page(browser, audit_site, 1400)
    page.get_by_role("link", name=ESCALATING).click()
    page.locator(".nexus-card a.nexus-diff-link").click()
    diff = page.locator("section.nexus-diff").first
    expect(diff.locator(".nexus-missing")).to_contain_text("What time is it in Tokyo?")
    expect(diff.locator(".nexus-before pre")).to_contain_text("391")
    expect(diff.locator(".nexus-after pre ins").first).to_be_visible()
    expect(diff.locator(".nexus-after pre")).to_contain_text("Asia/Tokyo")
    expect(diff.locator(".nexus-added").first).to_contain_text("clock")
    before, after = diff.locator(".nexus-before"), diff.locator(".nexus-after")
    assert abs(before.bounding_box()["y"] - after.bounding_box()["y"]) < 2, "side by side"
    screenshot(page, "audit-diff.png")
    assert [e for e in errors if "Content Security Policy" in e] == []
    page.context.close()


def test_search_at_390_px_finds_runs_by_a_tool_argument(audit_site: Site, browser: Browser):
    page, errors = admin_page(browser, audit_site, 390, 844)
    no_page_scroll(page, 390)
    page.fill("#searchbar", "Asia/Tokyo")
    page.keyboard.press("Enter")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("What is 17*23")
    no_page_scroll(page, 390)
    page.fill("#searchbar", "4277")
    page.keyboard.press("Enter")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text(PLAIN)
    screenshot(page, "audit-search-390.png")
    assert [e for e in errors if "Content Security Policy" in e] == []
    page.context.close()
