"""What a tool server's image becomes: shown only when its bytes are the raster type it says,
and otherwise a sentence that says why."""

from __future__ import annotations

import base64
from types import SimpleNamespace

from reasoning.tools.mcp import content_of

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 20
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 20


def image(mime: str, raw: bytes) -> SimpleNamespace:
    return SimpleNamespace(type="image", mime_type=mime, data=base64.b64encode(raw).decode())


def test_an_image_whose_bytes_are_another_type_is_named_as_such():
    """A PNG labelled image/gif said "not shown: only PNG, JPEG, GIF and WebP": a GIF refused
    for not being a GIF, in words that say GIFs are shown."""
    text, parts = content_of([image("image/gif", PNG)], str)
    assert parts == []
    assert "its bytes are not a GIF image" in text and "only PNG" not in text


def test_a_riff_file_that_is_not_webp_is_not_shown_as_one():
    """Any RIFF file (a WAV, an AVI) passed as image/webp."""
    text, parts = content_of([image("image/webp", WAV)], str)
    assert parts == [] and "its bytes are not a WebP image" in text
    text, parts = content_of([image("image/webp", WEBP)], str)
    assert [p["mime_type"] for p in parts] == ["image/webp"] and "shown to the user" in text


def test_a_type_the_chat_never_shows_still_says_which_it_shows():
    text, parts = content_of([image("image/svg+xml", b"<svg/>")], str)
    assert parts == [] and "only PNG, JPEG, GIF and WebP" in text
