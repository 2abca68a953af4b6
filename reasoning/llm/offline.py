"""The offline model: deterministic heuristics, no network, no weights.

It lets a fresh checkout show the whole product without an API key, and it is honest about
what it is: every answer carries an "offline model" label, answers are extracted from tool
results and documents (with their sources), and a question no tool can answer gets "I
can't answer that offline" rather than an invention.

It answers the engine's structured requests (analysis, plan, quality, completeness,
filter, critique, reflection, ...) with heuristics over the question's parts. As an agent
it takes one question per turn: the first part it can act on. Multi-part questions are
therefore answered through planning, which is what makes its escalations visible.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from reasoning.llm.base import LLMClient, LLMRequest, LLMResponse, ToolCall, Usage
from reasoning.text import WORD, keywords
from reasoning.tools.builtin import CalculatorError, calculate, format_number

LABEL = "*Answered by Nexus's offline model: no API key is set (set ANTHROPIC_API_KEY to use Claude).*"
LABEL_BLOCK = f"\n\n---\n{LABEL}"
MAX_PARTS = 5
MAX_QUERY_CHARS = 4000

_WH = (
    r"what|when|where|who|whom|whose|why|how|which|is|are|was|were|do|does|did|can|could|"
    r"should|would|will|tell|give|list|calculate|compute|find|show|explain|summari[sz]e|"
    r"describe|name|convert"
)
_SPLIT_AND = re.compile(rf"[,;]?\s+\b(?:and|also|then|plus|as well as)\s+(?=(?:{_WH})\b)", re.IGNORECASE)
_RESEARCH = re.compile(
    r"\b(research|investigate|analy[sz]e|analysis|compare|comparison|survey|evaluate|assess|"
    r"recommend|synthesi[sz]e|trade-?offs?|pros and cons|in depth|comprehensive|strategy|"
    r"landscape|trends?)\b",
    re.IGNORECASE,
)
_TIME = re.compile(
    r"\b(time|date|day|today|tonight|now|clock|o'clock|weekday|year is it|month is it)\b", re.IGNORECASE
)
_DOCS = re.compile(
    r"\b(docs?|documents?|handbook|policy|policies|guide|manual|notes?|wiki|our|"
    r"team'?s?|according to|onboarding|runbook|readme|spec|procedure)\b|@\S+",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^\s*(hi|hello|hey|good (morning|afternoon|evening)|thanks|thank you)\b[\s!.,]*$", re.IGNORECASE
)
_CAPABILITIES = re.compile(
    r"\b(what can you do|who are you|what are you|help me|how do you work)\b", re.IGNORECASE
)
# A few common places, so "what time is it in Tokyo" works without an IANA name.
CITY_ZONES = {
    "tokyo": "Asia/Tokyo",
    "japan": "Asia/Tokyo",
    "london": "Europe/London",
    "uk": "Europe/London",
    "paris": "Europe/Paris",
    "france": "Europe/Paris",
    "berlin": "Europe/Berlin",
    "germany": "Europe/Berlin",
    "madrid": "Europe/Madrid",
    "rome": "Europe/Rome",
    "amsterdam": "Europe/Amsterdam",
    "new york": "America/New_York",
    "nyc": "America/New_York",
    "boston": "America/New_York",
    "chicago": "America/Chicago",
    "denver": "America/Denver",
    "los angeles": "America/Los_Angeles",
    "san francisco": "America/Los_Angeles",
    "seattle": "America/Los_Angeles",
    "toronto": "America/Toronto",
    "mexico city": "America/Mexico_City",
    "sao paulo": "America/Sao_Paulo",
    "sydney": "Australia/Sydney",
    "melbourne": "Australia/Melbourne",
    "auckland": "Pacific/Auckland",
    "singapore": "Asia/Singapore",
    "hong kong": "Asia/Hong_Kong",
    "shanghai": "Asia/Shanghai",
    "beijing": "Asia/Shanghai",
    "seoul": "Asia/Seoul",
    "mumbai": "Asia/Kolkata",
    "delhi": "Asia/Kolkata",
    "india": "Asia/Kolkata",
    "dubai": "Asia/Dubai",
    "moscow": "Europe/Moscow",
    "istanbul": "Europe/Istanbul",
    "cairo": "Africa/Cairo",
    "johannesburg": "Africa/Johannesburg",
    "lagos": "Africa/Lagos",
    "utc": "UTC",
    "gmt": "UTC",
}
_IANA = re.compile(r"\b([A-Z][a-z]+(?:_[A-Z][a-z]+)*/[A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)?)\b")

_NUMBER_WORDS = [
    (r"\bmultiplied by\b|\btimes\b|\bx\b(?=\s*\d)", "*"),
    (r"\bdivided by\b|\bover\b(?=\s*\d)", "/"),
    (r"\bplus\b", "+"),
    (r"\bminus\b", "-"),
    (r"\bto the power of\b|\braised to\b", "**"),
    (r"\bsquared\b", "**2"),
    (r"\bcubed\b", "**3"),
    (r"\bmod(?:ulo)?\b", "%"),
]
_FUNCTION_WORDS = re.compile(
    r"\b(square root|sqrt|log|ln|sin|cos|tan|exp|factorial)\s*(?:of\s*)?\(?\s*"
    r"(-?\d+(?:\.\d+)?)\s*\)?",
    re.IGNORECASE,
)
_EXPRESSION = re.compile(
    r"(?:[a-z]+\()?[-+(]*\s*\d+(?:\.\d+)?(?:\s*(?:\*\*|[-+*/%^×÷])\s*[-+(]*\s*(?:[a-z]+\()?\d+(?:\.\d+)?\)*)+\)*"
    r"|(?:sqrt|log|ln|sin|cos|tan|exp|factorial)\(\s*-?\d+(?:\.\d+)?\s*\)",
    re.IGNORECASE,
)


# --- reading questions ------------------------------------------------------------------------


def question_parts(query: str) -> list[str]:
    """The separate questions in a message ("What is 2+2 and what time is it?" has two)."""
    text = " ".join((query or "")[:MAX_QUERY_CHARS].split())
    chunks = [c for c in re.split(r"(?<=[?!])\s+|[;\n]+|(?<=\.)\s+(?=[A-Z])", text) if c.strip()]
    parts: list[str] = []
    for chunk in chunks:
        for piece in _SPLIT_AND.split(chunk):
            cleaned = piece.strip(" ,.;:!?")
            if WORD.search(cleaned):
                parts.append(cleaned)
    return parts[:MAX_PARTS]


def expression_in(text: str) -> str | None:
    """An arithmetic expression in a question, with number words turned into operators."""
    candidate = text.lower()
    candidate = _FUNCTION_WORDS.sub(
        lambda m: (
            f"{'sqrt' if m.group(1).lower() in ('square root', 'sqrt') else m.group(1).lower()}({m.group(2)})"
        ),
        candidate,
    )
    for pattern, operator in _NUMBER_WORDS:
        candidate = re.sub(pattern, operator, candidate)
    found = [m.group().strip() for m in _EXPRESSION.finditer(candidate)]
    for expression in sorted(found, key=len, reverse=True):
        try:
            calculate(expression)
        except CalculatorError:
            continue
        return expression
    return max(found, key=len) if found else None


def zone_in(text: str) -> str | None:
    iana = _IANA.search(text or "")
    if iana:
        return iana.group(1)
    lowered = (text or "").lower()
    for city in sorted(CITY_ZONES, key=len, reverse=True):
        if re.search(rf"\b{re.escape(city)}\b", lowered):
            return CITY_ZONES[city]
    return None


def part_kind(part: str) -> str:
    if expression_in(part):
        return "arithmetic"
    if _TIME.search(part) and not _DOCS.search(part):
        return "time"
    if _GREETING.match(part):
        return "greeting"
    if _CAPABILITIES.search(part):
        return "capabilities"
    if _DOCS.search(part):
        return "documents"
    return "general"


def strip_label(text: str) -> str:
    return (text or "").replace(LABEL_BLOCK, "").replace(LABEL, "").strip().rstrip("-").strip()


def covers(part: str, answer: str) -> bool:
    """Does `answer` answer `part`? Exact for arithmetic and time; keyword overlap otherwise."""
    kind = part_kind(part)
    answer_text = strip_label(answer)
    if kind == "arithmetic":
        expression = expression_in(part)
        try:
            value = format_number(calculate(expression or ""))
        except CalculatorError as exc:
            return str(exc) in answer_text
        return value in answer_text.replace(",", "")
    if kind == "time":
        return bool(re.search(r"\b\d{1,2}:\d{2}\b", answer_text))
    if kind in ("greeting", "capabilities"):
        return bool(answer_text)
    if is_refusal(answer_text):
        return False
    wanted = set(keywords(part))
    if not wanted:
        return bool(answer_text)
    found = set(keywords(answer_text))
    return len(wanted & found) / len(wanted) >= 0.5


def is_refusal(text: str) -> bool:
    return "can't answer that offline" in text or "didn't find a question" in text


# --- the client -------------------------------------------------------------------------------


class OfflineClient(LLMClient):
    provider = "offline"
    supports_tools = True

    def __init__(self, model: str = "nexus-offline", *, latency: float = 0.0) -> None:
        super().__init__(model)
        self._ids = itertools.count(1)
        # Seconds each call takes; 0 by default. Demos and load tests set it to behave like a model.
        self.latency = latency

    def with_model(self, model: str) -> OfflineClient:
        return OfflineClient(model, latency=self.latency)

    async def stream(self, request: LLMRequest) -> AsyncIterator[str | LLMResponse]:
        if self.latency:
            await asyncio.sleep(self.latency)
        response = self.respond(request)
        if response.text:
            yield response.text
        yield response

    def respond(self, request: LLMRequest) -> LLMResponse:
        choice = request.tool_choice or {}
        if choice.get("type") == "tool":
            arguments = structured_answer(choice["name"], request.hints)
            call = ToolCall(id=f"offline_{next(self._ids)}", name=choice["name"], arguments=arguments)
            return self._response("", [call], request, "tool_use")
        if request.hints.get("respond"):
            results = [tuple(r) for r in request.hints.get("tool_results", [])]
            question = request.hints.get("query", "")
            text = answer_from_results(question, results) if results else answer_without_tools(question)
            return self._response(text, [], request)
        if request.component == "synthesis":
            return self._response(synthesize(request.hints), [], request)
        if request.hints.get("json_mode"):
            return self._response(
                json.dumps(structured_answer(request.hints.get("output", ""), request.hints)), [], request
            )
        return self.agent_turn(request)

    def agent_turn(self, request: LLMRequest) -> LLMResponse:
        context = _mentioned_context(request.messages)
        question = _current_question(request.messages)
        if context:
            return self._response(answer_from_context(question, context), [], request)
        results = _tool_results(request.messages)
        if results:
            return self._response(answer_from_results(question, results), [], request)
        if (request.tool_choice or {}).get("type") != "none":
            call = plan_tool_call(question, [t.name for t in request.tools])
            if call is not None:
                name, arguments = call
                tool_call = ToolCall(id=f"offline_{next(self._ids)}", name=name, arguments=arguments)
                return self._response("", [tool_call], request, "tool_use")
        return self._response(answer_without_tools(question), [], request)

    def _response(
        self, text: str, calls: list[ToolCall], request: LLMRequest, stop: str = "end_turn"
    ) -> LLMResponse:
        prompt_chars = sum(len(str(m.get("content", ""))) for m in request.messages) + len(request.system)
        return LLMResponse(
            text=text,
            tool_calls=calls,
            stop_reason=stop,
            model=request.model or self.model,
            provider=self.provider,
            # Estimates (characters / 4): the offline model has no tokenizer.
            usage=Usage(input_tokens=prompt_chars // 4, output_tokens=max(1, len(text) // 4)),
        )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _current_question(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message["role"] == "user":
            text = _text_of(message["content"]).strip()
            if text and not text.startswith("The tool-call limit"):
                return _unwrap(text)
    return ""


def _unwrap(text: str) -> str:
    """Questions enriched with @resources arrive wrapped in <query> tags."""
    match = re.search(r"<query>\s*(.*?)\s*</query>", text, re.DOTALL)
    return match.group(1) if match else text


def _mentioned_context(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(title, content) of documents the person mentioned with @, if the question carries them."""
    for message in reversed(messages):
        if message["role"] == "user":
            text = _text_of(message["content"])
            return re.findall(r'<document title="([^"]*)">\n(.*?)\n</document>', text, re.DOTALL)
    return []


