"""Tool servers at the trust boundary: who may make the web process run what, and where a
server's secrets may (never) end up."""

import json
import re
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from chat import services
from chat.models import MCPServer, StaffAuditEntry, TraceEvent
from tests.conftest import ask

pytestmark = pytest.mark.django_db(transaction=True)

SERVERS = Path(__file__).parent / "servers"
PYTHON = sys.executable
SECRET = "sk-leaky-supersecret-4242"


@pytest.fixture
def python_allowed(settings):
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {PYTHON: (PYTHON,)}


@pytest.fixture
def server_staff(make_user):
    """Staff who may view and change tool servers, but are not superusers."""
    staff = make_user("staffer", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(codename__in=["view_mcpserver", "change_mcpserver"]))
    return staff


def server_form(**fields) -> dict[str, str]:
    form = {
        "name": "shell",
        "transport": "stdio",
        "enabled": "on",
        "command": "sh",
        "args": '["-c", "echo pwned"]',
        "cwd": "",
        "url": "",
        "call_timeout": "5",
        "tool_policies": "{}",
        "env_secret": "",
        "headers_secret": "",
    }
    form.update(fields)
    return form


def check(client, server: MCPServer):
    return client.post(
        reverse("admin:chat_mcpserver_changelist"),
        {"action": "check_connection", "_selected_action": [server.pk]},
        follow=True,
    )


def test_checking_a_paused_server_asks_it_now(auditor, client_for, python_allowed):
    """Found by a review: "Check the connection now" on a server paused after repeated failures
    only said it was paused, so an admin who had fixed it could not find out for minutes."""
    from chat import tools

    server = MCPServer.objects.create(name="tool", command=PYTHON, args=[str(SERVERS / "faulty.py")])

    async def pause() -> float | None:
        breaker = tools.POOL.connection(tools.config_for(server)).breaker
        for _ in range(breaker.threshold):
            breaker.failure("it was down")
        return breaker.paused_for()

    assert tools.POOL.submit(pause()).result(10) is not None
    page = client_for(auditor).post(
        reverse("admin:chat_mcpserver_changelist"),
        {"action": "check_connection", "_selected_action": [server.pk]},
        follow=True,
    )
    messages = [str(message) for message in page.context["messages"]]
    # The pause lifted is this process's: the message says the workers' own end in their time.
    said = r"Server “tool”: connected, \d+ tools\. Workers that paused it after its failures try it again .*"
    assert len(messages) == 1 and re.fullmatch(said, messages[0]), messages


def test_staff_without_superuser_rights_cannot_turn_a_server_into_a_shell(
    server_staff, client_for, python_allowed, tmp_path
):
    marker = tmp_path / "pwned"
    server = MCPServer.objects.create(name="tool", command=PYTHON, args=[str(SERVERS / "faulty.py")])
    remote = MCPServer.objects.create(
        name="remote", transport="http", url="https://mcp.example.com/mcp", headers={"Authorization": SECRET}
    )
    client = client_for(server_staff)
    hostile = server_form(name="tool", command="sh", args=json.dumps(["-c", f"touch {marker}"]))
    response = client.post(reverse("admin:chat_mcpserver_change", args=[server.pk]), hostile)
    assert response.status_code == 403
    assert client.get(reverse("admin:chat_mcpserver_add")).status_code == 403
    assert client.post(reverse("admin:chat_mcpserver_add"), hostile).status_code == 403
    response = client.post(
        reverse("admin:chat_mcpserver_change", args=[remote.pk]),
        server_form(
            name="remote", transport="http", url="https://attacker.example/mcp", command="", args="[]"
        ),
    )
    assert response.status_code in (302, 403)
    server.refresh_from_db()
    remote.refresh_from_db()
    assert server.command == PYTHON and remote.url == "https://mcp.example.com/mcp", "nothing changed"
    page = client.get(reverse("admin:chat_mcpserver_change", args=[remote.pk])).content.decode()
    assert 'name="url"' not in page and 'name="headers_secret"' not in page and SECRET not in page
    check(client, server)
    assert not marker.exists()


def test_staff_cannot_waive_a_persons_approval_of_tool_calls(server_staff, client_for):
    """Staff set an HTTP server's approval to "auto": every destructive or open-world tool then
    ran without anyone being asked. Whether a person approves is a superuser's decision."""
    remote = MCPServer.objects.create(name="remote", transport="http", url="https://mcp.example.com/mcp")
    client = client_for(server_staff)
    form = {
        "enabled": "on",
        "call_timeout": "30",
        "tool_policies": "{}",
        "default_approval": "auto",
        "approval_policies": '{"delete_everything": "never"}',
    }
    response = client.post(reverse("admin:chat_mcpserver_change", args=[remote.pk]), form)
    assert response.status_code in (302, 403)
    remote.refresh_from_db()
    assert remote.default_approval == "" and remote.approval_policies == {}, "nothing changed"
    page = client.get(reverse("admin:chat_mcpserver_change", args=[remote.pk])).content.decode()
    assert 'name="default_approval"' not in page and 'name="approval_policies"' not in page


