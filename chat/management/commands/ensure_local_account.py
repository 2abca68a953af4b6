"""Make sure a local account exists, so `make run` can be signed into straight away."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the local admin account (NEXUS_ADMIN_USER, default 'admin') if it is missing."

    def handle(self, *args: Any, **options: Any) -> None:
        users = get_user_model()
        username = os.environ.get("NEXUS_ADMIN_USER", "admin").strip() or "admin"
        password = os.environ.get("NEXUS_ADMIN_PASSWORD", "")
        user = users.objects.filter(username=username).first()
        if user is None:
            generated = not password
            password = password or secrets.token_urlsafe(12)
            users.objects.create_superuser(username=username, password=password, email="")
            self.stdout.write(f"Created the local account: user {username}")
            if generated:
                self.stdout.write(
                    f"  password {password}   (shown once; set NEXUS_ADMIN_PASSWORD to choose one)"
                )
            return
        if password:
            user.set_password(password)
            user.save(update_fields=["password"])
            self.stdout.write(f"Sign in as {username} with the password from NEXUS_ADMIN_PASSWORD.")
        else:
            self.stdout.write(
                f"Sign in as {username} (password shown when the account was created; "
                "set NEXUS_ADMIN_PASSWORD and run again to reset it)."
            )
