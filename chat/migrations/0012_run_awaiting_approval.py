# A run waiting for a person's decision on a tool call is parked ("awaiting"): stored as
# such, holding no worker, and still the session's one active run.

import importlib

from django.db import migrations, models

theme = importlib.import_module("chat.migrations.0011_chat_page_variants_and_theme")


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0011_chat_page_variants_and_theme"),
    ]

    operations = [
        # SQLite rebuilds chat_reasoningrun for the constraints, which fails while the run
        # search's triggers name it: drop them for the rebuild, and put them back after.
        migrations.RunPython(theme.drop_search_triggers, theme.create_search_triggers),
        migrations.RemoveConstraint(
            model_name="reasoningrun",
            name="run_status_valid",
        ),
        migrations.RemoveConstraint(
            model_name="reasoningrun",
            name="one_active_run_per_session",
        ),
        migrations.AlterField(
            model_name="reasoningrun",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("awaiting", "Awaiting approval"),
                    ("succeeded", "Succeeded"),
                    ("failed", "Failed"),
                    ("cancelled", "Cancelled"),
                ],
                default="queued",
                max_length=16,
            ),
        ),
        migrations.AddConstraint(
            model_name="reasoningrun",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("status__in", ["queued", "running", "awaiting", "succeeded", "failed", "cancelled"])
                ),
                name="run_status_valid",
            ),
        ),
        migrations.AddConstraint(
            model_name="reasoningrun",
            constraint=models.UniqueConstraint(
                condition=models.Q(("status__in", ["queued", "running", "awaiting"])),
                fields=("session",),
                name="one_active_run_per_session",
            ),
        ),
        migrations.RunPython(theme.create_search_triggers, theme.drop_search_triggers),
    ]
