"""Full-text search over runs (see chat/search.py).

PostgreSQL: GIN indexes on the same `to_tsvector('simple', ...)` expressions the search
queries use. SQLite: an FTS5 table fed by triggers, back-filled from existing rows. Neither
is part of the model state (they are the database's business), so this migration only runs
SQL for the database at hand.
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import migrations
from django.db.models import F, Value
from django.db.models.functions import Cast, Concat

from django.db.models import TextField

CONFIG = "simple"


def _tool_document() -> Concat:
    # Must stay identical to chat.search.tool_document(), or PostgreSQL will not use the index.
    return Concat(
        F("tool"),
        Value(" "),
        Cast("arguments", output_field=TextField()),
        Value(" "),
        F("result"),
        Value(" "),
        F("error"),
        output_field=TextField(),
    )


def _postgres_indexes(apps):
    return [
        (apps.get_model("chat", "Message"), GinIndex(SearchVector("content", config=CONFIG), name="message_fts")),
        (
            apps.get_model("chat", "ToolExecution"),
            GinIndex(SearchVector(_tool_document(), config=CONFIG), name="tool_fts"),
        ),
        (apps.get_model("chat", "LLMCall"), GinIndex(SearchVector("error", config=CONFIG), name="llmcall_error_fts")),
        (apps.get_model("chat", "ReasoningRun"), GinIndex(SearchVector("error", config=CONFIG), name="run_error_fts")),
    ]


# rowid of an FTS5 row: the source row's id * 4 + which table it came from.
SQLITE_CREATE = [
    "CREATE VIRTUAL TABLE chat_run_fts USING fts5(body, run_id UNINDEXED, tokenize='unicode61')",
    # Questions: the run row points at its question.
    """CREATE TRIGGER chat_run_fts_run_ai AFTER INSERT ON chat_reasoningrun BEGIN
        INSERT INTO chat_run_fts(rowid, body, run_id)
            SELECT m.id * 4, m.content, NEW.id FROM chat_message m WHERE m.id = NEW.user_message_id;
        INSERT INTO chat_run_fts(rowid, body, run_id) SELECT NEW.id * 4 + 3, NEW.error, NEW.id
            WHERE NEW.error != '';
    END""",
    """CREATE TRIGGER chat_run_fts_run_au AFTER UPDATE OF error ON chat_reasoningrun BEGIN
        DELETE FROM chat_run_fts WHERE rowid = OLD.id * 4 + 3;
        INSERT INTO chat_run_fts(rowid, body, run_id) SELECT NEW.id * 4 + 3, NEW.error, NEW.id
            WHERE NEW.error != '';
    END""",
    """CREATE TRIGGER chat_run_fts_run_ad AFTER DELETE ON chat_reasoningrun BEGIN
        DELETE FROM chat_run_fts WHERE rowid = OLD.id * 4 + 3;
    END""",
    # Answers: the message row points at its run.
    """CREATE TRIGGER chat_run_fts_message_ai AFTER INSERT ON chat_message WHEN NEW.run_id IS NOT NULL BEGIN
        INSERT INTO chat_run_fts(rowid, body, run_id) VALUES (NEW.id * 4, NEW.content, NEW.run_id);
    END""",
    """CREATE TRIGGER chat_run_fts_message_au AFTER UPDATE OF content, run_id ON chat_message BEGIN
        DELETE FROM chat_run_fts WHERE rowid = OLD.id * 4;
        INSERT INTO chat_run_fts(rowid, body, run_id)
            SELECT NEW.id * 4, NEW.content, COALESCE(
                NEW.run_id, (SELECT r.id FROM chat_reasoningrun r WHERE r.user_message_id = NEW.id))
            WHERE COALESCE(
                NEW.run_id, (SELECT r.id FROM chat_reasoningrun r WHERE r.user_message_id = NEW.id)
            ) IS NOT NULL;
    END""",
    """CREATE TRIGGER chat_run_fts_message_ad AFTER DELETE ON chat_message BEGIN
        DELETE FROM chat_run_fts WHERE rowid = OLD.id * 4;
    END""",
    # Tool calls: written when called, completed when the result comes back.
    """CREATE TRIGGER chat_run_fts_tool_ai AFTER INSERT ON chat_toolexecution BEGIN
        INSERT INTO chat_run_fts(rowid, body, run_id) VALUES (
            NEW.id * 4 + 1, NEW.tool || ' ' || NEW.arguments || ' ' || NEW.result || ' ' || NEW.error, NEW.run_id);
    END""",
    """CREATE TRIGGER chat_run_fts_tool_au AFTER UPDATE ON chat_toolexecution BEGIN
        DELETE FROM chat_run_fts WHERE rowid = OLD.id * 4 + 1;
        INSERT INTO chat_run_fts(rowid, body, run_id) VALUES (
            NEW.id * 4 + 1, NEW.tool || ' ' || NEW.arguments || ' ' || NEW.result || ' ' || NEW.error, NEW.run_id);
    END""",
    """CREATE TRIGGER chat_run_fts_tool_ad AFTER DELETE ON chat_toolexecution BEGIN
        DELETE FROM chat_run_fts WHERE rowid = OLD.id * 4 + 1;
    END""",
    # Model call errors.
    """CREATE TRIGGER chat_run_fts_llm_ai AFTER INSERT ON chat_llmcall WHEN NEW.error != '' BEGIN
        INSERT INTO chat_run_fts(rowid, body, run_id) VALUES (NEW.id * 4 + 2, NEW.error, NEW.run_id);
    END""",
    """CREATE TRIGGER chat_run_fts_llm_au AFTER UPDATE OF error ON chat_llmcall BEGIN
        DELETE FROM chat_run_fts WHERE rowid = OLD.id * 4 + 2;
        INSERT INTO chat_run_fts(rowid, body, run_id) SELECT NEW.id * 4 + 2, NEW.error, NEW.run_id
            WHERE NEW.error != '';
    END""",
    """CREATE TRIGGER chat_run_fts_llm_ad AFTER DELETE ON chat_llmcall BEGIN
        DELETE FROM chat_run_fts WHERE rowid = OLD.id * 4 + 2;
    END""",
    # What existed before this migration.
    """INSERT INTO chat_run_fts(rowid, body, run_id)
        SELECT m.id * 4, m.content, r.id FROM chat_reasoningrun r JOIN chat_message m ON m.id = r.user_message_id""",
    """INSERT INTO chat_run_fts(rowid, body, run_id)
        SELECT id * 4, content, run_id FROM chat_message WHERE run_id IS NOT NULL""",
    """INSERT INTO chat_run_fts(rowid, body, run_id)
        SELECT id * 4 + 1, tool || ' ' || arguments || ' ' || result || ' ' || error, run_id FROM chat_toolexecution""",
    "INSERT INTO chat_run_fts(rowid, body, run_id) SELECT id * 4 + 2, error, run_id FROM chat_llmcall WHERE error != ''",
    "INSERT INTO chat_run_fts(rowid, body, run_id) SELECT id * 4 + 3, error, id FROM chat_reasoningrun WHERE error != ''",
]
SQLITE_TRIGGERS = [
    f"chat_run_fts_{table}_{event}"
    for table in ("run", "message", "tool", "llm")
    for event in ("ai", "au", "ad")
]


def forwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        for model, index in _postgres_indexes(apps):
            schema_editor.add_index(model, index)
    elif vendor == "sqlite":
        for statement in SQLITE_CREATE:
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        for model, index in _postgres_indexes(apps):
            schema_editor.remove_index(model, index)
    elif vendor == "sqlite":
        for trigger in SQLITE_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
        schema_editor.execute("DROP TABLE IF EXISTS chat_run_fts")


class Migration(migrations.Migration):
    dependencies = [("chat", "0006_feedback_and_staff_audit")]

    operations = [migrations.RunPython(forwards, backwards)]
