"""Count finished runs not yet in the usage rollup (after an upgrade, or to repair)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from teamops.rollup import rollup


class Command(BaseCommand):
    help = "Roll finished runs that are not counted yet into the usage dashboard's tables."

    def handle(self, *args: Any, **options: Any) -> None:
        counted = rollup()
        self.stdout.write(f"Rolled up {counted} run{'' if counted == 1 else 's'}.")
