"""Everything a tool server returns reaches the person: images, binary resources, links,
progress; tools and prompts are offered as the server declares them. Real server processes."""

import sys
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from mcp_types import Tool, ToolExecution

from reasoning.tools.mcp import (
    MCPConnectionPool,
    MCPServerConfig,
    MCPToolProvider,
    callable_by_us,
    model_tool_name,
)
from reasoning.tools.registry import ToolRegistry
from tests.conftest import wait_until

FAULTY = str(Path(__file__).parent / "servers" / "faulty.py")


@pytest.fixture(scope="module")
def pool():
    pool = MCPConnectionPool()
    yield pool
    pool.close_sync()


@pytest.fixture
def registry(pool) -> ToolRegistry:
    config = MCPServerConfig(name="faulty", command=sys.executable, args=(FAULTY,))
    return ToolRegistry([MCPToolProvider(pool, config)])


async def test_images_are_kept_when_they_are_what_they_claim_and_small(registry):
    await registry.ensure_loaded()
    outcome = await registry.execute("faulty__picture", {})
    assert outcome.success and "a tiny picture" in outcome.content
    assert [part["mime_type"] for part in outcome.parts] == ["image/png"], "the SVG is never shown"
    assert "image/png image, 67 bytes, shown to the user" in outcome.content
    assert "image/svg+xml image" in outcome.content and "not shown" in outcome.content
    assert "[image content]" not in outcome.content


async def test_binary_resources_become_downloads_and_links_keep_their_uri(registry):
    await registry.ensure_loaded()
    outcome = await registry.execute("faulty__report", {})
    assert outcome.success
    blob, link = outcome.parts
    assert blob["type"] == "blob" and blob["uri"] == "faulty://report.bin" and blob["bytes"] == 8
    assert link == {"type": "link", "uri": "faulty://notes", "name": "notes", "mime_type": ""}
    assert "offered to the user as a download" in outcome.content
    assert "resource link: notes <faulty://notes> (the notes)" in outcome.content


async def test_binary_content_a_prompt_or_resource_brings_is_named_never_promised(pool):
    """A /command's prompt and an @resource become text in the question: no download or
    picture reaches the person from them, so the text must not say one does."""
    provider = MCPToolProvider(pool, MCPServerConfig(name="faulty", command=sys.executable, args=(FAULTY,)))
    text = await provider.read_resource("faulty://report.bin")
    assert "faulty://report.bin" in text and "8 bytes" in text and "not attached" in text
    messages = await provider.get_prompt("chart", {})
    said = " ".join(m["content"] for m in messages)
    assert "Describe the attached chart." in said
    assert "image/png image, 67 bytes; not attached" in said and "faulty://chart.bin" in said
    assert "download" not in said and "shown to the user" not in said


async def test_progress_of_a_long_tool_reaches_the_caller(pool):
    config = MCPServerConfig(name="faulty", command=sys.executable, args=(FAULTY,))
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    output = await pool.call(config, "slow", {"steps": 3}, on_progress=on_progress)
    assert output.text == "done"
    assert seen == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]


async def test_only_what_a_tool_declares_reusable_is_cached_unless_an_admin_says_otherwise(pool):
    config = MCPServerConfig(name="faulty", command=sys.executable, args=(FAULTY,))
    registry = ToolRegistry([MCPToolProvider(pool, config)])
    await registry.ensure_loaded()
    assert registry.cache_policy("faulty__lookup") == "cache", "read-only, closed world, idempotent"
    assert registry.cache_policy("faulty__now") == "no-cache", "read-only is not enough: a clock changes"
    assert registry.cache_policy("faulty__echo") == "no-cache", "no annotations: the spec's defaults"
    overridden = MCPServerConfig(
        name="faulty",
        command=sys.executable,
        args=(FAULTY,),
        tool_policies=(("echo", "cache"), ("lookup", "no-cache")),
    )
    registry = ToolRegistry([MCPToolProvider(pool, overridden)])
    await registry.refresh()
    assert registry.cache_policy("faulty__echo") == "cache"
    assert registry.cache_policy("faulty__lookup") == "no-cache"


