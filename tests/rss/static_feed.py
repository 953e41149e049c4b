"""One small RSS feed served on 127.0.0.1 from a thread, for tests that only need a feed that
reads (route catalogs, isolation): independent of any event loop, started once per process."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.rss.feed_server import Blog

_FEED = Blog()
_FEED.add("Hello")
BODY = _FEED.document().encode()
_server: ThreadingHTTPServer | None = None
_lock = threading.Lock()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/rss+xml")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args: object) -> None:
        return None


def feed_url() -> str:
    """The feed's URL (needs `webhook_allow_networks` to take 127.0.0.0/8)."""
    global _server
    with _lock:
        if _server is None:
            _server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
            threading.Thread(target=_server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{_server.server_address[1]}/feed/"
