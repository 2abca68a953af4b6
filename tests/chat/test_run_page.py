"""A run's admin page reads top-down (summary card, then counted, collapsible sections), and
the attempt diff shows what each escalation changed."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from chat import services
from chat.models import AnswerFeedback, Message, StaffAuditEntry, ToolExecution, TraceEvent
from tests.conftest import full_run

pytestmark = pytest.mark.django_db(transaction=True)


def run_page(client, run) -> str:
    response = client.get(reverse("admin:chat_reasoningrun_change", args=[run.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_summary_card_comes_first_with_the_answer_rendered_and_sanitised(
    auditor, alice_session, bob, client_for
):
    run = full_run(alice_session)
    Message.objects.filter(run=run).update(
        content="**391** it is.\n\n<script>alert('x')</script>\n\n[click](javascript:alert(1)) `code`"
    )
    AnswerFeedback.objects.create(run=run, user=bob, rating=-1, comment="missed the timezone")
    page = run_page(client_for(auditor), run)
    card = page[page.index('class="nexus-card"') :]
    assert page.index('class="nexus-card"') < page.index("Tool executions (")
    assert "<strong>391</strong> it is." in card, "the answer is rendered, not shown as raw Markdown"
    assert "<script>alert" not in page and 'href="javascript:' not in page
    assert "&lt;script&gt;alert" in card, "raw HTML in an answer is shown as text"
    for fact in ["DIRECT (rejected 0.45)", "LIGHT (approved 0.95)", "tokens", "cost", "latency"]:
        assert fact in card, fact
    assert "👍 0 · 👎 1" in card and "bob 👎: missed the timezone" in card


def test_the_card_says_an_answer_shown_below_its_threshold_was_not_approved(
    auditor, alice_session, client_for
):
    """It read "Approved answer" beside "LIGHT (rejected 0.00)"."""
    from chat.models import ReasoningRun

    run = full_run(alice_session)
    assert "<h3>Approved answer</h3>" in run_page(client_for(auditor), run)
    ReasoningRun.objects.filter(pk=run.pk).update(final_quality=0.0, answer_kind="low_confidence")
    card = run_page(client_for(auditor), run)
    assert "<h3>Answer shown with a low-confidence note</h3>" in card and "Approved answer" not in card
    diff = client_for(auditor).get(reverse("admin:chat_reasoningrun_diff", args=[run.pk])).content.decode()
    assert "Answer shown with a low-confidence note" in diff and "Approved answer" not in diff


def test_sections_are_collapsible_and_say_how_many_rows_they_hold(auditor, alice_session, client_for):
    run = full_run(alice_session)
    page = run_page(client_for(auditor), run)
    events = run.events.count()
    for title in [
        "Attempts (2)",
        "Plan steps (2)",
        f"Tool executions ({run.tool_executions.count()})",
        f"LLM calls ({run.llm_calls.count()})",
        "Critiques (1)",
        f"Timeline ({events} events)",
    ]:
        assert re.search(r"<details><summary>\s*<h2[^>]*>" + re.escape(title), page), title


def test_long_payloads_are_cut_short_with_show_all(auditor, alice_session, client_for):
    run = full_run(alice_session)
    ToolExecution.objects.filter(run=run, tool="clock").update(result="tick " * 1000)
    page = run_page(client_for(auditor), run)
    assert "show all (5,000 characters)" in page
    assert page.count("tick " * 1000) == 1, "the whole value is there once, behind show all"


def test_the_run_page_still_costs_a_fixed_number_of_queries_with_feedback(
    auditor, alice, bob, alice_session, client_for
):
    client = client_for(auditor)
    small = full_run(alice_session)
    AnswerFeedback.objects.create(run=small, user=bob, rating=1)
    run_page(client, small)
    with CaptureQueriesContext(connection) as one:
        run_page(client, small)
    big = full_run(services.session_create(owner=alice), "What is 3*3 and what time is it in Tokyo?")
    for user in (alice, bob):
        AnswerFeedback.objects.create(run=big, user=user, rating=1, comment="fine")
    TraceEvent.objects.bulk_create(
        TraceEvent(run=big, sequence=big.next_sequence + n, kind="llm.call") for n in range(30)
    )
    with CaptureQueriesContext(connection) as other:
        run_page(client, big)
    assert len(one) == len(other)


def test_the_run_list_shows_feedback_once_there_is_some(auditor, alice_session, bob, client_for):
    run = full_run(alice_session)
    client = client_for(auditor)
    assert "column-feedback" not in client.get("/admin/chat/reasoningrun/").content.decode()
    AnswerFeedback.objects.create(run=run, user=bob, rating=1)
    page = client.get("/admin/chat/reasoningrun/").content.decode()
    assert "column-feedback" in page and "👍 1 · 👎 0" in page


def test_every_escalation_links_to_a_side_by_side_diff(auditor, alice_session, client_for):
    run = full_run(alice_session)
    client = client_for(auditor)
    diff_url = reverse("admin:chat_reasoningrun_diff", args=[run.pk])
    page = run_page(client, run)
    assert page.count(f'href="{diff_url}') >= 3, "summary, the escalated attempt and the escalation event"
    diff = client.get(diff_url).content.decode()
    before = diff[diff.index("Rejected draft") : diff.index("Approved answer")]
    after = diff[diff.index("Approved answer") :]
    assert "17*23" in before and "Tokyo" not in before
    assert "<ins>" in after and "Asia/Tokyo" in after
    missing = diff[diff.index("missing aspects") : diff.index("tools the later attempt added")]
    assert "What time is it in Tokyo?" in missing
    added = diff[diff.index("tools the later attempt added") : diff.index("plan steps of the later")]
    assert "clock" in added and "calculator" not in added, "the calculator was already used before"
    assert "step_2" in diff
    assert StaffAuditEntry.objects.filter(
        object_type="run", object_id=str(run.pk), details__page="diff"
    ).exists()


def test_a_run_without_escalation_has_nothing_to_compare(auditor, alice_session, client_for):
    run = full_run(alice_session, "What is 6*7?")
    assert run.escalation_count == 0
    diff = client_for(auditor).get(reverse("admin:chat_reasoningrun_diff", args=[run.pk]))
    assert "nothing to compare" in diff.content.decode()
