"""Prompt files and `${name}` substitution.

Prompts live as text files so they can be read, reviewed and tuned without touching code.
"""

from __future__ import annotations

import functools
from pathlib import Path
from string import Template
from typing import Any

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"


class PromptError(LookupError):
    """A prompt file is missing or a template variable was not supplied."""


@functools.lru_cache(maxsize=256)
def load_prompt(name: str, prompts_dir: Path | None = None) -> str:
    """Load `name` (e.g. "reasoning/planning.txt") from the prompts directory (once: every
    model call reads its prompt, and finding the file cost a few system calls each time)."""
    base = prompts_dir or PROMPTS_DIR
    path = (base / name).resolve()
    if not path.is_file():
        raise PromptError(f"prompt template {name!r} not found at {path}")
    return path.read_text(encoding="utf-8")


def format_prompt(template: str, **values: Any) -> str:
    """Substitute `${name}` placeholders; a missing one raises naming it and the given ones."""
    try:
        return Template(template).substitute(**{k: _text(v) for k, v in values.items()})
    except KeyError as exc:
        missing = exc.args[0]
        given = ", ".join(sorted(values)) or "none"
        raise PromptError(f"prompt variable {missing!r} was not supplied (given: {given})") from None
    except ValueError as exc:
        raise PromptError(f"malformed prompt template: {exc}") from None


def _text(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list | tuple):
        return "\n".join(f"- {item}" for item in value) if value else "(none)"
    return str(value)


INPUT_MARKER = "=== INPUT ==="


def split_prompt(text: str) -> tuple[str, str]:
    """Split a prompt at its input marker: static instructions (cacheable), then the input."""
    if INPUT_MARKER not in text:
        return "", text.strip()
    instructions, _, user = text.partition(INPUT_MARKER)
    return instructions.strip(), user.strip()