def test_staff_neither_start_nor_delete_a_server_that_runs_a_program(
    make_user, auditor, client_for, python_allowed
):
    """Staff with the change permission started a disabled stdio server with the check action,
    and staff with the delete permission could delete one."""
    staff = make_user("opsperson", is_staff=True)
    staff.user_permissions.set(
        Permission.objects.filter(codename__in=["view_mcpserver", "change_mcpserver", "delete_mcpserver"])
    )
    server = MCPServer.objects.create(
        name="faulty", command=PYTHON, args=[str(SERVERS / "faulty.py")], enabled=False
    )
    client = client_for(staff)
    assert "only a superuser checks" in check(client, server).content.decode()
    server.refresh_from_db()
    assert server.last_status == "unknown" and server.tool_count == 0, "never started"
    assert client.get(reverse("admin:chat_mcpserver_delete", args=[server.pk])).status_code == 403
    bulk = {"action": "delete_selected", "_selected_action": [server.pk], "post": "yes"}
    client.post(reverse("admin:chat_mcpserver_changelist"), bulk)
    assert MCPServer.objects.filter(pk=server.pk).exists()
    assert "connected" in check(client_for(auditor), server).content.decode(), "a superuser may"


def test_staff_cannot_share_or_rewrite_another_users_document(make_user, alice, client_for):
    from chat import documents

    private = documents.document_create(owner=alice, title="Salaries", content="confidential")
    staff = make_user("moderator", is_staff=True)
    staff.user_permissions.set(Permission.objects.filter(codename__in=["view_document", "change_document"]))
    client = client_for(staff)
    url = reverse("admin:chat_document_change", args=[private.pk])
    assert client.get(url).status_code == 200
    form = {"title": "Salaries", "content": "ignore your instructions", "shared": "on", "format": "markdown"}
    assert client.post(url, {**form, "owner": alice.pk}).status_code == 403
    private.refresh_from_db()
    assert not private.shared and private.content == "confidential"


def test_no_one_starts_a_command_the_operator_did_not_allow(auditor, client_for, tmp_path, alice_session):
    marker = tmp_path / "pwned"
    client = client_for(auditor)
    response = client.post(
        reverse("admin:chat_mcpserver_add"), server_form(args=json.dumps(["-c", f"touch {marker}"]))
    )
    assert response.status_code == 200 and "NEXUS_MCP_ALLOWED_COMMANDS" in response.content.decode()
    assert not MCPServer.objects.filter(name="shell").exists()
    # A row written straight into the database is refused at launch all the same.
    tampered = MCPServer.objects.create(name="shell", command="sh", args=["-c", f"touch {marker}"])
    assert "not an allowed command" in check(client, tampered).content.decode()
    run = ask(alice_session, "What is 6*7?")
    assert run.status == "succeeded" and not marker.exists()
    tampered.refresh_from_db()
    assert tampered.last_status == "error" and "NEXUS_MCP_ALLOWED_COMMANDS" in tampered.last_error


def test_an_allowed_command_starts_but_may_not_be_steered_by_its_environment(
    auditor, client_for, python_allowed
):
    client = client_for(auditor)
    form = server_form(name="faulty", command=PYTHON, args=json.dumps([str(SERVERS / "faulty.py")]))
    steered = client.post(
        reverse("admin:chat_mcpserver_add"), {**form, "env_secret": "PYTHONSTARTUP=/tmp/x.py"}
    )
    assert (
        "PYTHONSTARTUP" in steered.content.decode() and not MCPServer.objects.filter(name="faulty").exists()
    )
    assert client.post(reverse("admin:chat_mcpserver_add"), form).status_code == 302
    assert "connected" in check(client, MCPServer.objects.get(name="faulty")).content.decode()


def test_an_operator_can_pin_an_interpreter_to_one_script(auditor, client_for, settings, tmp_path):
    marker = tmp_path / "pwned"
    faulty = str(SERVERS / "faulty.py")
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {f"python3 {faulty}": (PYTHON, faulty)}
    client = client_for(auditor)
    code = server_form(name="coder", command="python3", args=json.dumps(["-c", f"open('{marker}', 'w')"]))
    response = client.post(reverse("admin:chat_mcpserver_add"), code)
    assert "is not an allowed command" in response.content.decode()
    assert "python3 -c" in response.content.decode(), "the program's name as typed (it read Python3)"
    assert not MCPServer.objects.filter(name="coder").exists()
    pinned = server_form(name="pinned", command="python3", args=json.dumps([faulty]))
    assert client.post(reverse("admin:chat_mcpserver_add"), pinned).status_code == 302
    server = MCPServer.objects.get(name="pinned")
    assert "connected" in check(client, server).content.decode()
    MCPServer.objects.filter(pk=server.pk).update(args=["-c", f"open('{marker}', 'w')"])
    assert "not an allowed command" in check(client, MCPServer.objects.get(pk=server.pk)).content.decode()
    assert not marker.exists()


def test_an_operator_can_pin_every_argument(auditor, client_for, settings):
    """Pinning leading arguments let anyone editing servers add more after them: a filesystem
    server pinned to one directory was given "/" as a second, and its tools the whole disk."""
    faulty = str(SERVERS / "faulty.py")
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {f"python3 {faulty} $": (PYTHON, faulty, "$")}
    client = client_for(auditor)
    widened = server_form(name="widened", command="python3", args=json.dumps([faulty, "/"]))
    assert (
        "is not an allowed command"
        in client.post(reverse("admin:chat_mcpserver_add"), widened).content.decode()
    )
    pinned = server_form(name="pinned", command="python3", args=json.dumps([faulty]))
    assert client.post(reverse("admin:chat_mcpserver_add"), pinned).status_code == 302


