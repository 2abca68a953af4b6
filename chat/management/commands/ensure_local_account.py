"""Make sure a local account exists, so `make run` can be signed into straight away."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = (
        "Create the local admin account (NEXUS_ADMIN_USER, default 'admin') if it is missing; with "
        "--reset-password, set its password to NEXUS_ADMIN_PASSWORD."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--reset-password",
            action="store_true",
            help="set an existing account's password to NEXUS_ADMIN_PASSWORD",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        username = os.environ.get("NEXUS_ADMIN_USER", "admin").strip() or "admin"
        password = os.environ.get("NEXUS_ADMIN_PASSWORD", "")
        user = users.objects.filter(username=username).first()
        if user is None:
            if password:
                self._check(password, users(username=username))
            generated = not password
            password = password or secrets.token_urlsafe(12)
            users.objects.create_superuser(username=username, password=password, email="")
            self.stdout.write(f"Created the local account: user {username}")
            if generated:
                self.stdout.write(
                    f"  password {password}   (shown once; set NEXUS_ADMIN_PASSWORD to choose one)"
                )
            return
        # Started again (every `make run`, every container start): a password changed since in
        # the admin stays; the environment's is applied only when asked to.
        if options["reset_password"]:
            if not password:
                raise CommandError("Set NEXUS_ADMIN_PASSWORD to the new password.")
            self._check(password, user)
            user.set_password(password)
            user.save(update_fields=["password"])
            self.stdout.write(f"The password of {username} is now NEXUS_ADMIN_PASSWORD.")
            return
        self.stdout.write(
            f"Sign in as {username} (its password was set when the account was created; to reset it: "
            "NEXUS_ADMIN_PASSWORD=… python manage.py ensure_local_account --reset-password)."
        )

    @staticmethod
    def _check(password: str, user: Any) -> None:
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError(f"NEXUS_ADMIN_PASSWORD is too weak: {' '.join(exc.messages)}") from None
