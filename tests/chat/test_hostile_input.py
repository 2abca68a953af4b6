"""Bad input gets a clear answer and stores nothing: NUL bytes, broken quotes, hostile frames.

The property tests post arbitrary text to every form and websocket handler and check that
no request fails with a 5xx and that no half-written row is left behind. They run on SQLite
and again on PostgreSQL (make test), where a NUL character used to raise DataError.
"""

import json
import re

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import OperationalError
from django.urls import get_resolver, reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg_pool import PoolTimeout

from chat import documents, services
from chat.models import ChatSession, Document, MCPServer, Message, ReasoningRun
from tests.chat.test_consumer import receive_all, socket
from tests.conftest import ask

pytestmark = pytest.mark.django_db(transaction=True)
HTMX = {"HTTP_HX_REQUEST": "true"}
NUL = "before\x00after"
EXAMPLES = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _row_counts() -> tuple[int, ...]:
    return (
        ChatSession.objects.count(),
        Message.objects.count(),
        ReasoningRun.objects.count(),
        Document.objects.count(),
    )


def _assert_no_half_written_rows() -> None:
    assert not Message.objects.filter(role=Message.Role.USER, started_run__isnull=True).exists()
    for model, field in [
        (Message, "content"),
        (ReasoningRun, "query"),
        (ChatSession, "title"),
        (Document, "title"),
        (Document, "content"),
    ]:
        # Checked in Python: SQLite's LIKE stops reading a pattern at a NUL.
        values = model.objects.values_list(field, flat=True)
        assert not any("\x00" in value for value in values), (model, field)


def test_nul_bytes_are_refused_with_a_message_and_nothing_is_stored(
    alice, alice_session, client_for, dispatched
):
    client = client_for(alice)
    before = _row_counts()
    response = client.post(reverse("chat:message-create", args=[alice_session.pk]), {"content": NUL}, **HTMX)
    assert response.status_code == 200 and "NUL character" in response.content.decode()
    response = client.post(reverse("chat:session-rename", args=[alice_session.pk]), {"title": NUL}, **HTMX)
    assert "NUL character" in response.content.decode()
    response = client.post(reverse("chat:document-upload"), {"title": NUL, "content": "fine"}, follow=True)
    assert "NUL character" in response.content.decode()
    upload = SimpleUploadedFile("notes.md", b"fine", content_type="text/markdown")
    response = client.post(reverse("chat:document-upload"), {"title": NUL, "file": upload}, follow=True)
    assert "NUL character" in response.content.decode()
    response = client.post(
        reverse("chat:message-create", args=[alice_session.pk]), {"content": '@"Re\x00lease"'}, **HTMX
    )
    assert "NUL character" in response.content.decode()
    response = client.get(reverse("chat:completions"), {"q": "@re\x00"})
    assert response.status_code == 400 and "NUL character" in response.content.decode()
    alice_session.refresh_from_db()
    assert _row_counts() == before and alice_session.title == "Alice's chat" and not dispatched


def test_a_nul_in_an_admin_search_or_filter_is_a_clear_400(auditor, client_for):
    client = client_for(auditor)
    client.raise_request_exception = False
    for query in ({"q": NUL}, {"status": NUL}, {"status__exact": "\x00"}, {NUL: "1"}):
        response = client.get(reverse("admin:chat_reasoningrun_changelist"), query)
        assert response.status_code == 400, query
        assert "NUL character" in response.content.decode()


def test_an_unclosed_quote_in_command_arguments_is_explained(alice, alice_session, client_for, dispatched):
    response = client_for(alice).post(
        reverse("chat:message-create", args=[alice_session.pk]), {"content": '/summarize topic="abc'}, **HTMX
    )
    assert response.status_code == 200 and "quotation mark is not closed" in response.content.decode()
    assert not Message.objects.exists() and not dispatched


def test_a_command_value_holding_an_equals_sign_is_a_value(alice, alice_session, client_for, dispatched):
    """ "/summarize the equation E=mc^2" was refused: "Missing topic; write topic=…"."""
    from chat.models import ReasoningRun

    response = client_for(alice).post(
        reverse("chat:message-create", args=[alice_session.pk]),
        {"content": "/summarize the equation E=mc^2"},
        **HTMX,
    )
    assert "Missing topic" not in response.content.decode()
    assert "the equation E=mc^2" in ReasoningRun.objects.get().query


