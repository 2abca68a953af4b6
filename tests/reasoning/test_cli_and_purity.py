"""The engine stands alone: a CLI, and not one import of Django, chat or celery."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "DJANGO_SETTINGS_MODULE")}
    env["NEXUS_LLM_PROVIDER"] = "offline"
    return subprocess.run(
        [sys.executable, "-m", "reasoning", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


def test_cli_prints_the_answer():
    result = _cli("What is 2+2?")
    assert result.returncode == 0, result.stderr
    assert "`2+2` = **4**" in result.stdout and result.stdout.count("offline model") == 1
    assert "direct → direct" in result.stderr


def test_cli_says_when_an_answer_was_not_approved():
    """The chat page puts a low-confidence note above such an answer; the command line printed
    it as if it had been approved."""
    result = _cli("what's 3^4 vs 4^3")  # answered with one side only
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Low confidence: quality "), result.stdout
    assert "Low confidence" not in _cli("What is 2+2?").stdout


def test_cli_json_prints_one_event_per_line():
    result = _cli("--json", "What is 17*23 and what time is it in Tokyo?")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events, "every line of stdout is one JSON event"
    assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["kind"] == "run.started" and events[-1]["kind"] in (
        "run.finished",
        "reflection.completed",
    )
    final = next(e for e in events if e["kind"] == "answer.final")["payload"]["answer"]
    assert "391" in final and "Asia/Tokyo" in final
    assert {"answer.delta", "analysis.completed", "quality.completed"} <= {e["kind"] for e in events}


def test_cli_trace_and_forced_strategy():
    result = _cli("--trace", "--strategy", "deep", "What is 17*23?")
    assert result.returncode == 0, result.stderr
    assert "analysis.completed" in result.stderr and '"forced": true' in result.stderr
    assert "deep_reasoning → deep_reasoning" in result.stderr and "391" in result.stdout


def test_cli_reports_a_bad_setting():
    env_result = subprocess.run(
        [sys.executable, "-m", "reasoning", "hi"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NEXUS_LLM_PROVIDER": "offline", "MIN_QUALITY_DEEP": "2"},
        timeout=60,
    )
    assert env_result.returncode == 2 and "MIN_QUALITY_DEEP" in env_result.stderr


def test_reasoning_never_imports_django_chat_or_celery():
    offenders = []
    for path in (ROOT / "reasoning").rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.match(r"\s*(import|from)\s+(django|chat|celery|channels)\b", line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == []
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import reasoning, reasoning.modes.adaptive, reasoning.routing, reasoning.llm.offline, "
            "reasoning.llm.anthropic_client, sys; print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('django', 'chat', 'celery', 'channels')))",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    assert probe.stdout.strip() == "[]", probe.stderr


def test_only_the_config_loader_and_the_cli_read_the_environment():
    readers = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "reasoning").rglob("*.py")
        if "os.environ" in path.read_text()
    )
    assert readers == ["reasoning/__main__.py", "reasoning/config.py"]
