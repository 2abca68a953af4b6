# A run counts the claims that were its own worker resuming it after the database went away
# under it (ReasoningRun.releases): those are no deliveries lost to a dead worker.

import importlib

from django.db import migrations, models

chat_page = importlib.import_module("chat.migrations.0011_chat_page_variants_and_theme")


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0019_message_client_key"),
    ]

    # Adding the column rebuilds chat_reasoningrun on SQLite, which fails while the run
    # search's triggers name it: they are dropped for the rebuild and put back after.
    operations = [
        migrations.RunPython(chat_page.drop_search_triggers, chat_page.create_search_triggers),
        migrations.AddField(
            model_name="reasoningrun",
            name="releases",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.RunPython(chat_page.create_search_triggers, chat_page.drop_search_triggers),
    ]