HOSTILE_FRAMES = [
    '{"type": "sync", "cursor": {"99999999999999999999999999": 0}}',
    '{"type": "sync", "cursor": {"1": 1e999}}',
    '{"type": "sync", "cursor": {"1": Infinity}}',
    '{"type": "sync", "cursor": {"1": NaN}}',
    '{"type": "sync", "cursor": {"-5": 0}}',
    '{"type": "sync", "cursor": {"1": 99999999999999999999999999}}',
    # "after" names the page's newest run; nothing here is one.
    '{"type": "sync", "cursor": {}, "after": "0"}',
    '{"type": "sync", "cursor": {}, "after": true}',
    '{"type": "sync", "cursor": {}, "after": -1}',
    '{"type": "sync", "cursor": {}, "after": 1e999}',
    '{"type": "sync", "cursor": {}, "after": 99999999999999999999999999}',
    '{"type": "sync", "cursor": {}, "after": [0]}',
    "[" * 100_000 + "]" * 100_000,
    '{"type": "sync", "cursor": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "x" * 200_000,
]


async def test_hostile_sync_frames_are_ignored_and_the_socket_keeps_working(alice, alice_session):
    run = await database_sync_to_async(ask)(alice_session, "What is 2+2?")
    communicator = await socket(alice_session.pk, alice)
    connected, _ = await communicator.connect()
    assert connected
    for frame in HOSTILE_FRAMES:
        await communicator.send_to(text_data=frame)
        assert await communicator.receive_nothing(timeout=0.2), frame[:60]
    await communicator.send_to(text_data=json.dumps({"type": "sync", "cursor": {str(run.pk): 0}}))
    assert f'id="ev-{run.pk}-1"' in await receive_all(communicator)
    await communicator.disconnect()  # re-raises anything the consumer raised


# --- properties ------------------------------------------------------------------------------

texts = st.text(max_size=300) | st.sampled_from(["\x00", "@\x00", '/summarize topic="', '@"', "/", "@"])


@EXAMPLES
@given(text=texts)
def test_any_text_in_any_form_gives_no_server_error_and_no_half_written_rows(
    alice, alice_session, client_for, dispatched, text
):
    client = client_for(alice)
    ReasoningRun.objects.filter(status__in=ReasoningRun.ACTIVE).update(status=ReasoningRun.Status.CANCELLED)
    Document.objects.filter(title="Doomed").delete()
    posts = [
        (reverse("chat:message-create", args=[alice_session.pk]), {"content": text}),
        (reverse("chat:session-rename", args=[alice_session.pk]), {"title": text}),
        (reverse("chat:document-upload"), {"title": text, "content": text}),
        (
            reverse("chat:document-upload"),
            {"title": text, "file": SimpleUploadedFile("f.md", text.encode("utf-8", "replace"))},
        ),
        (
            reverse("chat:document-upload"),
            {"title": text, "file": SimpleUploadedFile(f"{text[:50]}.md", b"fine")},
        ),
        (reverse("chat:preferences"), {"trace_open": text}),
        (reverse("chat:session-new"), {"title": text}),
    ]
    for url, data in posts:
        before = _row_counts()
        response = client.post(url, data, **HTMX)
        assert response.status_code < 500, (url, text)
        # Refused: an error paragraph (the text itself may well be "error": Hypothesis draws
        # strings from the code's own constants).
        if 'role="alert"' in response.content.decode() or response.status_code >= 400:
            assert _row_counts() == before, (url, text)
    for query in (text, f"@{text}", f"/{text}"):
        assert client.get(reverse("chat:completions"), {"q": query}).status_code < 500
    waiting = ReasoningRun.objects.filter(session=alice_session).last()
    if waiting is not None:  # retrying a run that no longer waits: a message, whatever is posted
        retry = reverse("chat:run-retry", args=[alice_session.pk, waiting.pk])
        assert client.post(retry, {"run": text}, **HTMX).status_code < 500
    doomed = documents.document_create(owner=alice, title="Doomed", content="x")
    response = client.post(reverse("chat:document-delete", args=[doomed.pk]), {"confirm": text})
    assert response.status_code == 302 and not Document.objects.filter(pk=doomed.pk).exists()
    anonymous = client_for(alice)
    anonymous.logout()
    response = anonymous.post(reverse("login"), {"username": text, "password": text, "next": text})
    assert response.status_code < 500
    assert anonymous.get(reverse("login"), {"next": text}).status_code < 500
    _assert_no_half_written_rows()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=20), children, max_size=4)
    ),
    max_leaves=20,
)
frames = (
    st.text(min_size=1, max_size=200)
    | json_values.map(json.dumps)
    | st.dictionaries(st.text(max_size=30) | st.integers().map(str), json_values, max_size=5).map(
        lambda cursor: json.dumps({"type": "sync", "cursor": cursor})
    )
)


