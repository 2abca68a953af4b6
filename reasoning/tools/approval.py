"""Tool approval: which calls run on their own, which a person must approve, which never run.

The policy is per tool: `auto`, `ask` or `never`. Servers describe their tools with hints
(the MCP tool annotations); a tool that may change or destroy something, or reach an open
world, is asked about by default. The host decides how a person is asked (the web app stores
the request, shows a card in the chat and waits for the answer, durably); the engine only
asks an `Approver` and reports a decline to the model as such.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

ApprovalPolicy = Literal["auto", "ask", "never"]
POLICIES: tuple[str, ...] = ("auto", "ask", "never")
# The approval policies' key for a server's requests for a completion (MCP sampling).
SAMPLING = "sampling"
# The most a person's edited arguments may hold, as JSON: an edit corrects a call, and the card,
# the trace and every export show it in full.
MAX_EDITED_CHARS = 10_000


def default_approval(annotations: Any) -> ApprovalPolicy:
    """`ask` when the tool may destroy something or reaches an open world, by the spec's
    defaults when a hint is missing (not read-only, destructive, open world); else `auto`."""
    read_only = getattr(annotations, "read_only_hint", None) is True
    destructive = not read_only and getattr(annotations, "destructive_hint", None) is not False
    open_world = getattr(annotations, "open_world_hint", None) is not False
    return "ask" if destructive or open_world else "auto"


def edit_refusal(
    arguments: dict[str, Any], schema: dict[str, Any] | None, asked: dict[str, Any] | None = None
) -> str | None:
    """Why a person's edited arguments may not replace the ones `asked`, or None: no longer
    than MAX_EDITED_CHARS or what was asked, whichever is more, and fitting the tool's input
    schema. Where the schema lists its arguments plainly (`properties`, nothing that admits
    other names), a name it does not list is refused even if extra names are left open: a
    person correcting a call has no reason to invent one, and the server was never told what
    it would mean. The schema's regular expressions (`pattern`, `patternProperties`) are not
    run: they are the server's, and one written to backtrack held the web request, or the
    run's event loop, for as long as it liked (the server checks its own input anyway).
    Without a schema (a request asked before the schema was kept) only the size is checked."""
    most = max(MAX_EDITED_CHARS, len(json.dumps(asked or {}, ensure_ascii=False)))
    if len(json.dumps(arguments, ensure_ascii=False)) > most:
        return f"The edited arguments are too long (at most {most:,} characters as JSON)."
    if not schema:
        return None
    declared = schema.get("properties")
    if isinstance(declared, dict) and not _OPEN_NAMES.intersection(schema):
        unknown = sorted(set(arguments) - set(declared))
        if unknown:
            allowed = ", ".join(sorted(declared)) or "none"
            return f"The tool takes no argument named {', '.join(unknown)[:200]} (it takes: {allowed[:300]})."
    import jsonschema  # a tool call's arguments are checked only here, when a person edits them
    import referencing.exceptions

    try:
        validator = _without_patterns(jsonschema.validators.validator_for(schema))(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except (jsonschema.SchemaError, referencing.exceptions.Unresolvable, RecursionError, ValueError):
        return None  # a schema that cannot check anything: the server itself answers for it
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path) or "the arguments"
    return f"The edited arguments do not fit the tool: {where}: {error.message[:200]}"


# Keywords by which a schema admits names beyond its `properties`, or its arguments elsewhere.
_OPEN_NAMES = frozenset(
    {"patternProperties", "dependentSchemas", "dependencies", "allOf", "anyOf", "oneOf", "if", "$ref"}
)


@functools.cache
def _without_patterns(validator: Any) -> Any:
    """`validator`'s class with the schema's regular expressions left unchecked."""
    import jsonschema

    def unchecked(*_: Any) -> None:
        return None

    return jsonschema.validators.extend(validator, {"pattern": unchecked, "patternProperties": unchecked})


@dataclass(frozen=True)
class ApprovalRequest:
    call_id: str
    tool: str  # the name the model used
    server: str
    server_tool: str
    arguments: dict[str, Any]
    argument_hash: str
    # Asked while a tool call is in flight (a server's request for a completion): the call
    # cannot be put aside, so the host must wait for the answer rather than park the run.
    in_call: bool = False


class AwaitingApproval(BaseException):
    """Raised by a host's `Approver.wait` that parks the run until a person decides: the run
    stops here, stored as waiting, and is executed again (resuming) once they have. A
    BaseException, so that no fallback of the engine's ("never fail") mistakes it for a
    failure to recover from."""


@dataclass(frozen=True)
class ApprovalDecision:
    approved: bool
    # Arguments the person edited before approving; None runs the call as the model asked.
    arguments: dict[str, Any] | None = None
    scope: Literal["once", "chat"] = "once"
    by: str = ""
    note: str = field(default="")


@dataclass(frozen=True)
class InputRequest:
    """A server asks the person for input during a call (MCP elicitation: a form, or a URL)."""

    key: str  # stable for the same question in the same call, so a resumed run asks once
    tool: str
    server: str
    message: str
    schema: dict[str, Any]
    # URL mode: the page the server asks the person to open (a sign-in, a payment); the
    # answer is only whether they did.
    url: str = ""


# What the model hears when the person declined a call: it is told, not the person; the
# offline model recognises it (`declined_tool`) to write its own plain sentence instead.
_DECLINED = "the user declined this call of "


def declined_message(tool: str, note: str = "") -> str:
    """The tool result a model gets for a declined call, so it answers without the tool."""
    why = f" ({note})" if note else ""
    return f"{_DECLINED}{tool}{why}; do not call it again, answer without it"


def declined_tool(text: str) -> str | None:
    """The tool a `declined_message` is about, or None for any other result."""
    text = (text or "").removeprefix("Error:").strip()
    if not text.startswith(_DECLINED):
        return None
    return text[len(_DECLINED) :].split(";")[0].split(" (")[0].strip() or None


class Approver(Protocol):
    """The host's way of asking a person."""

    async def known(self, request: ApprovalRequest) -> ApprovalDecision | None:
        """A decision already made for this call (a resumed run) or for this tool in this
        chat ("always"), without asking again; None when a person must be asked."""
        ...

    async def wait(self, request: ApprovalRequest) -> ApprovalDecision:
        """Wait for the person's decision on a request that was announced, or raise
        `AwaitingApproval` to park the run meanwhile (never for a request `in_call`)."""
        ...

    async def answer(self, request: InputRequest) -> tuple[str, dict[str, Any] | None]:
        """Wait for the person's answer to an announced input request: the action
        ("accept", "decline" or "cancel") and, when accepted, the form's content."""
        ...
