"""A real HTTP server on 127.0.0.1 for the ``http_request`` tests, started by a test."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    """What the server received."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)


class _Handler(BaseHTTPRequestHandler):
    seen: Seen
    other_port: int = 0

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def _reply(
        self, status: int, body: bytes, kind: str = "application/json", **headers: str
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.requests.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": dict(self.headers.items()),
                "body": body.decode(),
            }
        )
        path = self.path
        port = self.server.server_address[1]
        if path.startswith("/items/"):
            self._reply(200, json.dumps({"item": path.removeprefix("/items/")}).encode())
        elif path == "/echo":
            data = {"body": json.loads(body or b"null"), "auth": self.headers.get("Authorization")}
            self._reply(200, json.dumps(data).encode())
        elif path == "/cookie":
            self._reply(200, b"{}", Set_Cookie="session=abc123; Path=/")
        elif path == "/text":
            self._reply(200, b"plain words", "text/plain; charset=utf-8")
        elif path == "/redirect-same":
            self._reply(302, b"", Location=f"http://127.0.0.1:{port}/items/moved")
        elif path == "/redirect-other":
            self._reply(302, b"", Location=f"http://localhost:{port}/items/stolen")
        elif path == "/redirect-loop":
            self._reply(302, b"", Location="/redirect-loop")
        elif path == "/big":
            self._reply(200, b"x" * 200_000, "text/plain")
        elif path == "/big-chunked":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(50):
                self.wfile.write(b"y" * 10_000)
        elif path == "/slow":
            self.seen.release.wait(10)
            self._reply(200, b"{}")
        elif path == "/fail":
            self._reply(500, json.dumps({"error": "broken"}).encode())
        else:
            self._reply(404, b"{}")

    do_GET = _handle  # noqa: N815 - http.server's names
    do_POST = _handle  # noqa: N815
    do_PUT = _handle  # noqa: N815
    do_DELETE = _handle  # noqa: N815


@contextmanager
def serve() -> Iterator[tuple[int, Seen]]:
    """A server on 127.0.0.1 (a free port); yields the port and what it saw."""
    seen = Seen()
    handler = type("Handler", (_Handler,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        seen.release.set()
        server.shutdown()
        server.server_close()
