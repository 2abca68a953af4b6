# A run keeps the agent mode it started in (ReasoningRun.agent_mode), so a run resumed after
# its worker died goes on in that mode even if its chat has switched since.

import importlib

from django.db import migrations, models

chat_page = importlib.import_module("chat.migrations.0011_chat_page_variants_and_theme")


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0011_chat_page_variants_and_theme"),
    ]

    # Adding the column rebuilds chat_reasoningrun on SQLite, which fails while the run
    # search's triggers name it: they are dropped for the rebuild and put back after.
    operations = [
        migrations.RunPython(chat_page.drop_search_triggers, chat_page.create_search_triggers),
        migrations.AddField(
            model_name="reasoningrun",
            name="agent_mode",
            field=models.CharField(blank=True, max_length=30),
        ),
        migrations.RunPython(chat_page.create_search_triggers, chat_page.drop_search_triggers),
    ]
