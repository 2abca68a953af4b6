"""Message preprocessing (the seeds' CommandControlAgent): @resources and /commands.

`@name` (or `@"a title with spaces"`) attaches a document the user may see, or an MCP
resource, to the question: the engine gets it as an attachment beside the question, never
wrapped into it. The user's own document wins; a title several other users share is
ambiguous and the user is asked which one (`@"title"#id` names exactly one). `/name args`
expands an MCP prompt into the question the engine is asked (a prompt of several messages
also attaches the earlier ones). Anything that cannot be resolved is reported to the user,
never silently dropped.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shlex
from dataclasses import dataclass
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError

from chat.documents import documents_visible_to
from chat.models import Document
from chat.tools import POOL, providers_for
from reasoning.text import BARE_MENTION, MENTION, mention_quote, mention_title
from reasoning.tools.mcp import SEPARATOR, MCPToolProvider, MCPUnavailable
from reasoning.types import Attachment

logger = logging.getLogger(__name__)

# A prompt's name as MCP allows it: dots inside ("code.review", "summarize-v2.1") and long
# (`server__name` too); a dot before a space is still punctuation ("/etc. is where ...").
# A command starts with a letter of any script ("/ünïcødé topic"; the ASCII-only pattern sent such
# a server's prompt as a plain question, though the / list offered it).
COMMAND = re.compile(r"^/([^\W\d_][\w-]*(?:\.[\w-]+)*)(?:\s+(.*))?$", re.DOTALL | re.IGNORECASE)
# Completions and mention expansion answer from what is known within this many seconds.
COMPLETION_BUDGET = 0.25
# A sent message naming something not known yet waits this long for the listings.
EXPANSION_BUDGET = 5.0
# How long another process's listing (team mode: shared through Redis) may stand in.
SHARED_LISTING_TTL = 3600
CONTEXT_CHARS = 30_000


def _providers(user: Any) -> list[MCPToolProvider]:
    # As a run's look at the servers does, this one closes the connections of servers disabled
    # or changed since: a web process lists servers only here, and their old processes (with
    # old secrets) ran on in it.
    return [provider for provider in providers_for(user) if isinstance(provider, MCPToolProvider)]


def _listing(user: Any, kind: str, budget: float = 0.0, *, patient: bool = False) -> list[dict[str, Any]]:
    """Resources or prompts of every enabled server, answered within COMPLETION_BUDGET from
    what is known: a server that answers in time gives its fresh listing, one that does not
    (hung, restarting, paused) its last known one, from this process or the shared cache,
    while its refresh goes on in the background. Broken servers offer nothing."""
    providers = _providers(user)
    requests = [(p.config, p.meta) for p in providers]
    listings = POOL.listings_within(requests, kind, budget or COMPLETION_BUDGET, patient=patient)
    shared = _cache_get(f"nexus:mcp:{kind}") or {}
    items: list[dict[str, Any]] = []
    known: dict[str, list[dict[str, Any]]] = {}
    for provider in providers:
        found = listings.get(provider.name)
        if found is None:
            known[provider.name] = shared.get(provider.name, [])
        else:
            known[provider.name] = [_describe(kind, provider.name, item) for item in found]
        items += known[provider.name]
    # Servers disabled since keep their entry, so a command of theirs is reported unavailable.
    with contextlib.suppress(Exception):  # the cache (Redis) being down only costs a refetch
        cache.set(f"nexus:mcp:{kind}", {**shared, **known}, SHARED_LISTING_TTL)
    return items


def _offered_by_a_server_now_gone(kind: str, name: str) -> str | None:
    for server, items in (_cache_get(f"nexus:mcp:{kind}") or {}).items():
        if any(item["name"] == name for item in items):
            return server
    return None


def _cache_get(key: str) -> Any:
    try:
        return cache.get(key)
    except Exception as exc:
        logger.warning("cache unreachable: %s", exc)
        return None


def _describe(kind: str, server: str, item: Any) -> dict[str, Any]:
    if kind == "resources":
        return {
            "server": server,
            "name": item.name,
            "uri": str(item.uri),
            "description": item.description or "",
        }
    return {
        "server": server,
        "name": item.name,
        "description": item.description or "",
        "arguments": [{"name": a.name, "required": bool(a.required)} for a in (item.arguments or [])],
    }


def resources(user: Any, budget: float = COMPLETION_BUDGET) -> list[dict[str, Any]]:
    return _listing(user, "resources", budget)


def resource_mention(resource: dict[str, Any], known: list[dict[str, Any]]) -> str:
    """How to mention a resource: by name, unless another server offers one of that name, then
    by its address, and by server and address where another server offers that address too
    (`@"everything__demo://doc"`, as a command is written with its server)."""
    others = [r for r in known if r["server"] != resource["server"]]
    if not any(r["name"] == resource["name"] for r in others):
        # Quoted when it is more than a word ("@weird name" named only "@weird").
        name = resource["name"]
        return f"@{name}" if BARE_MENTION.fullmatch(name) else f"@{mention_quote(name)}"
    if not any(r["uri"] == resource["uri"] for r in others):
        return f"@{mention_quote(resource['uri'])}"
    return f"@{mention_quote(resource['server'] + SEPARATOR + resource['uri'])}"


def prompts(user: Any, budget: float = COMPLETION_BUDGET, *, patient: bool = False) -> list[dict[str, Any]]:
    return _listing(user, "prompts", budget, patient=patient)


def commands(available: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """Each server's prompt once, with the command that picks it: its name, or
    `server__name` where several servers offer one of that name. A prompt whose name no
    command can spell (it starts with a digit, holds a space) is not offered as one."""
    offered = {(p["server"], p["name"]): p for p in available}
    servers_of: dict[str, set[str]] = {}
    for server, name in offered:
        servers_of.setdefault(name, set()).add(server)
    named = [
        (f"{server}{SEPARATOR}{name}" if len(servers_of[name]) > 1 else name, prompt)
        for (server, name), prompt in offered.items()
    ]
    return [(command, prompt) for command, prompt in named if _spelled(command)]


def _spelled(command: str) -> bool:
    """Whether `/command` reads back as that command (and no arguments)."""
    found = COMMAND.fullmatch(f"/{command}")
    return found is not None and found.group(1) == command


def mentions_in(text: str) -> list[tuple[str, int | None]]:
    """Each mention's name, with the document id when written `@"Title"#42`."""
    return [
        (mention_title(quoted) or bare, int(number) if number else None)
        for quoted, bare, number in MENTION.findall(text)
    ]


