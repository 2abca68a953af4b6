"""The usage dashboard over 100,000 generated runs on PostgreSQL (issue 15's goal: < 500 ms).

Data is generated inside PostgreSQL with generate_series (seconds, not minutes): 20 people,
100,000 finished runs over the last 30 days with mixed strategies, escalations, quality and
latency, three model calls each; then the backfill command rolls them up (as an upgraded
deployment would). The page is fetched from a real daphne as a staff user, side by side with
the same page over an empty database.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import psycopg

from tests.e2e.conftest import POSTGRES, Site, manage, scratch_database

RUNS = 100_000
PEOPLE = 20
CALLS_PER_RUN = 3
GOAL_MS = 500.0

# Values for columns the generator sets; every other NOT NULL column gets a neutral value by
# type, so columns added later (by other features) do not break the generator.
FILLERS = {
    "boolean": "false",
    "integer": "0",
    "smallint": "0",
    "bigint": "0",
    "double precision": "0",
    "numeric": "0",
    "jsonb": "'{}'::jsonb",
    "timestamp with time zone": "now()",
    "date": "current_date",
    "text": "''",
    "character varying": "''",
    "uuid": "gen_random_uuid()",
    "inet": "'127.0.0.1'",
}


def insert(db: psycopg.Connection, table: str, values: dict[str, str], source: str) -> None:
    """INSERT INTO table SELECT … FROM source, with `values` and fillers for the rest."""
    columns = db.execute(
        "select column_name, data_type from information_schema.columns where table_name = %s "
        "and is_nullable = 'NO' and column_default is null and column_name <> 'id'",
        (table,),
    ).fetchall()
    chosen = dict(values)
    for name, data_type in columns:
        chosen.setdefault(name, FILLERS.get(data_type, "''"))
    names = ", ".join(chosen)
    expressions = ", ".join(chosen.values())
    db.execute(f"insert into {table} ({names}) select {expressions} from {source}")  # nosec B608 - fixed bench SQL


def generate(db_url: str) -> float:
    started = time.perf_counter()
    with psycopg.connect(db_url) as db:
        insert(
            db,
            "auth_user",
            {
                "username": "'bench' || g",
                "password": "'!'",
                "first_name": "''",
                "last_name": "''",
                "email": "''",
                "is_superuser": "false",
                "is_staff": "false",
                "is_active": "true",
                "date_joined": "now()",
            },
            f"generate_series(1, {PEOPLE}) g",
        )
        insert(
            db,
            "chat_chatsession",
            {"owner_id": "u.id", "title": "'bench'", "created_at": "now()"},
            "auth_user u where u.username like 'bench%'",
        )
        # One user message per run, spread over the last 30 days.
        insert(
            db,
            "chat_message",
            {
                "session_id": "s.id",
                "role": "'user'",
                "content": "'question ' || g",
                "created_at": "now() - (g % 43200) * interval '1 minute'",
            },
            f"generate_series(1, {RUNS}) g join (select id, row_number() over (order by id) - 1 as n "
            f"from chat_chatsession where title = 'bench') s on s.n = g % {PEOPLE}",
        )
        insert(
            db,
            "chat_reasoningrun",
            {
                "session_id": "m.session_id",
                "user_message_id": "m.id",
                "status": "case when m.id % 50 = 0 then 'failed' else 'succeeded' end",
                "query": "m.content",
                "initial_strategy": "'direct'",
                "final_strategy": "(array['direct','light_planning','deep_reasoning'])[1 + m.id % 3]",
                "escalation_count": "case when m.id % 7 = 0 then 1 else 0 end",
                "final_quality": "case when m.id % 11 = 0 then null else (m.id % 100) / 100.0 end",
                "input_tokens": "500 + m.id % 3000",
                "output_tokens": "100 + m.id % 800",
                "cache_read_tokens": "(m.id % 5) * 400",
                "cache_write_tokens": "0",
                "cost": "(m.id % 1000) / 10000.0",
                "latency_ms": "200 + (m.id * 7919) % 20000",
                "model": "(array['claude-sonnet','claude-haiku'])[1 + m.id % 2]",
                "created_at": "m.created_at",
                "started_at": "m.created_at",
                "finished_at": "m.created_at",
            },
            "chat_message m where m.content like 'question %'",
        )
        insert(
            db,
            "chat_llmcall",
            {
                "run_id": "r.id",
                "component": "(array['analysis','agent','evaluation'])[c]",
                "model": "(array['claude-haiku','claude-sonnet','claude-haiku'])[c]",
                "input_tokens": "r.input_tokens / 3",
                "output_tokens": "r.output_tokens / 3",
                "cache_read_tokens": "r.cache_read_tokens / 3",
                "cache_write_tokens": "0",
                "latency_ms": "r.latency_ms / 3.0",
                "cost": "r.cost / 3",
                "created_at": "r.created_at",
            },
            f"chat_reasoningrun r cross join generate_series(1, {CALLS_PER_RUN}) c",
        )
        db.execute("analyze")
    return time.perf_counter() - started


def page_times(site: Site, repeats: int = 7) -> list[float]:
    client = site.login()
    client.get("/usage/")  # warm up: templates, connections
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        response = client.get("/usage/")
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text[:300]
    return times


def main() -> list[str]:
    try:
        admin = psycopg.connect(POSTGRES, autocommit=True, connect_timeout=3)
    except Exception as exc:
        return [f"usage dashboard: skipped, PostgreSQL unavailable ({exc})"]
    with admin, scratch_database(admin, "nexus_bench_usage") as db_url, tempfile.TemporaryDirectory() as tmp:
        site = Site.prepared(Path(tmp), DATABASE_URL=db_url)
        try:
            site.start_web()
            empty = statistics.median(page_times(site))
            seconds = generate(db_url)
            started = time.perf_counter()
            rolled = manage(site.env, "usage_rollup").strip()
            rollup_seconds = time.perf_counter() - started
            times = page_times(site)
        finally:
            site.stop()
    full = statistics.median(times)
    verdict = "within" if full < GOAL_MS else "OVER"
    return [
        f"usage dashboard on PostgreSQL: {RUNS:,} runs and {RUNS * CALLS_PER_RUN:,} model calls "
        f"generated in {seconds:.1f} s; `manage.py usage_rollup`: {rolled} in {rollup_seconds:.1f} s",
        f"  /usage/ (30 days, every table): median {full:.0f} ms, worst {max(times):.0f} ms over "
        f"{len(times)} loads ({verdict} the {GOAL_MS:.0f} ms goal); empty database {empty:.0f} ms; "
        f"ratio {full / empty:.1f}x",
    ]


if __name__ == "__main__":
    print("\n".join(main()))
