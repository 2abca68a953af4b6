"""Memory benchmarks: recall latency over 10,000 stored items, and recall precision on the
labelled set (tests/bench/memory_set.py), on SQLite and on PostgreSQL.

Each database is measured in a child process (Django configured by DATABASE_URL, migrated
from scratch): alice owns 10,000 generated items plus the labelled memories, bob owns the
labelled memories alone. Latency is `chat.memory.memory_recall` end to end (full-text
candidates, the rows, the relevance rule) for the labelled questions; targets: median and
p95 under 50 ms, precision on the labelled set over 85%. The same questions are also asked
of alice, whose labelled memories sit among the 10,000 generated ones (many share the
questions' words): a stress figure, reported without a target.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

ITEMS = 10_000
TOPICS = [
    "kafka",
    "grafana",
    "terraform",
    "kubernetes",
    "redis",
    "nginx",
    "celery",
    "sentry",
    "jira",
    "figma",
    "okta",
    "stripe",
    "twilio",
    "datadog",
    "airflow",
    "snowflake",
    "looker",
    "vault",
    "consul",
    "envoy",
]
# Some aspects share words with the labelled questions (database, backup, deploy, on-call,
# logs, budget), so the 10,000 include near misses, not only unrelated noise.
ASPECTS = [
    "log retention",
    "staging database",
    "on-call owner",
    "deploy window",
    "backup schedule",
    "replicas",
    "version",
    "alerting",
    "budget",
    "sso",
]
VALUES = [
    "eu-west",
    "three days",
    "team blue",
    "v2.4",
    "120 seconds",
    "five",
    "paged",
    "4,000 euros",
    "enabled",
]
ROOT = Path(__file__).resolve().parents[2]


def generated(n: int) -> list[tuple[str, str]]:
    """`n` plausible team memories about tools the labelled questions never ask about (but
    often in the same words)."""
    rows = []
    for i in range(n):
        topic, aspect, value = TOPICS[i % 20], ASPECTS[(i // 20) % 10], VALUES[(i // 200) % 9]
        if i % 3 == 0:
            rows.append(
                ("episodic", f"Asked: what is the {topic} {aspect} for cluster {i}? Answered: {value}.")
            )
        else:
            rows.append(("semantic", f"The {topic} {aspect} of environment {i} is {value}."))
    return rows


def child() -> dict[str, object]:
    """In the child process: migrate, load, measure; returns the figures."""
    import time

    import django

    import tests.env  # noqa: F401  - the tests' known environment (offline model, a secrets key)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nexus.settings")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from chat.memory import memory_recall
    from chat.models import Memory
    from tests.bench.memory_set import MEMORIES, QUESTIONS

    call_command("migrate", verbosity=0)
    users = get_user_model().objects
    alice = users.create_user("alice-bench", password="x-bench-password")
    bob = users.create_user("bob-bench", password="x-bench-password")
    Memory.objects.bulk_create(
        [Memory(owner=alice, kind=kind, text=text, source="bench") for kind, text in generated(ITEMS)],
        batch_size=1000,
    )
    keys: dict[int, str] = {}
    for owner in (alice, bob):
        for key, (kind, text) in MEMORIES.items():
            keys[Memory.objects.create(owner=owner, kind=kind, text=text, source="labelled").pk] = key
    for question in QUESTIONS:  # warm the caches once
        memory_recall(user=alice, query=question)
    timings: list[float] = []
    for _ in range(3):
        for question in QUESTIONS:
            started = time.perf_counter()
            memory_recall(user=alice, query=question)
            timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    figures: dict[str, object] = {
        "items": Memory.objects.filter(owner=alice).count(),
        "median_ms": timings[len(timings) // 2],
        "p95_ms": timings[int(len(timings) * 0.95)],
    }
    for name, user in (("alone", bob), ("among_10000", alice)):
        hits = recalled = relevant = found = 0
        wrong: dict[str, int] = {}
        for question, wanted in QUESTIONS.items():
            got = [keys.get(int(m.id), "generated") for m in memory_recall(user=user, query=question)]
            if any(key not in wanted for key in got):
                wrong[question] = sum(1 for key in got if key not in wanted)
            recalled += len(got)
            hits += sum(1 for key in got if key in wanted)
            relevant += len(wanted)
            found += len(wanted & set(got))
        figures[f"precision_{name}"] = hits / recalled if recalled else 1.0
        figures[f"recall_{name}"] = found / relevant if relevant else 1.0
        figures[f"recalled_{name}"] = recalled
        figures[f"wrong_{name}"] = wrong
    return figures


def measure(database_url: str, var_dir: str) -> dict[str, object]:
    env = {**os.environ, "DATABASE_URL": database_url, "NEXUS_VAR_DIR": var_dir, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    # Our own interpreter running this module.
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench.memory", "--child"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def describe(name: str, f: dict[str, object]) -> list[str]:
    fast = f["median_ms"] < 50 and f["p95_ms"] < 50  # type: ignore[operator]
    precise = f["precision_alone"] > 0.85  # type: ignore[operator]
    return [
        f"  {name:<10} recall over {f['items']:,} items: median {f['median_ms']:.1f} ms, "
        f"p95 {f['p95_ms']:.1f} ms  [{'ok' if fast else 'OVER 50 ms'}]",
        f"  {name:<10} labelled set: precision {f['precision_alone']:.1%}, recall {f['recall_alone']:.1%}  "
        f"[{'ok' if precise else 'UNDER 85%'}]",
        f"  {name:<10} stress, the same set among the 10,000 generated near misses: precision "
        f"{f['precision_among_10000']:.1%}, recall {f['recall_among_10000']:.1%} (no target)",
        *(
            f"  {name:<10}   among 10,000: {count} wrong for {question!r}"
            for question, count in f["wrong_among_10000"].items()  # type: ignore[attr-defined]
        ),
    ]


def main() -> list[str]:
    from tests.bench.memory_set import MEMORIES, QUESTIONS

    lines = [f"memory: {len(MEMORIES)} labelled memories, {len(QUESTIONS)} labelled questions"]
    with tempfile.TemporaryDirectory() as tmp:
        lines += describe("sqlite", measure(f"sqlite:///{tmp}/bench.sqlite3", tmp))
        try:
            import psycopg

            from tests.e2e.conftest import POSTGRES

            admin = psycopg.connect(POSTGRES, autocommit=True, connect_timeout=3)
        except Exception as exc:
            return [*lines, f"  postgres: skipped, PostgreSQL unavailable ({exc})"]
        name = f"nexus_bench_{uuid.uuid4().hex[:8]}"
        admin.execute(f'create database "{name}"')
        try:
            lines += describe("postgres", measure(POSTGRES.rsplit("/", 1)[0] + "/" + name, tmp))
        finally:
            admin.execute(f"select pg_terminate_backend(pid) from pg_stat_activity where datname = '{name}'")
            admin.execute(f'drop database if exists "{name}"')
            admin.close()
    return lines


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        print(json.dumps(child()))
    else:
        print("\n".join(main()))
