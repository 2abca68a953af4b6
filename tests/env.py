"""Loaded with `-p tests.env` before Django's settings, so tests run on known defaults.

Tests never reach a real model: the offline provider is selected and API keys are removed.
A DATABASE_URL given by the caller is kept (make test uses it for the PostgreSQL pass).
"""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

for name in (
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "REDIS_URL",
    "NEXUS_RUN_BACKEND",
    "FORCE_REASONING_STRATEGY",
    "CLAUDE_MODEL",
    "ANALYSIS_MODEL",
    "DEBUG",
    "SECRET_KEY",
):
    os.environ.pop(name, None)
os.environ["NEXUS_LLM_PROVIDER"] = "offline"
os.environ["NEXUS_HTTPS"] = "false"
# A fixed key, so the PostgreSQL pass (a team deployment as far as settings go) starts.
os.environ["NEXUS_SECRETS_KEY"] = "ZXJ0e1CP3fbcN3p8Zs4c0VgCk6cd0WbQIgk9y3dcnJw="
os.environ["SECRET_KEY"] = "tests-only-" + "k3y-" * 12  # likewise required in a team deployment
os.environ.setdefault("NEXUS_VAR_DIR", str(ROOT / "var" / "test"))
os.environ["NEXUS_RATE_LIMIT_PER_MINUTE"] = "1000"
os.environ["NEXUS_WRITE_RATE_LIMIT_PER_MINUTE"] = "1000"
# In-process tests start tool servers when a test needs one; real processes (tests/e2e) warm up.
os.environ["NEXUS_WARM_TOOL_SERVERS"] = "false"
# Test servers start cold, on a machine the other tests keep busy: past the 3 s a run waits by
# default, a run would go on without them. The wait itself is tested with its own values.
os.environ["NEXUS_TOOL_SERVER_START_WAIT"] = "60"
# The suite imports the server into its own process: its objects are not to be frozen (real
# processes, tests/e2e and the benchmarks, freeze as deployed).
os.environ["NEXUS_GC_FREEZE"] = "false"