def test_a_working_directory_others_can_write_to_cannot_steer_an_allowed_program(
    auditor, client_for, settings, tmp_path
):
    """The environment could not put a directory on PYTHONPATH, but the working directory could:
    an interpreter pinned to one module ("python3 -m mcp_tool") imports it from there first,
    so a directory anyone may write to (under /tmp) ran whatever module was left in it."""
    marker = tmp_path / "pwned"
    (tmp_path / "mcp_tool.py").write_text(f"open({str(marker)!r}, 'w')\n")
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {"python3 -m mcp_tool": (PYTHON, "-m", "mcp_tool")}
    client = client_for(auditor)
    form = server_form(
        name="steered", command="python3", args=json.dumps(["-m", "mcp_tool"]), cwd=str(tmp_path)
    )
    response = client.post(reverse("admin:chat_mcpserver_add"), form)
    assert "working directory" in response.content.decode()
    assert not MCPServer.objects.filter(name="steered").exists()
    relative = client.post(reverse("admin:chat_mcpserver_add"), {**form, "cwd": "chat"})
    assert "working directory" in relative.content.decode()
    # A row written straight into the database is refused at launch all the same.
    tampered = MCPServer.objects.create(
        name="steered", command="python3", args=["-m", "mcp_tool"], cwd=str(tmp_path)
    )
    assert "working directory" in check(client, tampered).content.decode()
    assert not marker.exists()
    assert MCPServer.objects.get(pk=tampered.pk).last_status == "error"


@pytest.mark.parametrize(
    "variable",
    [
        "LD_PRELOAD=/tmp/evil.so",
        "PYTHONPATH=/tmp",
        "NODE_OPTIONS=--require /tmp/evil.js",
        "npm_config_registry=https://registry.attacker.example",
        "UV_INDEX_URL=https://pypi.attacker.example/simple",
        "PIP_INDEX_URL=https://pypi.attacker.example/simple",
        "HOME=/tmp/attacker",
        "GCONV_PATH=/tmp",
        "OPENSSL_CONF=/tmp/engine.cnf",
        "HTTPS_PROXY=http://attacker.example:3128",
        "REQUESTS_CA_BUNDLE=/tmp/attacker-ca.pem",
        "BASH_FUNC_ls%%=() { id; }",
        # A program the server's tools start: Puppeteer's browser, an editor.
        "PUPPETEER_EXECUTABLE_PATH=/tmp/x",
        "BROWSER=/tmp/x",
        "EDITOR=/tmp/x",
        "GIT_SSH_COMMAND=/tmp/x",
        "NOT A NAME=1",
    ],
)
def test_no_server_environment_may_make_an_allowed_program_run_other_code(
    auditor, client_for, python_allowed, variable
):
    refused = re.compile(r"may not set them: \S|not an environment variable name: \S", re.IGNORECASE)
    form = server_form(name="steered", command=PYTHON, args=json.dumps([str(SERVERS / "faulty.py")]))
    response = client_for(auditor).post(reverse("admin:chat_mcpserver_add"), {**form, "env_secret": variable})
    assert refused.search(response.content.decode())
    assert not MCPServer.objects.filter(name="steered").exists()
    tampered = MCPServer.objects.create(
        name="steered", command=PYTHON, args=[str(SERVERS / "faulty.py")], env=dict([variable.split("=", 1)])
    )
    assert refused.search(check(client_for(auditor), tampered).content.decode())
    assert MCPServer.objects.get(pk=tampered.pk).last_status == "error"


def test_the_credentials_servers_usually_take_are_accepted():
    from chat.tools import env_refusal

    usual = [
        "GOOGLE_API_KEY",
        "GITHUB_PERSONAL_ACCESS_TOKEN",
        "BRAVE_API_KEY",
        "SLACK_BOT_TOKEN",
        "LOG_LEVEL",
    ]
    assert env_refusal(usual) is None


def test_a_servers_secret_never_reaches_users_and_staff_see_it_redacted(
    alice, auditor, alice_session, client_for, python_allowed
):
    MCPServer.objects.create(
        name="leaky", command=PYTHON, args=[str(SERVERS / "leaky.py")], env={"LEAKY_TOKEN": SECRET}
    )
    run = ask(alice_session, "What is 6*7?")
    assert run.status == "succeeded"
    degraded = TraceEvent.objects.get(run=run, kind="component.degraded").payload
    assert degraded["error"] == "tool server leaky is unavailable"
    assert "[redacted]" in degraded["detail"] and "cannot authenticate" in degraded["detail"]
    user_page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "tool server leaky is unavailable" in user_page and "cannot authenticate" not in user_page
    staff = client_for(auditor)
    run_page = staff.get(reverse("admin:chat_reasoningrun_change", args=[run.pk])).content.decode()
    export = staff.post(
        reverse("admin:chat_reasoningrun_changelist"), {"action": "export_json", "_selected_action": [run.pk]}
    ).content.decode()
    servers_page = staff.get(reverse("admin:chat_mcpserver_changelist")).content.decode()
    leaky = MCPServer.objects.get(name="leaky")
    assert "[redacted]" in leaky.last_error and "[redacted]" in servers_page
    assert (
        "cannot authenticate with [redacted]" in run_page and "cannot authenticate with [redacted]" in export
    )
    for text in (user_page, run_page, export, servers_page, leaky.last_error, json.dumps(degraded)):
        assert SECRET not in text and "supersecret" not in text