def answer_from_context(question: str, documents: list[tuple[str, str]]) -> str:
    """The passages of the mentioned documents that best match the question, with their titles."""
    wanted = set(keywords(question))
    scored = []
    for title, content in documents:
        for passage in (p.strip() for p in re.split(r"\n\s*\n", content) if p.strip()):
            overlap = len(wanted & set(keywords(passage)))
            scored.append((overlap, title, passage))
    scored.sort(key=lambda item: -item[0])
    best = [item for item in scored if item[0] > 0][:3] or scored[:1]
    quoted = "\n\n".join(f"From **{title}**:\n\n> {passage[:800]}" for _, title, passage in best)
    return quoted + LABEL_BLOCK


def _tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str, bool]]:
    """(tool, arguments, result, is_error) for the tool calls of the current turn."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    results = []
    for message in messages:
        content = message["content"]
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "tool_use":
                calls[block["id"]] = (block["name"], block.get("input") or {})
            elif block.get("type") == "tool_result" and block["tool_use_id"] in calls:
                name, arguments = calls[block["tool_use_id"]]
                text = block["content"] if isinstance(block["content"], str) else _text_of(block["content"])
                results.append((name, arguments, text, bool(block.get("is_error"))))
    return results


def _tool_named(tools: list[str], base: str) -> str | None:
    for name in tools:
        if name == base or name.endswith(f"__{base}") or name.endswith(f".{base}"):
            return name
    return None


def plan_tool_call(question: str, tools: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The one tool call the offline model makes for the first part it can act on."""
    for part in question_parts(question) or [question]:
        kind = part_kind(part)
        if kind == "arithmetic" and (name := _tool_named(tools, "calculator")):
            return name, {"expression": expression_in(part)}
        if kind == "time" and (name := _tool_named(tools, "clock")):
            return name, {"timezone": zone_in(part) or "UTC"}
        if kind in ("documents", "general") and (name := _tool_named(tools, "search_documents")):
            return name, {"query": part}
    return None


