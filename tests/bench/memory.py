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


def generated(
    n: int,
    aspects: list[str] = ASPECTS,
    episode: str = "Asked: what is the {topic} {aspect} for cluster {i}? Answered: {value}.",
    fact: str = "The {topic} {aspect} of environment {i} is {value}.",
) -> list[tuple[str, str]]:
    """`n` plausible team memories about tools the labelled questions never ask about (but
    often in the same words): every third an episode, the others facts."""
    rows = []
    for i in range(n):
        words = {"topic": TOPICS[i % 20], "aspect": aspects[(i // 20) % 10], "value": VALUES[(i // 200) % 9]}
        rows.append(
            ("episodic", episode.format(i=i, **words))
            if i % 3 == 0
            else ("semantic", fact.format(i=i, **words))
        )
    return rows


def generated_heldout(n: int) -> list[tuple[str, str]]:
    """`n` look-alikes of the held-out questions, in other sentences than the tuning split's."""
    from tests.bench.memory_set import HELDOUT_ASPECTS

    return generated(
        n,
        HELDOUT_ASPECTS,
        episode="Asked: who owns the {aspect} of {topic} cluster {i}? Answered: {value}.",
        fact="For the {topic} service in region {i}, the {aspect} is {value}.",
    )


def child() -> dict[str, object]:
    """In the child process: migrate, load, measure; returns the figures."""
    import time

    import django

    import tests.env  # noqa: F401  - the tests' known environment (offline model, a secrets key)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "nexus.settings")
    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from chat.memory import memory_recall
    from chat.models import Memory
    from tests.bench.memory_set import HELDOUT_MEMORIES, HELDOUT_QUESTIONS, MEMORIES, QUESTIONS

    call_command("migrate", verbosity=0)
    users = get_user_model().objects
    # Each split: one person with its labelled memories among 10,000 look-alikes, one with the
    # labelled memories alone.
    splits = {
        "tuning": (MEMORIES, QUESTIONS, generated(ITEMS)),
        "heldout": (HELDOUT_MEMORIES, HELDOUT_QUESTIONS, generated_heldout(ITEMS)),
    }
    keys: dict[int, str] = {}
    people: dict[str, dict[str, object]] = {}
    for split, (memories, _, noise) in splits.items():
        among = users.create_user(f"{split}-among-bench", password="x-bench-password")
        alone = users.create_user(f"{split}-alone-bench", password="x-bench-password")
        Memory.objects.bulk_create(
            [Memory(owner=among, kind=kind, text=text, source="bench") for kind, text in noise],
            batch_size=1000,
        )
        for owner in (among, alone):
            for key, (kind, text) in memories.items():
                keys[Memory.objects.create(owner=owner, kind=kind, text=text, source="labelled").pk] = key
        people[split] = {"among_10000": among, "alone": alone}
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # as autovacuum would after a load this size
            cursor.execute("ANALYZE chat_memory")
    asked = [
        (people[split]["among_10000"], q) for split, (_, questions, _) in splits.items() for q in questions
    ]
    for user, question in asked:  # warm the caches once
        memory_recall(user=user, query=question)
    timings: list[float] = []
    slowest: dict[str, float] = {}
    for _ in range(3):
        for user, question in asked:
            started = time.perf_counter()
            memory_recall(user=user, query=question)
            timings.append((time.perf_counter() - started) * 1000)
            slowest[question] = max(slowest.get(question, 0.0), timings[-1])
    timings.sort()
    figures: dict[str, object] = {
        "items": Memory.objects.filter(owner=people["tuning"]["among_10000"]).count(),
        "median_ms": timings[len(timings) // 2],
        "p95_ms": timings[int(len(timings) * 0.95)],
        "slowest": sorted(slowest.items(), key=lambda kv: -kv[1])[:3],
    }
    for split, (_, questions, _) in splits.items():
        for name, user in people[split].items():
            hits = recalled = relevant = found = 0
            wrong: dict[str, int] = {}
            for question, wanted in questions.items():
                got = [keys.get(int(m.id), "generated") for m in memory_recall(user=user, query=question)]
                if any(key not in wanted for key in got):
                    wrong[question] = sum(1 for key in got if key not in wanted)
                recalled += len(got)
                hits += sum(1 for key in got if key in wanted)
                relevant += len(wanted)
                found += len(wanted & set(got))
            figures[f"{split}_precision_{name}"] = hits / recalled if recalled else 1.0
            figures[f"{split}_recall_{name}"] = found / relevant if relevant else 1.0
            figures[f"{split}_wrong_{name}"] = wrong
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
    lines = [
        f"  {name:<8} recall over {f['items']:,} items: median {f['median_ms']:.1f} ms, "
        f"p95 {f['p95_ms']:.1f} ms  [{'ok' if fast else 'OVER 50 ms'}]; slowest: "
        + ", ".join(f"{question!r} {ms:.0f} ms" for question, ms in f["slowest"]),  # type: ignore[attr-defined]
    ]
    for split in ("tuning", "heldout"):
        for among in ("alone", "among_10000"):
            precision = f[f"{split}_precision_{among}"]
            ok = "ok" if precision > 0.85 else "UNDER 85%"  # type: ignore[operator]
            where = "alone" if among == "alone" else "among 10,000 look-alikes"
            lines.append(
                f"  {name:<8} {split:<7} split, {where}: precision {precision:.1%}, "
                f"recall {f[f'{split}_recall_{among}']:.1%}  [{ok}]"
            )
            lines += [
                f"  {name:<8}   {count} wrong for {question!r}"
                for question, count in f[f"{split}_wrong_{among}"].items()  # type: ignore[attr-defined]
            ]
    return lines


def main() -> list[str]:
    from tests.bench.memory_set import HELDOUT_MEMORIES, HELDOUT_QUESTIONS, MEMORIES, QUESTIONS

    lines = [
        f"memory: tuning split {len(MEMORIES)} memories, {len(QUESTIONS)} questions; held-out split "
        f"{len(HELDOUT_MEMORIES)} memories, {len(HELDOUT_QUESTIONS)} questions (never tuned on)"
    ]
    with tempfile.TemporaryDirectory() as tmp:
        lines += describe("sqlite", measure(f"sqlite:///{tmp}/bench.sqlite3", tmp))
        try:
            import psycopg

            from tests.e2e.conftest import POSTGRES, scratch_database

            admin = psycopg.connect(POSTGRES, autocommit=True, connect_timeout=3)
        except Exception as exc:
            return [*lines, f"  postgres: skipped, PostgreSQL unavailable ({exc})"]
        with admin, scratch_database(admin, "nexus_bench") as db_url:
            lines += describe("postgres", measure(db_url, tmp))
    return lines


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        print(json.dumps(child()))
    else:
        print("\n".join(main()))
