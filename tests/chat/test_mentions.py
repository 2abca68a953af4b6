"""@mentions and /commands in the composer, and the admin's tool server page."""

import logging

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from chat import documents
from chat.models import MCPServer, Message, ReasoningRun, TraceEvent
from tests.conftest import wait_until

pytestmark = pytest.mark.django_db(transaction=True)
HTMX = {"HTTP_HX_REQUEST": "true"}


def post(client, session, content):
    return client.post(reverse("chat:message-create", args=[session.pk]), {"content": content}, **HTMX)


def attached(run: ReasoningRun) -> str:
    """Everything the person attached to the run's question, as one text."""
    return "\n".join(item["content"] for item in run.attachments)


def test_a_mentioned_document_is_attached_beside_the_question(alice, alice_session, client_for, dispatched):
    document = documents.document_create(
        owner=alice, title="Release plan", content="We release on Fridays at noon."
    )
    post(client_for(alice), alice_session, 'When do we release? see @"Release plan"')
    run = ReasoningRun.objects.get()
    assert run.query == 'When do we release? see @"Release plan"', "the question is exactly what was asked"
    assert run.attachments == [
        {
            "kind": "document",
            "title": "Release plan",
            "content": "We release on Fridays at noon.",
            "source": document.uri,
        }
    ]
    assert run.user_message.content == 'When do we release? see @"Release plan"', (
        "what the user typed is kept"
    )


def test_a_mention_the_user_may_not_see_is_left_out_and_reported(
    alice, bob, alice_session, client_for, dispatched
):
    documents.document_create(owner=bob, title="Salaries", content="confidential numbers")
    response = post(client_for(alice), alice_session, "What does @Salaries say? and @nothing")
    html = response.content.decode()
    assert "@Salaries was not included" in html and "@nothing was not included" in html
    run = ReasoningRun.objects.get()
    assert "confidential" not in run.query and "confidential" not in attached(run)


def test_the_offline_model_answers_from_a_mentioned_document(alice, alice_session):
    from chat import services
    from tests.conftest import run_now

    documents.document_create(
        owner=alice, title="Handbook", content="Intro.\n\nVacation requests go to Dana."
    )
    prepared = services.message_prepare(user=alice, content="Who handles vacation requests? @Handbook")
    run = services.message_post(
        session=alice_session,
        content="Who handles vacation requests? @Handbook",
        question=prepared.question,
        attachments=prepared.attachments,
    )
    run_now(run.pk)
    answer = run.answers.get().content
    assert "Vacation requests go to Dana." in answer and "Handbook" in answer


def test_a_command_expands_its_prompt(alice, alice_session, client_for, dispatched):
    post(client_for(alice), alice_session, "/compare SQLite PostgreSQL")
    run = ReasoningRun.objects.get()
    assert run.query.startswith("Compare SQLite and PostgreSQL") and "recommend" in run.query
    assert run.user_message.content == "/compare SQLite PostgreSQL"


def test_a_command_sent_while_its_tool_server_starts_waits_for_it(
    alice, alice_session, client_for, dispatched, monkeypatch
):
    """In a process that had not talked to the built-in server yet, the quick look (the one
    completions take) started it, and the patient look that follows did not wait for a
    server already starting: "/summarize" was an unknown command, "Available commands: none"."""
    from chat import mentions, tools
    from reasoning.tools.mcp_pool import MCPConnectionPool

    fresh = MCPConnectionPool(on_breaker=tools.record_breaker)  # a process with no connection yet
    monkeypatch.setattr(mentions, "POOL", fresh)
    try:
        mentions.prompts(alice)  # the page's completions, as the person types the slash
        post(client_for(alice), alice_session, "/summarize the releases")
    finally:
        fresh.close_sync()
    run = ReasoningRun.objects.get()
    assert run.query.startswith("Summarise the releases") and run.user_message.content.startswith(
        "/summarize"
    )


def test_an_unknown_command_is_refused_with_the_list(alice, alice_session, client_for, dispatched):
    response = post(client_for(alice), alice_session, "/frobnicate now")
    html = response.content.decode()
    assert "Unknown command /frobnicate" in html and "/summarize" in html and "/compare" in html
    # Named as typed: "/nexus__nothing" was refused as "Unknown command /nothing".
    html = post(client_for(alice), alice_session, "/nexus__nothing").content.decode()
    assert "Unknown command /nexus__nothing." in html
    assert not Message.objects.exists() and not dispatched