def answer_from_results(question: str, results: list[tuple[str, dict[str, Any], str, bool]]) -> str:
    lines = []
    for name, arguments, text, is_error in results:
        base = name.split("__")[-1]
        if is_error or text.startswith("Error:"):
            lines.append(f"The {base} tool could not help: {text.removeprefix('Error:').strip()}")
        elif base == "calculator":
            value = text.split("=")[-1].strip()
            lines.append(
                f"{arguments.get('expression', '').strip()} = **{value}** (computed with the calculator)."
            )
        elif base == "clock":
            lines.append(f"It is {text} (from the clock).")
        elif base == "search_documents":
            lines.append(_document_answer(question, text))
        else:
            lines.append(f"{base} returned: {text[:1500]}")
    return "\n\n".join(lines) + LABEL_BLOCK


def _document_answer(question: str, text: str) -> str:
    if not text.strip() or text.strip().lower().startswith("no document"):
        return (
            f"I found nothing in the team's documents about \"{question}\", and I can't answer "
            "that offline; set ANTHROPIC_API_KEY to ask Claude."
        )
    return f"From the team's documents:\n\n{text.strip()[:3000]}"


def answer_without_tools(question: str) -> str:
    parts = question_parts(question)
    if not parts:
        return (
            'I didn\'t find a question in your message. Ask me something, for example "What is 17*23?"'
            + LABEL_BLOCK
        )
    first = parts[0]
    kind = part_kind(first)
    if kind == "greeting":
        return (
            "Hello! I'm Nexus, running on the offline model. I can do arithmetic, tell the time "
            "and search your team's documents."
        ) + LABEL_BLOCK
    if kind == "capabilities":
        return (
            'Offline I can: calculate ("What is 17*23?"), tell the time anywhere ("What time is it '
            "in Tokyo?\"), and find passages in your team's documents. With ANTHROPIC_API_KEY set, "
            "Claude answers instead, with the same planning, tools and quality checks."
        ) + LABEL_BLOCK
    if kind == "arithmetic":
        expression = expression_in(first) or ""
        try:
            return f"{expression} = **{format_number(calculate(expression))}**." + LABEL_BLOCK
        except CalculatorError as exc:
            return f"I can't compute {expression!r}: {exc}." + LABEL_BLOCK
    return (
        f'I can\'t answer that offline: "{_short(first)}" needs a real language model. '
        "Set ANTHROPIC_API_KEY (or NEXUS_LLM_PROVIDER=openai with a local server) and ask again."
    ) + LABEL_BLOCK


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


