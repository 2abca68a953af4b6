"""Re-encrypt every stored tool server secret with the newest NEXUS_SECRETS_KEY."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from chat.crypto import UnreadableSecrets
from chat.models import MCPServer


class Command(BaseCommand):
    help = (
        "Key rotation: with NEXUS_SECRETS_KEY=new,old run this, then drop the old key. Every "
        "tool server's environment and headers are re-encrypted with the first key."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            servers = list(MCPServer.objects.select_for_update())
            for server in servers:
                if isinstance(server.env, UnreadableSecrets) or isinstance(server.headers, UnreadableSecrets):
                    raise CommandError(
                        f"the secrets of tool server {server.name!r} open with none of the keys in "
                        "NEXUS_SECRETS_KEY; add the key they were encrypted with and run this again"
                    )
                # Loading decrypted them with whichever key fits; saving encrypts with the first.
                server.save(update_fields=["env", "headers"])
        self.stdout.write(f"Re-encrypted the secrets of {len(servers)} tool server(s) with the newest key.")
