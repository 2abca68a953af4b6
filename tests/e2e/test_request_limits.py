"""Request bodies past NEXUS_MAX_REQUEST_BYTES are refused by daphne itself, before they are
stored: anyone could stream a body of any size at the sign-in page, and daphne wrote it all to
a temporary file before Django (its size checks, the sign-in check, the rate limits) saw it."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import Site

pytestmark = pytest.mark.slow

LIMIT = 200_000


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    site = Site.prepared(Path(tmp_path_factory.mktemp("limits")), NEXUS_MAX_REQUEST_BYTES=str(LIMIT))
    site.start_web()
    yield site
    site.stop()


def send(site: Site, head: str, body_chunks: Iterable[bytes] = ()) -> tuple[bytes, int]:
    """Send a request's head, then its body as long as the server takes it; what came back
    and how many body bytes went."""
    sent = 0
    with socket.create_connection(("127.0.0.1", site.port), timeout=10) as conn:
        conn.sendall(head.encode("ascii"))
        try:
            for chunk in body_chunks:
                conn.sendall(chunk)
                sent += len(chunk)
        except OSError:  # refused and closed under us
            pass
        reply = b""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                data = conn.recv(65536)
            except OSError:
                break
            if not data:
                break
            reply += data
    return reply, sent


def head(site: Site, extra: str) -> str:
    return f"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1:{site.port}\r\n{extra}\r\n"


def test_a_body_declared_past_the_limit_is_refused_before_it_is_sent(site: Site):
    reply, _ = send(site, head(site, f"Content-Length: {50_000_000}\r\n"))
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]


def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(site: Site):
    def chunks() -> Iterator[bytes]:
        piece = b"x" * 16_384
        for _ in range(3_000):  # 49 MB if nothing stopped it
            yield b"%x\r\n" % len(piece) + piece + b"\r\n"
            time.sleep(0.0005)

    reply, sent = send(site, head(site, "Transfer-Encoding: chunked\r\n"), chunks())
    assert sent < 20 * LIMIT, f"{sent} bytes went before the server stopped taking them"
    assert reply == b"" or reply.startswith(b"HTTP/1.1 413"), reply[:200]


def test_a_body_within_the_limit_reaches_the_application(site: Site):
    body = b"a=" + b"x" * (LIMIT - 1_000)
    reply, _ = send(
        site,
        head(site, f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n"),
        iter([body]),
    )
    assert reply.startswith(b"HTTP/1.1 403"), reply[:200]  # Django's CSRF check answered
    assert site.login().get("/").status_code == 200, "signing in (a small form) works as before"


def test_the_access_log_keeps_no_share_token_nor_what_was_searched(site: Site):
    """Daphne's access log printed every request's whole path: a share link's token (which
    opens the shared chat to any account) and the words people searched for, to whoever reads
    the server's output. Both are masked; the rest of the line is as daphne wrote it."""
    client = site.login()
    token = "Tok3nThatOpensAChat-1234567890_abcdefghijkl"  # as secrets.token_urlsafe(32) writes one
    assert client.get(f"/shared/{token}/").status_code == 404
    assert client.get("/search/", params={"q": "our staging password"}).status_code == 200
    log = site.processes[0]
    log.wait_for_log(r'"GET /search/\?q=\[…\]" 200')
    assert '"GET /shared/[…]/" 404' in log.log()
    assert "Tok3nThatOpensAChat" not in log.log() and "staging" not in log.log()
    assert client.get("/search/?secretword").status_code == 200
    assert client.get("/%73hared/" + token + "/").status_code == 404
    log.wait_for_log(r'"GET /search/\?\[…\]" 200')
    assert "secretword" not in log.log() and token not in log.log()
