"""The audit data model: constraints hold, deletes cascade only where they should."""

import pytest
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError, RestrictedError

from chat import services
from chat.models import (
    Attempt,
    ChatSession,
    Critique,
    LLMCall,
    Message,
    Plan,
    PlanStep,
    ReasoningRun,
    Reflection,
    ToolExecution,
    TraceEvent,
)
from tests.conftest import full_run

pytestmark = pytest.mark.django_db(transaction=True)


def _violates(create) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        create()


def test_a_run_has_at_most_one_answer(alice_session):
    run = services.message_post(session=alice_session, content="Hi")
    Message.objects.create(session=alice_session, role="assistant", content="one", run=run)
    _violates(lambda: Message.objects.create(session=alice_session, role="assistant", content="two", run=run))


def test_an_assistant_message_needs_its_run(alice_session):
    _violates(lambda: Message.objects.create(session=alice_session, role="assistant", content="orphan"))
    _violates(lambda: Message.objects.create(session=alice_session, role="robot", content="x"))


def test_one_active_run_per_session(alice_session):
    first = services.message_post(session=alice_session, content="First")
    with pytest.raises(services.RunActive):
        services.message_post(session=alice_session, content="Second")
    message = Message.objects.create(session=alice_session, role="user", content="sneaky")
    _violates(lambda: ReasoningRun.objects.create(session=alice_session, user_message=message))
    ReasoningRun.objects.filter(pk=first.pk).update(status="succeeded")
    assert services.message_post(session=alice_session, content="Third").status == "queued"


def test_a_question_refused_for_a_run_that_has_finished_since_is_stored(alice_session):
    """Two quick posts: the insert is refused while the chat's run is active, and that run has
    finished by the time the refusal is looked into. The question is stored, once (it was a
    500, and the message was lost)."""
    from django.db import connection

    refused = []

    def refuse_once(execute, sql, params, many, context):
        if sql.startswith('INSERT INTO "chat_reasoningrun"') and not refused:
            refused.append(sql)
            raise IntegrityError("UNIQUE constraint failed: chat_reasoningrun.session_id")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(refuse_once):
        run = services.message_post(session=alice_session, content="What is 8*9?")
    assert refused and run.status == "queued"
    assert list(alice_session.messages.values_list("content", flat=True)) == ["What is 8*9?"]
    ReasoningRun.objects.filter(pk=run.pk).update(status="succeeded")
    refused.clear()
    with connection.execute_wrapper(refuse_once):  # the same for asking again
        again = services.message_resend(run=run)
    assert refused and again.status == "queued" and alice_session.messages.count() == 2


@pytest.mark.parametrize("field", ["confidence", "final_quality"])
def test_run_scores_stay_between_zero_and_one(alice_session, field):
    run = services.message_post(session=alice_session, content="Hi")
    _violates(lambda: ReasoningRun.objects.filter(pk=run.pk).update(**{field: 1.5}))
    _violates(lambda: ReasoningRun.objects.filter(pk=run.pk).update(cost=-1))
    _violates(lambda: ReasoningRun.objects.filter(pk=run.pk).update(status="exploded"))


def test_trace_sequences_are_unique_and_positive(alice_session):
    run = services.message_post(session=alice_session, content="Hi")
    TraceEvent.objects.create(run=run, sequence=1, kind="run.started")
    _violates(lambda: TraceEvent.objects.create(run=run, sequence=1, kind="run.started"))
    _violates(lambda: TraceEvent.objects.create(run=run, sequence=0, kind="run.started"))
    _violates(lambda: TraceEvent.objects.create(run=run, sequence=2, kind="x", level="loud"))


def test_child_rows_are_unique_where_they_identify_something(alice_session):
    run = services.message_post(session=alice_session, content="Hi")
    Attempt.objects.create(run=run, number=1, strategy="direct")
    _violates(lambda: Attempt.objects.create(run=run, number=1, strategy="direct"))
    plan = Plan.objects.create(run=run, revision=0, created_by="light_planning")
    _violates(lambda: Plan.objects.create(run=run, revision=0, created_by="light_planning"))
    PlanStep.objects.create(plan=plan, step_id="step_1", description="x")
    _violates(lambda: PlanStep.objects.create(plan=plan, step_id="step_1", description="y"))
    _violates(
        lambda: Critique.objects.create(
            run=run,
            overall_score=2,
            feasibility_score=1,
            correctness_score=1,
            efficiency_score=1,
            safety_score=1,
            recommendation="approve",
        )
    )
    _violates(
        lambda: Critique.objects.create(
            run=run,
            overall_score=1,
            feasibility_score=1,
            correctness_score=1,
            efficiency_score=1,
            safety_score=1,
            recommendation="shrug",
        )
    )
    _violates(lambda: ToolExecution.objects.create(run=run, tool="t", duration_ms=-1))
    _violates(lambda: LLMCall.objects.create(run=run, component="agent", cost=-0.1))


def test_deleting_a_session_deletes_its_runs_and_their_trail(alice_session):
    run = full_run(alice_session)
    counts = {
        model: model.objects.filter(run=run).count()
        for model in (Attempt, Plan, ToolExecution, LLMCall, Critique, TraceEvent)
    }
    assert all(counts.values()), counts
    assert Reflection.objects.filter(run=run).exists() and PlanStep.objects.filter(plan__run=run).exists()
    alice_session.delete()
    assert not ReasoningRun.objects.exists() and not Message.objects.exists()
    for model in (Attempt, Plan, PlanStep, ToolExecution, LLMCall, Critique, Reflection, TraceEvent):
        assert not model.objects.exists(), model


def test_nothing_else_cascades_by_surprise(alice, alice_session):
    run = full_run(alice_session)
    with pytest.raises((RestrictedError, ProtectedError)):
        run.user_message.delete()
    run.answers.first().delete()
    assert ReasoningRun.objects.filter(pk=run.pk).exists(), "removing an answer keeps the audit trail"
    other = ChatSession.objects.create(owner=alice, title="other")
    other.delete()
    assert ReasoningRun.objects.filter(pk=run.pk).exists()
