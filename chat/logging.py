"""Keep secrets out of logs: known secret values are replaced before a record is written."""

from __future__ import annotations

import logging
import os
import re

SECRET_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SECRET_KEY", "NEXUS_ADMIN_PASSWORD")
_KEY_PATTERN = re.compile(r"\b(sk-(?:ant-)?[A-Za-z0-9_-]{8})[A-Za-z0-9_-]+")


def _secrets() -> list[str]:
    values = [os.environ.get(name, "") for name in SECRET_VARIABLES]
    return [v for v in values if len(v) >= 8]


def redact(text: str, extra: list[str] | None = None) -> str:
    for secret in [*_secrets(), *(extra or [])]:
        if secret and len(secret) >= 6:
            text = text.replace(secret, "[redacted]")
    return _KEY_PATTERN.sub(r"\1…[redacted]", text)


class RedactSecretsFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
