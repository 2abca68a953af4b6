"""Markdown to safe HTML. Model and tool output is untrusted: raw HTML is not rendered,
and the result is sanitised again with an allow-list (links keep only safe schemes)."""

from __future__ import annotations

import functools

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from chat.inputs import upright

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "strong",
    "em",
    "del",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "span",
    "div",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "span": {"class"},
    "div": {"class"},
    "pre": {"class"},
    "ol": {"start"},
}
_FORMATTER = HtmlFormatter(nowrap=True, classes=True, classprefix="hl-")


def _highlight(code: str, lang: str, attrs: str) -> str:
    if not lang:
        return ""
    try:
        lexer = get_lexer_by_name(lang.strip().split()[0])
    except ClassNotFound:
        return ""
    return highlight(code, lexer, _FORMATTER)


def _image_as_link(self, tokens, idx, options, env) -> str:  # type: ignore[no-untyped-def]
    """An image as a link to it, named by its description: a page that loaded every image
    an answer names would tell their servers who reads it (and answers can be steered to name
    any address); dropped outright, it left an empty paragraph where the text said there was
    a picture."""
    token = tokens[idx]
    alt = escapeHtml(self.renderInlineAsText(token.children or [], options, env) or "image")
    src = escapeHtml(token.attrGet("src") or "")
    return f'<a href="{src}">[image: {alt}]</a>'


@functools.cache
def _parser() -> MarkdownIt:
    parser = MarkdownIt(
        "commonmark", {"html": False, "linkify": False, "typographer": False, "highlight": _highlight}
    ).enable(["table", "strikethrough"])
    parser.add_render_rule("image", _image_as_link)
    return parser


def render_markdown(text: str) -> str:
    html = _parser().render(upright(text or ""))
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )


def pygments_css() -> str:
    return _FORMATTER.get_style_defs(".markdown pre")
