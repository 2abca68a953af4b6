"""Fairness: one user's burst waits its turn in order, and the page says where a run stands."""

import asyncio
import inspect
from datetime import timedelta

import pytest
from channels.layers import InMemoryChannelLayer
from django.db.models import F
from django.test import override_settings
from django.urls import reverse

from chat import services, sink
from chat.models import ReasoningRun
from tests.conftest import run_now

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("dispatched")]

HTMX = {"HTTP_HX_REQUEST": "true"}


def post_in_new_chats(client, count: int) -> list[ReasoningRun]:
    """Post one message in each of `count` new chats (one turn per chat), as a browser does."""
    runs = []
    for number in range(count):
        client.post(reverse("chat:session-new"))
        session = services.session_list_for_user(client.user).first()
        response = client.post(
            reverse("chat:message-create", args=[session.pk]), {"content": f"What is {number}+1?"}, **HTMX
        )
        assert response.status_code == 200
        runs.append(ReasoningRun.objects.filter(session=session).get())
    return runs


@pytest.fixture
def clients(alice, bob, client_for):
    made = {}
    for user in (alice, bob):
        made[user.username] = client_for(user)
        made[user.username].user = user
    return made


@pytest.fixture
def next_started(monkeypatch) -> list[int]:
    """Runs handed to the executor when an earlier run of their owner finishes."""
    ids: list[int] = []
    monkeypatch.setattr("chat.dispatch.dispatch_run", ids.append)
    return ids


@override_settings(NEXUS_MAX_RUNS_PER_USER=2)
def test_one_users_burst_waits_its_turn_in_order_and_never_starves_another(clients, next_started):
    first, second, third, fourth = post_in_new_chats(clients["alice"], 4)
    assert services.run_claim(first.pk, worker="w:1") and services.run_claim(second.pk, worker="w:1")
    assert services.run_claim(fourth.pk, worker="w:1") is None, "alice is at her limit"
    assert services.run_claim(third.pk, worker="w:1") is None
    (bobs,) = post_in_new_chats(clients["bob"], 1)
    assert services.run_claim(bobs.pk, worker="w:1"), "bob is not held up by alice's burst"
    assert set(ReasoningRun.objects.filter(status="queued").values_list("pk", flat=True)) == {
        third.pk,
        fourth.pk,
    }

    services.run_mark_succeeded(first)
    assert services.runs_next_for_owner(clients["alice"].user.pk) == [third.pk], "oldest first"
    assert services.run_claim(fourth.pk, worker="w:1") is None, "a later run cannot jump the queue"
    assert services.run_claim(third.pk, worker="w:1")


@override_settings(NEXUS_MAX_RUNS_PER_USER=1)
def test_a_finished_run_starts_its_owners_next_one(clients, next_started):
    first, second = post_in_new_chats(clients["alice"], 2)
    assert run_now(first.pk) == "succeeded"
    assert next_started == [second.pk]
    second.refresh_from_db()
    assert second.status == "queued" and second.dispatched_at is not None


@override_settings(NEXUS_MAX_RUNS_PER_USER=1)
def test_a_next_run_the_queue_refused_is_left_for_the_next_sweep(clients, monkeypatch):
    """Found by a review: a worker that could not queue an owner's next run left it stamped as
    dispatched, so the sweeper sent it only a minute later, as a job the broker had lost."""
    from chat.dispatch import DispatchError
    from chat.engine import start_next_runs

    first, second = post_in_new_chats(clients["alice"], 2)
    services.run_mark_succeeded(first)

    def unreachable(run_id: int) -> None:
        raise DispatchError("the queue is unreachable")

    monkeypatch.setattr("chat.dispatch.dispatch_run", unreachable)
    start_next_runs(clients["alice"].user.pk)
    second.refresh_from_db()
    assert second.status == "queued" and second.dispatched_at is None
    ReasoningRun.objects.filter(pk=second.pk).update(created_at=F("created_at") - timedelta(seconds=2))
    assert second.pk in services.runs_to_recover(), "the next sweep sends it"


@override_settings(NEXUS_MAX_RUNS_PER_USER=1)
def test_a_waiting_run_says_how_many_are_ahead_and_offers_no_retry(clients):
    first, _second, third = post_in_new_chats(clients["alice"], 3)
    services.run_claim(first.pk, worker="w:1")
    services.run_claim(third.pk, worker="w:1")  # parked: alice's first run is still running
    running = clients["alice"].get(reverse("chat:session", args=[first.session_id])).content.decode()
    assert "Queued" not in running and "Retry now" not in running and "Analyzing…" in running
    waiting = clients["alice"].get(reverse("chat:session", args=[third.session_id])).content.decode()
    assert "Queued (2 ahead)" in waiting and "Retry now" not in waiting
    assert "Waiting for a worker" not in waiting