def test_tools_that_require_task_augmentation_are_not_offered():
    schema = {"type": "object"}
    assert not callable_by_us(
        Tool(name="t", input_schema=schema, execution=ToolExecution(task_support="required"))
    )
    assert callable_by_us(
        Tool(name="t", input_schema=schema, execution=ToolExecution(task_support="optional"))
    )
    assert callable_by_us(Tool(name="t", input_schema=schema))


@pytest.mark.django_db(transaction=True)
def test_prompts_take_optional_arguments_and_each_server_is_named(alice, alice_session, client_for, settings):
    from django.core.cache import cache
    from django.urls import reverse

    from chat import mentions
    from chat.models import MCPServer, ReasoningRun

    cache.clear()
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {f"{sys.executable} {FAULTY}": (sys.executable, FAULTY)}
    MCPServer.objects.create(name="faulty", command=sys.executable, args=[FAULTY])
    assert {("faulty", "trip"), ("nexus", "summarize"), ("faulty", "summarize")} <= {
        (p["server"], p["name"]) for p in mentions.prompts(alice, budget=60)
    }
    client = client_for(alice)
    items = client.get("/complete/", {"q": "/"}).json()["items"]
    labels = [item["label"] for item in items]
    assert "/trip city [state]" in labels, "an optional argument is shown as optional"
    assert "/faulty__summarize topic" in labels and "/nexus__summarize topic" in labels
    assert len(labels) == len(set(labels)), "each entry once"
    assert {item["detail"].rsplit("(on ", 1)[-1] for item in items} >= {"faulty)", "nexus)"}

    url = reverse("chat:message-create", args=[alice_session.pk])
    for typed, expected in [
        ("/trip Paris", "Plan a trip to Paris."),
        ("/trip city=Paris", "Plan a trip to Paris."),
        ("/trip Springfield Illinois", "Plan a trip to Springfield, Illinois."),
        ("/faulty__summarize releases", "Faulty summary of releases."),
    ]:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr("chat.views.dispatch_run", lambda run_id: None)
            html = client.post(url, {"content": typed}, HTTP_HX_REQUEST="true").content.decode()
        assert "takes 2 values" not in html and "Missing" not in html, html
        assert ReasoningRun.objects.latest("pk").query == expected, (typed, html[-1500:])
        ReasoningRun.objects.update(status=ReasoningRun.Status.SUCCEEDED)  # the next may be sent
    html = client.post(url, {"content": "/trip"}, HTTP_HX_REQUEST="true").content.decode()
    assert "Say what to use as city: /trip city=" in html, "it names the command (it said /…)"
    html = client.post(url, {"content": "/faulty__trip"}, HTTP_HX_REQUEST="true").content.decode()
    assert "Say what to use as city: /faulty__trip city=" in html, "as typed, with its server"
    cache.clear()


@pytest.mark.django_db(transaction=True)
def test_a_prompt_of_megabytes_is_cut_to_what_a_person_may_send(alice, alice_session, client_for, settings):
    """A server's 3 MB prompt was stored as the question (messages are held to 20,000
    characters), charged as input tokens and drawn in every page of the run."""
    from django.core.cache import cache
    from django.urls import reverse

    from chat.models import MCPServer, ReasoningRun

    cache.clear()
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {f"{sys.executable} {FAULTY}": (sys.executable, FAULTY)}
    MCPServer.objects.create(name="faulty", command=sys.executable, args=[FAULTY])
    url = reverse("chat:message-create", args=[alice_session.pk])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("chat.views.dispatch_run", lambda run_id: None)
        html = client_for(alice).post(url, {"content": "/huge"}, HTTP_HX_REQUEST="true").content.decode()
    run = ReasoningRun.objects.latest("pk")
    assert run.query.startswith("Summarise this: yyy") and len(run.query) == settings.NEXUS_MAX_MESSAGE_CHARS
    assert sum(len(a["content"]) for a in run.attachments) <= 30_100
    assert "/huge returned a long prompt; only its beginning was used." in html
    cache.clear()