# --- structured answers ---------------------------------------------------------------------


def structured_answer(kind: str, hints: dict[str, Any]) -> dict[str, Any]:
    builder = _BUILDERS.get(kind)
    if builder is None:
        return {}
    return builder(hints)


def _analysis(hints: dict[str, Any]) -> dict[str, Any]:
    query = hints.get("query", "")
    parts = question_parts(query)
    research = len(_RESEARCH.findall(query))
    questions = query.count("?")
    score = 0.1 + 0.15 * max(0, len(parts) - 1) + 0.2 * research + 0.05 * max(0, questions - 1)
    score += min(0.2, len(query) / 5000)
    score = round(min(1.0, score), 2)
    level = "simple" if score < 0.3 else "complex" if score > 0.7 else "medium"
    tools = [part_kind(p) for p in parts]
    return {
        "complexity_level": level,
        "complexity_score": score,
        "recommended_strategy": {"simple": "direct", "medium": "light_planning", "complex": "deep_reasoning"}[
            level
        ],
        "estimated_iterations": min(5, max(1, len(parts))),
        "confidence": 0.6,
        "rationale": (
            f"{len(parts)} part(s), {research} research word(s), {questions} question mark(s); "
            f"heuristic score {score:.2f}."
        ),
        "requires_research": research > 0,
        "requires_synthesis": len(parts) > 1,
        "multi_part_query": len(parts) > 1,
        "tool_count_estimate": sum(1 for kind in tools if kind in ("arithmetic", "time", "documents")),
    }


