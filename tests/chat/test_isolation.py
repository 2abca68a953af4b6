"""The suite's own isolation: what one test starts cannot reach into the next one.

Found in CI: a lost-connection writer test failed with RunTakenOver, then with a duplicate
sequence. An executor an earlier test had left running claimed the later test's run, created
under the same id once the earlier test's transaction was rolled back (see the
pytest_runtest_teardown hook in tests/conftest.py). The two tests below run in this order.
"""

from __future__ import annotations

import time

import pytest

from chat import services
from chat.dispatch import dispatch_run
from chat.models import ReasoningRun

pytestmark = pytest.mark.django_db


def test_a_rolled_back_test_leaves_an_executor_waiting_for_its_write_lock(alice):
    run = services.message_post(session=services.session_create(owner=alice), content="Question")
    dispatch_run(run.pk)  # executed for real, by a thread that cannot see this transaction
    time.sleep(0.3)  # its claim now waits for this test's write lock (on SQLite)


@pytest.mark.django_db(transaction=True)
def test_the_next_test_s_runs_under_the_same_ids_are_not_claimed_by_it(alice):
    runs = [
        services.message_post(session=services.session_create(owner=alice), content=f"Question {n}")
        for n in range(3)
    ]
    time.sleep(1)  # a leftover executor's claim retries within a fraction of that
    claimed = ReasoningRun.objects.filter(pk__in=[run.pk for run in runs]).exclude(delivery_count=0)
    assert not claimed.exists(), "an executor from the test before claimed this test's run"