@EXAMPLES
@given(frames=st.lists(frames, min_size=1, max_size=5))
def test_any_frame_on_the_socket_is_answered_or_ignored_never_a_crash(alice, alice_session, frames):
    async def exchange() -> None:
        communicator = await socket(alice_session.pk, alice)
        connected, _ = await communicator.connect()
        assert connected
        for frame in frames:
            await communicator.send_to(text_data=frame)
        await communicator.receive_nothing(timeout=0.05)
        await communicator.disconnect()

    async_to_sync(exchange)()
    assert services.session_list_for_user(alice).count() == 1
    assert not documents.documents_visible_to(alice).exists()


@pytest.mark.parametrize(
    "origin",
    [
        None,
        b"null",
        b"http://127.0.0.1.evil.example",
        b"http://evil.example",
        # The same host on another port or scheme is another site (another service's page on
        # the team's Nexus host), as Django's CSRF check of a POST decides.
        b"http://127.0.0.1:9999",
        b"https://127.0.0.1",
        b"http://localhost",
    ],
)
async def test_a_socket_without_the_sites_own_origin_is_refused(alice, alice_session, origin):
    from channels.testing import WebsocketCommunicator

    from nexus.asgi import application
    from tests.chat.test_consumer import cookie_for

    headers = [(b"host", b"127.0.0.1"), (b"cookie", await database_sync_to_async(cookie_for)(alice))]
    if origin is not None:
        headers.append((b"origin", origin))
    communicator = WebsocketCommunicator(application, f"/ws/sessions/{alice_session.pk}/", headers=headers)
    connected, _ = await communicator.connect()
    assert not connected


@pytest.mark.parametrize(
    ("host", "origin", "scope", "trusted"),
    [
        (b"127.0.0.1:8101", b"http://127.0.0.1:8101", {}, []),
        (b"chat.example.com", b"https://chat.example.com", {"scheme": "wss"}, []),
        (b"chat.example.com", b"https://chat.example.com", {"proxy": True}, []),
        (b"127.0.0.1", b"https://nexus.example.com", {}, ["https://nexus.example.com"]),
        (b"127.0.0.1", b"https://team.nexus.example.com", {}, ["https://*.nexus.example.com"]),
    ],
)
async def test_a_socket_from_the_sites_own_or_a_trusted_origin_opens(
    alice, alice_session, settings, host, origin, scope, trusted
):
    from channels.testing import WebsocketCommunicator

    from nexus.asgi import application
    from tests.chat.test_consumer import cookie_for

    settings.ALLOWED_HOSTS = ["127.0.0.1", "chat.example.com"]
    settings.CSRF_TRUSTED_ORIGINS = trusted
    headers = [
        (b"host", host),
        (b"origin", origin),
        (b"cookie", await database_sync_to_async(cookie_for)(alice)),
    ]
    if scope.pop("proxy", False):
        settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
        headers.append((b"x-forwarded-proto", b"https"))
    communicator = WebsocketCommunicator(application, f"/ws/sessions/{alice_session.pk}/", headers=headers)
    communicator.scope.update(scope)
    connected, _ = await communicator.connect()
    assert connected
    await communicator.disconnect()


def test_only_markdown_and_text_files_are_accepted(alice, client_for):
    client = client_for(alice)
    for name, body in [
        ("page.html", b"<script>alert(1)</script>"),
        ("tool.exe", b"MZ\x90"),
        ("a.svg", b"<svg/>"),
    ]:
        response = client.post(
            reverse("chat:document-upload"), {"file": SimpleUploadedFile(name, body)}, follow=True
        )
        assert "Upload a Markdown (.md) or plain text (.txt) file." in response.content.decode(), name
    assert not Document.objects.exists()
    big = SimpleUploadedFile("big.md", b"x" * 3_000_000)
    response = client.post(reverse("chat:document-upload"), {"file": big}, follow=True)
    assert "at most" in response.content.decode() and not Document.objects.exists()


