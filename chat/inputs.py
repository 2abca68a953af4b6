"""Checks on text people type, shared by every service that stores it.

PostgreSQL cannot store a NUL character in text (it raises DataError, a 500 for the user);
SQLite can, so a NUL accepted here would also make the two deployments disagree. Text with
one is refused with a message instead of being silently altered.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError


def refuse_nul(text: str, *, what: str) -> str:
    """`text` unchanged, or a ValidationError naming `what` when it holds a NUL character."""
    if "\x00" in (text or ""):
        raise ValidationError(f"{what} contains a NUL character (\\x00), which cannot be stored; remove it.")
    return text
