"""The context of a worker call, and W3C trace-context passthrough."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from xdb.protocol import Context as WireContext

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"


@dataclass(frozen=True)
class TraceContext:
    """A W3C trace context (``traceparent`` and optional ``tracestate`` headers)."""

    traceparent: str
    tracestate: str | None = None

    def headers(self) -> dict[str, str]:
        """The headers that carry this context."""
        out = {TRACEPARENT: self.traceparent}
        if self.tracestate:
            out[TRACESTATE] = self.tracestate
        return out

    @property
    def trace_id(self) -> str | None:
        """The 32-hex-digit trace id, if ``traceparent`` is well formed."""
        parts = self.traceparent.split("-")
        return parts[1] if len(parts) >= 4 and len(parts[1]) == 32 else None


_current_trace: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar(
    "xdb_trace_context", default=None
)


def current_trace_context() -> TraceContext | None:
    """The trace context client calls continue: the worker call's, or one set by the caller."""
    return _current_trace.get()


@contextmanager
def trace_context(traceparent: str | TraceContext | None) -> Iterator[None]:
    """Makes client calls inside the block carry ``traceparent``.

    Bridge from OpenTelemetry by passing the ``traceparent`` your propagator injects.
    """
    value = TraceContext(traceparent) if isinstance(traceparent, str) else traceparent
    token = _current_trace.set(value)
    try:
        yield
    finally:
        _current_trace.reset(token)


@dataclass(frozen=True)
class Context:
    """Identifies the worker call being served.

    Worker calls are at-least-once: make side effects safe with ``idempotency_key``,
    which is the same for every attempt of one call; ``attempt`` counts from 1.
    """

    process_id: str
    process_execution_id: str
    process_type: str
    state_execution_id: str | None
    attempt: int
    first_attempt_timestamp_ms: int
    process_started_timestamp_ms: int
    idempotency_key: str
    trace: TraceContext | None = None

    @classmethod
    def from_wire(cls, wire: WireContext, trace: TraceContext | None = None) -> Context:
        """The context of a call, with the trace context of its HTTP request."""
        return cls(
            process_id=wire.process_id,
            process_execution_id=wire.process_execution_id,
            process_type=wire.process_type,
            state_execution_id=wire.state_execution_id,
            attempt=wire.attempt,
            first_attempt_timestamp_ms=wire.first_attempt_timestamp_ms,
            process_started_timestamp_ms=wire.process_started_timestamp_ms,
            idempotency_key=wire.idempotency_key,
            trace=trace,
        )

    @property
    def traceparent(self) -> str | None:
        """The caller's W3C ``traceparent``, when XDB sent one."""
        return self.trace.traceparent if self.trace else None


def _set_trace(trace: TraceContext | None) -> contextvars.Token[TraceContext | None]:
    return _current_trace.set(trace)


def _reset_trace(token: contextvars.Token[TraceContext | None]) -> None:
    _current_trace.reset(token)
