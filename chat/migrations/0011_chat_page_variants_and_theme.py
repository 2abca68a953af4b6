# Regenerated/edited questions keep their versions (Message.variant_of); the colour scheme is a
# per-user preference (Preference.theme).

import importlib

import django.db.models.deletion
from django.db import migrations, models

run_search = importlib.import_module("chat.migrations.0007_run_search")
SEARCH_TRIGGERS = [s for s in run_search.SQLITE_CREATE if s.lstrip().startswith("CREATE TRIGGER")]


def drop_search_triggers(apps, schema_editor):
    """Undoing variant_of rebuilds chat_message on SQLite, which fails while the run search's
    triggers name it: drop them for the rebuild, and put them back after."""
    if schema_editor.connection.vendor == "sqlite":
        for name in run_search.SQLITE_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")


def create_search_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE name = 'chat_run_fts'")
        if cursor.fetchone() is None:
            return
    for statement in SEARCH_TRIGGERS:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0010_merge_memory"),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, create_search_triggers),
        migrations.AddField(
            model_name="message",
            name="variant_of",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="variants",
                to="chat.message",
            ),
        ),
        migrations.RunPython(migrations.RunPython.noop, drop_search_triggers),
        migrations.AddField(
            model_name="preference",
            name="theme",
            field=models.CharField(
                choices=[("system", "As the device"), ("light", "Light"), ("dark", "Dark")],
                default="system",
                max_length=8,
            ),
        ),
    ]