_TOOL_FOR_KIND = {"arithmetic": "calculator", "time": "clock", "documents": "search_documents"}


def _plan(hints: dict[str, Any]) -> dict[str, Any]:
    query = hints.get("query", "")
    parts = question_parts(query) or [query.strip() or "Answer the message"]
    if hints.get("mode") == "light":
        parts = parts[:2] if len(parts) <= 2 else [parts[0], "; ".join(parts[1:])]
    tools = hints.get("tools", [])
    subtasks = []
    for index, part in enumerate(parts, 1):
        base = _TOOL_FOR_KIND.get(part_kind(part))
        named = _tool_named(tools, base) if base else None
        subtasks.append(
            {
                "id": f"step_{index}",
                "description": _as_question(part),
                "priority": "high",
                "tools": [named] if named else [],
                "depends_on": [],
            }
        )
    return {
        "subtasks": subtasks,
        "estimated_complexity": "low" if len(parts) == 1 else "medium",
        "strategy_summary": f"Answer each of the {len(parts)} part(s) separately, then combine.",
        "confidence": 0.8,
    }


def _as_question(part: str) -> str:
    part = part.strip()
    part = part[:1].upper() + part[1:]
    return part if part.endswith(("?", ".")) else part + "?"


def _quality(hints: dict[str, Any]) -> dict[str, Any]:
    query = hints.get("query", "")
    response = hints.get("response", "")
    parts = question_parts(query)
    if not parts:
        return {
            "is_sufficient": True,
            "confidence": 0.7,
            "reasoning": "There was no question to answer.",
            "missing_aspects": [],
        }
    missing = [p for p in parts if not covers(p, response)]
    unanswerable = [p for p in missing if part_kind(p) == "general" and is_refusal(strip_label(response))]
    if missing and len(unanswerable) == len(missing):
        return {
            "is_sufficient": True,
            "confidence": 0.65,
            "reasoning": "The offline model cannot answer this part; a deeper strategy would not help, "
            "and the answer says so honestly.",
            "missing_aspects": [],
        }
    coverage = (len(parts) - len(missing)) / len(parts)
    confidence = round(0.9 * coverage + (0.05 if coverage == 1 else 0), 2)
    reasoning = f"The answer covers {len(parts) - len(missing)} of {len(parts)} part(s) of the question." + (
        " Missing: " + "; ".join(missing) + "." if missing else ""
    )
    return {
        "is_sufficient": not missing,
        "confidence": confidence,
        "reasoning": reasoning,
        "missing_aspects": [_as_question(m) for m in missing],
    }


