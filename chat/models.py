"""The audit trail: every session, run, attempt, plan, tool call, model call and event.

Deleting a chat session deletes its messages and runs, and with a run everything recorded
about it; nothing else cascades. Trace events are append-only.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from chat.crypto import SealedJSONField


class Strategy(models.TextChoices):
    DIRECT = "direct", "Direct"
    LIGHT = "light_planning", "Light planning"
    DEEP = "deep_reasoning", "Deep reasoning"


def _score_check(field: str, name: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__gte": 0.0, f"{field}__lte": 1.0}),
        name=name,
    )


class ChatSession(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_sessions"
    )
    title = models.CharField(max_length=200, default="New chat")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)
    # The name the page's "+ New chat" gave the chat it asked for: the second post of a
    # double-click opens the chat the first one made (see services.session_new).
    client_key = models.CharField(max_length=64, null=True, blank=True, editable=False)  # noqa: DJ001

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="session_owner_recent")]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "client_key"],
                condition=Q(client_key__gt=""),
                name="session_client_key_unique",
            )
        ]

    def __str__(self) -> str:
        return self.title


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    # For an assistant message: the run whose approved answer it is.
    run = models.ForeignKey(
        "ReasoningRun", on_delete=models.RESTRICT, null=True, blank=True, related_name="answers"
    )
    # A user message that asks an earlier one again (regenerate) or in other words (edit): the
    # turn keeps every version, so older answers stay browsable.
    variant_of = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="variants"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    # The page's own name for a question it sent (see chat.js): sent again after its answer
    # was lost on the way back (a server restart, the network), it is found, not asked twice.
    # NULL when there is none (older rows, other ways in): a NOT NULL column made SQLite rebuild
    # the table, which its full-text triggers do not survive.
    client_key = models.CharField(max_length=64, null=True, blank=True, editable=False)  # noqa: DJ001

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["session", "created_at"], name="message_session_time")]
        constraints = [
            models.CheckConstraint(condition=Q(role__in=["user", "assistant"]), name="message_role_valid"),
            # A redelivered or retried run can never add a second answer.
            models.UniqueConstraint(fields=["run"], condition=Q(role="assistant"), name="one_answer_per_run"),
            models.UniqueConstraint(
                fields=["session", "client_key"],
                condition=~Q(client_key=""),
                name="message_client_key_unique",
            ),
            models.CheckConstraint(
                condition=Q(role="user") | Q(run__isnull=False), name="assistant_message_has_run"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class ReasoningRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        # Parked until a person decides on a tool call: no worker holds it meanwhile.
        AWAITING = "awaiting", "Awaiting approval"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    class Complexity(models.TextChoices):
        SIMPLE = "simple", "Simple"
        MEDIUM = "medium", "Medium"
        COMPLEX = "complex", "Complex"

    ACTIVE = (Status.QUEUED, Status.RUNNING, Status.AWAITING)

    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="runs")
    user_message = models.OneToOneField(Message, on_delete=models.RESTRICT, related_name="started_run")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    # The question the engine answers: what the person typed, or the prompt a /command
    # expanded to. Never wrapped: mentioned documents travel separately in `attachments`.
    query = models.TextField(blank=True)
    # What the person attached ([{kind, title, content, source}]: @documents, @resources,
    # /command context): context for the answer, not part of the question.
    attachments = models.JSONField(default=list, blank=True)
    # The agent mode the run was started in (AGENT_MODE, or the chat's choice then): a run
    # resumed after its worker died goes on in it, whatever the chat has switched to since.
    agent_mode = models.CharField(max_length=30, blank=True)
    complexity_level = models.CharField(max_length=16, choices=Complexity.choices, blank=True)
    initial_strategy = models.CharField(max_length=20, choices=Strategy.choices, blank=True)
    final_strategy = models.CharField(max_length=20, choices=Strategy.choices, blank=True)
    rationale = models.TextField(blank=True)
    confidence = models.FloatField(null=True, blank=True)
    estimated_iterations = models.PositiveSmallIntegerField(null=True, blank=True)
    requires_research = models.BooleanField(default=False)
    requires_synthesis = models.BooleanField(default=False)
    multi_part_query = models.BooleanField(default=False)
    tool_count_estimate = models.PositiveSmallIntegerField(default=0)
    escalation_count = models.PositiveSmallIntegerField(default=0)
    final_quality = models.FloatField(null=True, blank=True)
    answer_kind = models.CharField(max_length=20, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal(0))
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    provider = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=120, blank=True)
    tracker_state = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    delivery_count = models.PositiveSmallIntegerField(default=0)
    # Claims that were its own worker resuming it after the database went away under it
    # (chat.services.run_release): counted in delivery_count, no worker died for them.
    releases = models.PositiveSmallIntegerField(default=0)
    # When the run was last handed to the job queue; empty while it waits for its turn (the
    # owner's concurrent-run limit) or because the queue was unreachable. A sweeper hands
    # such runs over again (chat.services.runs_to_recover).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    # The sequence number the next trace event gets (events are numbered without gaps).
    next_sequence = models.PositiveIntegerField(default=1)
    # The answer draft streaming right now (answer.delta events are folded here, not stored
    # one by one): a reload mid-stream shows what has streamed so far.
    draft_id = models.CharField(max_length=20, blank=True)
    draft_text = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["session", "created_at"], name="run_session_time"),
            models.Index(fields=["status", "heartbeat_at"], name="run_status_heartbeat"),
            models.Index(fields=["-created_at"], name="run_recent"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "awaiting", "succeeded", "failed", "cancelled"]),
                name="run_status_valid",
            ),
            # One user turn at a time per session: a second message waits for the first answer.
            models.UniqueConstraint(
                fields=["session"],
                condition=Q(status__in=["queued", "running", "awaiting"]),
                name="one_active_run_per_session",
            ),
            _score_check("confidence", "run_confidence_range"),
            _score_check("final_quality", "run_quality_range"),
            models.CheckConstraint(condition=Q(cost__gte=0), name="run_cost_not_negative"),
            models.CheckConstraint(
                condition=Q(finished_at__isnull=True)
                | Q(started_at__isnull=True)
                | Q(finished_at__gte=models.F("started_at")),
                name="run_finish_after_start",
            ),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def escalated(self) -> bool:
        return self.escalation_count > 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens


class Attempt(models.Model):
    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", "In progress"
        COMPLETED = "completed", "Completed"
        ESCALATED = "escalated", "Escalated"
        FAILED = "failed", "Failed"

    # db_index=False: the unique (run, number) index serves lookups by run, one index less to write.
    run = models.ForeignKey(ReasoningRun, on_delete=models.CASCADE, related_name="attempts", db_index=False)
    number = models.PositiveSmallIntegerField()
    strategy = models.CharField(max_length=20, choices=Strategy.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.IN_PROGRESS)
    response = models.TextField(blank=True)
    quality_score = models.FloatField(null=True, blank=True)
    approved = models.BooleanField(null=True)
    evaluation = models.JSONField(null=True, blank=True)
    outcome = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "number"]
        constraints = [
            models.UniqueConstraint(fields=["run", "number"], name="attempt_number_unique"),
            _score_check("quality_score", "attempt_quality_range"),
        ]

    def __str__(self) -> str:
        return f"Attempt {self.number}: {self.strategy}"


class Plan(models.Model):
    # db_index=False: the unique (run, revision) index serves lookups by run.
    run = models.ForeignKey(ReasoningRun, on_delete=models.CASCADE, related_name="plans", db_index=False)
    attempt = models.ForeignKey(
        Attempt, on_delete=models.SET_NULL, null=True, blank=True, related_name="plans"
    )
    revision = models.PositiveSmallIntegerField(default=0)
    created_by = models.CharField(max_length=20, choices=Strategy.choices)
    mode = models.CharField(max_length=16, blank=True)
    summary = models.TextField(blank=True)
    lessons_used = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "revision"]
        constraints = [models.UniqueConstraint(fields=["run", "revision"], name="plan_revision_unique")]

    def __str__(self) -> str:
        return f"Plan r{self.revision} ({self.created_by})"


class PlanStep(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        IN_PROGRESS = "in_progress", "In progress"
        COMPLETED = "completed", "Completed"
        SKIPPED = "skipped", "Skipped"
        FAILED = "failed", "Failed"

    # db_index=False: the unique (plan, step id) index serves lookups by plan.
    plan = models.ForeignKey(Plan, on_delete=models.CASCADE, related_name="steps", db_index=False)
    step_id = models.CharField(max_length=60)
    position = models.PositiveSmallIntegerField(default=0)
    description = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    priority = models.PositiveSmallIntegerField(default=2)
    depends_on = models.JSONField(default=list, blank=True)
    spawned_from = models.CharField(max_length=60, blank=True)
    findings = models.JSONField(default=list, blank=True)
    tools_used = models.JSONField(default=list, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["plan", "position"]
        constraints = [models.UniqueConstraint(fields=["plan", "step_id"], name="plan_step_unique")]

    def __str__(self) -> str:
        return f"{self.step_id}: {self.description[:60]}"


class ToolExecution(models.Model):
    # db_index=False: the (run, argument hash) index serves lookups by run.
    run = models.ForeignKey(
        ReasoningRun, on_delete=models.CASCADE, related_name="tool_executions", db_index=False
    )
    attempt = models.ForeignKey(
        Attempt, on_delete=models.SET_NULL, null=True, blank=True, related_name="tool_executions"
    )
    call_id = models.CharField(max_length=100, blank=True)
    step_id = models.CharField(max_length=60, blank=True)
    server = models.CharField(max_length=100, blank=True)
    tool = models.CharField(max_length=200)
    arguments = models.JSONField(default=dict, blank=True)
    argument_hash = models.CharField(max_length=64, blank=True)
    success = models.BooleanField(default=False)
    result = models.TextField(blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.FloatField(default=0.0)
    cached = models.BooleanField(default=False)
    truncated = models.BooleanField(default=False)
    strategy = models.CharField(max_length=20, choices=Strategy.choices, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Images, binary resources and links the server returned beside its text (images and
    # blobs with their base64 data, checked and size-capped by the engine), and the trace
    # event that shows them (whose stored payload lists them without the data).
    parts = models.JSONField(default=list, blank=True)
    event_sequence = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["run", "created_at", "id"]
        indexes = [models.Index(fields=["run", "argument_hash"], name="tool_run_hash")]
        constraints = [
            models.CheckConstraint(condition=Q(duration_ms__gte=0), name="tool_duration_not_negative")
        ]

    def __str__(self) -> str:
        return f"{self.server}/{self.tool}"


class LLMCall(models.Model):
    run = models.ForeignKey(ReasoningRun, on_delete=models.CASCADE, related_name="llm_calls")
    component = models.CharField(max_length=40)
    provider = models.CharField(max_length=40, blank=True)
    model = models.CharField(max_length=120, blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cache_write_tokens = models.PositiveIntegerField(default=0)
    latency_ms = models.FloatField(default=0.0)
    stop_reason = models.CharField(max_length=40, blank=True)
    retries = models.PositiveSmallIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal(0))
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "created_at", "id"]
        verbose_name = "LLM call"
        constraints = [models.CheckConstraint(condition=Q(cost__gte=0), name="llm_cost_not_negative")]

    def __str__(self) -> str:
        return f"{self.component} → {self.model}"


class Critique(models.Model):
    class Recommendation(models.TextChoices):
        APPROVE = "approve", "Approve"
        REVISE = "revise", "Revise"
        REJECT = "reject", "Reject"

    run = models.ForeignKey(ReasoningRun, on_delete=models.CASCADE, related_name="critiques")
    plan = models.ForeignKey(Plan, on_delete=models.SET_NULL, null=True, blank=True, related_name="critiques")
    round = models.PositiveSmallIntegerField(default=1)
    overall_score = models.FloatField()
    feasibility_score = models.FloatField()
    correctness_score = models.FloatField()
    efficiency_score = models.FloatField()
    safety_score = models.FloatField()
    issues = models.JSONField(default=list, blank=True)
    strengths = models.JSONField(default=list, blank=True)
    suggestions = models.JSONField(default=list, blank=True)
    recommendation = models.CharField(max_length=10, choices=Recommendation.choices)
    rationale = models.TextField(blank=True)
    quick = models.BooleanField(default=False, help_text="From quick validation, without a model call.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "created_at", "id"]
        constraints = [
            _score_check("overall_score", "critique_overall_range"),
            _score_check("feasibility_score", "critique_feasibility_range"),
            _score_check("correctness_score", "critique_correctness_range"),
            _score_check("efficiency_score", "critique_efficiency_range"),
            _score_check("safety_score", "critique_safety_range"),
            models.CheckConstraint(
                condition=Q(recommendation__in=["approve", "revise", "reject"]),
                name="critique_recommendation_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"Critique {self.overall_score:.2f} ({self.recommendation})"


class Reflection(models.Model):
    run = models.OneToOneField(ReasoningRun, on_delete=models.CASCADE, related_name="reflection")
    insights = models.JSONField(default=list, blank=True)
    lessons = models.JSONField(default=list, blank=True)
    improvements = models.JSONField(default=list, blank=True)
    confidence = models.FloatField(default=0.0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [_score_check("confidence", "reflection_confidence_range")]

    def __str__(self) -> str:
        return f"Reflection on run {self.run_id}"


class TeamLesson(models.Model):
    """A reflection's lesson that staff reviewed and promoted to every user's planner.

    Unreviewed lessons stay with the user whose run they came from: with a real model a
    lesson can carry that user's data or instructions injected by a document or a tool.
    """

    text = models.TextField(help_text="Reword it to remove anything specific to one person's data.")
    source_run = models.ForeignKey(
        ReasoningRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="team_lessons"
    )
    promoted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    promoted_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-promoted_at", "-id"]

    def __str__(self) -> str:
        return self.text[:80]


class TraceEvent(models.Model):
    class Level(models.TextChoices):
        STATUS = "status", "Status"
        TRACE = "trace", "Trace"

    # db_index=False: the unique (run, sequence) index serves lookups by run; a run writes about
    # twenty events, and each row had one index more to update for nothing.
    run = models.ForeignKey(ReasoningRun, on_delete=models.CASCADE, related_name="events", db_index=False)
    sequence = models.PositiveIntegerField()
    kind = models.CharField(max_length=40)
    phase = models.CharField(max_length=80, blank=True)
    level = models.CharField(max_length=8, choices=Level.choices, default=Level.TRACE)
    payload = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["run", "sequence"], name="trace_sequence_unique"),
            models.CheckConstraint(condition=Q(sequence__gte=1), name="trace_sequence_positive"),
            models.CheckConstraint(condition=Q(level__in=["status", "trace"]), name="trace_level_valid"),
        ]

    def __str__(self) -> str:
        return f"#{self.sequence} {self.kind}"


class Preference(models.Model):
    """Per-user interface choices that follow the user across devices."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="nexus_preference"
    )
    trace_open = models.BooleanField(default=False, help_text="Show reasoning panels expanded.")
    theme = models.CharField(
        max_length=8,
        choices=[("system", "As the device"), ("light", "Light"), ("dark", "Dark")],
        default="system",
    )

    def __str__(self) -> str:
        return f"Preferences of {self.user}"


