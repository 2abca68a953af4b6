from django.db import migrations


def create_builtin(apps, schema_editor):
    MCPServer = apps.get_model("chat", "MCPServer")
    MCPServer.objects.get_or_create(
        name="nexus",
        defaults={"transport": "stdio", "builtin": True, "enabled": True, "call_timeout": 30.0,
                  "tool_policies": {"clock": "no-cache"}},
    )


def remove_builtin(apps, schema_editor):
    apps.get_model("chat", "MCPServer").objects.filter(name="nexus", builtin=True).delete()


class Migration(migrations.Migration):
    dependencies = [("chat", "0002_documents_and_mcp_servers")]
    operations = [migrations.RunPython(create_builtin, remove_builtin)]