def test_completions_offer_visible_documents_and_commands(alice, bob, client_for):
    documents.document_create(owner=alice, title="Alpha plan", content="a")
    documents.document_create(owner=bob, title="Alpha secret", content="b")
    documents.document_create(owner=bob, title="Alpha shared", content="c", shared=True)
    items = client_for(alice).get(reverse("chat:completions"), {"q": "@alp"}).json()["items"]
    assert [i["label"] for i in items] == ["Alpha plan", "Alpha shared"]
    assert items[0]["insert"] == '@"Alpha plan" '
    commands = client_for(alice).get(reverse("chat:completions"), {"q": "/"}).json()["items"]
    assert {c["insert"] for c in commands} == {"/summarize ", "/compare "}


def test_tool_server_secrets_are_write_only(auditor, client_for, caplog):
    client = client_for(auditor)
    caplog.set_level(logging.DEBUG)
    response = client.post(
        reverse("admin:chat_mcpserver_add"),
        {
            "name": "search_api",
            "transport": "http",
            "enabled": "on",
            "url": "https://mcp.example.com/mcp",
            "call_timeout": "10",
            "tool_policies": "{}",
            "args": "[]",
            "headers_secret": "Authorization: Bearer sk-live-supersecret",
            "env_secret": "",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    server = MCPServer.objects.get(name="search_api")
    assert server.headers == {"Authorization": "Bearer sk-live-supersecret"}
    page = client.get(reverse("admin:chat_mcpserver_change", args=[server.pk])).content.decode()
    assert "supersecret" not in page, page[page.index("supersecret") - 300 :][:600]
    assert "header Authorization (values hidden, encrypted)" in page
    client.post(
        reverse("admin:chat_mcpserver_change", args=[server.pk]),
        {
            "name": "search_api",
            "transport": "http",
            "enabled": "on",
            "url": "https://mcp.example.com/mcp",
            "call_timeout": "20",
            "tool_policies": '{"search": "no-cache"}',
            "args": "[]",
            "headers_secret": "",
            "env_secret": "",
        },
    )
    server.refresh_from_db()
    assert server.call_timeout == 20 and server.headers == {"Authorization": "Bearer sk-live-supersecret"}
    assert "supersecret" not in caplog.text
    from django.views.debug import SafeExceptionReporterFilter

    reported = SafeExceptionReporterFilter().get_post_parameters(response.wsgi_request)
    assert "supersecret" not in str(reported), "error reports (DEBUG pages, mails) hide what was typed"
    assert "supersecret" not in repr(__import__("chat.tools", fromlist=["config_for"]).config_for(server))


def test_the_status_column_shows_why_a_server_is_down(auditor, client_for, settings):
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {"/nonexistent/ghost-server": ("/nonexistent/ghost-server",)}
    server = MCPServer.objects.create(name="ghost", command="/nonexistent/ghost-server")
    client = client_for(auditor)
    response = client.post(
        reverse("admin:chat_mcpserver_changelist"),
        {"action": "check_connection", "_selected_action": [server.pk]},
        follow=True,
    )
    assert "cannot start" in response.content.decode()
    assert "Server “ghost”: " in response.content.decode(), "the name as typed, not capitalised"
    page = client.get(reverse("admin:chat_mcpserver_changelist")).content.decode()
    assert "✗" in page and "cannot start" in page and "✓ connected" not in page.split("ghost")[1][:500]


def test_staff_without_superuser_rights_cannot_configure_servers(make_user, client_for):
    staff = make_user("staffer", is_staff=True)
    assert client_for(staff).get(reverse("admin:chat_mcpserver_add")).status_code == 403
    assert client_for(make_user("plain")).get(reverse("admin:chat_mcpserver_add")).status_code == 302


def test_your_own_document_wins_over_another_users_shared_one(
    alice, bob, alice_session, client_for, dispatched
):
    documents.document_create(owner=bob, title="Release Process", content="BOB: push to prod", shared=True)
    documents.document_create(owner=alice, title="Release Process", content="ALICE: tag, then deploy")
    post(client_for(alice), alice_session, 'How do we ship? @"Release Process"')
    context = attached(ReasoningRun.objects.get())
    assert "ALICE: tag, then deploy" in context and "BOB" not in context


def test_a_title_shared_by_several_users_is_asked_about_never_guessed(
    make_user, alice, bob, alice_session, client_for, dispatched
):
    carol = make_user("carol")
    from_bob = documents.document_create(owner=bob, title="Release Process", content="BOB", shared=True)
    from_carol = documents.document_create(owner=carol, title="Release Process", content="CAROL", shared=True)
    client = client_for(alice)
    html = post(client, alice_session, 'How do we ship? @"Release Process"').content.decode()
    assert (
        "Several documents are called" in html and f"#{from_bob.pk}" in html and f"#{from_carol.pk}" in html
    )
    assert not Message.objects.exists() and not dispatched
    items = client.get(reverse("chat:completions"), {"q": "@release"}).json()["items"]
    inserts = {i["insert"] for i in items}
    assert inserts == {f'@"Release Process"#{from_bob.pk} ', f'@"Release Process"#{from_carol.pk} '}
    assert {i["detail"] for i in items} == {"shared by bob", "shared by carol"}
    post(client, alice_session, f'How do we ship? @"Release Process"#{from_carol.pk}')
    context = attached(ReasoningRun.objects.get())
    assert "CAROL" in context and "BOB" not in context


def test_matching_letter_case_never_picks_between_other_users_documents(
    make_user, alice, bob, alice_session, client_for, dispatched
):
    carol = make_user("carol")
    documents.document_create(owner=bob, title="Release Process", content="BOB", shared=True)
    documents.document_create(owner=carol, title="release process", content="CAROL", shared=True)
    html = post(client_for(alice), alice_session, 'Ship it: @"Release Process"').content.decode()
    assert "Several documents are called" in html and "shared by bob" in html and "shared by carol" in html
    assert not Message.objects.exists() and not dispatched


def test_a_reference_reaches_only_documents_you_may_see(alice, bob, alice_session, client_for, dispatched):
    private = documents.document_create(owner=bob, title="Salaries", content="confidential numbers")
    html = post(client_for(alice), alice_session, f'What is in @"Salaries"#{private.pk}?').content.decode()
    assert f"@Salaries#{private.pk} was not included" in html
    assert "confidential" not in attached(ReasoningRun.objects.get())


def test_a_question_about_a_mentioned_document_is_answered_from_it_once(
    alice, alice_session, client_for, dispatched
):
    """The issue's case: the prompt wrapper once became plan steps and headings, and the
    document was repeated three times with quality 0.00."""
    from tests.conftest import run_now

    documents.document_create(
        owner=alice,
        title="Release process",
        content="We release on Tuesdays.\n\nRollback: redeploy the previous tag and tell #ops.",
    )
    post(client_for(alice), alice_session, 'What does @"Release process" say about rollback?')
    run = ReasoningRun.objects.get()
    run_now(run.pk)
    run.refresh_from_db()
    answer = run.answers.get().content
    assert answer.count("Rollback: redeploy the previous tag and tell #ops.") == 1
    assert run.final_strategy == "direct" and not run.escalation_count and run.final_quality >= 0.6
    everything = " ".join(str(event.payload) for event in run.events.all())
    for wrapper in ("<query>", "</query>", "The person mentioned these documents", "Their content is below"):
        assert wrapper not in everything and wrapper not in answer


def test_a_command_of_several_messages_asks_its_last_request_and_attaches_the_rest(alice, monkeypatch):
    from chat import mentions, services

    class Prompts:
        name = "team"

        async def get_prompt(self, name, arguments, budget=None):
            return [
                {"role": "user", "content": "Here is our style guide: short sentences, no jargon."},
                {"role": "assistant", "content": "Understood."},
                {"role": "user", "content": f"Rewrite {arguments['text']} in our style."},
            ]

    monkeypatch.setattr(
        mentions, "prompts", lambda user: [{"server": "team", "name": "style", "arguments": ["text"]}]
    )
    monkeypatch.setattr(mentions, "_providers", lambda user: [Prompts()])
    prepared = services.message_prepare(user=alice, content="/style the release note")
    assert prepared.question == "Rewrite the release note in our style."
    [context] = prepared.attachments
    assert (context.kind, context.title) == ("command", "/style")
    assert "short sentences, no jargon" in context.content and "Understood." in context.content


@pytest.mark.parametrize("name", ["code.review", "summarize-v2.1", "a" * 100, "ünïcødé", "résumé"])
def test_a_command_named_with_dots_or_at_length_is_expanded(alice, monkeypatch, name):
    """MCP lets a prompt's name hold dots and run long; the composer offered "/code.review",
    but only letters, digits, "_" and "-" up to 61 were read as a command, so the message was
    sent as it was typed, its prompt never asked for."""
    from chat import mentions, services

    class Prompts:
        name = "team"

        async def get_prompt(self, prompt, arguments, budget=None):
            return [{"role": "user", "content": f"Review {arguments['target']} ({prompt})."}]

    offered = [{"server": "team", "name": name, "arguments": ["target"], "description": ""}]
    monkeypatch.setattr(mentions, "prompts", lambda user, *a, **k: offered)
    monkeypatch.setattr(mentions, "_providers", lambda user: [Prompts()])
    prepared = services.message_prepare(user=alice, content=f"/{name} the diff")
    assert prepared.question == f"Review the diff ({name})."


@pytest.mark.parametrize("title", ['The "Q4" roadmap', "Paths under C:\\temp"])
def test_a_title_with_quotes_or_backslashes_is_mentioned_as_picked(
    title, alice, alice_session, client_for, dispatched
):
    """Found by a review: picking `The "Q4" roadmap` from the @ list wrote a mention that
    named no document, and the question went without it."""
    document = documents.document_create(owner=alice, title=title, content="Ship the roadmap in May.")
    client = client_for(alice)
    word = title.split()[0].lower()
    (item,) = client.get(reverse("chat:completions"), {"q": f"@{word}"}).json()["items"]
    post(client, alice_session, f"When do we ship? {item['insert']}")
    run = ReasoningRun.objects.get()
    assert [a["source"] for a in run.attachments] == [document.uri]


RELEASE = (
    "# Release process\n\nWe release every Friday at noon.\n\nThe release manager is Dana Scott; she signs "
    "off the changelog.\n\n## Rollback\n\nIf a release fails, roll back with `deploy rollback` within 30 "
    "minutes and tell #ops.\n\nHotfixes skip the Friday train but need Dana's approval."
)


def _offline_answer(user, session, question: str) -> str:
    from chat import services
    from tests.conftest import run_now

    prepared = services.message_prepare(user=user, content=question)
    run = services.message_post(
        session=session, content=question, question=prepared.question, attachments=prepared.attachments
    )
    run_now(run.pk)
    return run.answers.get().content


def test_the_offline_model_quotes_the_passage_that_answers_not_the_first_ones(alice, alice_session):
    """Found by a review: every passage shares the document's name, so the first three were
    quoted (a lone `# Release process` among them, as a giant heading) and not the hotfix rule."""
    documents.document_create(owner=alice, title="release", content=RELEASE)
    answer = _offline_answer(alice, alice_session, "@release what does it say about hotfixes?")
    assert "Hotfixes skip the Friday train" in answer
    assert "every Friday at noon" not in answer and "# Release" not in answer
    assert answer.count("From **release**") == 1


def test_the_offline_model_answers_each_part_from_the_team_search_without_internal_ids(alice, alice_session):
    """Found by a review: one part got "I can't answer that offline" although the search had
    found its answer, and the passages came under repeated `## release (private, nexus://…)`."""
    documents.document_create(owner=alice, title="release", content=RELEASE)
    question = "Who is the release manager and how do we roll back a failed release?"
    answer = _offline_answer(alice, alice_session, question)
    assert "Dana Scott" in answer and "deploy rollback" in answer
    assert "can't answer" not in answer and "nexus://" not in answer and "(private" not in answer


HANDBOOK = (
    "# Team Handbook\n\n## Vacation\n\nVacation requests go to Dana.\n\n"
    "## Security\n\nLock your laptop when you leave your desk.\n\n"
    "Report phishing mails to security@example.com.\n"
)


def test_a_question_with_a_mention_and_arithmetic_answers_both_parts(alice, alice_session):
    """Found by a review: 'Summarize the security section of @"Team Handbook" and what is
    12*12?' quoted the Security section and never said 144."""
    documents.document_create(owner=alice, title="Team Handbook", content=HANDBOOK)
    question = 'Summarize the security section of @"Team Handbook" and what is 12*12?'
    answer = _offline_answer(alice, alice_session, question)
    assert "Lock your laptop" in answer and "**144**" in answer, answer
    run = ReasoningRun.objects.filter(session=alice_session).last()
    tools = [e.payload["tool"] for e in TraceEvent.objects.filter(run=run, kind="tool.called")]
    assert [t.split("__")[-1] for t in tools] == ["calculator"], "the arithmetic is the calculator's"


def test_a_command_two_servers_offer_asks_which_and_is_listed_once_each(alice, monkeypatch):
    """With one prompt on two servers, "/args" silently took the first server's, and the
    list of commands after an unknown one named each twice, without its server."""
    from chat import mentions, services

    offered = [
        {"server": "everything", "name": "args", "arguments": [], "description": ""},
        {"server": "evhttp", "name": "args", "arguments": [], "description": ""},
        {"server": "evhttp", "name": "simple", "arguments": [], "description": ""},
        {"server": "evhttp", "name": "simple", "arguments": [], "description": ""},
    ]
    monkeypatch.setattr(mentions, "prompts", lambda user, *a, **k: offered)
    with pytest.raises(
        ValidationError,
        match=r"Several tool servers offer /args: write "
        r"/everything__args or /evhttp__args\.",
    ):
        services.message_prepare(user=alice, content="/args Paris")
    with pytest.raises(ValidationError) as unknown:
        services.message_prepare(user=alice, content="/nosuch x")
    assert unknown.value.messages[0].endswith(
        "Available commands: /everything__args, /evhttp__args, /simple."
    )


def test_the_admin_lists_a_servers_tools_and_refuses_a_policy_for_a_tool_it_lacks(auditor, client_for, alice):
    """A server's page showed only "Tool count: 16": no names to key the per-tool policies by,
    and a misspelt name was stored and applied to nothing."""
    from asgiref.sync import async_to_sync

    from chat import tools

    builtin = MCPServer.objects.get(builtin=True)
    async_to_sync(tools.registry_for(alice).ensure_loaded)()
    wait_until(lambda: MCPServer.objects.get(pk=builtin.pk).tools)
    client = client_for(auditor)
    page = client.get(reverse("admin:chat_mcpserver_change", args=[builtin.pk])).content.decode()
    assert "<code>calculator</code>" in page and "<code>clock</code>" in page
    # A long description is shown cut, and marked so (it ended mid-sentence: "Arithmetic such as").
    listed = {tool["name"]: tool["description"] for tool in MCPServer.objects.get(pk=builtin.pk).tools}
    assert listed["calculator"].endswith("…") and len(listed["calculator"]) == 161, listed["calculator"]
    form = {"enabled": "on", "call_timeout": "30", "tool_policies": "{}", "default_approval": ""}
    refused = client.post(
        reverse("admin:chat_mcpserver_change", args=[builtin.pk]),
        {**form, "approval_policies": '{"calculater": "ask"}'},
    )
    assert (
        refused.status_code == 200 and "calculater: no such tool on this server" in refused.content.decode()
    )
    # "sampling" (the server's requests for a completion), as the README says, is no tool.
    saved = client.post(
        reverse("admin:chat_mcpserver_change", args=[builtin.pk]),
        {**form, "approval_policies": '{"calculator": "ask", "sampling": "never"}'},
    )
    assert saved.status_code == 302
    assert MCPServer.objects.get(pk=builtin.pk).approval_policies == {
        "calculator": "ask",
        "sampling": "never",
    }


def test_the_lists_write_mentions_and_commands_that_work(alice, monkeypatch):
    """Found by a review with third-party servers: the @ list wrote a resource named `weird
    name` as "@weird name", which names "weird" (nothing), and the / list offered prompts whose
    names no command can spell ("/1st-draft"), sent as plain questions."""
    from chat import mentions

    resource = {"server": "odd", "name": "weird <b>name</b>", "uri": "odd://w"}
    insert = mentions.resource_mention(resource, [resource])
    assert insert == '@"weird <b>name</b>"' and mentions.mentions_in(f"what is {insert}?") == [
        ("weird <b>name</b>", None)
    ]
    plain = {"server": "odd", "name": "notes.md", "uri": "odd://n"}
    assert mentions.resource_mention(plain, [plain]) == "@notes.md"
    offered = [
        {"server": "odd", "name": name, "arguments": []} for name in ("1st-draft", "_x", "two words", "ok")
    ]
    assert [command for command, _ in mentions.commands(offered)] == ["ok"]
