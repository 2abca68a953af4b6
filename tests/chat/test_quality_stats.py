"""Answer-quality stats: people's thumbs against the evaluator and the confidence scorer."""

from __future__ import annotations

import pytest
from django.utils import timezone

from chat.models import AnswerFeedback, TraceEvent
from tests.chat.usage_data import finished_run

pytestmark = pytest.mark.django_db

UP, DOWN = AnswerFeedback.Rating.UP, AnswerFeedback.Rating.DOWN


@pytest.fixture
def verdicts(alice, bob):
    now = timezone.now()
    passed_but_down = finished_run(alice, at=now, quality=0.9)  # DIRECT passes at 0.6
    failed_but_up = finished_run(alice, at=now, quality=0.3)
    agreed = finished_run(bob, at=now, quality=0.9, strategy="light_planning")
    AnswerFeedback.objects.create(run=passed_but_down, user=bob, rating=DOWN, comment="Wrong year.")
    AnswerFeedback.objects.create(run=failed_but_up, user=alice, rating=UP)
    AnswerFeedback.objects.create(run=agreed, user=bob, rating=UP)
    TraceEvent.objects.create(
        run=agreed,
        sequence=1,
        kind="confidence.assessed",
        phase="",
        level="trace",
        payload={"action": "execute"},
    )
    TraceEvent.objects.create(
        run=agreed,
        sequence=2,
        kind="confidence.assessed",
        phase="",
        level="trace",
        payload={"action": "caution"},
    )
    return passed_but_down, failed_but_up, agreed


def test_verdicts_beside_the_evaluator_per_strategy_and_model(verdicts, auditor, client_for):
    html = client_for(auditor).get("/usage/quality/").content.decode()
    direct = html[html.index('<th scope="row">Direct</th>') :].split("</tr>")[0]
    # 2 verdicts: 1 up, 1 down; the evaluator passed 1; scores 0.30 (up) and 0.90 (down); both disagree.
    assert "<td>2</td><td>1</td><td>1</td><td>1</td><td>0.30</td><td>0.90</td><td>0%</td>" in direct
    light = html[html.index('<th scope="row">Light planning</th>') :].split("</tr>")[0]
    assert "<td>100%</td>" in light and light.rstrip().endswith("<td>0</td>")
    by_decision = html[html.index('id="by-decision"') :]
    assert '<th scope="row">caution</th><td>1</td>' in by_decision, "the scorer's last decision counts"
    assert '<th scope="row">—</th><td>2</td>' in by_decision


def test_the_disagreeing_runs_are_one_click_away(verdicts, auditor, client_for):
    passed_but_down, failed_but_up, agreed = verdicts
    client = client_for(auditor)
    html = client.get("/usage/quality/").content.decode()
    link = html.split('class="disagreements" href="')[1].split('"')[0].replace("&amp;", "&")
    listing = client.get("/usage/quality/" + link).content.decode()
    listed = listing[listing.index('id="disagreements"') :]
    assert f"/admin/chat/reasoningrun/{passed_but_down.pk}/change/" in listed and "Wrong year." in listed
    assert f"/admin/chat/reasoningrun/{failed_but_up.pk}/change/" in listed
    assert f"reasoningrun/{agreed.pk}/change/" not in listed


def test_quality_stats_are_for_staff(verdicts, bob, client_for):
    assert client_for(bob).get("/usage/quality/").status_code == 403