def reference(document: Document) -> str:
    """How to mention exactly this document, whoever else has one with the same title."""
    return f"@{mention_quote(document.title)}#{document.pk}"


def document_for_mention(user: Any, title: str, document_id: int | None = None) -> Document | None:
    """The document a mention means: by id when given, else the user's own document with that
    title, else the one shared document with it. Several shared ones raise ValidationError
    asking which: another user's document is never picked silently."""
    visible = documents_visible_to(user)
    if document_id is not None:
        document = visible.filter(pk=document_id).first()
        return document if document is not None and document.title.lower() == title.lower() else None
    matches = list(visible.filter(title__iexact=title))
    own = [d for d in matches if d.owner_id == user.pk]
    exact = [d for d in own if d.title == title]
    if len(own) > 1 and len(exact) == 1:
        return exact[0]  # letter case settles it between your own documents, never others'
    candidates = own or matches
    if len(candidates) > 1:
        choices = " or ".join(
            f"{reference(d)} ({'yours' if d.owner_id == user.pk else f'shared by {d.owner.get_username()}'})"
            for d in candidates
        )
        raise ValidationError(
            f'Several documents are called "{title}"; say which one you mean: {choices}. '
            "Picking it from the @ list writes the reference for you."
        )
    return candidates[0] if candidates else None


def documents_to_offer(user: Any, word: str, limit: int = 10) -> list[Document]:
    """Documents whose title contains `word`, each with `.mention`: the plain `@title` when
    that resolves to it, else its exact reference."""
    found = list(documents_visible_to(user).filter(title__icontains=word)[:limit])
    for document in found:
        name = (
            document.title
            if re.fullmatch(r"[\w][\w.\-/]*", document.title)
            else mention_quote(document.title)
        )
        try:
            plain = document_for_mention(user, document.title) == document
        except ValidationError:
            plain = False
        document.mention = f"@{name}" if plain else reference(document)
    return found


class Unreadable(Exception):
    """A mention that names a resource its server could not read just now."""


