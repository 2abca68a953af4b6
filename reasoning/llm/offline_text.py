"""The offline model's heuristics: reading questions into parts, and writing honest answers.

Answers are extracted from tool results and documents, with their sources; a question no
tool can answer gets "I can't answer that offline". The offline label is not written here:
the client declares it as its answer notice and the engine adds it once to the final answer.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from reasoning.foresight import (
    AMBIGUOUS_PLACES,
    COUNTRY_US,
    SEVERAL_ZONES,
    TEAM_SUBJECTS,
    accounts_for,
    arithmetic_written,
    asks_now,
    asks_zone,
    calculation_in_steps,
    earlier_results_in,
    expression_in,
    fold,
    leaves_out_currency,
    money_amount,
    money_in,
    places_kept_by,
    several_zones_of,
    split_calculations,
    tool_named,
    unknown_place,
    zones_in,
)
from reasoning.routing.features import aspects_listed
from reasoning.text import (
    CONDITION,
    CONDITIONAL,
    LEAD_IN,
    MARKDOWN_HEADING,
    MENTION,
    NOT_A_SENTENCE_END,
    WORD,
    courtesy_removed,
    distinct,
    joined_lines,
    keywords,
    markdown_inline,
    paragraphs,
    search_hits,
    shorten,
    stem,
)
from reasoning.tools.approval import declined_tool
from reasoning.tools.builtin import CalculatorError, calculate, format_number

LABEL = "*Answered by Nexus's offline model: no API key is set (set ANTHROPIC_API_KEY to use Claude).*"
LABEL_BLOCK = f"\n\n---\n{LABEL}"
_NOTHING_FOUND = re.compile(
    r"^\s*(no (documents?|results?|matches?|passages?)\b|nothing (was )?found)", re.IGNORECASE
)
MAX_PARTS = 5
MAX_QUERY_CHARS = 4000

_WH = (
    r"what|whats|when|where|who|whom|whose|why|how|which|is|are|was|were|do|does|did|can|could|"
    r"should|would|will|tell|give|list|calculate|compute|find|show|explain|summari[sz]e|"
    r"describe|name|convert"
)
# "…and also summarize…", "…and then tell me…": the connective is both words (the part before
# it ended "and": "Can you calculate 45*12 and?").
_SPLIT_AND = re.compile(
    rf"[,;]?\s+\b(?:and\s+(?:also|then)|and|also|then|plus|as well as)\s+(?=(?:{_WH})\b)", re.IGNORECASE
)
# "What is 1+1, what is 2+2 and …": a comma before another question word starts a part, once
# the text before it asks something ("If it rains, what should I do?" is one question).
_SPLIT_COMMA = re.compile(r",\s+(?=(?:what|how|when|where|who)(?:'s|s)?\b)", re.IGNORECASE)
_ASKING = re.compile(rf"\b(?:{_WH})\b", re.IGNORECASE)
# A request in the imperative asks as much as a question does ("Walk me through…", "Outline…").
_REQUEST = (
    r"walk me through|help me|outline|design|plan|draft|write|create|build|propose|suggest|"
    r"recommend|compare|analy[sz]e|investigate|review|estimate|evaluate|prioriti[sz]e|produce|"
    r"make|prepare|identify|assess|define|sketch|break down"
)
_QUESTION_START = re.compile(rf"^\W*(?:please\s+|kindly\s+)?(?:{_WH}|{_REQUEST})\b", re.IGNORECASE)
# A question for the clock: the time or date asked ("what time is it", "which day is
# Thanksgiving", "the time in Tokyo", "today's date"). A time word in anything else ("a
# real-time platform", "rooms across time zones", "a date and a datetime") asks it nothing.
_TIME = re.compile(
    r"\b(?:what|which)(?:'s|’s|s| is| was| will)?(?: the| a)?(?: current| local| exact)?\s+"
    r"(?:time|hour|date|day|weekday|year|month|week(?: number)?)\b"
    r"(?! (?:zones?|difference|complexity|format|type)\b)|"
    r"\b(?:time|date|day|year|month|weekday) (?:is it|today|now|right now)\b|"
    r"\b(?:current|today'?s|today’s|local|exact) (?:time|date|day|weekday)\b|"
    r"\bthe (?:time|date) (?:in|at|for|now)\b|^\W*(?:the\s+)?(?:time|date) (?:in|at|now)\b|"
    r"\b(?:o'clock|what(?:'s| is) the clock|time now|date today)\b|"
    r"^\W*(?:(?:have you |you |do you have |(?:do )?you know )?got |do you have |(?:do )?you know )?"
    r"(?:the )?(?:current )?time(?: (?:now|right now|rn|please|pls|plz))?\W*$",
    re.IGNORECASE,
)
# The present time asked in so many words: people of the team there ("for our team in Pune",
# "at our office in Oslo") change nothing (not "what time is the standup", which they document).
_TIME_IS_IT = re.compile(
    r"\bwhat(?:'s|’s| is)? (?:the )?(?:current |local )?time(?: is it| it is| now)\b|"
    r"\bwhat(?:'s|’s| is) the (?:current |local )?time (?:in|at|for)\b",
    re.IGNORECASE,
)
# Questions about the team's own work, which its documents may answer (the offline model
# searches them only for these: it has no general knowledge to search for).
_DOCS = re.compile(
    r"\b(docs?|documents?|handbook|policy|policies|guide|manual|notes?|wiki|our|we|us|"
    r"team'?s?|according to|onboarding|runbook|readme|spec|manager|who should i ask|where do i find|"
    rf"{TEAM_SUBJECTS})\b|@\S+",
    re.IGNORECASE,
)
_ONLY_MENTIONS = re.compile(rf"(?:\s*{MENTION.pattern}[\s,.;:!?]*)+")
_HEADING = re.compile(r"^\s*\*\*[^\n]*\*\*\s*$", re.MULTILINE)
_QUOTED_DOCUMENT = re.compile(r"^From \*\*.+\*\*:$", re.MULTILINE)
# Small talk: a greeting, thanks or goodbye, alone (beside a question it is not a part).
_THANKS = re.compile(
    r"^\W*(?:thanks|thank you|thx|ty|cheers|much appreciated)(?:\s+(?:so|very)\s+much|\s+a (?:lot|ton|bunch)|"
    r"\s+again|\s+nexus)*(?:[\s,.!-]+(?:that|this|it)(?:'s| is| was)? "
    r"(?:helped|helps|(?:very |really |super )?(?:helpful|useful|great|perfect))(?: a lot)?)?[\s!.,]*$",
    re.IGNORECASE,
)
_GOODBYE = re.compile(
    r"^\W*(?:bye(?:[\s-]bye)?|goodbye|good night|see you|see ya|cya|later)"
    r"(?:\s+(?:later|soon|now|for now|nexus))*[\s!.,]*$",
    re.IGNORECASE,
)
_HOW_ARE_YOU = r"how are you(?: doing)?(?: today)?|how(?:'s| is) it going|what'?s up"
_HELLO = re.compile(
    r"^\W*(?:(?:hi+|hel+o+|he+y+|hiya|howdy|yo|g'?day|namaste|good (?:morning|afternoon|evening|day))"
    r"(?:\s+(?:there|nexus|all|everyone|again|mate|team|folks|guys|y'?all))*"
    # An emoji after it ("hey there 👋") is no question either.
    rf"(?:[\s,!.]+(?:{_HOW_ARE_YOU}))?|{_HOW_ARE_YOU})[\s!?.,]*[^\w\s]*[\s!?.,]*$",
    re.IGNORECASE,
)
# "ok", "got it", "lol": an acknowledgement, which asks for nothing.
_OK_WORD = r"(?:ok(?:ay)?|k|cool|great|nice|perfect|awesome|got it|sounds good|lol|haha+|alright)"
_OK = re.compile(rf"^\W*{_OK_WORD}(?:[\s!.,]+{_OK_WORD}){{0,2}}[\s!.,]*$", re.IGNORECASE)
_GREETING = re.compile(rf"{_HELLO.pattern}|{_THANKS.pattern}|{_GOODBYE.pattern}|{_OK.pattern}", re.IGNORECASE)
# What the assistant can do: asked outright, not "help me plan the architecture".
_CAPABILITIES = re.compile(
    r"\b(what can you do|who are you|what are you|how do you work|how can you help(?: me)?)\b|"
    r"\b(?:what|which)\s+(?:ai\s+|language\s+)?model\s+(?:are\s+you|is\s+this|do\s+you\s+use)\b|"
    r"\b(?:do|can)\s+you\s+(?:have\s+)?(?:access\s+(?:to\s+)?)?(?:the\s+)?(?:internet|web)(?:\s+access)?\b|"
    r"\bcan\s+you\s+(?:browse|search\s+the\s+(?:web|internet)|go\s+online)\b|"
    r"^\W*(?:help|can you help(?: me)?|help me)\W*$",
    re.IGNORECASE,
)
# "And in London?", "Double it", "Add 9 to that": a message that leans on an earlier one; so
# does one about the last answer ("What did you just say?", "Why?", "Are you sure?").
_FOLLOW_UP = re.compile(
    r"^\W*(?:and|now|also|then|what about|how about)\b|\b(?:that|it|this|the result|the answer|them|"
    r"the same)\W*$|\b(?:that|the) (?:result|answer|number|one)\b(?!\s*[-+]?\d)|"
    r"^\W*(?:why|how so|are you sure|really|explain)\W*$|"
    r"\byou (?:just )?(?:said|say|wrote|write|told me|answered)\b|"
    r"\byour (?:last |previous |first |earlier )?(?:answer|reply|response|message)\b",
    re.IGNORECASE,
)
_WORDS = re.compile(r"\w+")
# --- reading questions ------------------------------------------------------------------------


def question_parts(query: str) -> list[str]:
    """The separate questions in a message ("What is 2+2 and what time is it?" has two)."""
    lines = joined_lines((query or "")[:MAX_QUERY_CHARS]).split("\n")
    text = "\n".join(courtesy_removed(line) for line in lines)
    chunks = [
        c
        # "5! in binary": a factorial's "!" before more of the sentence in lower case ends nothing.
        for c in re.split(
            rf"(?<=[?!])(?<!\d!)\s+|(?<=\d!)\s+(?=[A-Z])|[;\n]+|(?<=\.){NOT_A_SENTENCE_END}\s+(?=[A-Z])", text
        )
        if c.strip()
    ]
    parts: list[str] = []
    questions: list[str] = []
    for number, chunk in enumerate(chunks):
        if number < len(chunks) - 1 and LEAD_IN.match(chunk):
            continue  # "Calculate:" before the items it introduces asks nothing of its own
        pieces = []
        whole = bool(CONDITIONAL.match(chunk) or aspects_listed(chunk) or calculation_in_steps(chunk))
        joins = [chunk] if whole else _SPLIT_AND.split(chunk)
        for piece in (c for joined in joins for c in split_calculations(joined)):
            head, *rest = _SPLIT_COMMA.split(piece)
            one = whole or not rest or not _ASKING.search(head) or CONDITION.match(head)
            pieces += [piece] if one else [head, *rest]
        for number, piece in enumerate(pieces):
            cleaned = piece.strip(" ,.;:!?")
            if re.search(r"\d!\s*$", piece):
                cleaned += "!"  # "5! / 3!": a factorial (the reader tells an exclamation apart)
            if not WORD.search(cleaned):
                continue
            parts.append(cleaned)
            asked = chunk.rstrip().endswith("?") and number == len(pieces) - 1
            # A remark about the team's things ("Our latency doubled.") is the question's
            # context, not a part: it asks for nothing.
            if asked or _QUESTION_START.match(cleaned) or part_kind(cleaned) not in ("general", "documents"):
                questions.append(cleaned)
    # A greeting before the question, a mention after it, or a remark beside it ("I love
    # pizza. What is 2+2?") is not a part to answer.
    asked = [p for p in questions if not _GREETING.match(p) and not _ONLY_MENTIONS.fullmatch(p)]
    return earlier_results_in(distinct(asked or parts)[:MAX_PARTS])


def part_kind(part: str) -> str:
    if expression_in(part):
        return "arithmetic"
    # "gmt+8 time", "Tokyo time": what the clock is asked for (by foresight's reading) is a time
    # question, though it says no "what time".
    if (_TIME.search(part) or asks_now(part)) and (
        not _DOCS.search(COUNTRY_US.sub(" ", part))
        or ((_TIME_IS_IT.search(part) or asks_zone(part)) and asks_now(part) and zones_in(part))
    ):
        # "What time is it for our team in Bangalore?", "Which timezone is our Singapore office
        # in?": the clock's question, whoever is there.
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
        if not accounts_for(part, expression or ""):
            return False  # a misreading of the question must not approve itself
        if leaves_out_currency(part, answer_text):
            return False  # "€10 * 3" answered 30
        try:
            value = format_number(calculate(expression or ""))
        except CalculatorError as exc:
            return str(exc) in answer_text
        told_time = (
            not _time_asked_too(part)
            or bool(_TIME_TOLD.search(answer_text))
            or (unknown_place(part) is not None and UNKNOWN_PLACE in answer_text)
        )
        # The value as a number of its own: "6" is no answer for being inside "2026" or "12:04:16".
        stated = re.search(rf"(?<![\d.]){re.escape(value)}(?!\.?\d)", answer_text.replace(",", ""))
        return bool(stated) and told_time
    if kind == "time":
        # The clock tells the present; "the date tomorrow" is not answered by today's; and
        # "100/4 and the time in Tokyo" is not answered by the time alone.
        left_out = [sum_ for sum_ in arithmetic_written(part) if sum_ not in answer_text]
        # Every place named is told: "Paris, London, Tokyo, Sydney and New York" lost the fifth.
        untold = [zone for zone in zones_in(part) if zone not in answer_text]
        return asks_now(part) and bool(_TIME_TOLD.search(answer_text)) and not left_out and not untold
    if kind in ("greeting", "capabilities"):
        return bool(answer_text)
    if is_refusal(answer_text):
        return False
    wanted = {stem(word) for word in keywords(part)}
    if not wanted:
        return bool(answer_text)
    # A heading that repeats the question answers nothing: judge the text under it.
    found = {stem(word) for word in keywords(_HEADING.sub("", answer_text))}
    shared = len(wanted & found)
    # Passages quoted from the team's documents were picked for the ask's words; an ask that
    # also says how to answer ("…in five bullet points, cite the documents") has more words
    # than its subject, so two of them found there are enough; and the words that say where
    # to look ("according to our docs") need not be in what was found there.
    quoted = kind == "documents" and _QUOTED_DOCUMENT.search(answer_text) is not None
    subject = wanted - _SOURCE_STEMS if quoted else wanted
    return (bool(subject) and len(subject & found) / len(subject) >= 0.5) or (quoted and shared >= 2)


# Words that name where the answer is written ("according to the handbook", "what do our
# docs say"), which a passage quoted from there need not contain.
_SOURCE_STEMS = {
    stem(word)
    for word in (
        "docs", "doc", "documents", "document", "documentation", "according", "say", "says", "said",
        "handbook", "wiki", "manual", "guide", "guides", "notes", "spec", "readme", "runbook", "written",
    )
}  # fmt: skip
UNKNOWN_PLACE = "I don't know where"
SEVERAL_PLACES = "keeps several time zones"
WHICH_PLACE = "names more than one place"


def is_refusal(text: str) -> bool:
    return any(
        words in text
        for words in (
            "can't answer that offline",
            "didn't find a question",
            UNKNOWN_PLACE,
            SEVERAL_PLACES,
            WHICH_PLACE,
        )
    )


def honestly_unanswerable(part: str, answer: str) -> bool:
    """An honest "I can't" is all the offline model can give this part at any depth: general
    knowledge, the team's documents when their search found nothing, a time question the clock
    cannot answer (a place no zone is known for, or no present moment asked for)."""
    kind = part_kind(part)
    clock_cannot = kind == "time" and (unknown_place(part) is not None or not asks_now(part))
    return (kind in ("general", "documents") or clock_cannot) and is_refusal(strip_label(answer))


def declined_for(part: str, answer: str) -> bool:
    """Does the answer say the person declined the tool this part needed? As honest as a
    refusal: asking again, or planning deeper, would only ask them again."""
    kind = part_kind(part)
    if kind == "arithmetic":
        done = f"compute {_code(expression_in(part) or '')}"
    elif kind == "time":
        done = "check the time"
    elif kind == "documents":
        done = "search the team's documents"
    else:
        return False
    return bool(re.search(rf"{re.escape(DECLINED)}\S+, so I didn't {re.escape(done)}", answer))


# --- writing answers ----------------------------------------------------------------------


# Recalled memories (the cognitive mode attaches them): quoted as what the person said
# before, never as a document.
REMEMBERED = "\x00remembered"
_MEMORY_LINE = re.compile(r"^\s*-\s*(.+?)(?:\s+\([^()]*\))?\s*$")


def remembered_lines(content: str) -> list[str]:
    """The recalled items of a memory attachment (one per line), without where each came from."""
    return [m.group(1) for line in (content or "").splitlines() if (m := _MEMORY_LINE.match(line))]


def recalls(question: str, remembered: list[str]) -> bool:
    """Does anything recalled bear on the question?"""
    return bool(_best_passages(question, [(REMEMBERED, line) for line in remembered], set()))


def answer_from_context(
    question: str, documents: list[tuple[str, str]], remembered: list[str] | None = None
) -> str:
    """The passages of the mentioned documents (and the recalled memories) that best match the
    question, by document; a document's first passage when none matches."""
    pieces = [(title, passage) for title, content in documents for passage in paragraphs(content)]
    memory = [(REMEMBERED, line) for line in remembered or []]
    titles = {title for title, _ in documents}
    best = _best_passages(question, pieces + memory, titles) or pieces[:1]
    return _quote(best) if best else answer_without_tools(question)


