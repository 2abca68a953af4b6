"""Admin for MCP tool servers and team documents.

Tool servers: only superusers add servers or change how one is reached (transport, command,
arguments, directory, URL, environment, headers), and stdio servers at all: whoever sets a
command chooses what this process runs, and whoever sets a URL receives the stored headers.
Staff with the change permission may enable or disable HTTP servers and the built-in one,
set timeouts and cache policies, and check connections. Commands must also be on the
operator's allow-list (NEXUS_MCP_ALLOWED_COMMANDS). Secrets are write-only and encrypted.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from asgiref.sync import async_to_sync
from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import pluralize
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.views.decorators.debug import sensitive_post_parameters

from chat import staff_audit
from chat.admin_audit import ChangeAuditedAdmin, ViewAuditedAdmin
from chat.crypto import UnreadableSecrets
from chat.inputs import BIDI_CONTROLS, StrictJSONFormField, refuse_nul, shown_with_controls
from chat.models import Document, Elicitation, MCPServer, ToolApproval
from chat.tools import check_servers, command_refusal, cwd_refusal, env_refusal, providers_for
from reasoning.tools.approval import POLICIES, SAMPLING

# What decides which program runs or where secrets go: superusers only.
CONNECTION_FIELDS = ["transport", "command", "args", "cwd", "url"]
# What only superusers change: how a server is reached, and whether a person approves its calls
# (staff setting "auto" skipped the approval of every destructive or open-world tool).
SUPERUSER_FIELDS = [*CONNECTION_FIELDS, "default_approval", "approval_policies"]
SECRET_INPUTS = ["env_secret", "headers_secret", "clear_secrets"]
# What the workers last found, shown on every server's page.
STATUS_FIELDS = ["last_status", "last_error", "last_checked", "paused_until", "tool_count", "listed_tools"]
# The longest a tool call may be given, in seconds.
MAX_CALL_TIMEOUT = 3600


# Query parameter names (lowercase, without "-" and "_") that carry a credential.
CREDENTIAL_PARAMETERS = frozenset(
    {"auth", "authorization", "code", "credential", "credentials", "jwt", "pass", "pwd", "sig", "signature"}
)
CREDENTIAL_ENDINGS = ("key", "password", "passwd", "secret", "session", "sessionid", "token")


def url_refusal(url: str) -> str | None:
    """Why `url` may not be stored, or None. A URL is no secret: every staff member who may see
    tool servers reads it on the server's page, the staff audit log keeps it, and connection
    errors quote it; a password or token in it went wherever it did. Credentials belong in
    the write-only headers."""
    parts = urlsplit(url)
    where = "put credentials in the HTTP headers below (never shown back), not in the URL"
    if parts.username or parts.password:
        return f"this URL carries a user name or password: {where}"
    names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
    for name in names:
        plain = name.lower().replace("-", "").replace("_", "")
        if plain in CREDENTIAL_PARAMETERS or plain.endswith(CREDENTIAL_ENDINGS):
            return f"the URL's parameter {name!r} looks like a credential: {where}"
    return None


def _parse_pairs(text: str, label: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=") if "=" in line else line.partition(":")
        if not sep or not key.strip():
            raise forms.ValidationError(f"{label}, line {number}: write NAME=value")
        pairs[key.strip()] = value.strip()
    return pairs


class MCPServerForm(forms.ModelForm):
    """Secrets are write-only: the form never shows them back; empty keeps what is stored."""

    env_secret = forms.CharField(
        label="Environment",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off"}),
        help_text="NAME=value per line (stdio). Stored values are never shown; leave empty to keep them.",
    )
    headers_secret = forms.CharField(
        label="HTTP headers",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off"}),
        help_text="Header: value per line (HTTP). Never shown back; leave empty to keep them.",
    )
    clear_secrets = forms.BooleanField(required=False, label="Remove the stored environment and headers")

    class Meta:
        model = MCPServer
        fields = [
            "name",
            "transport",
            "enabled",
            "command",
            "args",
            "cwd",
            "url",
            "call_timeout",
            "tool_policies",
            "default_approval",
            "approval_policies",
        ]
        field_classes = {
            "args": StrictJSONFormField,
            "tool_policies": StrictJSONFormField,
            "approval_policies": StrictJSONFormField,
        }

    def clean_approval_policies(self) -> dict[str, str]:
        policies = self.cleaned_data.get("approval_policies") or {}
        if not isinstance(policies, dict) or any(v not in POLICIES for v in policies.values()):
            raise forms.ValidationError('Use {"tool name": "auto", "ask" or "never"}.')
        # "sampling" names the server's requests for a completion, not a tool.
        self._known_tools({name: v for name, v in policies.items() if name != SAMPLING})
        return policies

    def clean_tool_policies(self) -> dict[str, str]:
        policies = self.cleaned_data.get("tool_policies") or {}
        if not isinstance(policies, dict) or any(v not in ("cache", "no-cache") for v in policies.values()):
            raise forms.ValidationError('Use {"tool name": "cache" or "no-cache"}.')
        return self._known_tools(policies)

    def _known_tools(self, policies: dict[str, str]) -> dict[str, str]:
        """Policies for tools the server has: a misspelt name applied to nothing, silently.
        Unchecked while the server has not been listed yet."""
        for name in policies:
            refuse_nul(name, what="A tool name")
        listed = [tool.get("name") for tool in (self.instance.tools or []) if isinstance(tool, dict)]
        unknown = [name for name in policies if listed and name not in listed]
        if unknown:
            raise forms.ValidationError(
                f"{', '.join(unknown)}: no such tool on this server (it lists {', '.join(listed)})."
            )
        return policies

    def clean_call_timeout(self) -> float:
        """At most an hour: a timeout of 1e308 seconds was "never", which the per-server
        isolation (a hung server costs a call its timeout, then a pause) relies on not being."""
        timeout = self.cleaned_data.get("call_timeout")
        if timeout is not None and not 0 < timeout <= MAX_CALL_TIMEOUT:
            raise forms.ValidationError(f"Give a number of seconds above 0 and at most {MAX_CALL_TIMEOUT}.")
        return timeout

    def clean_args(self) -> list[str]:
        args = self.cleaned_data.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise forms.ValidationError('Use a JSON list of strings, e.g. ["-m", "my_server"].')
        for arg in args:
            refuse_nul(arg, what="An argument")
        return args

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        for field, label in (("env_secret", "Environment"), ("headers_secret", "HTTP headers")):
            data[field] = _parse_pairs(data.get(field) or "", label)
        transport = data.get("transport")
        if not (self.instance and self.instance.builtin):
            if transport == MCPServer.Transport.STDIO and not data.get("command"):
                self.add_error("command", "A stdio server needs the command that starts it.")
            elif transport == MCPServer.Transport.STDIO and {"command", "args", "transport"} & set(
                self.changed_data
            ):
                self._refuse("command", command_refusal(data["command"], data.get("args") or []))
            self._refuse("env_secret", env_refusal(data["env_secret"]))
            if transport == MCPServer.Transport.STDIO:
                self._refuse("cwd", cwd_refusal(data.get("cwd") or ""))
            if transport == MCPServer.Transport.HTTP and not data.get("url") and "url" not in self.errors:
                self.add_error("url", "An HTTP server needs its URL.")
            if data.get("url") and ("url" in self.changed_data or self.instance.pk is None):
                # Whatever the transport: a stdio server's URL is shown and audited as well.
                self._refuse("url", url_refusal(data["url"]))
        self._require_secrets_when_moved(data)
        name = data.get("name") or ""
        if name and not re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", name):
            self.add_error("name", "Lowercase letters and digits, words joined by single underscores.")
        return data

    def _require_secrets_when_moved(self, data: dict[str, Any]) -> None:
        """Secrets are write-only, so they must not follow a server to a new URL or program
        (whoever points it at their own would receive them): changing how a server is
        reached needs its secrets entered again, or removed."""
        server = self.instance
        moved = [f for f in CONNECTION_FIELDS if f in data and (data[f] or "") != (getattr(server, f) or "")]
        if server.pk is None or data.get("clear_secrets") or not moved:
            return
        for field, stored in (("env_secret", server.env), ("headers_secret", server.headers)):
            if stored and not data.get(field):
                self.add_error(
                    field,
                    "You changed how this server is reached: enter its secrets again (stored ones "
                    "never follow it to another program or URL), or tick the box to remove them.",
                )

    def _refuse(self, field: str, refusal: str | None) -> None:
        if refusal:
            # A command's refusal starts with the program's name ("python3 -c …"), whose case
            # matters: it read "Python3 -c …".
            text = refusal if field == "command" else f"{refusal[0].upper()}{refusal[1:]}"
            self.add_error(field, f"{text}.")

    def save(self, commit: bool = True) -> MCPServer:
        server = super().save(commit=False)
        if self.cleaned_data.get("clear_secrets"):
            server.env, server.headers = {}, {}
        if self.cleaned_data["env_secret"]:
            server.env = self.cleaned_data["env_secret"]
        if self.cleaned_data["headers_secret"]:
            server.headers = self.cleaned_data["headers_secret"]
        if commit:
            server.save()
        return server


def _retire_old_connections() -> None:
    """End, in this process at once, the connections of servers just disabled, deleted or
    changed: they ran on (with an old secret) until someone's next request here. Other
    processes end theirs at their next look at the servers."""
    providers_for(None)


@admin.register(MCPServer)
class MCPServerAdmin(ChangeAuditedAdmin, admin.ModelAdmin):
    audit_object_type = "mcp server"
    # Secrets (env_secret, headers_secret) are logged by name only, never by value.
    audit_value_fields = (
        "name",
        "transport",
        "enabled",
        "command",
        "args",
        "cwd",
        "url",
        "call_timeout",
        "tool_policies",
    )
    form = MCPServerForm
    list_display = ["name", "transport", "enabled", "status", "tool_count", "last_checked", "builtin"]
    list_filter = ["enabled", "transport", "last_status"]
    actions = ["check_connection"]
    # Staff without superuser rights edit only what cannot launch a program or move a secret.
    readonly_fields = ["builtin", "stored_secrets", *STATUS_FIELDS]

    def _fieldsets(self, obj: Any) -> list[Any]:
        secrets = [*SECRET_INPUTS, "stored_secrets"]
        if obj is not None and obj.builtin:
            return [
                (None, {"fields": ["name", "builtin", "enabled", "call_timeout", "tool_policies"]}),
                ("Approval", {"fields": ["default_approval", "approval_policies"]}),
                ("Status", {"fields": STATUS_FIELDS}),
            ]
        return [
            (None, {"fields": ["name", "transport", "enabled", "call_timeout", "tool_policies"]}),
            ("Approval", {"fields": ["default_approval", "approval_policies"]}),
            ("stdio", {"fields": ["command", "args", "cwd"]}),
            ("Streamable HTTP", {"fields": ["url"]}),
            ("Secrets", {"fields": secrets}),
            ("Status", {"fields": STATUS_FIELDS}),
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        fields = list(self.readonly_fields)
        if obj is not None and obj.builtin:
            fields.append("name")
        if not request.user.is_superuser:
            fields += ["name", *SUPERUSER_FIELDS]
        return list(dict.fromkeys(fields))

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        fieldsets = self._fieldsets(obj)
        if request.user.is_superuser:
            return fieldsets
        return [
            (title, {**options, "fields": [f for f in options["fields"] if f not in SECRET_INPUTS]})
            for title, options in fieldsets
        ]

    @method_decorator(sensitive_post_parameters(*SECRET_INPUTS))
    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        """Error reports (a DEBUG page, an admin mail) never show the secrets typed here."""
        return super().changeform_view(request, *args, **kwargs)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return request.user.is_superuser

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and self._launches_a_program(obj) and not request.user.is_superuser:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and (
            obj.builtin or (self._launches_a_program(obj) and not request.user.is_superuser)
        ):
            return False
        return super().has_delete_permission(request, obj)

    def save_model(self, request: HttpRequest, obj: MCPServer, form: Any, change: bool) -> None:
        # The form already hides these from staff; this holds even for a hand-made POST.
        touched = set(form.changed_data) & {*SUPERUSER_FIELDS, *SECRET_INPUTS, "name"}
        if not request.user.is_superuser and (touched or self._launches_a_program(obj)):
            raise PermissionDenied("Only superusers change how a tool server is reached or its approvals.")
        super().save_model(request, obj, form, change)
        transaction.on_commit(_retire_old_connections)

    def delete_model(self, request: HttpRequest, obj: MCPServer) -> None:
        super().delete_model(request, obj)
        transaction.on_commit(_retire_old_connections)

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        super().delete_queryset(request, queryset)
        transaction.on_commit(_retire_old_connections)

    @staticmethod
    def _launches_a_program(obj: MCPServer) -> bool:
        return obj.transport == MCPServer.Transport.STDIO and not obj.builtin

    @admin.display(description="status", ordering="last_status")
    def status(self, obj: MCPServer) -> str:
        if not obj.enabled:  # its last status is history: nothing will try it again
            return format_html('<span class="server-status paused">{}</span>', "disabled")
        if obj.last_status == MCPServer.Status.ERROR:
            return format_html(
                '<span class="server-status error">✗ {}</span>', Truncator(obj.last_error).chars(200)
            )
        if obj.last_status == MCPServer.Status.PAUSED:
            until = ""
            if obj.paused_until and obj.paused_until > timezone.now():
                until = f" until {obj.paused_until:%H:%M:%S} UTC"
            elif obj.paused_until:
                until = f" until {obj.paused_until:%H:%M:%S} UTC (tried again on the next request)"
            return format_html(
                '<span class="server-status paused">⏸ paused{} after repeated failures: {}</span>',
                until,
                Truncator(obj.last_error).chars(200),
            )
        if obj.last_status == MCPServer.Status.OK:
            return format_html('<span class="server-status ok">✓ {}</span>', "connected")
        return "not checked yet"

    @admin.display(description="tools")
    def listed_tools(self, obj: MCPServer) -> str:
        """Each tool as last listed, with the approval and caching that apply to it: the names
        the per-tool policies above are keyed by."""
        if not obj.tools:
            return "not listed yet: check the connection"
        rows = format_html_join(
            "",
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    # Direction controls shown as what they are: "evil\u202egnp.exe" read as
                    # "evilexe.png" here, while the policies above need the real name.
                    shown_with_controls(tool.get("name", "")),
                    tool.get("approval", ""),
                    tool.get("cache", ""),
                    str(tool.get("description", "")).translate(BIDI_CONTROLS),
                )
                for tool in obj.tools
            ),
        )
        return format_html(
            '<table class="listed-tools"><thead><tr><th>tool</th><th>approval</th><th>caching</th>'
            "<th>description</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )

    @admin.display(description="stored secrets")
    def stored_secrets(self, obj: MCPServer) -> str:
        if isinstance(obj.env, UnreadableSecrets) or isinstance(obj.headers, UnreadableSecrets):
            return "stored, but NEXUS_SECRETS_KEY cannot decrypt them: enter them again"
        names = [*(f"env {k}" for k in (obj.env or {})), *(f"header {k}" for k in (obj.headers or {}))]
        return ", ".join(names) + " (values hidden, encrypted)" if names else "none"

    @admin.action(description="Check the connection now", permissions=["change"])
    def check_connection(self, request: HttpRequest, queryset: QuerySet[MCPServer]) -> None:
        # Each message starts with a word, not the name: the admin capitalises a message's
        # first letter, and "H_exit" is not the server people type in /h_exit__command.
        checked = []
        for server in queryset:
            if self._launches_a_program(server) and not request.user.is_superuser:
                # Checking starts the program, with its stored environment, even when a
                # superuser disabled the server on purpose.
                self.message_user(
                    request,
                    f"Server “{server.name}”: only a superuser checks a server that starts a program "
                    "on this machine.",
                    level=messages.ERROR,
                )
                continue
            checked.append((server, server.paused_until is not None and server.paused_until > timezone.now()))
        errors = async_to_sync(check_servers)([server for server, _ in checked])
        for (server, paused), error in zip(checked, errors, strict=True):
            staff_audit.record(
                request,
                "other",
                "mcp server",
                server.pk,
                f"Checked the connection of {server.name}: {error or 'connected'}",
            )
            if error:
                self.message_user(request, f"Server “{server.name}”: {error}", level=messages.ERROR)
            else:
                server.refresh_from_db()
                tools = f"{server.tool_count} tool{pluralize(server.tool_count)}"
                # The pause a check lifts is this process's: a worker that paused the server
                # tries it again when its own pause ends.
                later = " Workers that paused it after its failures try it again as their pauses end."
                self.message_user(
                    request, f"Server “{server.name}”: connected, {tools}.{later if paused else ''}"
                )


@admin.register(Document)
class DocumentAdmin(ViewAuditedAdmin, ChangeAuditedAdmin, admin.ModelAdmin):
    """Documents belong to their owners: staff may look (and delete, with the permission), but
    only a superuser edits one, since sharing a private document or rewriting a shared one
    changes what every user's runs read."""

    audit_object_type = "document"
    audit_value_fields = ("title", "shared", "format")
    list_display = ["title", "owner", "shared", "format", "updated_at"]
    list_filter = ["shared", "format"]
    list_select_related = ["owner"]
    search_fields = ["title", "content", "owner__username"]
    readonly_fields = ["created_at", "updated_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # uploaded by their owners on the Team documents page

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return request.user.is_superuser


@admin.register(ToolApproval)
class ToolApprovalAdmin(ViewAuditedAdmin, admin.ModelAdmin):
    """Every decision on a tool call, for audit: read-only (people decide in the chat)."""

    audit_object_type = "tool approval"

    list_display = ["created_at", "model_tool", "status", "scope", "decided_by", "decided_at", "run"]
    list_filter = ["status", "scope", "server"]
    search_fields = ["model_tool", "decided_by__username", "session__owner__username"]
    list_select_related = ["decided_by", "run"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Elicitation)
class ElicitationAdmin(ToolApprovalAdmin):
    """Every question a tool server asked a person, and the answer: read-only."""

    audit_object_type = "elicitation"

    list_display = ["created_at", "server", "tool", "status", "answered_by", "answered_at", "run"]
    list_filter = ["status", "server"]
    search_fields = ["tool", "message", "answered_by__username"]
    list_select_related = ["answered_by", "run"]