def _completeness(hints: dict[str, Any]) -> dict[str, Any]:
    query = hints.get("query", "")
    findings = "\n".join(str(r.get("result", "")) for r in hints.get("results", []))
    parts = question_parts(query)
    missing = [p for p in parts if not covers(p, findings)]
    coverage = 1.0 if not parts else (len(parts) - len(missing)) / len(parts)
    return {
        "is_complete": not missing,
        "confidence": round(coverage, 2),
        "reasoning": f"Findings cover {coverage:.0%} of the question's parts.",
        "missing_aspects": missing,
        "additional_queries": [_as_question(m) for m in missing][:3],
    }


def _filter(hints: dict[str, Any]) -> dict[str, Any]:
    wanted = set(keywords(hints.get("query", "")))
    kept = []
    for index, result in enumerate(hints.get("results", []), 1):
        text = f"{result.get('query', '')} {result.get('result', '')}"
        overlap = len(wanted & set(keywords(text)))
        relevance = 10 if not wanted else round(10 * min(1.0, overlap / max(1, len(wanted)) + 0.3), 1)
        kept.append({"id": index, "relevance": relevance, "key_information": _short(strip_label(text), 120)})
    return {"kept": kept}


def synthesize(hints: dict[str, Any]) -> str:
    results = hints.get("results", [])
    blocks = []
    for result in results:
        finding = strip_label(str(result.get("result", "")))
        if finding:
            blocks.append(f"**{result.get('query', '').strip()}**\n\n{finding}")
    if not blocks:
        return answer_without_tools(hints.get("query", ""))
    return "\n\n".join(blocks) + LABEL_BLOCK


def _critique(hints: dict[str, Any]) -> dict[str, Any]:
    steps = hints.get("steps", [])
    tools = set(hints.get("tools", []))
    issues = []
    for step in steps:
        for tool in step.get("tools", []):
            if tools and tool not in tools:
                issues.append(
                    {
                        "severity": "high",
                        "category": "feasibility",
                        "description": f"{step.get('id')} uses unknown tool {tool}",
                        "suggestion": "use an available tool",
                        "affected_steps": [step.get("id")],
                    }
                )
    parts = question_parts(hints.get("query", ""))
    covered = sum(
        1 for p in parts if any(set(keywords(p)) & set(keywords(s.get("description", ""))) for s in steps)
    )
    completeness = 1.0 if not parts else covered / len(parts)
    if completeness < 1:
        issues.append(
            {
                "severity": "medium",
                "category": "completeness",
                "description": "some parts of the question have no step",
                "suggestion": "add a step for each part",
                "affected_steps": [],
            }
        )
    overall = round(max(0.0, 0.95 * completeness - 0.2 * sum(i["severity"] == "high" for i in issues)), 2)
    return {
        "overall_score": overall,
        "feasibility_score": 0.9,
        "correctness_score": overall,
        "efficiency_score": 0.9 if len(steps) <= max(1, len(parts)) + 1 else 0.6,
        "safety_score": 1.0,
        "issues": issues,
        "strengths": ["one step per part of the question"] if completeness == 1 else [],
        "suggestions": [i["suggestion"] for i in issues],
        "recommendation": "approve" if overall >= 0.8 else "revise",
        "rationale": f"The steps cover {completeness:.0%} of the question's parts.",
    }


