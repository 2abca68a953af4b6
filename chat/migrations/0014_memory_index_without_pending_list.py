# PostgreSQL's GIN index on memories takes each new item at once (fastupdate off) instead of
# queueing it in a pending list that every recall scans until autovacuum merges it: memories
# are written once per answer and read by every run, and with a full pending list a recall
# over 10,000 items took 15 ms instead of under 1 ms.

from django.db import migrations


def _index_option(value: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"ALTER INDEX chat_memory_search SET (fastupdate = {value})")

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0013_memory_derived_from"),
    ]

    operations = [migrations.RunPython(_index_option("off"), _index_option("on"))]
