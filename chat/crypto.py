"""Tool server secrets, encrypted at rest with Fernet (the `cryptography` library).

The keys come from NEXUS_SECRETS_KEY (see nexus.env.env_fernet_keys): the first key encrypts,
every key decrypts, so a key is rotated by putting a new one first, running
`manage.py rotate_secrets`, then removing the old one. A value that no configured key opens
is kept as it was (never overwritten with nothing) and reported as unreadable.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings
from django.db import models


class UnreadableSecrets(dict):
    """Stored secrets that no configured key decrypts: empty, but saved back unchanged."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token


@lru_cache(maxsize=4)
def _fernet(keys: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(key) for key in keys])


def fernet() -> MultiFernet:
    return _fernet(tuple(settings.NEXUS_SECRETS_KEYS))


def seal(value: dict[str, str]) -> str:
    return fernet().encrypt(json.dumps(value, sort_keys=True).encode()).decode()


def unseal(token: str) -> dict[str, str]:
    """The secrets in `token`; UnreadableSecrets when no configured key opens it."""
    try:
        return json.loads(fernet().decrypt(token.encode()))
    except (InvalidToken, ValueError):
        return UnreadableSecrets(token)


class SealedJSONField(models.TextField):
    """A dict of secrets, stored as a Fernet token; never plain text in the database."""

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> dict[str, str]:
        return unseal(value) if value else {}

    def to_python(self, value: Any) -> dict[str, str]:
        if isinstance(value, dict):
            return value
        return unseal(value) if value else {}

    def get_prep_value(self, value: Any) -> str:
        if isinstance(value, UnreadableSecrets):
            return value.token
        return seal(dict(value or {}))