def _reflection(hints: dict[str, Any]) -> dict[str, Any]:
    tools_used = hints.get("tools_used", [])
    escalations = hints.get("escalations", 0)
    try:
        quality = float(hints.get("quality"))
    except (TypeError, ValueError):
        quality = None
    lessons = []
    if escalations:
        lessons.append(
            "Multi-part questions need one plan step per part; a direct answer covered only one part."
        )
    for tool in dict.fromkeys(tools_used):
        lessons.append(
            f"The {tool.split('__')[-1]} tool answered part of this question; use it for similar questions."
        )
    insights = [
        {
            "category": "success" if quality and quality >= 0.7 else "approach",
            "description": f"Final quality {quality if quality is not None else 'n/a'} "
            f"after {escalations} escalation(s).",
            "evidence": [f"tools: {', '.join(tools_used) or 'none'}"],
            "impact": "medium",
        }
    ]
    return {
        "insights": insights,
        "lessons": lessons[:3],
        "improvements": [
            {
                "area": "planning",
                "suggestion": "split multi-part questions early",
                "priority": "medium",
                "expected_impact": "fewer escalations",
            }
        ]
        if escalations
        else [],
        "confidence": 0.6,
    }


def _meta(hints: dict[str, Any]) -> dict[str, Any]:
    return {
        "reasoning_quality": 0.75,
        "confidence": 0.75,
        "concerns": [],
        "should_replan": False,
        "should_think_deeper": False,
        "recommended_passes": 1,
        "feedback": "Heuristic review: the plan follows the question's parts.",
        "clarifying_question": "",
    }


def _live(hints: dict[str, Any]) -> dict[str, Any]:
    finding = hints.get("finding", "")
    refused = is_refusal(finding)
    return {
        "should_continue": True,
        "should_deepen": False,
        "confidence_adjustment": -0.3 if refused else 0.1,
        "feedback": "The step could not be answered offline." if refused else "The step produced a finding.",
    }


def _thought(hints: dict[str, Any]) -> dict[str, Any]:
    text = hints.get("text", "")
    about = hints.get("about", "user")
    tools = hints.get("tools", [])
    if about == "assistant":
        parts = question_parts(hints.get("query", ""))
        missing = [p for p in parts if not covers(p, text)]
        call = plan_tool_call("; ".join(missing), tools) if missing else None
        return {
            "intent": "check my answer",
            "needs": missing,
            "plan": "answer the missing parts" if missing else "the answer is complete",
            "proposed_tools": [{"tool": call[0], "parameters": call[1]}] if call else [],
            "turn_complete": call is None,
            "confidence": 0.8 if not missing else 0.5,
        }
    call = plan_tool_call(text, tools)
    return {
        "intent": "get an exact answer",
        "needs": question_parts(text),
        "plan": "use a tool" if call else "answer directly",
        "proposed_tools": [{"tool": call[0], "parameters": call[1]}] if call else [],
        "turn_complete": False,
        "confidence": 0.7,
    }


_BUILDERS = {
    "record_complexity_analysis": _analysis,
    "record_plan": _plan,
    "record_quality_assessment": _quality,
    "record_completeness": _completeness,
    "record_relevant_results": _filter,
    "record_critique": _critique,
    "record_reflection": _reflection,
    "record_meta_evaluation": _meta,
    "record_live_assessment": _live,
    "record_thought": _thought,
}
