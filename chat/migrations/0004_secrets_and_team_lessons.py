"""Encrypt tool server secrets (env, headers) that were stored in plain text, and scrub the
values that leaked into status messages and trace events through a server's stderr; team
lessons (reflections' lessons that staff reviewed and promoted to every user's planner)."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import chat.crypto
from reasoning.tools.mcp import MCPServerConfig


def _scrub(server, text):
    values = [*(server.env or {}).values(), *(server.headers or {}).values()]
    config = MCPServerConfig(name=server.name, secret_values=tuple(str(v) for v in values))
    return config.redact(text)


def _scrub_payload(server, value):
    if isinstance(value, str):
        return _scrub(server, value)
    if isinstance(value, dict):
        return {k: _scrub_payload(server, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_payload(server, v) for v in value]
    return value


def encrypt(apps, schema_editor):
    MCPServer = apps.get_model("chat", "MCPServer")
    TraceEvent = apps.get_model("chat", "TraceEvent")
    ToolExecution = apps.get_model("chat", "ToolExecution")
    for server in MCPServer.objects.all():
        server.sealed_env = chat.crypto.seal(server.env or {})
        server.sealed_headers = chat.crypto.seal(server.headers or {})
        server.last_error = _scrub(server, server.last_error)
        server.save(update_fields=["sealed_env", "sealed_headers", "last_error"])
        if not (server.env or server.headers):
            continue
        for event in TraceEvent.objects.filter(
            kind="component.degraded", payload__component=f"tools:{server.name}"
        ):
            event.payload = _scrub_payload(server, event.payload)
            event.save(update_fields=["payload"])
        for tool in ToolExecution.objects.filter(server=server.name):
            tool.error, tool.result = _scrub(server, tool.error), _scrub(server, tool.result)
            tool.save(update_fields=["error", "result"])


def decrypt(apps, schema_editor):
    MCPServer = apps.get_model("chat", "MCPServer")
    for server in MCPServer.objects.all():
        server.env = chat.crypto.unseal(server.sealed_env) if server.sealed_env else {}
        server.headers = chat.crypto.unseal(server.sealed_headers) if server.sealed_headers else {}
        server.save(update_fields=["env", "headers"])


class Migration(migrations.Migration):
    dependencies = [
        ("chat", "0003_builtin_mcp_server"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField("mcpserver", "sealed_env", models.TextField(blank=True, default="")),
        migrations.AddField("mcpserver", "sealed_headers", models.TextField(blank=True, default="")),
        migrations.RunPython(encrypt, decrypt),
        migrations.RemoveField("mcpserver", "env"),
        migrations.RemoveField("mcpserver", "headers"),
        migrations.RenameField("mcpserver", "sealed_env", "env"),
        migrations.RenameField("mcpserver", "sealed_headers", "headers"),
        migrations.AlterField(
            "mcpserver",
            "env",
            chat.crypto.SealedJSONField(
                blank=True, default=dict, help_text="Secret: encrypted, never shown back."
            ),
        ),
        migrations.AlterField(
            "mcpserver",
            "headers",
            chat.crypto.SealedJSONField(
                blank=True, default=dict, help_text="Secret: encrypted, never shown back."
            ),
        ),
        migrations.CreateModel(
            name="TeamLesson",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                (
                    "text",
                    models.TextField(help_text="Reword it to remove anything specific to one person's data."),
                ),
                ("promoted_at", models.DateTimeField(default=django.utils.timezone.now)),
                (
                    "promoted_by",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "source_run",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="team_lessons",
                        to="chat.reasoningrun",
                    ),
                ),
            ],
            options={
                "ordering": ["-promoted_at", "-id"],
            },
        ),
    ]