def _resolve_mention(user: Any, name: str, document_id: int | None) -> Attachment | None:
    """The attachment for a mention the user may read, or None; Unreadable for a resource
    whose server failed to read it (the person is told so, not that it does not exist)."""
    document = document_for_mention(user, name, document_id)
    if document is not None:
        return Attachment("document", document.title, document.content, source=document.uri)
    if document_id is not None:
        return None
    known = resources(user)
    if not any(name in _mentioned_as(r) for r in known):
        known = resources(user, EXPANSION_BUDGET)  # a server still starting may offer it
    server, _, address = name.partition(SEPARATOR)
    on_server = [r for r in known if r["server"] == server and address in (r["name"], r["uri"])]
    by_uri = [r for r in known if r["uri"] == name]
    named = on_server or by_uri or [r for r in known if r["name"] == name]
    if len({r["server"] for r in named}) > 1:  # one of them, picked silently, was not always the one meant
        choices = " or ".join(f"{resource_mention(r, known)} (on {r['server']})" for r in named)
        raise ValidationError(
            f'Several tool servers offer a resource called "{name}"; say which one you mean: {choices}. '
            "Picking it from the @ list writes the reference for you."
        )
    if not named:
        return None
    resource = named[0]  # every one is on one server (else asked above)
    try:
        content = async_to_sync(_provider(user, resource["server"]).read_resource)(
            resource["uri"], budget=EXPANSION_BUDGET
        )
    except Exception as exc:  # unavailable or refused: reported as not included
        logger.info("resource %s on %s could not be read: %s", resource["uri"], resource["server"], exc)
        raise Unreadable(resource["server"]) from None
    return Attachment("resource", resource["name"], content, source=resource["uri"])


def _mentioned_as(resource: dict[str, Any]) -> set[str]:
    prefix = resource["server"] + SEPARATOR
    return {resource["name"], resource["uri"], prefix + resource["name"], prefix + resource["uri"]}


def _provider(user: Any, server: str) -> MCPToolProvider:
    """The enabled server a cached listing named; MCPUnavailable if it is gone since."""
    for provider in _providers(user):
        if provider.name == server:
            return provider
    raise MCPUnavailable(f"MCP server {server!r} is disabled or no longer configured", server=server)


def attachments_for(user: Any, text: str) -> tuple[list[Attachment], list[str]]:
    """The documents and resources `text` mentions, as attachments, and notes for the user."""
    notes: list[str] = []
    found: list[Attachment] = []
    for name, document_id in dict.fromkeys(mentions_in(text)):
        written = f"@{name}" if document_id is None else f"@{name}#{document_id}"
        try:
            resolved = _resolve_mention(user, name, document_id)
        except Unreadable as server:
            notes.append(f"{written} was not included: the {server} tool server could not read it just now.")
            continue
        if resolved is None:
            notes.append(
                f"{written} was not included: there is no document or resource by that name that you may see."
            )
        else:
            found.append(resolved)
    budget, kept = CONTEXT_CHARS, []
    for attachment in found:
        if len(attachment.content) > budget:
            notes.append("The mentioned documents are long; only their beginning was included.")
            content = attachment.content[: max(0, budget)] + "\n[... cut to fit ...]"
            attachment = Attachment(attachment.kind, attachment.title, content, attachment.source)
        budget -= len(attachment.content)
        kept.append(attachment)
        if budget <= 0:
            break
    return kept, list(dict.fromkeys(notes))


@dataclass(frozen=True)
class CommandExpansion:
    """What a /command asks, and the prompt's earlier messages (if any) as context."""

    question: str
    attachments: list[Attachment]
    notes: tuple[str, ...] = ()