def _admin_queries() -> list[tuple[str, str]]:
    """Every admin changelist with each parameter a person can type or click: search,
    ordering, page, and every list filter."""
    from django.contrib import admin

    queries = []
    for model, model_admin in admin.site._registry.items():
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        names = ["q", "o", "p"]
        for entry in model_admin.list_filter:
            field = entry if isinstance(entry, str) else entry[0] if isinstance(entry, tuple) else None
            names += [field, f"{field}__exact", f"{field}__id__exact"] if field else [entry.parameter_name]
        queries += [(url, name) for name in names]
    return queries


@EXAMPLES
@given(text=texts, pick=st.integers(min_value=0))
def test_any_text_in_an_admin_search_filter_or_form_gives_no_server_error(
    auditor, alice_session, client_for, text, pick
):
    from chat.models import TeamLesson

    client = client_for(auditor)
    client.raise_request_exception = False
    queries = _admin_queries()
    url, name = queries[pick % len(queries)]
    assert client.get(url, {name: text}).status_code < 500, (url, name, text)
    lesson = TeamLesson.objects.create(text="Split multi-part questions.")
    change = reverse("admin:chat_teamlesson_change", args=[lesson.pk])
    assert client.post(change, {"text": text}).status_code < 500
    lesson.refresh_from_db()
    assert "\x00" not in lesson.text and lesson.text.strip()
    lesson.delete()


TOOL_SERVER_FIELDS = {
    "args": lambda text: json.dumps([text]),
    "tool_policies": lambda text: json.dumps({text: "cache"}),
    "cwd": lambda text: text,
    "url": lambda text: f"https://mcp.example.com/{text}",
    "env_secret": lambda text: f"TOKEN={text}",
    "headers_secret": lambda text: f"X-Key: {text}",
}


# The admin's add form for an HTTP tool server, filled in as valid; tests change one field.
HTTP_SERVER_FORM = {
    "name": "probe",
    "transport": "http",
    "enabled": "on",
    "url": "https://mcp.example.com/mcp",
    "call_timeout": "5",
    "args": "[]",
    "tool_policies": "{}",
    "cwd": "",
    "env_secret": "",
    "headers_secret": "",
}


@EXAMPLES
@given(text=texts, field=st.sampled_from(sorted(TOOL_SERVER_FIELDS)))
def test_any_text_in_the_tool_server_form_gives_no_server_error(auditor, client_for, text, field):
    form = {**HTTP_SERVER_FORM, field: TOOL_SERVER_FIELDS[field](text)}
    response = client_for(auditor).post(reverse("admin:chat_mcpserver_add"), form)
    assert response.status_code < 500, (field, text)
    MCPServer.objects.filter(name="probe").delete()


TOO_LARGE = str(2**63)  # one past the largest id a column holds


def _id_routes(patterns, prefix: str = "") -> list[str]:
    """Every URL of the project that takes ids, once with each of its ids written as TOO_LARGE
    (the others as 1: a lookup by an impossible id alone may never reach the database)."""
    routes = []
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if hasattr(pattern, "url_patterns"):
            routes += _id_routes(pattern.url_patterns, route)
            continue
        ids = re.findall(r"<(?:int|id):\w+>", route)
        for large in ids:
            url = route
            for name in ids:
                url = url.replace(name, TOO_LARGE if name == large else "1")
            routes.append("/" + url)
    return routes