def _best_passages(question: str, pieces: list[tuple[str, str]], titles: set[str]) -> list[tuple[str, str]]:
    """The pieces that answer the question: scored by the question's words, each weighed by
    how few pieces hold it (a word every piece has, like the document's name, tells none
    apart), keeping those near the best and at most three."""
    named = {stem(word) for title in titles for word in keywords(title)}
    wanted = (
        {stem(word) for word in keywords(MENTION.sub(" ", question))} - named - {"say", "said", "document"}
    )
    if not wanted or not pieces:
        return []
    words = [{stem(word) for word in keywords(passage)} for _, passage in pieces]
    weight = {w: 1.0 / sum(w in have for have in words) for w in wanted if any(w in have for have in words)}
    scores = [sum(weight.get(w, 0.0) for w in have & wanted) for have in words]
    best = max(scores)
    if best <= 0:
        return []
    ranked = sorted(range(len(pieces)), key=lambda i: -scores[i])
    return [pieces[i] for i in ranked if scores[i] >= best / 2][:3]


def _quote(passages: list[tuple[str, str]]) -> str:
    """Passages as quotes under their document's name, each document named once, and within
    it each section heading shown once (passages carry their heading: `paragraphs`)."""
    by_title: dict[str, dict[str, list[str]]] = {}
    for title, passage in passages:
        heading, body = _heading_of(passage)
        by_title.setdefault(title, {}).setdefault(heading, []).append(body)
    told = by_title.pop(REMEMBERED, {})
    earlier = [
        "From what you told me earlier:\n\n"
        + "\n".join(f"- {markdown_inline(line)}" for lines in told.values() for line in lines)
    ]
    return "\n\n".join(
        [*(earlier if told else [])]
        + [
            f"From **{markdown_inline(title)}**:\n\n"
            + "\n>\n".join(
                "> " + "\n> ".join(_unheaded("\n".join(filter(None, [heading, body])))[:800].splitlines())
                for heading, bodies in sections.items()
                for body, heading in ((b, heading if i == 0 else "") for i, b in enumerate(bodies))
            )
            for title, sections in by_title.items()
        ]
    )