def expand_command(user: Any, text: str) -> CommandExpansion | None:
    """What a `/command` expands to, None if the text is not a command; raises if unknown."""
    match = COMMAND.match(text.strip())
    if not match:
        return None
    name, rest = match.group(1), (match.group(2) or "").strip()
    typed = name  # what messages name: "/github__summarize" as written, not "/summarize"
    available = prompts(user)
    if not any(name in (p["name"], f"{p['server']}{SEPARATOR}{p['name']}") for p in available):
        available = prompts(user, EXPANSION_BUDGET, patient=True)  # a server still starting may offer it
    named = commands(available)
    offering = sorted({p["server"] for _, p in named if p["name"] == name})
    if len(offering) > 1:  # one of them, picked silently, was not always the one meant
        choices = " or ".join(f"/{server}{SEPARATOR}{name}" for server in offering)
        raise ValidationError(f"Several tool servers offer /{name}: write {choices}.")
    prompt = next((p for p in available if p["name"] == name), None)
    server, _, bare = name.partition(SEPARATOR)
    if prompt is None and bare:  # `/server__name` picks one of several servers' prompts
        prompt = next((p for p in available if (p["server"], p["name"]) == (server, bare)), None)
        name = bare
    if prompt is None and (gone := _offered_by_a_server_now_gone("prompts", name)):
        raise ValidationError(f"/{typed} failed: tool server {gone} is unavailable")
    if prompt is None:
        names = ", ".join(f"/{command}" for command, _ in named) or "none"
        raise ValidationError(f"Unknown command /{typed}. Available commands: {names}.")
    arguments = _arguments(prompt["arguments"], rest, command=typed)
    try:
        # Waited for as the message is sent: a person's wait, not the tool call's budget (30 s
        # by default, up to an hour), which a server that never answered held the send for.
        messages = async_to_sync(_provider(user, prompt["server"]).get_prompt)(
            name, arguments, budget=EXPANSION_BUDGET
        )
    except MCPUnavailable as exc:  # its details (the server's own output) are for staff only
        raise ValidationError(f"/{typed} failed: {exc.public}") from None
    except Exception as exc:  # the server refused: its message, secrets redacted
        raise ValidationError(f"/{typed} failed: {exc}") from None
    # The last message from the user is the request; anything before it is the prompt's context.
    last = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=len(messages) - 1)
    question = str(messages[last]["content"]) if messages else ""
    earlier = [m for i, m in enumerate(messages) if i != last]
    context = "\n\n".join(f"{m['role']}: {m['content']}" for m in earlier)
    # A server's prompt is held to what a person may send and mention: a 3 MB prompt was
    # stored as the question, charged as input tokens and drawn in every page of the run.
    notes: tuple[str, ...] = ()
    if len(question) > settings.NEXUS_MAX_MESSAGE_CHARS or len(context) > CONTEXT_CHARS:
        notes = (f"/{typed} returned a long prompt; only its beginning was used.",)
        question = question[: settings.NEXUS_MAX_MESSAGE_CHARS]
        context = context[:CONTEXT_CHARS] + ("\n[... cut to fit ...]" if len(context) > CONTEXT_CHARS else "")
    attachments = [Attachment("command", f"/{name}", context, source=prompt["server"])] if context else []
    return CommandExpansion(question or text, attachments, notes)


def _arguments(declared: list[Any], rest: str, *, command: str = "…") -> dict[str, str]:
    """The prompt's arguments from what follows `/name`: `name=value` pairs, or values in
    order (required arguments first when fewer values than arguments are given). Only
    required arguments must be there; optional ones left out are not sent."""
    arguments = [a if isinstance(a, dict) else {"name": str(a), "required": True} for a in declared]
    names = [a["name"] for a in arguments]
    required = [a["name"] for a in arguments if a["required"]]
    if not names:
        return {}
    # Pairs only when one names an argument: "E=mc^2" or a URL's query is a value.
    if re.search(rf"(?:^|\s)(?:{'|'.join(map(re.escape, names))})=", rest):
        try:
            parts = shlex.split(rest)
        except ValueError:
            raise ValidationError(
                'A quotation mark is not closed; write name="value" with both quotes.'
            ) from None
        pairs = dict(part.split("=", 1) for part in parts if "=" in part)
        missing = [n for n in required if n not in pairs]
        if missing:
            raise ValidationError(f"Missing {', '.join(missing)}; write {_usage(arguments)}.")
        return {n: pairs[n] for n in names if n in pairs}
    if not rest:
        if required:
            raise ValidationError(
                f"Say what to use as {', '.join(required)}: /{command} {_usage(arguments)}."
            )
        return {}
    if len(names) == 1:
        return {names[0]: rest}
    try:
        values = shlex.split(rest)
    except ValueError:
        values = rest.split()
    if len(values) < len(required):
        raise ValidationError(
            f"This command needs {len(required)} value{'s' if len(required) > 1 else ''}: "
            f'{", ".join(required)} (quote values with spaces, or use name="value"); '
            f"usage: {_usage(arguments)}."
        )
    extra = len(values) - len(required)
    optional = [n for n in names if n not in required][:extra]
    chosen = [n for n in names if n in required or n in optional]
    if len(values) > len(chosen):
        values = [*values[: len(chosen) - 1], " ".join(values[len(chosen) - 1 :])]
    return dict(zip(chosen, values, strict=True))


def _usage(arguments: list[dict[str, Any]]) -> str:
    return " ".join(f"{a['name']}=…" if a["required"] else f"[{a['name']}=…]" for a in arguments)


def argument_hint(prompt: dict[str, Any]) -> str:
    """`city [state]`: what a completion shows after a command's name."""
    hints = []
    for a in prompt["arguments"]:
        a = a if isinstance(a, dict) else {"name": str(a), "required": True}
        hints.append(a["name"] if a["required"] else f"[{a['name']}]")
    return " ".join(hints)
