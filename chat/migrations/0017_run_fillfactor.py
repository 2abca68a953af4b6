"""Leave room on the run table's pages for updates on PostgreSQL.

A run row is rewritten many times while it works (its next sequence, draft and usage),
and so is a person's usage counter with every batch of model calls. None of those columns
is indexed: with free space on the page PostgreSQL updates the row in place (a heap-only
tuple) instead of writing a new version and new index entries, which is what made those
UPDATEs the slowest statements under a team's load.
"""

from django.db import migrations

FILLFACTOR = {"chat_reasoningrun": 70, "teamops_usagecounter": 70}


def _set(fillfactor: dict[str, int | None]):
    def apply(apps, schema_editor) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for table, value in fillfactor.items():
            if value is None:
                schema_editor.execute(f"ALTER TABLE {table} RESET (fillfactor)")
            else:
                schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {int(value)})")

    return apply


class Migration(migrations.Migration):
    dependencies = [("chat", "0016_redundant_run_indexes"), ("teamops", "0001_initial")]

    operations = [
        migrations.RunPython(_set(FILLFACTOR), _set(dict.fromkeys(FILLFACTOR))),
    ]