def test_an_id_too_large_for_any_column_is_no_page_not_a_server_error(alice, auditor, client_for):
    """A 500 (OverflowError from the database driver) was what a foreign-key lookup such as a
    tool result's image answered to /runs/9223372036854775808/events/1/parts/0/."""
    routes = _id_routes(get_resolver().url_patterns)
    assert f"/runs/{TOO_LARGE}/events/1/parts/1/" in routes
    assert len(routes) >= 15
    for user in (alice, auditor):
        client = client_for(user)
        client.raise_request_exception = False
        for route in routes:
            assert client.get(route).status_code in (404, 405), route
            assert client.post(route).status_code in (403, 404, 405), route
    staff = client_for(auditor)
    staff.raise_request_exception = False
    for query in (TOO_LARGE, "²", "12" * 20):
        assert staff.get("/usage/", {"user": query}).status_code == 200, query
        assert staff.get("/admin/chat/reasoningrun/", {"owner": query}).status_code in (200, 400), query
    for changelist, query in (
        ("/admin/chat/reasoningrun/", {"id__in": f"1,{TOO_LARGE}"}),
        ("/admin/chat/chatsession/", {"owner": TOO_LARGE}),
        ("/admin/chat/chatsession/", {"owner__id__exact": TOO_LARGE}),
    ):
        assert staff.get(changelist, query).status_code in (200, 400), (changelist, query)
    for action in ("delete_selected", "export_json"):
        selected = {"action": action, "_selected_action": [TOO_LARGE]}
        assert staff.post("/admin/chat/reasoningrun/", selected).status_code == 400, action
    assert staff.get("/admin/chat/reasoningrun/", {"q": TOO_LARGE}).status_code == 200, (
        "any number is searched"
    )


async def test_a_websocket_for_a_chat_id_too_large_is_refused_as_no_such_chat(alice):
    communicator = await socket(TOO_LARGE, alice)
    connected, code = await communicator.connect()
    assert not connected and code == 4404


NOT_JSON_NUMBERS = [
    '{"expression": NaN}',
    '{"expression": Infinity}',
    '{"expression": -Infinity}',
    '{"n": 1e400}',
]


def test_numbers_a_json_column_refuses_are_a_clear_error_not_a_500(alice, alice_session, client_for):
    """NaN, infinities, 1e400 and absurd nesting in edited arguments or a server's form were
    stored as far as the database, which refused them: a 500."""
    from chat.approvals import approval_request, elicitation_request
    from chat.models import Elicitation, ToolApproval

    run = services.message_post(session=alice_session, content="What is 17*23?")
    client = client_for(alice)
    approval = approval_request(
        run_id=run.pk,
        payload={"argument_hash": "h1", "tool": "nexus__calculator", "arguments": {"expression": "17*23"}},
        sequence=None,
    )
    url = reverse("chat:approval-decide", args=[approval.pk])
    for arguments in [*NOT_JSON_NUMBERS, "[" * 50_000 + "]" * 50_000]:
        response = client.post(url, {"decision": "edit", "arguments": arguments})
        assert response.status_code == 400 and "not valid JSON" in response.content.decode(), arguments[:30]
    assert ToolApproval.objects.get(pk=approval.pk).status == "pending"
    schema = {"type": "object", "properties": {"n": {"type": "number"}}}
    payload = {"key": "k1", "server": "s", "tool": "t", "message": "A number?", "schema": schema}
    row = elicitation_request(run_id=run.pk, payload=payload, sequence=None)
    url = reverse("chat:elicitation-reply", args=[row.pk])
    for value in ("nan", "inf", "-Infinity", "1e999"):
        response = client.post(url, {"action": "accept", "n": value})
        assert response.status_code == 400 and "must be a number" in response.content.decode(), value
    assert client.post(url, {"action": "accept", "n": "2.5"}).status_code == 200
    assert Elicitation.objects.get(pk=row.pk).content == {"n": 2.5}


@pytest.mark.parametrize(
    "away",
    [
        OperationalError("terminating connection due to administrator command"),
        PoolTimeout("couldn't get a connection after 10.00 sec"),
    ],
    ids=["restarting", "no connection in time"],
)
def test_a_database_away_mid_request_is_said_plainly_with_a_503(
    alice, alice_session, client_for, dispatched, monkeypatch, away, caplog
):
    """PostgreSQL restarting, or down past the pool's wait, turned a posted message into a bare
    500 ("Nexus hit an error"), 20 s later for the latter. And each such request was logged as
    an ERROR with a traceback, which made an expected outage look like a crash in the log."""

    def fail(**_):
        raise away

    monkeypatch.setattr(services, "message_post", fail)
    client = client_for(alice)
    client.raise_request_exception = False
    url = reverse("chat:message-create", args=[alice_session.pk])
    fragment = client.post(url, {"content": "What is 2+2?"}, **HTMX)
    assert fragment.status_code == 503 and fragment["Content-Type"].startswith("text/plain")
    assert "cannot reach its database" in fragment.content.decode() and fragment["Retry-After"]
    page = client.post(url, {"content": "What is 2+2?"})
    assert page.status_code == 503 and "nothing was saved" in page.content.decode()
    logged = [r for r in caplog.records if r.name == "django.request"]
    assert logged and all(r.levelname == "WARNING" and not r.exc_info for r in logged), logged
    assert "the database is away" in logged[0].getMessage()


