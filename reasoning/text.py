"""Word-level helpers shared by the offline model and document search."""

from __future__ import annotations

import re

WORD = re.compile(r"[^\W_]+", re.UNICODE)
STOPWORDS = frozenset(
    """a an the is are was were be been of to in on at for and or with what when where who why how which it
    its this that these those do does did can could should would will me my our your you i we us tell give
    list please about from by as than then there their them they also""".split()  # noqa: SIM905
)


def keywords(text: str) -> list[str]:
    """Lower-cased words worth matching on: no stopwords, no single letters (digits kept)."""
    words = (w.lower() for w in WORD.findall(text or ""))
    return [w for w in words if w not in STOPWORDS and (len(w) > 1 or w.isdigit())]


# A document mention: `@name`, `@"a title"` (a `"` or `\` inside written with a backslash
# before it) and optionally `#id`. Groups: the quoted title, the bare name, the id.
MENTION = re.compile(
    r'(?<![\w@])@(?:"((?:\\["\\]|[^"\n]){1,200})"|([\w][\w.\-/]{0,199}))(?:#(\d{1,12})\b)?'
)
_MENTION_ESCAPE = re.compile(r'\\(["\\])')


def mention_title(quoted: str) -> str:
    """The title a quoted mention names (its backslash escapes undone)."""
    return _MENTION_ESCAPE.sub(r"\1", quoted)


def mention_quote(title: str) -> str:
    """`title` quoted for a mention, whatever characters it holds."""
    return '"' + title.replace("\\", "\\\\").replace('"', '\\"') + '"'


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~#])")


def markdown_inline(text: str) -> str:
    """`text` (a question, a step) made safe to embed in Markdown, e.g. as a bold heading:
    one line, with every character that could open or close formatting escaped."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", " ".join((text or "").split()))
