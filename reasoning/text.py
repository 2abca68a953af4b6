"""Word-level helpers shared by the offline model and document search."""

from __future__ import annotations

import re

WORD = re.compile(r"[^\W_]+", re.UNICODE)
# "When it is noon in New York, what time is it in Paris?": one question, on a condition, not
# two after the comma.
# A sentence that poses a case and asks about it ("If a shirt costs $40 and is 25% off, what
# is the sale price?"): one question, whatever "and" or comma joins its clauses.
CONDITIONAL = re.compile(r"^\W*(?:if|suppose|assuming|given that)\b", re.IGNORECASE)
CONDITION = re.compile(r"^\W*(?:if|when|once)\s+it(?:'s|’s|\s+is|\s+was|\s+were)\b", re.IGNORECASE)
# A full stop that ends no sentence: "St. John's", "Mt. Fuji", "Dr. Smith", "e.g. this".
NOT_A_SENTENCE_END = (
    "".join(
        rf"(?<!\b{re.escape(word)})"
        for word in ("St.", "Mt.", "Ft.", "Dr.", "Mr.", "Ms.", "Mrs.", "Jr.", "Sr.", "vs.")
    )
    + r"(?<!e\.g\.)(?<!i\.e\.)(?<!\b[ap]\.m\.)"
)


def sentences(text: str) -> list[str]:
    """A text's sentences, where a full stop, question or exclamation mark ends one ("St.
    John's" and "e.g. this" go on)."""
    return re.split(rf"(?<=[?!])\s+|(?<=\.){NOT_A_SENTENCE_END}\s+", text or "")


STOPWORDS = frozenset(
    """a an the is are was were be been of to in on at for and or with what when where who why how which it
    its this that these those do does did can could should would will me my our your you i we us tell give
    list please about from by as than then there their them they also""".split()  # noqa: SIM905
)