@pytest.mark.django_db(transaction=True)
def test_a_run_shows_images_downloads_links_and_progress_in_its_panel(
    alice, bob, alice_session, client_for, settings, monkeypatch
):
    import base64

    from django.urls import reverse

    from chat.models import MCPServer, ToolExecution, TraceEvent
    from reasoning.llm.scripted import ScriptedClient
    from tests.conftest import ask
    from tests.reasoning.helpers import analysis, quality, tool

    settings.NEXUS_MCP_ALLOWED_COMMANDS = {f"{sys.executable} {FAULTY}": (sys.executable, FAULTY)}
    MCPServer.objects.create(name="faulty", command=sys.executable, args=[FAULTY], default_approval="auto")
    script = ScriptedClient(
        by_component={
            "analysis": [analysis("simple")],
            "agent": [
                tool("faulty__picture"),
                tool("faulty__report"),
                tool("faulty__slow", steps=3),
                "Done.",
            ],
            "evaluation": [quality(True, 0.9)],
        },
        default={"insights": [], "lessons": [], "improvements": [], "confidence": 0.5},
    )
    monkeypatch.setattr("chat.engine.build_llm", lambda: script)
    run = ask(alice_session, "Show me the picture and the report")
    picture = ToolExecution.objects.get(run=run, tool="picture")
    assert [p["type"] for p in picture.parts] == ["image"] and picture.parts[0]["data"], (
        "stored with the call"
    )
    event = TraceEvent.objects.get(run=run, kind="tool.result", sequence=picture.event_sequence)
    assert "data" not in event.payload["parts"][0], "the trace lists parts, the data is stored once"
    progress = [
        e.payload for e in TraceEvent.objects.filter(run=run, kind="mcp.progress").order_by("sequence")
    ]
    assert progress and progress[-1]["message"] == "step 3 of 3" and progress[-1]["total"] == 3

    page = client_for(alice).get(reverse("chat:session", args=[alice_session.pk])).content.decode()
    image_url = reverse("chat:tool-part", args=[run.pk, picture.event_sequence, 0])
    assert f'<img class="tool-image" src="{image_url}"' in page
    assert "🔗 notes <code>faulty://notes</code>" in page, "a resource link keeps its URI"
    assert "<progress max=" in page and "step 3 of 3" in page
    image = client_for(alice).get(image_url)
    assert image["Content-Type"] == "image/png" and image.content.startswith(b"\x89PNG")
    assert image["X-Content-Type-Options"] == "nosniff" and "sandbox" in image["Content-Security-Policy"]
    report = ToolExecution.objects.get(run=run, tool="report")
    download = client_for(alice).get(reverse("chat:tool-part", args=[run.pk, report.event_sequence, 0]))
    assert download["Content-Disposition"] == 'attachment; filename="report.bin"'
    assert download.content == base64.b64decode(report.parts[0]["data"]) == b"\x00\x01report"
    assert client_for(bob).get(image_url).status_code == 404, "only the run's owner"


async def test_tool_names_a_model_would_refuse_are_offered_under_names_it_accepts(registry):
    """MCP allows dots and slashes in a tool's name; the Anthropic and OpenAI APIs refuse the
    whole request for one (^[a-zA-Z0-9_-]{1,64}$), so one such tool failed every run."""
    import re

    await registry.ensure_loaded()
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) for name in registry.names()), registry.names()
    assert "faulty__echo" in registry.names(), "valid names are unchanged"
    name = next(n for n in registry.names() if n.startswith("faulty__lookup_v2_beta_"))
    outcome = await registry.execute(name, {"key": "k"})
    assert outcome.success and outcome.content == "v2 k"
    assert model_tool_name("s", "a.b") != model_tool_name("s", "a_b") == "s__a_b"
    long = [model_tool_name("server", "x" * 70 + end) for end in ("1", "2")]
    assert len(set(long)) == 2 and all(len(n) <= 64 for n in long)


