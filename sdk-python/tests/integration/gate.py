"""A gate in front of a worker: it holds the worker calls a test picks until the test lets
them through, so the test orders a call after other events instead of racing them.

The worker serves from its own thread and event loop, the test from pytest's: the gate's
state is guarded by a lock, and a held call waits on a ``threading.Event`` off the
worker's loop. It only delays calls; the worker answers every call as it would without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The paths of the worker API (docs/worker-protocol.md).
WAIT_UNTIL_PATH = "/api/v1/xdb/worker/async-state/wait-until"

CallMatcher = Callable[[str, Any], bool]
"""Picks the calls to hold, from the request path and its JSON body."""

# A held call gives up waiting after this long, so a test that never releases it cannot
# hang the worker's shutdown; XDB's own call timeout is shorter.
_HOLD_LIMIT_SECONDS = 120.0


def wait_until_of(process_id: str, state_execution_id: str) -> CallMatcher:
    """The waitUntil call of ``state_execution_id`` (``VerifyState-2``) of ``process_id``."""

    def matches(path: str, body: Any) -> bool:
        context = body.get("context") if isinstance(body, dict) else None
        return (
            path == WAIT_UNTIL_PATH
            and isinstance(context, dict)
            and context.get("processId") == process_id
            and context.get("stateExecutionId") == state_execution_id
        )

    return matches


class CallGate:
    """Holds the calls its matcher picks while a :meth:`holding` block runs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._matcher: CallMatcher | None = None
        self._released = threading.Event()
        self._held = 0

    @property
    def held(self) -> int:
        """How many calls are held now."""
        with self._lock:
            return self._held

    @contextlib.contextmanager
    def holding(self, matcher: CallMatcher) -> Iterator[CallGate]:
        """Holds every call ``matcher`` picks until :meth:`release` or the block's end."""
        with self._lock:
            if self._matcher is not None:
                raise RuntimeError("the gate already holds calls for another block")
            self._matcher = matcher
            self._released = threading.Event()
        try:
            yield self
        finally:
            self.release()

    def release(self) -> None:
        """Lets the held calls through, and holds no more."""
        with self._lock:
            self._matcher = None
            self._released.set()

    async def wait_if_held(self, path: str, body: bytes) -> None:
        """Returns at once, or, for a call the gate holds, once it is released."""
        with self._lock:
            if self._matcher is None or not self._matcher(path, _json_or_none(body)):
                return
            self._held += 1
            released = self._released
        try:
            await asyncio.to_thread(released.wait, _HOLD_LIMIT_SECONDS)
        finally:
            with self._lock:
                self._held -= 1


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


class GateMiddleware:
    """Holds the requests ``gate`` picks, then passes them on to ``app`` whole."""

    def __init__(self, app: ASGIApp, gate: CallGate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # Read the whole body to decide, then replay it to the app.
        messages: list[Message] = []
        body = b""
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await self.gate.wait_if_held(scope["path"], body)

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)