def _heading_of(passage: str) -> tuple[str, str]:
    """A passage's leading Markdown heading ("" when none) and the text under it."""
    first, _, rest = passage.partition("\n")
    if rest.strip() and MARKDOWN_HEADING.match(first):
        return first.strip(), rest.strip()
    return "", passage


def _unheaded(passage: str) -> str:
    """A passage whose own Markdown headings read as bold lines inside a quote, each a
    paragraph of its own (a line under it ran on: "Vacation policy Employees get…")."""
    return "\n".join(
        f"**{m.group(1)}**\n" if (m := MARKDOWN_HEADING.match(line)) else line
        for line in passage.splitlines()
    )


def plan_tool_calls(part: str, tools: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls the offline model makes for one part: the clock once per place it names
    ("in Paris and in Tokyo": two), none for a place it does not know."""
    kind = part_kind(part)
    if kind == "arithmetic" and (name := tool_named(tools, "calculator")):
        # "15% of 80, the time in Berlin" is one part to the splitter: the clock too.
        clock = tool_named(tools, "clock")
        return [(name, {"expression": expression_in(part)})] + (
            [(clock, {"timezone": zone}) for zone in zones_in(part)]
            if clock and _clock_tells_too(part)
            else []
        )
    if kind == "time" and (name := tool_named(tools, "clock")) and asks_now(part) and not unknown_place(part):
        return [(name, {"timezone": zone}) for zone in zones_in(part) or ["UTC"]]
    if kind == "documents" and (name := tool_named(tools, "search_documents")):
        return [(name, {"query": part})]
    return []


# An answer that tells a time of day ("21:45").
_TIME_TOLD = re.compile(r"\b\d{1,2}:\d{2}\b")
# "3 times 4, also time in Nice": the time asked after a calculation, in a list's few words.
_TIME_IN = re.compile(r"\b(?:time|date) (?:in|at)\b", re.IGNORECASE)


def _time_asked_too(part: str) -> bool:
    """Whether a calculation's part also asks the present time somewhere ("15% of 80, the time
    in Berlin" is one part to the splitter)."""
    asked = _TIME.search(part) or _TIME_IN.search(part)
    return bool(asked and expression_in(part) and asks_now(part))


def _clock_tells_too(part: str) -> bool:
    """Whether a calculation's part also asks the present time of a place it can tell."""
    return _time_asked_too(part) and bool(zones_in(part)) and not unknown_place(part)


def plan_tool_call(question: str, tools: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The one tool call the offline model makes for the first part it can act on."""
    for part in question_parts(question) or [question]:
        if calls := plan_tool_calls(part, tools):
            return calls[0]
    return None


# Functions whose reading the calculator takes one way of two people use: said beside the result.
_TRIG = re.compile(r"\b(?:sin|cos|tan)\((?!radians\()")
_NATURAL_LOG = re.compile(r"\blog\(")


def _reading_note(expression: str) -> str:
    notes = []
    if _TRIG.search(expression):
        notes.append("the angle is in radians (write 30° for degrees)")
    if _NATURAL_LOG.search(expression):
        notes.append("log is the natural logarithm (log10 for base 10)")
    return f" Here {' and '.join(notes)}." if notes else ""


# What an MCP server's SDK puts before a tool's own words ("Error executing tool clock: "), and
# the exception class a tool raised them in.
_EXCEPTION_NAME = re.compile(r"^(?:Error executing tool [\w.-]+:\s*)?(?:[A-Z]\w*(?:Error|Exception):\s*)?")


def answer_from_results(question: str, results: list[tuple[str, dict[str, Any], str, bool]]) -> str:
    lines = []
    for name, arguments, text, is_error in results:
        base = name.split("__")[-1]
        if declined_tool(text) is not None:
            lines.append(_declined(base, arguments))
        elif is_error or text.startswith("Error:"):
            # The tool's own words, without the exception class it raised them in.
            reason = _EXCEPTION_NAME.sub("", text.removeprefix("Error:").strip())
            lines.append(f"The {base} tool could not help: {markdown_inline(reason)}")
        elif base == "calculator":
            # What the calculator computed, as it says ("9*8 = 72"): a person who edited the
            # call's arguments before approving it had it compute another expression.
            computed, _, value = text.rpartition("=")
            expression = computed.strip() or arguments.get("expression", "")
            money = money_in(question)
            amount = f": **{money_amount(money, value.strip())}**" if money and not money.ratio else ""
            lines.append(
                f"{_code(expression)} = **{value.strip()}** (computed with the calculator){amount}."
                + _reading_note(expression)
            )
        elif base == "clock":
            lines.append(
                f"{_where(question, text)} {text} (from the clock)."
                f"{_week_of(question, text)}{_zone_of(question, text)}"
            )
        elif base == "search_documents":
            lines.append(_document_answer(question, text))
        else:
            lines.append(f"{base} returned: {text[:1500]}")
    # "2+2 and the time in Abuja", read as one part: the place it cannot tell is said, not dropped.
    if _time_asked_too(question) and (place := unknown_place(question)):
        lines.append(_no_time_for(place))
    return "\n\n".join(lines)


# "What week number is it", "which week is it": the clock gives a date, not its week.
_WEEK_ASKED = re.compile(
    r"\b(?:what|which)(?:'s|’s| is)?(?: the)?(?: current)?(?: iso)? week\b|\bweek (?:number|no)\b", re.I
)
_ISO_DATE = re.compile(r"\bISO (\d{4})-(\d\d)-(\d\d)T")


def _week_of(question: str, clock_text: str) -> str:
    """The ISO week of the clock's date, when the question asks for the week (the clock's words
    alone, a date, left it unsaid and were approved)."""
    if not _WEEK_ASKED.search(question) or not (iso := _ISO_DATE.search(clock_text)):
        return ""
    year, week, _ = date(int(iso[1]), int(iso[2]), int(iso[3])).isocalendar()
    return f" That is ISO week {week} of {year}."


# The clock's words: "... 23:52:53 Asia/Tokyo (ISO 2026-11-28T23:52:53+09:00)", or with an
# abbreviation "... 06:52:38 PST (UTC-08:00) (ISO ...)".
_CLOCK_ZONE = re.compile(
    r"\d\d:\d\d(?::\d\d)? (?P<zone>[^\s()]+)(?: \((?P<named>UTC[+-]\d\d:\d\d)\))? "
    r"\(ISO [\d-]+T[\d:.]+(?P<iso>[+-]\d\d:\d\d|Z)\)"
)


def _where(question: str, clock_text: str) -> str:
    """ "In Houston and Dallas it is" before a clock's reading when several places asked about
    keep its zone (America/Chicago answered for both, and named neither; Osaka beside Tokyo was
    dropped from the answer); "It is" otherwise, the zone naming the one place."""
    found = _CLOCK_ZONE.search(clock_text)
    names = places_kept_by(question, found["zone"]) if found else []
    if len(names) < 2:
        return "It is"
    return f"In {', '.join(names[:-1])} and {names[-1]} it is"


def _zone_of(question: str, clock_text: str) -> str:
    """The zone and its offset said in words, when the question asks a place's time zone (the
    clock's reading of the present names them, but answers another question first)."""
    if not asks_zone(question) or not (found := _CLOCK_ZONE.search(clock_text)):
        return ""
    offset = found["named"] or ("UTC+00:00" if found["iso"] == "Z" else f"UTC{found['iso']}")
    return f" The time zone is {found['zone']}, at {offset} now."


DECLINED = "You declined the "


def _declined(tool: str, arguments: dict[str, Any]) -> str:
    """What the person reads after declining a call: what was not done, in plain words."""
    if tool == "calculator":
        skipped = f"compute {_code(arguments.get('expression', ''))}"
    elif tool == "clock":
        skipped = "check the time"
    elif tool == "search_documents":
        skipped = (
            f'search the team\'s documents for "{markdown_inline(shorten(str(arguments.get("query", ""))))}"'
        )
    else:
        skipped = "run it"
    return f"{DECLINED}{tool}, so I didn't {skipped}."


def found_nothing(text: str) -> bool:
    """A tool result that says it found nothing."""
    return not (text or "").strip() or bool(_NOTHING_FOUND.match(text))


def _document_answer(question: str, text: str) -> str:
    if found_nothing(text):
        asked = markdown_inline(shorten(question))
        return (
            f"I found nothing in the team's documents about \"{asked}\", and I can't answer "
            "that offline; set ANTHROPIC_API_KEY to ask Claude."
        )
    hits = search_hits(text)
    if not hits:  # another search tool's format: its text as it came
        return f"From the team's documents:\n\n{text.strip()[:3000]}"
    best = _best_passages(question, hits, set())
    if not best:
        asked = markdown_inline(shorten(question))
        return (
            f"The team's documents I found don't say anything about \"{asked}\", and I can't answer "
            "that offline; set ANTHROPIC_API_KEY to ask Claude."
        )
    return _quote(best)


def _no_time_for(place: str) -> str:
    """Why there is no time to tell for a place the question names."""
    if fold(place) == "there":  # a place named earlier, which each message is read without
        return (
            "I can't tell which place “there” is. Name a city (London, São Paulo), a time zone "
            "(Europe/London) or an abbreviation (PST)."
        )
    if which := AMBIGUOUS_PLACES.get(fold(place).replace(".", "")):
        return (
            f"“{markdown_inline(place)}” {WHICH_PLACE}: do you mean {which}? Ask again "
            "with the country or state."
        )
    several = SEVERAL_ZONES.get(fold(place).replace(".", ""))
    if several is None and (zones := several_zones_of(place)):
        # A country the time-zone database gives several times: some of its places.
        cities = [zone.rsplit("/", 1)[1].replace("_", " ") for zone in zones[:4]]
        several = f"{', '.join(cities[:-1])} or {cities[-1]}"
    if several:
        return (
            f"“{markdown_inline(place)}” {SEVERAL_PLACES}, so there is no one time to give. "
            f"Name a city ({several}) or a time zone."
        )
    return (
        f"{UNKNOWN_PLACE} “{markdown_inline(shorten(place, 60))}” is, so I can't tell its time. Name a "
        "city (London, São Paulo), a time zone (Europe/London) or an abbreviation (PST)."
    )


def answer_without_tools(question: str, *, among: str | None = None) -> str:
    """The offline answer to `question` with no tool results: a greeting's reply, a local
    calculation or an honest decline. `among`: the whole message the question is part of."""
    parts = question_parts(question)
    if not parts:
        return 'I didn\'t find a question in your message. Ask me something, for example "What is 17*23?"'
    first = parts[0]
    kind = part_kind(first)
    if kind == "greeting":
        if _THANKS.match(first):
            return (
                "You're welcome! Ask me anything else: a calculation, the time somewhere, or "
                "your team's documents."
            )
        if _GOODBYE.match(first):
            return "Goodbye! Your chats stay here for when you come back."
        if _OK.match(first):
            return (
                "Ask me something else whenever you like: a calculation, the time somewhere, or "
                "your team's documents."
            )
        return (
            "Hello! I'm Nexus, running on the offline model. I can do arithmetic, tell the time "
            "and search your team's documents."
        )
    if kind == "capabilities":
        return (
            "I'm Nexus's offline model: no API key is set, and I have no internet access. "
            'Offline I can: calculate ("What is 17*23?"), tell the time anywhere ("What time is it '
            "in Tokyo?\"), and find passages in your team's documents. With ANTHROPIC_API_KEY set, "
            "Claude answers instead, with the same planning, tools and quality checks."
        )
    if kind == "time" and asks_now(first) and (place := unknown_place(first)):
        return _no_time_for(place)
    if kind == "arithmetic":
        expression = expression_in(first) or ""
        try:
            return f"{_code(expression)} = **{format_number(calculate(expression))}**."
        except CalculatorError as exc:
            return f"I can't compute {_code(expression)}: {markdown_inline(str(exc))}."
    # "What about it?" leans on an earlier message, which the offline model does not read;
    # not when the message itself says more than this ask ("Our worker dies; what causes it?").
    alone = not set(_WORDS.findall(fold(among or question))) - set(_WORDS.findall(fold(first)))
    follow_up = (
        " Offline, each message is read on its own, without the earlier ones: ask it in full."
        if alone and _FOLLOW_UP.search(first)
        else ""
    )
    return f'{CANNOT} "{markdown_inline(shorten(first))}" needs a real language model.{follow_up} {_SWITCH}'


# How every offline decline starts, and how it ends: what to set to get a real model.
CANNOT = "I can't answer that offline:"
_SWITCH = "Set ANTHROPIC_API_KEY (or NEXUS_LLM_PROVIDER=openai with a local server) and ask again."


def declined_whole(answers: list[str]) -> str | None:
    """One decline for a message none of whose parts the offline model can answer, instead
    of the same paragraph under a heading made of each fragment ("A shirt costs 40.")."""
    if len(answers) < 2 or not all(answer.startswith(CANNOT) for answer in answers):
        return None
    return f"{CANNOT} no part of this message can be answered without a real language model. {_SWITCH}"


def _code(expression: str) -> str:
    """An expression as inline code, so its * and _ never read as Markdown; a power written
    as people write it ("(5 + 3)^2", not Python's "**"), which the calculator reads too."""
    return f"`{' '.join(str(expression).split()).replace('`', '').replace('**', '^')}`"