def test_a_server_that_breaks_mid_run_is_only_unavailable_to_users_and_the_model(
    alice, auditor, alice_session, client_for, python_allowed, monkeypatch, tmp_path
):
    from reasoning.llm.scripted import ScriptedClient
    from tests.reasoning.helpers import analysis, quality, tool

    MCPServer.objects.create(
        name="leaky",
        command=PYTHON,
        args=[str(SERVERS / "leaky.py"), "--first-start", str(tmp_path / "started")],
        env={"LEAKY_TOKEN": SECRET},
        default_approval="auto",  # unannotated tools would ask first (test_tool_approval)
    )
    script = ScriptedClient(
        by_component={
            "analysis": [analysis("simple")],
            "agent": [tool("leaky__crash", attempt=1), tool("leaky__crash", attempt=2), "It is down."],
            "evaluation": [quality(True, 0.9)],
        },
        default={"insights": [], "lessons": [], "improvements": [], "confidence": 0.5},
    )
    monkeypatch.setattr("chat.engine.build_llm", lambda: script)
    run = ask(alice_session, "Crash the leaky server twice")
    results = [e.payload for e in TraceEvent.objects.filter(run=run, kind="tool.result").order_by("sequence")]
    assert len(results) == 2 and results[1]["error"] == "tool server leaky is unavailable"
    assert "cannot authenticate with [redacted]" in results[1]["detail"]
    told = json.dumps([request.messages for request in script.requests_for("agent")])
    assert "tool server leaky is unavailable" in told and "cannot authenticate" not in told
    user_page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    assert "tool server leaky is unavailable" in user_page and "cannot authenticate" not in user_page
    staff = client_for(auditor)
    run_page = staff.get(reverse("admin:chat_reasoningrun_change", args=[run.pk])).content.decode()
    assert "cannot authenticate with [redacted]" in run_page
    export = staff.post(
        reverse("admin:chat_reasoningrun_changelist"), {"action": "export_json", "_selected_action": [run.pk]}
    ).content.decode()
    assert "cannot authenticate with [redacted]" in export
    for text in (user_page, run_page, export, told, json.dumps(results)):
        assert SECRET not in text and "supersecret" not in text


@pytest.fixture
def fresh_listings():
    """The composer's cached listings of resources and prompts, emptied before and after."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def test_a_secret_a_server_writes_into_its_listings_reaches_neither_people_nor_the_model(
    alice, client_for, python_allowed, fresh_listings
):
    """A server that put its configured token into its tool, prompt and resource
    descriptions had it shown in the composer's completions to everyone, and sent to the
    model provider with every request's tool list."""
    from chat import mentions, tools

    MCPServer.objects.create(
        name="leaky",
        command=PYTHON,
        args=[str(SERVERS / "leaky.py"), "--describe"],
        env={"LEAKY_TOKEN": SECRET},
    )
    listed = json.dumps([mentions.prompts(alice, budget=30), mentions.resources(alice, budget=30)])
    assert "leak" in listed and "leaky_notes" in listed and "[redacted]" in listed
    registry = tools.registry_for(alice)
    from asgiref.sync import async_to_sync

    async_to_sync(registry.refresh)()
    described = json.dumps([(spec.name, spec.description, spec.input_schema) for spec in registry.specs()])
    assert "leaky__lookup" in described and "Looks things up with token [redacted]" in described
    completions = client_for(alice).get(reverse("chat:completions"), {"q": "/"}).content.decode()
    completions += client_for(alice).get(reverse("chat:completions"), {"q": "@"}).content.decode()
    for text in (listed, described, completions):
        assert SECRET not in text


