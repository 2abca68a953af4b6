"""What a tool server's image becomes: shown only when its bytes are the raster type it says,
and otherwise a sentence that says why."""

from __future__ import annotations

import base64
from types import SimpleNamespace

from reasoning.tools.mcp import MAX_RESULT_PART_BYTES, content_of

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


def blob(uri: str, raw: bytes, mime: str = "application/octet-stream") -> SimpleNamespace:
    resource = SimpleNamespace(uri=uri, mime_type=mime, blob=base64.b64encode(raw).decode(), text=None)
    return SimpleNamespace(type="resource", resource=resource)


def test_binary_content_holding_a_servers_secret_is_never_offered():
    """Text a server returns has its secrets redacted; a download or an image was offered as the
    server's bytes, so a tool that reads a file as binary (a filesystem server's media read of
    /proc/self/environ) handed the person the token that redaction hides everywhere else."""
    from reasoning.tools.mcp import MCPServerConfig

    token = "ghp_0123456789abcdefSECRET"
    config = MCPServerConfig(name="files", secret_values=(token,))
    environ = f"PATH=/usr/bin\x00GITHUB_TOKEN={token}\x00HOME=/root\x00".encode()
    for raw in (environ, environ.upper(), environ.hex().encode()):
        text, parts = content_of([blob("file:///proc/self/environ", raw)], config.redact)
        assert parts == [], raw
        assert token not in text and "not offered" in text
    text, parts = content_of([image("image/png", PNG + b"tEXt" + token.encode())], config.redact)
    assert parts == [] and token not in text and "not shown" in text
    # Bytes without the secret are offered as before, NULs and all.
    text, parts = content_of([blob("file:///tmp/report.bin", b"\x00\x01report")], config.redact)
    assert [p["type"] for p in parts] == ["blob"]
    text, parts = content_of([image("image/png", PNG)], config.redact)
    assert [p["type"] for p in parts] == ["image"]


def test_one_result_attaches_at_most_a_few_megabytes_in_all():
    """Each image was capped at 1 MB, but not their number: a server returning forty stored
    48 MB in the tool execution's row (and the admin's page for it), for one call. What is past
    the result's total is named, not attached."""
    big = PNG + b"\x00" * 900_000
    blob = SimpleNamespace(
        type="resource",
        resource=SimpleNamespace(
            uri="x://data.bin", mime_type=None, blob=base64.b64encode(b"\x01" * 900_000).decode()
        ),
    )
    text, parts = content_of([image("image/png", big)] * 40 + [blob], str)
    assert sum(part["bytes"] for part in parts) <= MAX_RESULT_PART_BYTES
    assert len(parts) == MAX_RESULT_PART_BYTES // len(big)
    assert text.count("shown to the user") == len(parts)
    assert text.count("not shown: this result's pictures and downloads already come to") == 40 - len(parts)
    assert "x://data.bin" in text and "not offered: this result's pictures and downloads" in text