def keywords(text: str) -> list[str]:
    """Lower-cased words worth matching on: no stopwords, no single letters (digits kept)."""
    words = (w.lower() for w in WORD.findall(text or ""))
    return [w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


_SUFFIXES = ("ies", "es", "s", "ing", "ed")


def stem(word: str) -> str:
    """A word without its plural or tense ending, enough for "expenses" to match "expense"
    and "releasing" to match "release" (not a linguist's stemmer: only for overlap counts)."""
    for suffix in _SUFFIXES:
        if (
            word.endswith(suffix)
            and len(word) > len(suffix) + 2
            and not (suffix == "s" and word.endswith("ss"))
        ):
            base = word[: -len(suffix)]
            return base + "y" if suffix == "ies" else base.rstrip("e")
    return word.rstrip("e") if len(word) > 3 else word


# A document mention: `@name`, `@"a title"` (a `"` or `\` inside written with a backslash
# before it) and optionally `#id`. Groups: the quoted title, the bare name, the id.
# A name mentioned without quotes: a word, with dots, dashes and slashes inside.
_BARE_NAME = r"[\w][\w.\-/]{0,199}"
BARE_MENTION = re.compile(_BARE_NAME)
MENTION = re.compile(rf'(?<![\w@])@(?:"((?:\\["\\]|[^"\n]){{1,200}})"|({_BARE_NAME}))(?:#(\d{{1,12}})\b)?')
_MENTION_ESCAPE = re.compile(r'\\(["\\])')


def mention_title(quoted: str) -> str:
    """The title a quoted mention names (its backslash escapes undone)."""
    return _MENTION_ESCAPE.sub(r"\1", quoted)


def mention_quote(title: str) -> str:
    """`title` quoted for a mention, whatever characters it holds."""
    return '"' + title.replace("\\", "\\\\").replace('"', '\\"') + '"'


_ASKS = re.compile(
    r"^(what|what's|when|where|who|whom|whose|why|how|which|is|are|was|were|do|does|did|can|could|"
    r"should|would|will|shall|has|have|may|might|isn't|aren't|don't|doesn't)\b",
    re.IGNORECASE,
)


_LEADING_JOINER = re.compile(r"^(?:also|and|plus|then|so)\b[\s,]*(?=\w)", re.IGNORECASE)


# A list item's marker at the start of a line: "- ", "* ", "• ", "> ", "1) ", "2. ", "a) ", and
# nested ones ("> - ").
LIST_ITEM = re.compile(
    r"^[ \t]*(?:(?:[-*•>]+|\(?(?:\d{1,2}|[a-z])[.)])[ \t]+)+", re.IGNORECASE | re.MULTILINE
)


# A list's marker inside a line: "Calculate: 1) 5+5 2) 6*6", "(1) 12*12, (2) the time in Lima",
# "a) 3+4 b) 9*9", "1. What is 5+5? 2. What is 6*6?".
_INLINE_MARKER = re.compile(r"(?:^|(?<=[\s:,;?!.]))(\()?(\d{1,2}|[a-h])(\)|\.(?=\s))(?=\s)", re.IGNORECASE)


def _inline_items(line: str) -> list[str]:
    """`line` cut at a list's markers written inside it ("1) … 2) …", "a) … b) …"), the text
    before the first marker first; the line alone unless the markers count up from 1 or "a"
    (a "2." or "b)" on its own is no list)."""
    run: list[re.Match[str]] = []
    for marker in _INLINE_MARKER.finditer(line):
        label, closing = marker[2].lower(), marker[3]
        if closing == "." and (label.isalpha() or re.search(r"[^\W\d_][\s,]*$", line[: marker.start()])):
            continue  # "a.", "costs 1. Then": a sentence's end more often than a list's marker
        if not run:
            if label in ("1", "a"):
                run.append(marker)
            continue
        previous = run[-1][2].lower()
        expected = str(int(previous) + 1) if previous.isdigit() else chr(ord(previous) + 1)
        if label == expected and closing == run[-1][3] and bool(marker[1]) == bool(run[-1][1]):
            run.append(marker)
    if len(run) < 2:
        return [line]
    ends = [marker.start() for marker in run[1:]] + [len(line)]
    items = [line[marker.end() : end].strip(" ,;") for marker, end in zip(run, ends, strict=True)]
    return [line[: run[0].start()], *items]


# Words that only introduce the list after them: "Calculate:", "Two things:", "Quick
# questions:", "Please compute the following:" (not "Summarize the following:", which asks).
LEAD_IN = re.compile(
    r"^\W*(?:(?:please|quick(?:ly)?|can you|could you|pls|hey|hi|ok)[\s,]+)*"
    r"(?:(?:calculate|compute|work out|solve|evaluate|answer|tell me|give me)\b\s*)?"
    r"(?:(?:these|the following|this|both|all(?: of)?(?: these)?|for me)\s*)*"
    r"(?:(?:a\s+)?(?:couple of\s+|few\s+)?(?:one|two|three|four|five|some|several|\d+)?\s*"
    r"(?:quick\s+)?(?:things?|questions?|sums?|calculations?|items?|asks?)\s*)?:\s*$",
    re.IGNORECASE,
)


def inline_items_apart(text: str) -> str:
    """`text` with the items of a list written inside a line ("1) 5+5 2) 6*6") each on a line
    of its own, without their markers ("(1) 12*12" was read as the product (1)*12*12)."""
    if not _INLINE_MARKER.search(text):
        return text
    return "\n".join(item for line in text.split("\n") for item in _inline_items(line))


# How to answer, not what: "think very carefully", "explain step by step", "be concise", "take
# your time", "show your work". Before a colon, or joined by "and", such clauses lead in to the
# question; read as an ask of their own they made a polite question LIGHT, with a part saying
# "I can't answer 'Think very carefully' offline".
_MANNER = (
    r"(?:please\s+|kindly\s+|now\s+)?(?:"
    r"(?:think|reason|work|go)(?:\s+(?:it|this)\s+through)?(?:\s+(?:very|really|extra|real))?\s+"
    r"(?:carefully|hard|slowly|step[-\s]by[-\s]step)|"
    r"take\s+(?:your|a\s+moment(?:'s)?|some)\s+time|"
    r"(?:be|stay)\s+(?:very\s+|extra\s+|really\s+)?(?:precise|concise|brief|careful|accurate|thorough|succinct|exact)|"
    r"(?:explain|show|answer|do|solve|go)(?:\s+(?:it|this|that))?\s+step[-\s]by[-\s]step|"
    r"show\s+(?:your|the|all)\s+(?:work(?:ing)?|steps|reasoning)|"
    r"(?:explain|walk\s+me\s+through)\s+your\s+(?:reasoning|thinking|steps)|"
    r"keep\s+it\s+(?:short|brief|simple)|double[-\s]check(?:\s+(?:it|your\s+(?:work|answer)))?"
    r")"
)
_MANNER_LEAD = re.compile(
    rf"^\W*{_MANNER}(?:\s*(?:,|and|,\s*and|then)\s*{_MANNER})*(?::|\s+[-—–])\s*(?=\S)", re.IGNORECASE
)
# "if it isn't too much trouble", "if you don't mind": a courtesy, no condition, where the clause
# ends there ("if you don't mind me asking", "if it's not okay to return it" are more).
_COURTESY = re.compile(
    r",?\s*\bif\s+(?:(?:it'?s|it\s+is|that'?s|that\s+is)\s+not|it\s+isn'?t|that\s+isn'?t)\s+too\s+much\s+"
    r"(?:trouble|to\s+ask)|,?\s*\bif\s+you\s+(?:don'?t|do\s+not)\s+mind(?=\s*(?:,|[?.!]|$))",
    re.IGNORECASE,
)
# "Could you please tell me what…" asks what the rest asks.
_TELL_ME = re.compile(
    r"^\W*(?:(?:could|can|would|will)\s+(?:you|u)\s+(?:please\s+|kindly\s+)?|please\s+|kindly\s+)"
    r"(?:tell|show)\s+me\s*,?\s*(?=(?:what|how|when|where|who|which)\b)",
    re.IGNORECASE,
)


def courtesy_removed(text: str) -> str:
    """`text` without what only says how (or how politely) to answer, where that stands
    before or around the question: what is left is what is asked. Text that is nothing but
    manner ("Explain step by step.") is kept as it is."""
    trimmed = _COURTESY.sub(" ", text)
    trimmed = _MANNER_LEAD.sub("", trimmed)
    trimmed = _TELL_ME.sub("", trimmed)
    if trimmed == text:
        return text
    trimmed = re.sub(r"\s+([?.!,])", r"\1", " ".join(trimmed.split())).lstrip(" ,;")
    return trimmed if re.search(r"\w", trimmed) else text


def joined_lines(text: str) -> str:
    """The text on one line, but for its list items and lines that start a question, each on a
    line of its own (list items without their marker): "- 5 * 5" is the item 5 * 5, not -5 * 5,
    and two items are two asks; a sentence wrapped over two lines stays one. Items listed inside
    a line ("1) 5+5 2) 6*6") are items as well."""
    joined = ""
    for whole in (text or "").splitlines():
        head, *inline = _inline_items(whole)
        for index, line in enumerate([head, *inline]):
            item = LIST_ITEM.match(line) if index == 0 else None
            line = " ".join(line[item.end() if item else 0 :].split())
            if line:
                apart = bool(item or index > 0 or _ASKS.match(line)) and bool(joined)
                joined += ("\n" if apart else " " if joined else "") + line
    return joined


def shorten(text: str, limit: int = 160) -> str:
    """`text` cut to `limit` characters, marked as cut."""
    return text if len(text) <= limit else text[:limit] + "…"


def counted(count: int, noun: str) -> str:
    """ "1 part", "3 parts": a count with its noun in the right number (regular plurals only)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def as_ask(part: str) -> str:
    """A part of a message as a step or heading: capitalised, a question ending in "?", a
    request ("Design a recovery plan") in "." rather than a "?" that makes it read oddly; a
    joining word it kept from the message ("Also, what time is it?") goes."""
    part = _LEADING_JOINER.sub("", " ".join((part or "").split()))
    part = part[:1].upper() + part[1:]
    if part.endswith(("?", ".", "!")):
        return part
    return part + ("?" if _ASKS.match(part) else ".")


def distinct(parts: list[str]) -> list[str]:
    """`parts` without repeats (a sentence pasted twice is one ask), ignoring case and spacing."""
    seen: set[str] = set()
    kept = []
    for part in parts:
        key = " ".join(part.lower().split()).strip(" ?.!")
        if key not in seen:
            seen.add(key)
            kept.append(part)
    return kept


MARKDOWN_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")


# A heading goes in front of every passage under it: a long one is cut, so it cannot fill them.
HEADING_KEPT = 200


def paragraphs(content: str, limit: int = 0) -> list[str]:
    """A document's paragraphs, each heading kept on the line above the paragraph under it (a
    heading alone answers nothing, but it says what its paragraph is about). With `limit`, a
    longer paragraph is cut at spaces into pieces of at most about that many characters."""
    out: list[str] = []
    headings: list[str] = []
    for block in (b.strip() for b in re.split(r"\n\s*\n", content or "") if b.strip()):
        lines = block.splitlines()
        while lines and MARKDOWN_HEADING.match(lines[0]):
            headings = [lines.pop(0).strip()[:HEADING_KEPT]]
        if not lines:
            continue
        body = "\n".join(lines)
        while limit and len(body) > limit:
            cut = body.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            out.append("\n".join([*headings, body[:cut]]))
            body = body[cut:].strip()
        if body:
            out.append("\n".join([*headings, body]))
    if not out and headings:
        out.append(headings[0])
    return out


# One passage of the team's document search as the search tool writes it for the model:
# "## Title  (shared, nexus://documents/7)" then the passage. Written and read here, so the
# web side that writes it and the offline model that reads it cannot drift apart.
_SEARCH_HIT = re.compile(r"^## (.+?)  \((?:shared|private), nexus://documents/\d+\)\n", re.MULTILINE)
DOCUMENT_URI = re.compile(r"nexus://documents/(\d+)")


def documents_cited(text: str) -> list[int]:
    """The team documents a tool result names (their ids, in order, once each). Recorded from
    the whole result: the trace keeps only its start, and who may see an answer is decided by
    every document it could have drawn on."""
    return list(dict.fromkeys(int(found) for found in DOCUMENT_URI.findall(text or "")))


def search_hit(title: str, shared: bool, uri: str, passage: str) -> str:
    return f"## {title}  ({'shared' if shared else 'private'}, {uri})\n{passage}"


def search_hits(text: str) -> list[tuple[str, str]]:
    """(title, passage) pairs from a search result made of `search_hit`s, in its order."""
    marks = list(_SEARCH_HIT.finditer(text or ""))
    return [
        (mark.group(1), text[mark.end() : marks[i + 1].start() if i + 1 < len(marks) else len(text)].strip())
        for i, mark in enumerate(marks)
    ]


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#])")


_BOLD_HEADING = re.compile(r"\A\s*\*\*[^\n]+\*\*\s*\n")


def under_heading(title: str, text: str) -> str:
    """`text` under `title` as a bold heading, unless it starts with headings of its own (a
    step that answered several asks, each under its own)."""
    text = text.strip()
    return text if _BOLD_HEADING.match(text) else f"**{markdown_inline(title)}**\n\n{text}"


def markdown_inline(text: str) -> str:
    """`text` (a question, a step) made safe to embed in Markdown, e.g. as a bold heading:
    one line, with every character that could open or close formatting escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join((text or "").split()))


