"""A real HTTP server on 127.0.0.1 that answers each request with the next step of a script.

For the clients' retries: a step drops the connection without an answer, hangs past the
client's timeout, or answers a status with a JSON body and headers. Every request is
recorded (path and the exact body bytes), answered or not.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Drop:
    """Read the request, then close the connection without answering."""


@dataclass(frozen=True)
class Hang:
    """Read the request, answer nothing for ``seconds``, then close the connection."""

    seconds: float


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


Step = Drop | Hang | Answer


def refusal(status: int, sub_type: str, retry_after: str | None = None) -> Answer:
    """The service's error answer of ``sub_type``."""
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return Answer(status, {"subType": sub_type, "message": f"scripted {sub_type}"}, headers)


@dataclass(frozen=True)
class Seen:
    path: str
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class ScriptedService:
    """The script's steps in order; once they are spent, the last one again."""

    def __init__(self, steps: list[Step]) -> None:
        assert steps, "a script needs at least one step"
        self._steps = list(steps)
        self._lock = threading.Lock()
        self.seen: list[Seen] = []
        self.url = ""

    def _next(self, path: str, body: bytes) -> Step:
        with self._lock:
            self.seen.append(Seen(path, body))
            return self._steps.pop(0) if len(self._steps) > 1 else self._steps[0]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        step = self.server.service._next(self.path, body)
        if isinstance(step, Drop | Hang):
            if isinstance(step, Hang):
                time.sleep(step.seconds)
            self.close_connection = True
            return
        data = json.dumps(step.body).encode()
        self.send_response(step.status)
        for name, value in step.headers.items():
            self.send_header(name, value)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, service: ScriptedService) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.service = service


@contextmanager
def scripted_service(*steps: Step) -> Iterator[ScriptedService]:
    """Serves ``steps`` on a free port of 127.0.0.1 while the block runs."""
    service = ScriptedService(list(steps))
    server = _Server(service)
    service.url = f"http://127.0.0.1:{server.server_address[1]}"
    # A short poll, so that shutting down does not wait half a second.
    thread = threading.Thread(
        target=server.serve_forever, args=(0.02,), name="scripted-service", daemon=True
    )
    thread.start()
    try:
        yield service
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