@override_settings(NEXUS_MAX_RUNS_PER_USER=1)
def test_another_persons_waiting_runs_are_not_counted_ahead_of_yours(clients):
    """Alice's runs that wait for her own earlier one never stand before bob's: his page said
    "Queued (3 ahead)" while his run was already starting."""
    first, second, third, fourth = post_in_new_chats(clients["alice"], 4)
    services.run_claim(first.pk, worker="w:1")
    for parked in (second, third, fourth):
        assert services.run_claim(parked.pk, worker="w:1") is None
    (bobs,) = post_in_new_chats(clients["bob"], 1)
    page = clients["bob"].get(reverse("chat:session", args=[bobs.session_id])).content.decode()
    assert "ahead" not in page and "Starting…" in page
    waiting = ReasoningRun.objects.filter(pk__in=[second.pk, third.pk, fourth.pk])
    waiting.update(created_at=F("created_at") - timedelta(seconds=5))  # waited long enough for the sweeper
    assert set(services.runs_to_recover()) >= {second.pk, third.pk, fourth.pk}
    assert all(waiting.values_list("dispatched_at", flat=True)), "sent again, stamped as dispatched"
    page = clients["bob"].get(reverse("chat:session", args=[bobs.session_id])).content.decode()
    assert "ahead" not in page, "still not ahead once the sweeper has sent them again"
    alices = clients["alice"].get(reverse("chat:session", args=[fourth.session_id])).content.decode()
    assert "Queued (3 ahead)" in alices, "her own earlier runs are ahead of her last one"


@override_settings(NEXUS_MAX_RUNS_PER_USER=2)
def test_a_finished_run_of_another_person_counts_only_their_next_run_ahead_not_their_backlog(clients):
    """Found under a team load (10 people posting 10 questions each): a queued run's page said
    "Queued (4 ahead)", then "(9 ahead)", then "(4 ahead)" again. Whenever one of another
    person's runs finished, every run of that person's backlog posted before it counted as
    ahead for as long as they were under their limit, though only their oldest would start."""
    first, second, *_waiting = post_in_new_chats(clients["alice"], 5)
    for run in (first, second):
        assert services.run_claim(run.pk, worker="w:1")
    bobs_first, bobs_second, bobs_third = post_in_new_chats(clients["bob"], 3)
    for run in (bobs_first, bobs_second):
        assert services.run_claim(run.pk, worker="w:1")
    page = clients["bob"].get(reverse("chat:session", args=[bobs_third.session_id])).content.decode()
    assert "Queued (1 ahead)" in page, "his own running run that must finish; alice's waiting ones are not"

    services.run_mark_succeeded(first)  # alice is under her limit: her oldest waiting run starts next
    page = clients["bob"].get(reverse("chat:session", args=[bobs_third.session_id])).content.decode()
    assert "Queued (2 ahead)" in page, "alice's next run and his own; not the rest of her backlog"


def test_only_a_run_whose_dispatch_failed_offers_retry(clients):
    (run,) = post_in_new_chats(clients["alice"], 1)
    page = clients["alice"].get(reverse("chat:session", args=[run.session_id])).content.decode()
    assert "Starting…" in page and "Retry now" not in page
    services.runs_mark_dispatched([run.pk], dispatched=False)
    page = clients["alice"].get(reverse("chat:session", args=[run.session_id])).content.decode()
    assert "Retry now" in page
    # Found by a team review: after a reload in a Redis outage the turn said only "Starting…
    # Retry now", with nothing about why it waits or whether it starts by itself.
    assert "the job queue could not be reached" in page and "starts by itself" in page
    # And not "Starting…" beside "Not handed to a worker yet" (found by another).
    assert "Waiting for the job queue…" in page and "Starting…" not in page


def test_runs_starting_together_tell_the_waiting_pages_once_or_twice_not_once_each(monkeypatch):
    """The queue-moved message of fifty runs claimed at once: sends overlap into a few, and
    the last run to start is always told (a send that begins after it)."""
    sends: list[float] = []

    class Layer(InMemoryChannelLayer):
        async def group_send(self, group: str, message: dict) -> None:
            sends.append(asyncio.get_running_loop().time())
            await asyncio.sleep(0.05)  # a Redis round trip or two

    monkeypatch.setattr(sink, "get_channel_layer", lambda: Layer())

    async def burst() -> float:
        for _ in range(50):
            told = sink.queue_moved()
            if inspect.isawaitable(told):  # as it was: each run awaited its own send
                await told
            await asyncio.sleep(0)
        last_start = asyncio.get_running_loop().time()
        await asyncio.sleep(0.3)
        return last_start

    last_start = asyncio.run(burst())
    assert 1 <= len(sends) <= 3, f"{len(sends)} sends for 50 starts"
    assert sends[-1] >= last_start, "a send began after the last run started"
