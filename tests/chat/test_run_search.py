"""Finding runs by what was said or done: questions, answers, tool arguments and results,
errors; full text on PostgreSQL (GIN indexes) and SQLite (FTS5), combined with the filters."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chat import services
from chat.models import LLMCall, Message, ReasoningRun, ToolExecution
from chat.search import run_search
from tests.conftest import full_run

pytestmark = pytest.mark.django_db(transaction=True)


def found(text: str, queryset=None) -> set[int]:
    return set(run_search(queryset or ReasoningRun.objects.all(), text).values_list("pk", flat=True))


@pytest.fixture
def runs(alice, bob):
    tokyo = full_run(services.session_create(owner=alice), "What is 17*23 and what time is it in Tokyo?")
    sums = full_run(services.session_create(owner=bob), "What is 6*7?")
    return tokyo, sums


def test_search_finds_runs_by_question_answer_tool_call_and_error(runs):
    tokyo, sums = runs
    assert found("Tokyo") == {tokyo.pk}, "a word of a question"
    assert found("what is") == {tokyo.pk, sums.pk}
    assert found("Asia/Tokyo") == {tokyo.pk}, "a tool's arguments and result"
    assert found("clock") == {tokyo.pk}, "a tool's name"
    ToolExecution.objects.filter(run=sums).update(error="ECONNRESET upstream refused")
    assert found("ECONNRESET") == {sums.pk}, "a tool error, indexed when the row changes"
    LLMCall.objects.filter(pk=tokyo.llm_calls.first().pk).update(error="overloaded_error from provider")
    assert found("overloaded_error") == {tokyo.pk}, "a model call's error"
    ReasoningRun.objects.filter(pk=sums.pk).update(error="worker lost heartbeat")
    assert found("heartbeat") == {sums.pk}, "the run's own error"
    assert found("nothing-like-this-anywhere") == set()
    ToolExecution.objects.filter(run=tokyo).delete()
    assert found("391") == {tokyo.pk}, "a number only the answer still holds (17*23 = 391)"


def test_search_input_is_never_query_syntax(runs):
    for hostile in ['"', "NEAR(", "Tokyo OR", "*", "a:b", "' OR 1=1 --", "(((", "^"]:
        run_search(ReasoningRun.objects.all(), hostile).count()  # no error for any input


def test_search_follows_answers_that_change_and_runs_that_go(runs):
    sums = runs[1]
    assert found("forty") == set()
    Message.objects.filter(run=sums).update(content="The answer is forty-two.")
    assert found("forty") == {sums.pk}
    sums.session.delete()
    assert found("forty") == set()


def test_search_combines_with_the_admin_filters(runs, auditor, client_for):
    client = client_for(auditor)
    page = client.get("/admin/chat/reasoningrun/", {"q": "calculator"}).content.decode()
    assert "What is 6*7?" in page and "17*23 and what time" in page
    page = client.get("/admin/chat/reasoningrun/", {"q": "calculator", "escalated": "yes"}).content.decode()
    assert "17*23 and what time" in page and "What is 6*7?" not in page
    page = client.get("/admin/chat/reasoningrun/", {"q": "bob"}).content.decode()
    assert "What is 6*7?" in page and "17*23 and what time" not in page, "an owner's name still finds"


def test_search_runs_on_a_full_text_index(runs):
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute("SELECT name FROM sqlite_master WHERE name LIKE 'chat_run_fts%%'")
            names = {row[0] for row in cursor.fetchall()}
            assert "chat_run_fts" in names and len([n for n in names if "_a" in n]) >= 12
            return
        with CaptureQueriesContext(connection) as captured:
            run_search(ReasoningRun.objects.all(), "Tokyo").count()
        (search,) = [q["sql"] for q in captured.captured_queries if "to_tsvector" in q["sql"]]
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("EXPLAIN " + search)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        cursor.execute("SET enable_seqscan = on")
    for index in ("message_fts", "tool_fts", "llmcall_error_fts", "run_error_fts"):
        assert index in plan, plan


def test_the_sqlite_index_follows_rows_again_after_a_table_rebuild_drops_its_triggers(runs):
    """Django rebuilds a SQLite table to change it, which drops the table's triggers; after
    `migrate` (post_migrate) they are back and the index has caught up with the rows."""
    from chat.fts import ensure_sqlite_fulltext

    tokyo, sums = runs
    if connection.vendor != "sqlite":
        assert ensure_sqlite_fulltext() == []  # PostgreSQL's indexes live on the tables
        return
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER chat_run_fts_tool_au")
    ToolExecution.objects.filter(run=sums).update(error="EPIPE while reading")
    assert found("EPIPE") == set(), "no trigger, no index update"
    assert ensure_sqlite_fulltext() == ["chat_run_fts"]
    assert found("EPIPE") == {sums.pk} and found("Tokyo") == {tokyo.pk}
    ToolExecution.objects.filter(run=sums).update(error="ETIMEDOUT later")
    assert found("ETIMEDOUT") == {sums.pk}
    assert ensure_sqlite_fulltext() == []
