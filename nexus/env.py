"""Small readers for settings from the environment.

Each raises ImproperlyConfigured naming the variable, so a wrong setting stops start-up
with a message a person can act on instead of a stack trace later.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off", "")


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be true or false, got {raw!r}")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    value = env_str(name, default).lower() or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def env_secret_key(var_dir: Path, *, required: bool = False) -> str:
    """SECRET_KEY from the environment, else a key generated once and kept in var/. Where it
    is required (a team deployment: web servers on several hosts must sign sessions alike) a
    missing key stops start-up. At least 50 characters, as Django's deployment check wants."""
    key = env_str("SECRET_KEY")
    if key:
        if len(key) < 50 or len(set(key)) < 5:
            raise ImproperlyConfigured(
                "SECRET_KEY must be at least 50 characters long, of at least 5 different ones"
            )
        return key
    if required:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set in a team deployment (DATABASE_URL set, DEBUG off), the same in "
            'every process; create one with: python -c "import secrets; print(secrets.token_urlsafe(50))"'
        )
    from django.core.management.utils import get_random_secret_key

    return generated_once(var_dir / "secret_key", get_random_secret_key)


def generated_once(path: Path, make: Callable[[], str]) -> str:
    """The value kept at `path`, made and written there by whichever process comes first.

    A web process and a worker (or parallel test processes) often start together on a fresh
    var/: the file is written whole under a temporary name and linked into place, so every
    process reads the same complete value and none overwrites another's.
    """
    with contextlib.suppress(FileNotFoundError):
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as file:  # mkstemp creates it readable by its owner only
            file.write(make())
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)  # fails if another process got there first
    finally:
        os.unlink(temporary)
    return path.read_text().strip()


def env_fernet_keys(var_dir: Path, *, required: bool) -> list[str]:
    """NEXUS_SECRETS_KEY: Fernet keys, comma-separated, newest first (older ones only decrypt).

    Where it is required (a team deployment) a missing key stops start-up; elsewhere a key is
    generated once and kept in var/, so the embedded mode needs no setup.
    """
    from cryptography.fernet import Fernet

    keys = env_list("NEXUS_SECRETS_KEY", "")
    if not keys:
        if required:
            raise ImproperlyConfigured(
                "NEXUS_SECRETS_KEY must be set in a team deployment (DATABASE_URL set, DEBUG off); "
                'create one with: python -c "from cryptography.fernet import Fernet; '
                'print(Fernet.generate_key().decode())"'
            )
        keys = [generated_once(var_dir / "secrets_key", lambda: Fernet.generate_key().decode())]
    for number, key in enumerate(keys, 1):
        try:
            Fernet(key)
        except (ValueError, TypeError):
            raise ImproperlyConfigured(
                f"NEXUS_SECRETS_KEY: key {number} is not a Fernet key (32 url-safe base64-encoded bytes)"
            ) from None
    return keys


def env_commands(name: str) -> dict[str, tuple[str, ...]]:
    """Programs the operator allows tool servers to run, comma-separated: each entry as written
    → the command line it allows, its program resolved to an absolute path.

    An entry is a program (`/opt/mcp/github-server`, `uvx`) optionally followed by the
    arguments every server started with it must begin with (`uvx mcp-server-fetch`), so an
    allowed package runner or interpreter can be pinned to one package or script. A bare name
    is looked up on PATH now, so a later PATH cannot swap in another program.
    """
    allowed: dict[str, tuple[str, ...]] = {}
    for entry in env_list(name, ""):
        try:
            program, *pinned = shlex.split(entry)
        except ValueError as exc:
            raise ImproperlyConfigured(f"{name}: {entry!r} is not a command line ({exc})") from None
        if "/" in program:
            if not os.path.isabs(program):
                raise ImproperlyConfigured(f"{name}: {program!r} must be an absolute path or a bare name")
            resolved = os.path.normpath(program)
        else:
            resolved = shutil.which(program) or ""
        if not resolved or not os.path.isfile(resolved) or not os.access(resolved, os.X_OK):
            raise ImproperlyConfigured(f"{name}: {program!r} is not an executable on this machine")
        allowed[entry] = (resolved, *pinned)
    return allowed