# What opens a block when it starts a line: a rule or setext underline, a list item.
_BLOCK_START = re.compile(r"^(\s*)(?:([-+=])|(\d+)([.)]))")


def markdown_text(text: str) -> str:
    """What a person typed, as Markdown that shows it as typed: line by line, every
    formatting character escaped, no line opening a heading, list, quote or rule, and each
    line break kept."""
    lines = []
    for line in (text or "").splitlines():
        escaped = _BLOCK_START.sub(
            lambda m: f"{m[1]}\\{m[2]}" if m[2] else f"{m[1]}{m[3]}\\{m[4]}",
            _MARKDOWN_SPECIAL.sub(r"\\\1", line.rstrip()),
        )
        lines.append(escaped)
    # Two spaces end a line inside a paragraph: the line breaks stay where they were typed.
    return "\n".join(
        f"{line}  " if line.strip() and following.strip() else line
        for line, following in zip(lines, [*lines[1:], ""], strict=True)
    )


_BOLD = re.compile(r"\*\*|__")
_MARKS = re.compile(r"`|\\(?=[\\`*_\[\]<>|~#])")
# *Emphasis* or _emphasis_, once bold is gone: a mark that opens after no word and closes before
# none (the star in "17*23" is a times sign), neither of them escaped.
_EMPHASIS = re.compile(r"(?<![\w*\\])([*_])(?=\S)(.+?)(?<=[^\s\\])\1(?![\w*])")
# What opens a line: quote markers, then a heading's hashes or a list bullet.
_LINE_MARKS = re.compile(r"^\s*(?:>\s*)*(?:#{1,6}\s+|[-*+]\s+)?")
# A line that is only a rule ("---", "***", "___").
_RULE = re.compile(r"^\s*(?:([-*_])\s*){3,}$")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def plain_text(markdown: str) -> str:
    """Markdown as one line of plain text (for summaries and excerpts shown where Markdown is
    not rendered): no bold, italic or code marks, rules, quote markers, heading hashes or
    bullets; a link keeps its text."""
    text = _LINK.sub(r"\1", markdown or "")
    lines = (_LINE_MARKS.sub("", line, count=1) for line in text.splitlines() if not _RULE.match(line))
    return " ".join(_MARKS.sub("", _EMPHASIS.sub(r"\2", _BOLD.sub("", " ".join(lines)))).split())


# How a recalled earlier exchange is introduced among recalled memories (a fact is not).
EARLIER_CHAT = "Earlier chat: "