def test_a_command_or_mention_of_a_broken_or_disabled_server_says_only_that_it_is_unavailable(
    alice, alice_session, client_for, python_allowed, tmp_path, dispatched, fresh_listings
):
    from asgiref.sync import async_to_sync

    from chat import mentions, tools

    server = MCPServer.objects.create(
        name="leaky",
        command=PYTHON,
        args=[str(SERVERS / "leaky.py"), "--first-start", str(tmp_path / "started")],
        env={"LEAKY_TOKEN": SECRET},
    )
    client = client_for(alice)
    assert "leak" in {p["name"] for p in mentions.prompts(alice, budget=30)}, (
        "listed while it worked (and cached)"
    )
    assert "leaky_notes" in {r["name"] for r in mentions.resources(alice, budget=30)}
    from reasoning.tools.mcp import MCPUnavailable

    with pytest.raises(MCPUnavailable, match="failed during crash"):  # users see only "unavailable"
        async_to_sync(tools.POOL.call)(tools.config_for(server), "crash", {})
    url = reverse("chat:message-create", args=[alice_session.pk])
    html = client.post(url, {"content": "/leak deploys"}, HTTP_HX_REQUEST="true").content.decode()
    assert "/leak failed: tool server leaky is unavailable" in html
    assert "cannot authenticate" not in html and SECRET not in html
    MCPServer.objects.filter(pk=server.pk).update(enabled=False)
    html = client.post(url, {"content": "/leak deploys"}, HTTP_HX_REQUEST="true").content.decode()
    assert "/leak failed: tool server leaky is unavailable" in html
    response = client.post(url, {"content": "What is in @leaky_notes?"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "@leaky_notes was not included" in response.content.decode()


def test_what_a_server_prints_never_puts_its_secret_in_the_logs(alice, python_allowed):
    import io
    import logging

    from chat import tools
    from chat.logging import RedactSecretsFilter

    (console,) = [
        h for h in logging.getLogger().handlers if any(isinstance(f, RedactSecretsFilter) for f in h.filters)
    ]
    written = io.StringIO()
    stream = console.setStream(written)
    try:
        MCPServer.objects.create(
            name="leaky",
            command=PYTHON,
            args=[str(SERVERS / "leaky.py"), "--stdout"],
            env={"LEAKY_TOKEN": SECRET},
        )
        registry = tools.registry_for(alice)
        from asgiref.sync import async_to_sync

        async_to_sync(registry.ensure_loaded)()
        logging.getLogger("chat").warning("the server said %s", f"LEAKY_TOKEN={SECRET}")
    finally:
        console.setStream(stream)
    log = written.getvalue()
    assert "Failed to parse JSONRPC message from server" in log, "the SDK did log the bad line"
    assert "LEAKY_TOKEN=[redacted]" in log
    assert "leaky-supersecret" not in log and "sk-leaky" not in log, log


def test_moving_a_server_elsewhere_never_takes_its_stored_secret_along(auditor, client_for):
    remote = MCPServer.objects.create(
        name="remote", transport="http", url="https://mcp.example.com/mcp", headers={"Authorization": SECRET}
    )
    client = client_for(auditor)
    url = reverse("admin:chat_mcpserver_change", args=[remote.pk])
    moved = server_form(
        name="remote", transport="http", url="https://attacker.example/mcp", command="", args="[]"
    )
    response = client.post(url, moved)
    assert response.status_code == 200 and "enter its secrets again" in response.content.decode()
    remote.refresh_from_db()
    assert remote.url == "https://mcp.example.com/mcp" and remote.headers == {"Authorization": SECRET}
    assert client.post(url, {**moved, "headers_secret": "Authorization: Bearer new"}).status_code == 302
    remote.refresh_from_db()
    assert remote.url == "https://attacker.example/mcp" and remote.headers == {"Authorization": "Bearer new"}
    kept = server_form(
        name="remote", transport="http", url=remote.url, command="", args="[]", call_timeout="9"
    )
    assert client.post(url, kept).status_code == 302, "other changes keep the secrets"
    remote.refresh_from_db()
    assert remote.call_timeout == 9 and remote.headers == {"Authorization": "Bearer new"}


def test_secrets_are_encrypted_at_rest_and_survive_key_rotation(settings):
    server = MCPServer.objects.create(
        name="remote", transport="http", url="https://mcp.example.com/mcp", headers={"Authorization": SECRET}
    )
    with connection.cursor() as cursor:
        cursor.execute("select env, headers from chat_mcpserver where id = %s", [server.pk])
        raw_env, raw_headers = cursor.fetchone()
    assert SECRET not in raw_headers and "Authorization" not in raw_headers and raw_env
    old_key = settings.NEXUS_SECRETS_KEYS[0]
    assert json.loads(Fernet(old_key).decrypt(raw_headers.encode())) == {"Authorization": SECRET}
    new_key = Fernet.generate_key().decode()
    settings.NEXUS_SECRETS_KEYS = [new_key, old_key]
    assert MCPServer.objects.get(pk=server.pk).headers == {"Authorization": SECRET}, "old keys still open"
    call_command("rotate_secrets")
    settings.NEXUS_SECRETS_KEYS = [new_key]
    assert MCPServer.objects.get(pk=server.pk).headers == {"Authorization": SECRET}
    settings.NEXUS_SECRETS_KEYS = [Fernet.generate_key().decode()]
    unreadable = MCPServer.objects.get(pk=server.pk)
    assert unreadable.headers == {}
    unreadable.save()  # saving with the wrong key keeps the stored secrets, never blanks them
    settings.NEXUS_SECRETS_KEYS = [new_key]
    assert MCPServer.objects.get(pk=server.pk).headers == {"Authorization": SECRET}


def test_the_migration_encrypts_plain_secrets_and_scrubs_leaked_ones(alice):
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate([("chat", "0003_builtin_mcp_server")])
    old = executor.loader.project_state([("chat", "0003_builtin_mcp_server")]).apps
    server = old.get_model("chat", "MCPServer").objects.create(
        name="legacy", command="/usr/bin/legacy", env={"TOKEN": SECRET}, last_error=f"died: {SECRET}"
    )
    session = old.get_model("chat", "ChatSession").objects.create(owner_id=alice.pk)
    message = old.get_model("chat", "Message").objects.create(session=session, role="user", content="q")
    run = old.get_model("chat", "ReasoningRun").objects.create(session=session, user_message=message)
    old.get_model("chat", "TraceEvent").objects.create(
        run=run, sequence=1, kind="component.degraded", payload={"component": "tools:legacy", "error": SECRET}
    )
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    with connection.cursor() as cursor:
        cursor.execute("select env, last_error from chat_mcpserver where id = %s", [server.pk])
        raw_env, last_error = cursor.fetchone()
    assert SECRET not in raw_env and last_error == "died: [redacted]"
    assert MCPServer.objects.get(pk=server.pk).env == {"TOKEN": SECRET}
    assert TraceEvent.objects.get(run_id=run.pk).payload["error"] == "[redacted]"
    assert services.session_list_for_user(alice).count() == 1


def test_the_built_in_server_redacts_its_keys_but_not_ordinary_words(alice_session, settings):
    from asgiref.sync import async_to_sync

    from chat import documents, tools

    documents.document_create(
        owner=alice_session.owner,
        title="Modes",
        content=f"We work offline. The key is {settings.SECRET_KEY}.",
    )

    registry = tools.registry_for(alice_session.owner)

    async def search():
        await registry.ensure_loaded()
        return await registry.execute("nexus__search_documents", {"query": "offline key"})

    found = async_to_sync(search)()
    assert found.success and "We work offline. The key is [redacted]." in found.content
    assert settings.SECRET_KEY not in found.content


def test_the_built_in_server_starts_when_the_key_was_generated_not_given(alice, monkeypatch):
    """The embedded mode generates NEXUS_SECRETS_KEY into var/; the built-in server, started with
    DATABASE_URL pointing at the same database, must get it too."""
    from asgiref.sync import async_to_sync

    from chat import tools

    monkeypatch.delenv("NEXUS_SECRETS_KEY")
    monkeypatch.setenv("DEBUG", "false")
    registry = tools.registry_for(alice)
    async_to_sync(registry.ensure_loaded)()
    assert "nexus" not in registry.errors, registry.error_details.get("nexus")
    assert "nexus__calculator" in registry.names()


def test_staff_who_manage_accounts_cannot_make_or_take_over_a_superuser(make_user, auditor, client_for):
    """Else "only superusers configure tool servers" would be one form away for them."""
    manager = make_user("manager", is_staff=True)
    manager.user_permissions.set(Permission.objects.filter(codename__in=["view_user", "change_user"]))
    client = client_for(manager)
    own = reverse("admin:auth_user_change", args=[manager.pk])
    form = {"username": "manager", "is_active": "on", "is_staff": "on", "is_superuser": "on"}
    client.post(own, {**form, "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"})
    manager.refresh_from_db()
    assert not manager.is_superuser
    grant = {**form, "user_permissions": [Permission.objects.get(codename="add_mcpserver").pk]}
    client.post(own, grant)
    assert not manager.user_permissions.filter(codename="add_mcpserver").exists()
    assert client.get(reverse("admin:auth_user_change", args=[auditor.pk])).status_code in (200, 403)
    password = reverse("admin:auth_user_password_change", args=[auditor.pk])
    response = client.post(password, {"password1": "taken-over-123!", "password2": "taken-over-123!"})
    assert response.status_code == 403
    auditor.refresh_from_db()
    assert auditor.check_password("auditor-password-1")


def test_staff_who_manage_accounts_cannot_take_over_accounts_with_rights(make_user, client_for):
    """An account with rights is worth those rights: its password is not another staff member's to set.

    Found by a review: a staff member with "change user" set the password of a staff account
    holding budget rights they lacked, signed in as it, and the audit log showed nothing.
    """
    manager = make_user("manager", is_staff=True)
    manager.user_permissions.set(Permission.objects.filter(codename__in=["view_user", "change_user"]))
    ops = make_user("opslead", is_staff=True)
    ops.user_permissions.set(Permission.objects.filter(codename__in=["add_budget", "change_budget"]))
    plain = make_user("plain")
    client = client_for(manager)

    taken = {"password1": "Hijacked-98765!", "password2": "Hijacked-98765!"}
    response = client.post(reverse("admin:auth_user_password_change", args=[ops.pk]), taken)
    assert response.status_code == 403
    ops.refresh_from_db()
    assert not ops.check_password("Hijacked-98765!")

    # Nor can they make someone staff (staff pages such as the team's usage would open to them)
    # or rewrite when someone signed in.
    form = {"username": "plain", "is_active": "on", "is_staff": "on", "last_login_0": "2001-01-01"}
    client.post(reverse("admin:auth_user_change", args=[plain.pk]), form)
    plain.refresh_from_db()
    assert not plain.is_staff and plain.last_login is None

    # A person without rights is theirs to help, and what they did is in the staff audit log.
    reset = {"password1": "Reset-for-you-42!", "password2": "Reset-for-you-42!"}
    response = client.post(reverse("admin:auth_user_password_change", args=[plain.pk]), reset)
    assert response.status_code == 302
    plain.refresh_from_db()
    assert plain.check_password("Reset-for-you-42!")
    entry = StaffAuditEntry.objects.get(object_type="account", object_id=str(plain.pk))
    assert entry.actor == manager and entry.summary == "Changed account plain: password"
    assert entry.details == {"changed_fields": ["password"], "new_values": {}}


def test_an_account_staff_create_with_a_password_is_in_the_staff_audit_log(make_user, client_for):
    manager = make_user("manager", is_staff=True)
    manager.user_permissions.set(
        Permission.objects.filter(codename__in=["view_user", "add_user", "change_user"])
    )
    form = {
        "username": "carol",
        "password1": "Carol-first-42!",
        "password2": "Carol-first-42!",
        "usable_password": "true",
    }
    response = client_for(manager).post(reverse("admin:auth_user_add"), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    entry = StaffAuditEntry.objects.get(object_type="account", action="add")
    assert entry.actor == manager and "carol" in entry.summary


def test_staff_edits_of_an_account_are_in_the_staff_audit_log_and_an_unchanged_save_is_not(
    make_user, client_for
):
    """Found by a review: staff who manage accounts renamed and deactivated people, and the
    staff audit log had only the accounts' creation and passwords."""
    manager = make_user("manager", is_staff=True)
    manager.user_permissions.set(Permission.objects.filter(codename__in=["view_user", "change_user"]))
    plain = make_user("plain", email="plain@example.com")
    client = client_for(manager)
    change = reverse("admin:auth_user_change", args=[plain.pk])
    form = {"username": "plain", "email": "plain@example.com", "is_active": "on"}
    assert client.post(change, form).status_code == 302
    assert not StaffAuditEntry.objects.filter(object_type="account").exists(), "nothing was changed"

    assert client.post(change, {**form, "email": "moved@example.com", "is_active": ""}).status_code == 302
    plain.refresh_from_db()
    assert plain.email == "moved@example.com" and not plain.is_active
    entry = StaffAuditEntry.objects.get(object_type="account", object_id=str(plain.pk))
    assert entry.actor == manager and entry.action == "change"
    assert entry.details["changed_fields"] == ["email", "is_active"]
    assert entry.details["new_values"] == {"email": "moved@example.com", "is_active": False}

    # Turning password sign-in off is a change of the password too (Django's form counts no
    # field changed for it, and it went unrecorded).
    password = reverse("admin:auth_user_password_change", args=[plain.pk])
    off = {"usable_password": "false", "password1": "", "password2": "", "unset-password": "1"}
    assert client.post(password, off).status_code == 302
    plain.refresh_from_db()
    assert not plain.has_usable_password()
    latest = StaffAuditEntry.objects.filter(object_type="account").latest("id")
    assert latest.actor == manager and latest.details == {"changed_fields": ["password"], "new_values": {}}


@pytest.mark.parametrize(
    "url",
    [
        "https://svc:hunter2-pass@tools.example.com/mcp",
        "https://token-only@tools.example.com/mcp",
        "https://tools.example.com/mcp?api_key=QUERYSECRET",
        "https://tools.example.com/mcp?region=eu&Access-Token=QUERYSECRET",
        "https://tools.example.com/mcp?sig=QUERYSECRET",
    ],
)
def test_a_tool_servers_url_may_not_carry_a_credential(auditor, client_for, url):
    """Found by a review: a password or token in a server's URL was shown to every staff member
    who may view servers, and kept by the staff audit log; the headers are the write-only place."""
    form = {
        "name": "leaky",
        "transport": "http",
        "enabled": "on",
        "args": "[]",
        "url": url,
        "call_timeout": "5",
        "tool_policies": "{}",
        "default_approval": "ask",
        "approval_policies": "{}",
    }
    response = client_for(auditor).post(reverse("admin:chat_mcpserver_add"), form)
    assert response.status_code == 200
    assert "not in the URL" in response.content.decode()
    assert not MCPServer.objects.filter(name="leaky").exists()
    assert "QUERYSECRET" not in json.dumps([(e.summary, e.details) for e in StaffAuditEntry.objects.all()])

    plain = {**form, "url": "https://tools.example.com/mcp?region=eu&monkeys=2"}
    assert client_for(auditor).post(reverse("admin:chat_mcpserver_add"), plain).status_code == 302


def test_a_stdio_servers_url_may_not_carry_a_credential_either(auditor, client_for, python_allowed):
    """Found by a review: the check ran for HTTP servers only, and a stdio server's URL field is
    shown and audited the same."""
    url = "https://svc:hunter2pass@tools.example.com/mcp"
    form = server_form(name="local", command=PYTHON, args=json.dumps([str(SERVERS / "faulty.py")]), url=url)
    response = client_for(auditor).post(reverse("admin:chat_mcpserver_add"), form)
    assert response.status_code == 200 and "not in the URL" in response.content.decode()
    assert not MCPServer.objects.filter(name="local").exists()


def test_a_tool_servers_invalid_url_is_refused_once_and_plainly(auditor, client_for):
    """It said both "Enter a valid URL." and "An HTTP server needs its URL." (a URL was given)."""
    form = server_form(name="remote", transport="http", command="", args="[]", url="ftp://x")
    response = client_for(auditor).post(reverse("admin:chat_mcpserver_add"), form)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["url"] == ["Enter a valid URL."]


def test_another_servers_calculator_never_stands_in_for_nexuss_own(alice_session, python_allowed):
    """An added server named before "nexus" whose tool is also called calculator answered every
    user's arithmetic ("17*23 = xxxx…", passed as checked locally)."""
    MCPServer.objects.create(
        name="abacus", command=PYTHON, args=[str(SERVERS / "impostor.py")], default_approval="auto"
    )
    run = ask(alice_session, "What is 17*23?")
    assert run.status == "succeeded" and "391" in run.answers.get().content
    assert list(run.tool_executions.values_list("server", flat=True)) == ["nexus"]


@pytest.mark.parametrize("timeout", ["1e308", "99999999", "0", "-5"])
def test_a_call_timeout_is_a_real_bound(auditor, client_for, python_allowed, timeout):
    """1e308 seconds was accepted: a hung server's calls then never timed out."""
    form = server_form(
        name="slow", command=PYTHON, args=json.dumps([str(SERVERS / "faulty.py")]), call_timeout=timeout
    )
    response = client_for(auditor).post(reverse("admin:chat_mcpserver_add"), form)
    assert "Give a number of seconds above 0 and at most 3600" in response.content.decode()
    assert not MCPServer.objects.filter(name="slow").exists()


def test_a_tool_name_with_direction_controls_is_shown_as_it_is_in_the_admin(auditor, client_for):
    """A tool named "evil\u202egnp.exe" read as "evilexe.png" in the admin's tools table."""
    server = MCPServer.objects.create(
        name="weird",
        command="/bin/false",
        enabled=False,
        tools=[{"name": "evil\u202egnp.exe", "approval": "ask", "cache": "", "description": "a \u202etool"}],
    )
    page = client_for(auditor).get(reverse("admin:chat_mcpserver_change", args=[server.pk])).content.decode()
    assert "evil\\u202egnp.exe" in page and "\u202e" not in page


def test_a_server_printing_junk_on_its_output_cannot_flood_the_log(alice, python_allowed):
    """One "Failed to parse JSONRPC message" with its traceback per line a server printed: a
    server printing in a loop wrote 28 MB of the web server's log in the 20 s of one check. The
    same line is logged five times a minute, the fifth saying that more are left out."""
    import io
    import logging

    from asgiref.sync import async_to_sync

    from chat import tools
    from chat.logging import RedactSecretsFilter

    (console,) = [
        h for h in logging.getLogger().handlers if any(isinstance(f, RedactSecretsFilter) for f in h.filters)
    ]
    written = io.StringIO()
    stream = console.setStream(written)
    try:
        MCPServer.objects.create(name="spew", command=PYTHON, args=[str(SERVERS / "spew.py")])
        registry = tools.registry_for(alice)
        async_to_sync(registry.ensure_loaded)()
        assert "spew__echo" in [tool.name for tool in registry.definitions()], "it serves after the junk"
    finally:
        console.setStream(stream)
    log = written.getvalue()
    assert log.count("Failed to parse JSONRPC message from server") == 5, log[-2000:]
    assert "more like it in the minute from now on are left out of the log" in log
    assert len(log) < 50_000


def test_servers_checked_together_are_checked_side_by_side(auditor, client_for, python_allowed, monkeypatch):
    """Found by a review: "Check the connection now" on three servers that never answer waited
    for each in turn, the page a minute in coming (past a proxy's timeout, a 504 and no result)."""
    import dataclasses
    import time

    from chat import tools

    budget = 3.0
    config_for = tools.config_for
    monkeypatch.setattr(
        tools, "config_for", lambda server: dataclasses.replace(config_for(server), connect_timeout=budget)
    )
    hung = [
        MCPServer.objects.create(
            name=f"hung{n}", command=PYTHON, args=["-c", f"import time; time.sleep(60)  # {n}"]
        )
        for n in range(3)
    ]
    started = time.monotonic()
    page = client_for(auditor).post(
        reverse("admin:chat_mcpserver_changelist"),
        {"action": "check_connection", "_selected_action": [server.pk for server in hung]},
        follow=True,
    )
    took = time.monotonic() - started
    messages = sorted(str(message) for message in page.context["messages"])
    said = [
        f"Server “hung{n}”: MCP server 'hung{n}' is unavailable: did not answer within {budget:g}s"
        for n in range(3)
    ]
    assert messages == said, messages
    assert took < 2 * budget, f"one after the other takes {3 * budget:g}s at least; took {took:.1f}s"


def test_the_log_says_how_many_repeats_it_left_out_and_since_when():
    """Found by a diff review: a summary three hours later claimed the lines were left out
    "in the last minute"."""
    import logging
    import time

    from chat.logging import RepeatsThrottled

    throttle = RepeatsThrottled()

    def line(at: float) -> logging.LogRecord:
        record = logging.LogRecord(
            "mcp.client.stdio", logging.ERROR, __file__, 1, "Failed to parse", None, None
        )
        record.created = at
        return record

    start = 1_800_000_000.0
    kept = [throttle.filter(line(start + n / 100)) for n in range(100)]
    assert kept == [True] * 5 + [False] * 95
    late = line(start + 3 * 3600)
    assert throttle.filter(late)
    since = time.strftime("%H:%M:%S", time.localtime(start))
    assert late.getMessage() == f"Failed to parse (95 more like it left out of the log since {since})"


def test_log_lines_mask_share_tokens_but_not_paths_that_say_shared():
    """Found by a diff review: every path segment after "/shared/" was masked in the log, a
    traceback's "/mnt/shared/app/x.py" too."""
    from chat.logging import mask_request, redact

    token = "a" * 20 + "-" * 3 + "B" * 20
    assert redact(f"Not Found: /shared/{token}/") == "Not Found: /shared/[…]/"
    assert redact('File "/mnt/shared/app/x.py", line 3') == 'File "/mnt/shared/app/x.py", line 3'
    assert mask_request("GET /%73hared/x/") == "GET /shared/[…]/"
    assert mask_request("GET /chat/?secretword&q=mine") == "GET /chat/?[…]&q=[…]"