def test_any_other_error_is_still_the_500_page(alice, alice_session, client_for, dispatched, monkeypatch):
    def fail(**_):
        raise RuntimeError("a bug")

    monkeypatch.setattr(services, "message_post", fail)
    client = client_for(alice)
    client.raise_request_exception = False
    response = client.post(reverse("chat:message-create", args=[alice_session.pk]), {"content": "hi"}, **HTMX)
    assert response.status_code == 500 and "database" not in response.content.decode()


def test_a_form_too_large_to_read_says_so_instead_of_a_bare_400(alice, client_for):
    """Pasting about 3 MB of text as a document showed Django's bare "Bad Request (400)"."""
    client = client_for(alice)
    client.raise_request_exception = False
    huge = "x" * 3 * 1024 * 1024
    page = client.post(reverse("chat:document-upload"), {"title": "Big", "content": huge})
    assert page.status_code == 413 and "too large to send" in page.content.decode()
    assert "upload the file" in page.content.decode() and not Document.objects.exists()
    fragment = client.post(reverse("chat:document-upload"), {"title": "Big", "content": huge}, **HTMX)
    assert fragment.status_code == 413 and fragment["Content-Type"].startswith("text/plain")


# A JSON escape for half a character (a lone surrogate): Python's parser takes it, but the text
# cannot be written as UTF-8, so any page or download that showed it failed.
LONE_SURROGATES = ['{"expression": "8*8 \\ud800"}', '{"\\udfff": 1}', '["\\ud83d"]']


def test_half_a_character_in_edited_arguments_is_refused_not_a_page_nobody_can_open(
    alice, alice_session, client_for, auditor
):
    """Edited arguments holding a lone surrogate ("\\ud800") were stored: the card's answer, the
    chat page ever after, the run's audit page and every JSON Lines export that included the
    run failed with a 500, a run a person could hide from staff and whose export they broke."""
    from chat.approvals import approval_request
    from chat.models import ToolApproval

    run = services.message_post(session=alice_session, content="What is 8*8?")
    approval = approval_request(
        run_id=run.pk,
        payload={"argument_hash": "h1", "tool": "nexus__calculator", "arguments": {"expression": "8*8"}},
        sequence=None,
    )
    client = client_for(alice)
    url = reverse("chat:approval-decide", args=[approval.pk])
    for arguments in [*LONE_SURROGATES, '{"expression": "8*8\\u0000"}', '{"\\u0000": "8*8"}']:
        response = client.post(url, {"decision": "edit", "arguments": arguments}, **HTMX)
        assert response.status_code == 400 and "not valid JSON" in response.content.decode(), arguments
    assert ToolApproval.objects.get(pk=approval.pk).status == "pending"
    # A pair of surrogates is one character (an emoji), and welcome.
    response = client.post(url, {"decision": "edit", "arguments": '{"expression": "\\ud83d\\ude00"}'}, **HTMX)
    assert response.status_code == 200
    assert ToolApproval.objects.get(pk=approval.pk).edited_arguments == {"expression": "\U0001f600"}
    assert client.get(reverse("chat:session", args=[alice_session.pk])).status_code == 200
    staff = client_for(auditor)
    assert staff.get(reverse("admin:chat_reasoningrun_change", args=[run.pk])).status_code == 200


@pytest.mark.parametrize("field", ["args", "tool_policies"])
@pytest.mark.parametrize("text", [*LONE_SURROGATES, "[" * 50_000 + "]" * 50_000, '{"a":' * 50_000])
def test_json_a_tool_server_form_cannot_store_is_a_clear_error_not_a_500(auditor, client_for, field, text):
    """The admin's JSON fields passed absurd nesting to Python's parser, which raised (a 500,
    before and again while drawing the refused form), and stored a lone surrogate, which the
    form then failed to draw."""
    form = {**HTTP_SERVER_FORM, field: text}
    response = client_for(auditor).post(reverse("admin:chat_mcpserver_add"), form)
    page = response.content.decode()
    assert response.status_code == 200 and "errorlist" in page, (field, text[:20])
    if "\\ud" in text:
        assert "half a character" in page
    assert not MCPServer.objects.filter(name="probe").exists()
