"""Audit benchmarks on PostgreSQL: full-text search over 100,000 generated runs (goal: the
run list answers within 300 ms), and the JSON Lines export's memory at 1,000 vs 10,000 runs
(goal: flat, a ratio near 1).

The data is generated once with COPY into a database of its own (`<test db>_bench_audit`)
and kept: later `make bench` runs reuse it (NEXUS_BENCH_REGENERATE=1 builds it again).
The measuring runs in a child process with that database as DATABASE_URL.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

RUNS = 100_000
EXPORT_RUNS = 10_000
GOAL_MS = 300
ROOT = Path(__file__).resolve().parents[2]
TEST_DB = os.environ.get("NEXUS_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/nexus")
BENCH_DB = TEST_DB.rsplit("/", 1)[0] + "/" + TEST_DB.rsplit("/", 1)[1].split("?")[0] + "_bench_audit"
NEEDLES = ["zanzibarite", "quokkaflux", "ERR_TLS_CERT_ALTNAME_INVALID"]


def _words(seed: int) -> list[str]:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(5000)]


def _ensure_database() -> bool:
    """True if the database exists with its data; creates it (empty) otherwise."""
    import psycopg

    server = BENCH_DB.rsplit("/", 1)[0] + "/postgres"
    name = BENCH_DB.rsplit("/", 1)[1]
    with psycopg.connect(server, autocommit=True, connect_timeout=3) as admin:
        exists = admin.execute("select 1 from pg_database where datname = %s", [name]).fetchone()
        if exists and os.environ.get("NEXUS_BENCH_REGENERATE") == "1":
            admin.execute(f'drop database "{name}" with (force)')
            exists = None
        if not exists:
            admin.execute(f'create database "{name}"')
            return False
    with psycopg.connect(BENCH_DB) as db:
        try:
            (count,) = db.execute("select count(*) from chat_reasoningrun").fetchone()
        except psycopg.errors.UndefinedTable:
            return False
    return count >= RUNS


def _defaults(db, table: str, given: list[str]) -> tuple[list[str], list[object]]:
    """The NOT NULL columns COPY must fill that the generator does not set, with a neutral value."""
    rows = db.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_name = %s and is_nullable = 'NO' and column_default is null and is_identity = 'NO'",
        [table],
    ).fetchall()
    neutral = {"jsonb": "[]", "boolean": False, "text": "", "character varying": ""}
    names, values = [], []
    for name, kind in rows:
        if name in given:
            continue
        names.append(name)
        values.append(neutral.get(kind, 0) if "timestamp" not in kind else datetime.now(UTC))
    return names, values


def _copy(db, table: str, columns: list[str], rows) -> None:
    extra, fill = _defaults(db, table, columns)
    with db.cursor().copy(f"COPY {table} ({', '.join(columns + extra)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row((*row, *fill))


def generate() -> float:
    """COPY 100,000 runs (question, answer, a tool call, a model call, three events) in one go."""
    import psycopg
    from psycopg.types.json import Jsonb

    started = time.perf_counter()
    words = _words(17)
    rng = random.Random(23)
    base = datetime(2026, 1, 1, tzinfo=UTC)

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    with psycopg.connect(BENCH_DB) as db:
        db.execute(
            "insert into auth_user (id, password, is_superuser, username, first_name, last_name, email, "
            "is_staff, is_active, date_joined) values "
            "(1, '!', true, 'auditor', '', '', '', true, true, now()), "
            "(2, '!', false, 'alice', '', '', '', false, true, now())"
        )
        sessions = RUNS // 10
        _copy(
            db,
            "chat_chatsession",
            ["id", "owner_id", "title", "created_at", "updated_at"],
            ((i, 2, f"chat {i}", base, base) for i in range(1, sessions + 1)),
        )
        when = [base + timedelta(seconds=37 * i) for i in range(RUNS + 1)]
        questions = {}
        for i in range(1, RUNS + 1):
            q = text(12) + "?"
            if i % 20_000 == 0:
                q += f" {NEEDLES[0]}"
            questions[i] = q
        _copy(
            db,
            "chat_message",
            ["id", "session_id", "role", "content", "created_at"],
            ((i, (i - 1) // 10 + 1, "user", questions[i], when[i]) for i in range(1, RUNS + 1)),
        )
        _copy(
            db,
            "chat_reasoningrun",
            [
                "id",
                "session_id",
                "user_message_id",
                "status",
                "query",
                "initial_strategy",
                "final_strategy",
                "escalation_count",
                "final_quality",
                "input_tokens",
                "output_tokens",
                "cost",
                "latency_ms",
                "created_at",
                "attachments",
            ],
            (
                (
                    i,
                    (i - 1) // 10 + 1,
                    i,
                    "succeeded",
                    questions[i],
                    "direct",
                    "light_planning" if i % 7 == 0 else "direct",
                    1 if i % 7 == 0 else 0,
                    0.8,
                    900,
                    200,
                    "0.001200",
                    2100,
                    when[i],
                    Jsonb([]),
                )
                for i in range(1, RUNS + 1)
            ),
        )
        _copy(
            db,
            "chat_message",
            ["id", "session_id", "role", "content", "run_id", "created_at"],
            (
                (
                    RUNS + i,
                    (i - 1) // 10 + 1,
                    "assistant",
                    text(60) + (f" {NEEDLES[1]}" if i % 25_000 == 0 else ""),
                    i,
                    when[i],
                )
                for i in range(1, RUNS + 1)
            ),
        )
        _copy(
            db,
            "chat_toolexecution",
            ["id", "run_id", "tool", "server", "arguments", "result", "error", "success", "created_at"],
            (
                (
                    i,
                    i,
                    rng.choice(["calculator", "clock", "search_documents"]),
                    "nexus",
                    Jsonb({"query": text(3)}),
                    text(20),
                    NEEDLES[2] if i % 33_333 == 0 else "",
                    i % 33_333 != 0,
                    when[i],
                )
                for i in range(1, RUNS + 1)
            ),
        )
        _copy(
            db,
            "chat_llmcall",
            ["id", "run_id", "component", "model", "input_tokens", "output_tokens", "created_at"],
            ((i, i, "agent", "offline", 900, 200, when[i]) for i in range(1, RUNS + 1)),
        )
        _copy(
            db,
            "chat_traceevent",
            ["run_id", "sequence", "kind", "phase", "level", "payload", "created_at"],
            (
                (i, n, kind, "", "trace", Jsonb({"note": text(8)}), when[i])
                for i in range(1, RUNS + 1)
                for n, kind in enumerate(("run.started", "tool.result", "run.finished"), 1)
            ),
        )
        for table in (
            "auth_user",
            "chat_chatsession",
            "chat_message",
            "chat_reasoningrun",
            "chat_toolexecution",
            "chat_llmcall",
        ):
            db.execute(
                f"select setval(pg_get_serial_sequence('{table}', 'id'), (select max(id) from {table}))"
            )
        db.execute("analyze")
    return time.perf_counter() - started


def measure() -> list[str]:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from django.test.utils import setup_test_environment

    from chat.audit import runs_export_lines
    from chat.models import ReasoningRun
    from chat.search import run_search

    lines = []
    reusing = _ensure_database()
    call_command("migrate", verbosity=0)  # a kept database follows the schema as it moves on
    if not reusing:
        lines.append(f"  generated {RUNS:,} runs with COPY in {generate():.1f} s (kept for later runs)")
    else:
        lines.append(f"  reusing the {RUNS:,} generated runs in {BENCH_DB.rsplit('/', 1)[1]}")
    setup_test_environment()
    client = Client()
    client.force_login(get_user_model().objects.get(username="auditor"))
    words = _words(17)
    searches = {
        "rare word in questions": {"q": NEEDLES[0]},
        "rare word in answers": {"q": NEEDLES[1]},
        "a tool error": {"q": NEEDLES[2]},
        "a common word": {"q": words[10]},
        "two words + filters": {"q": f"{words[3]} {words[4]}", "escalated": "yes", "status": "succeeded"},
    }
    worst = 0.0
    for name, params in searches.items():
        client.get("/admin/chat/reasoningrun/", params)  # warm caches
        timings = []
        for _ in range(5):
            started = time.perf_counter()
            response = client.get("/admin/chat/reasoningrun/", params)
            timings.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200
        count = response.context["cl"].result_count
        worst = max(worst, statistics.median(timings))
        queries = []
        for _ in range(5):
            started = time.perf_counter()
            first_page = list(
                run_search(ReasoningRun.objects.all(), params["q"]).order_by("-created_at")[:50]
            )
            queries.append((time.perf_counter() - started) * 1000)
        lines.append(
            f"  search {name!r}: {count:,} runs, the run list page in {statistics.median(timings):.0f} ms "
            f"(median of 5, max {max(timings):.0f}); the search and first 50 runs alone "
            f"{statistics.median(queries):.0f} ms ({len(first_page)} rows)"
        )
    lines.append(
        f"  search goal: within {GOAL_MS} ms over {RUNS:,} runs: {'met' if worst <= GOAL_MS else 'NOT met'}"
    )

    peaks = {}
    for size in (1_000, EXPORT_RUNS):
        runs = ReasoningRun.objects.filter(pk__lte=size)
        tracemalloc.start()
        started = time.perf_counter()
        written = sum(len(line) for line in runs_export_lines(runs))
        seconds = time.perf_counter() - started
        peaks[size] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        lines.append(
            f"  export {size:,} runs as JSON Lines: {written / 1e6:.1f} MB streamed in {seconds:.1f} s, "
            f"peak Python memory {peaks[size] / 1e6:.1f} MB"
        )
    ratio = peaks[EXPORT_RUNS] / peaks[1_000]
    lines.append(f"  export memory 10,000 vs 1,000 runs: {ratio:.2f}x (constant memory: ~1x; 10x if it grew)")
    return lines


def main() -> list[str]:
    """Runs the measurement in a child process whose Django uses the bench database."""
    env = {
        **os.environ,
        "DATABASE_URL": BENCH_DB,
        "DJANGO_SETTINGS_MODULE": "nexus.settings",
        "DEBUG": "false",
    }
    result = subprocess.run(
        [sys.executable, "-m", "tests.bench.audit"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if result.returncode != 0:
        return ["audit: failed", result.stdout[-2000:], result.stderr[-4000:]]
    return ["audit: run list search and bulk export on PostgreSQL", *result.stdout.strip().splitlines()]


if __name__ == "__main__":
    import tests.env  # noqa: F401  - the tests' known environment (offline model, a secrets key)

    print("\n".join(measure()))