class Document(models.Model):
    """A team document: searchable by runs, mentionable with @, served as an MCP resource."""

    class Format(models.TextChoices):
        MARKDOWN = "markdown", "Markdown"
        TEXT = "text", "Plain text"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="documents")
    title = models.CharField(max_length=200)
    content = models.TextField()
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.MARKDOWN)
    shared = models.BooleanField(default=False, help_text="Visible to everyone, not only the owner.")
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["title", "id"]
        indexes = [
            models.Index(fields=["owner", "title"], name="document_owner_title"),
            models.Index(fields=["shared"], name="document_shared"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["owner", "title"], name="document_title_unique_per_owner"),
            models.CheckConstraint(
                condition=Q(format__in=["markdown", "text"]), name="document_format_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def uri(self) -> str:
        return f"nexus://documents/{self.pk}"


class MCPServer(models.Model):
    """A tool server, configured by staff. The built-in Nexus server is created enabled."""

    class Transport(models.TextChoices):
        STDIO = "stdio", "stdio (a local command)"
        HTTP = "http", "Streamable HTTP (a URL)"

    class Status(models.TextChoices):
        UNKNOWN = "unknown", "Not checked yet"
        OK = "ok", "Connected"
        ERROR = "error", "Unavailable"
        PAUSED = "paused", "Paused after repeated failures"

    name = models.CharField(
        max_length=30,
        unique=True,
        help_text="Lowercase letters, digits and single underscores; prefixes its tool names.",
    )
    transport = models.CharField(max_length=10, choices=Transport.choices, default=Transport.STDIO)
    builtin = models.BooleanField(
        default=False, editable=False, help_text="Nexus's own server (calculator, clock, team documents)."
    )
    command = models.CharField(max_length=500, blank=True)
    args = models.JSONField(default=list, blank=True)
    env = SealedJSONField(default=dict, blank=True, help_text="Secret: encrypted, never shown back.")
    cwd = models.CharField(max_length=500, blank=True)
    url = models.URLField(max_length=500, blank=True)
    headers = SealedJSONField(default=dict, blank=True, help_text="Secret: encrypted, never shown back.")
    enabled = models.BooleanField(default=True)
    call_timeout = models.FloatField(default=30.0, help_text="Seconds a tool call may take.")
    tool_policies = models.JSONField(
        default=dict,
        blank=True,
        help_text='Per tool: "cache" or "no-cache" (tools whose answer changes between calls); a tool '
        "not listed is reused only when its annotations say it is read-only, closed-world and idempotent.",
    )
    approval_policies = models.JSONField(
        default=dict,
        blank=True,
        help_text='Per tool: "auto" (runs on its own), "ask" (the person approves each call) or "never".',
    )
    default_approval = models.CharField(
        max_length=10,
        blank=True,
        choices=[("", "From each tool's annotations"), ("auto", "auto"), ("ask", "ask"), ("never", "never")],
        help_text="For tools not listed above. From annotations: a tool that may destroy something or "
        "reaches an open world asks.",
    )
    last_status = models.CharField(max_length=10, choices=Status.choices, default=Status.UNKNOWN)
    last_error = models.TextField(blank=True)
    last_checked = models.DateTimeField(null=True, blank=True)
    # Set while a process has the server paused (its circuit open) after repeated failures.
    paused_until = models.DateTimeField(null=True, blank=True)
    tool_count = models.PositiveIntegerField(default=0)
    # The tools as last listed (name, approval, caching, description): what the per-tool
    # policies are keyed by.
    tools = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "MCP server"
        constraints = [
            models.CheckConstraint(condition=Q(transport__in=["stdio", "http"]), name="mcp_transport_valid"),
            models.CheckConstraint(condition=Q(call_timeout__gt=0), name="mcp_timeout_positive"),
            models.CheckConstraint(
                condition=Q(name__regex=r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$"), name="mcp_name_valid"
            ),
            models.CheckConstraint(
                condition=Q(builtin=True)
                | Q(transport="http", url__gt="")
                | Q(transport="stdio", command__gt=""),
                name="mcp_server_reachable",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class AnswerFeedback(models.Model):
    """A person's verdict on an answer: the check on the evaluator's own score.

    One row per person and run, changed in place when they change their mind.
    """

    class Rating(models.IntegerChoices):
        UP = 1, "Helpful"
        DOWN = -1, "Not helpful"

    run = models.ForeignKey(ReasoningRun, on_delete=models.CASCADE, related_name="feedback")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="answer_feedback"
    )
    rating = models.SmallIntegerField(choices=Rating.choices)
    comment = models.TextField(blank=True, max_length=2000)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at", "-id"]
        verbose_name = "answer feedback"
        verbose_name_plural = "answer feedback"
        indexes = [models.Index(fields=["rating", "updated_at"], name="feedback_rating_time")]
        constraints = [
            models.UniqueConstraint(fields=["run", "user"], name="feedback_once_per_user"),
            models.CheckConstraint(condition=Q(rating__in=[1, -1]), name="feedback_rating_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.get_rating_display()} on run {self.run_id}"


class StaffAuditEntry(models.Model):
    """What staff looked at, exported or changed: the audit of the auditors.

    Append-only: rows are never changed or deleted through the ORM (see `save`/`delete`),
    and the admin offers neither. The actor's name is kept if the account goes.
    """

    class Action(models.TextChoices):
        VIEW = "view", "Viewed"
        EXPORT = "export", "Exported"
        ADD = "add", "Added"
        CHANGE = "change", "Changed"
        DELETE = "delete", "Deleted"
        OTHER = "other", "Other"

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=10, choices=Action.choices)
    object_type = models.CharField(max_length=60, help_text='What was touched, e.g. "run", "mcp server".')
    object_id = models.CharField(max_length=64, blank=True)
    summary = models.CharField(max_length=500)
    details = models.JSONField(default=dict, blank=True)
    ip_address = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "staff audit entry"
        verbose_name_plural = "staff audit log"
        indexes = [
            models.Index(fields=["-created_at"], name="staff_audit_recent"),
            models.Index(fields=["object_type", "object_id"], name="staff_audit_object"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(action__in=["view", "export", "add", "change", "delete", "other"]),
                name="staff_audit_action_valid",
            )
        ]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action} {self.object_type} {self.object_id}".strip()

    def save(self, *args: object, **kwargs: object) -> None:
        if self.pk is not None and not self._state.adding:
            raise PermissionError("The staff audit log is append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args: object, **kwargs: object) -> tuple[int, dict[str, int]]:
        raise PermissionError("The staff audit log is append-only.")


class ToolApproval(models.Model):
    """A person's decision on one tool call a run wanted to make (issue 14). Created pending
    when the run asks; the run waits for it, across a worker restart (the resumed run finds
    the same row). "Always for this chat" approves the tool for the chat's later calls."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for a decision"
        APPROVED = "approved", "Approved"
        DECLINED = "declined", "Declined"

    class Scope(models.TextChoices):
        ONCE = "once", "This call"
        CHAT = "chat", "Always for this chat"

    run = models.ForeignKey(ReasoningRun, on_delete=models.CASCADE, related_name="tool_approvals")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="tool_approvals")
    event_sequence = models.PositiveIntegerField(null=True, blank=True)
    call_id = models.CharField(max_length=100, blank=True)
    server = models.CharField(max_length=100, blank=True)
    tool = models.CharField(max_length=200)  # the server's own name
    model_tool = models.CharField(max_length=200)  # the name the model used (server__tool)
    arguments = models.JSONField(default=dict, blank=True)
    argument_hash = models.CharField(max_length=64)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.ONCE)
    edited_arguments = models.JSONField(null=True, blank=True)
    # The tool's input schema when the run asked: what a person's edit is checked against.
    input_schema = models.JSONField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "argument_hash"], name="approval_once_per_call"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "approved", "declined"]), name="approval_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.model_tool} ({self.status})"


class Elicitation(models.Model):
    """A tool server's request for the person's input during a call, and the answer (issue 14).
    The run waits for it like for an approval; a resumed run finds the same row by its key."""

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for an answer"
        ACCEPT = "accept", "Answered"
        DECLINE = "decline", "Declined"
        CANCEL = "cancel", "Dismissed"

    run = models.ForeignKey(ReasoningRun, on_delete=models.CASCADE, related_name="elicitations")
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="elicitations")
    key = models.CharField(max_length=64)
    event_sequence = models.PositiveIntegerField(null=True, blank=True)
    server = models.CharField(max_length=100, blank=True)
    tool = models.CharField(max_length=200, blank=True)
    message = models.TextField()
    schema = models.JSONField(default=dict, blank=True)
    # URL mode: the page the server asks the person to open (http or https only).
    url = models.URLField(max_length=2000, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    content = models.JSONField(null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    answered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="elicitation_once_per_key")]

    def __str__(self) -> str:
        return f"{self.server}/{self.tool}: {self.status}"


# --- long-term memory (issue 16: the cognitive mode's episodic and semantic memory) -----------


class Memory(models.Model):
    """Something Nexus remembers about a person: an episode (a past exchange, summarised) or a
    fact (with its source and confidence). Procedural memory is the lessons (Reflection).

    It is the owner's alone until staff promote it to the team (`shared`). Deleting it deletes
    it and the episodes derived from it (`sources`; chat.memory.memory_delete): nothing keeps
    a copy, and the full-text index follows through triggers (SQLite) or a generated column
    (PostgreSQL), so a deleted item can never be recalled. A chat's episodes go with the chat.
    """

    class Kind(models.TextChoices):
        EPISODIC = "episodic", "Episode"
        SEMANTIC = "semantic", "Fact"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memories")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    text = models.TextField()
    source = models.CharField(max_length=200, blank=True)
    confidence = models.FloatField(default=1.0)
    session = models.ForeignKey(
        ChatSession, on_delete=models.CASCADE, null=True, blank=True, related_name="memories"
    )
    run = models.ForeignKey(
        ReasoningRun, on_delete=models.SET_NULL, null=True, blank=True, related_name="memories"
    )
    shared = models.BooleanField(
        default=False, help_text="Recalled for everyone (staff promote reviewed items)."
    )
    promoted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # What an episode was derived from: the facts told in the same exchange and the items its
    # run recalled. Its answer may repeat them, so deleting one of them deletes the episode.
    sources = models.ManyToManyField("self", symmetrical=False, blank=True, related_name="derived")
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="memory_owner_recent")]
        constraints = [
            _score_check("confidence", "memory_confidence_range"),
            models.CheckConstraint(condition=Q(kind__in=["episodic", "semantic"]), name="memory_kind_valid"),
        ]

    def __str__(self) -> str:
        return self.text[:80]


class EpisodicMemory(Memory):
    class Meta:
        proxy = True
        verbose_name = "episodic memory"
        verbose_name_plural = "episodic memories"


class SemanticMemory(Memory):
    class Meta:
        proxy = True
        verbose_name = "semantic memory (fact)"
        verbose_name_plural = "semantic memories (facts)"


class SessionMode(models.Model):
    """The agent mode a person picked for one chat (when NEXUS_CHAT_MODE_CHOICE allows it)."""

    session = models.OneToOneField(ChatSession, on_delete=models.CASCADE, related_name="agent_mode")
    mode = models.CharField(max_length=30)

    def __str__(self) -> str:
        return f"{self.session_id}: {self.mode}"