@pytest.mark.django_db(transaction=True)
def test_a_resource_two_servers_offer_by_one_name_is_asked_about(alice, alice_session, client_for, settings):
    """Two servers' "note01.md" showed as two identical @ entries, and a mention of it silently
    took the first server's."""
    from django.core.cache import cache
    from django.urls import reverse

    from chat import mentions
    from chat.models import MCPServer, ReasoningRun

    paged = str(Path(__file__).parent / "servers" / "paged.py")
    cache.clear()
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {f"{sys.executable} {paged}": (sys.executable, paged)}
    for name in ("one", "two"):
        MCPServer.objects.create(name=name, command=sys.executable, args=[paged, name])
    assert {"one", "two"} <= {r["server"] for r in mentions.resources(alice, budget=60)}
    client = client_for(alice)
    items = client.get("/complete/", {"q": "@note01"}).json()["items"]
    assert sorted(item["insert"] for item in items) == ['@"paged://one/01" ', '@"paged://two/01" ']
    url = reverse("chat:message-create", args=[alice_session.pk])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("chat.views.dispatch_run", lambda run_id: None)
        html = client.post(url, {"content": "Summarise @note01.md"}, HTTP_HX_REQUEST="true").content.decode()
        assert "Several tool servers offer a resource called &quot;note01.md&quot;" in html, html[-1500:]
        assert not ReasoningRun.objects.exists()
        client.post(url, {"content": 'Summarise @"paged://two/01"'}, HTTP_HX_REQUEST="true")
    run = ReasoningRun.objects.get()
    assert "Note paged://two/01 from two." in "\n".join(item["content"] for item in run.attachments)
    ReasoningRun.objects.update(status=ReasoningRun.Status.SUCCEEDED)

    # Two servers at one address too (one program added twice): the server names it.
    for name in ("one", "two"):
        MCPServer.objects.filter(name=name).update(args=[paged, "same"])
    cache.clear()
    wait_until(
        lambda: len([r for r in mentions.resources(alice, budget=60) if r["uri"] == "paged://same/01"]) == 2
    )
    items = client.get("/complete/", {"q": "@note01"}).json()["items"]
    assert sorted(item["insert"] for item in items) == [
        '@"one__paged://same/01" ',
        '@"two__paged://same/01" ',
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("chat.views.dispatch_run", lambda run_id: None)
        html = client.post(
            url, {"content": 'Summarise @"paged://same/01"'}, HTTP_HX_REQUEST="true"
        ).content.decode()
        assert "@&quot;one__paged://same/01&quot; (on one)" in html, html[-1500:]
        client.post(url, {"content": 'Summarise @"one__paged://same/01"'}, HTTP_HX_REQUEST="true")
    run = ReasoningRun.objects.latest("pk")
    assert "from same." in "\n".join(item["content"] for item in run.attachments)
    cache.clear()


@pytest.mark.django_db(transaction=True)
def test_a_command_whose_server_never_answers_is_refused_within_a_persons_wait(alice, settings, monkeypatch):
    """Found by a review: /command on a server that never answers held the send for the
    server's whole call timeout (30 s by default, up to an hour), the composer showing
    nothing. It waits as long as a mention's expansion may (a few seconds), then says so."""
    from django.core.cache import cache

    from chat import mentions, services
    from chat.models import MCPServer

    cache.clear()
    monkeypatch.setattr(mentions, "EXPANSION_BUDGET", 1.0)
    settings.NEXUS_MCP_ALLOWED_COMMANDS = {f"{sys.executable} {FAULTY}": (sys.executable, FAULTY)}
    MCPServer.objects.create(name="faulty", command=sys.executable, args=[FAULTY], call_timeout=600)
    assert ("faulty", "stall") in {(p["server"], p["name"]) for p in mentions.prompts(alice, budget=60)}
    with pytest.raises(ValidationError, match=r"/stall failed: faulty did not answer get_prompt within 1s"):
        services.message_prepare(user=alice, content="/stall releases")
