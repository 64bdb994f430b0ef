"""When the clients send a call again, and the request ids that make that safe.

A call is sent again only when the service cannot have acted on it, or when acting on it
twice does what acting once does:

- no connection could be made (refused, a connect timeout), or the service answered 503
  ``OVERLOADED`` (which changes nothing): any call;
- the connection failed after the request left (reset, closed without an answer, a
  timeout waiting for the answer), or a 503 other than ``OVERLOADED`` (the service lost
  its database, possibly after committing; a proxy with no service behind it): only a
  read, a write whose repeat leaves what the first left (setting a flow limit), or a
  write that carries a request id. Start, stop, publish, the operator's
  controls, reset and batch start always carry one (the caller's, or a UUID the client
  makes once per call); the service answers a repeated id with the body it first
  answered, without acting again.

Nothing else is sent again: not a 4xx (a 409 ``REQUEST_ID_CONFLICT`` included), nor a 500,
with one exception: a service of a release before request ids refuses the ``requestId``
field (400 ``INVALID_REQUEST``, "unknown field"); when the id is the client's own, not
the caller's, the call goes again without it, as that service would have taken it, so
that the services can be upgraded after their clients.
A call is sent at most ``max_attempts`` times; the pause before the next is the answer's
``Retry-After`` (seconds) or else a backoff doubling from 0.25 s, each at most
``max_retry_delay``.
"""

from __future__ import annotations

import dataclasses
import random
import re
import uuid
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from pydantic import ValidationError

from xdb.call import Call
from xdb.errors import InvalidRequestError, SchemaError
from xdb.protocol import (
    BATCH_DESCRIBE,
    BATCH_LIST,
    COUNT,
    DEFINITIONS_DESCRIBE,
    DEFINITIONS_LIST,
    DEPLOYMENTS_LIST,
    DESCRIBE,
    FLOW_LIMITS_HISTORY,
    FLOW_LIMITS_LIST,
    FLOW_LIMITS_SET,
    HISTORY,
    LIST,
    SCHEDULE_BACKFILL,
    SCHEDULE_DESCRIBE,
    SCHEDULE_HISTORY,
    SCHEDULE_LIST,
    SCHEDULE_PAUSE,
    SCHEDULE_RESUME,
    SCHEDULE_UPDATE,
    STATES,
    WAIT_FOR_COMPLETION,
    ApiErrorResponse,
    ErrorSubType,
)

T = TypeVar("T")

DEFAULT_MAX_ATTEMPTS = 5
"""How many times a call is sent at most, unless the client is told otherwise."""
DEFAULT_MAX_RETRY_DELAY = 5.0
"""The longest pause before sending a call again, in seconds, whatever ``Retry-After`` says."""
FIRST_BACKOFF = 0.25
"""The pause after the first failed attempt when the answer names none (then doubling)."""

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,200}")

# The paths whose calls only read: sending one twice is as sending it once.
_READS = frozenset(
    {
        DESCRIBE,
        LIST,
        COUNT,
        HISTORY,
        WAIT_FOR_COMPLETION,
        STATES,
        DEFINITIONS_LIST,
        DEFINITIONS_DESCRIBE,
        DEPLOYMENTS_LIST,
        BATCH_LIST,
        BATCH_DESCRIBE,
        FLOW_LIMITS_LIST,
        FLOW_LIMITS_HISTORY,
        SCHEDULE_LIST,
        SCHEDULE_DESCRIBE,
        SCHEDULE_HISTORY,
    }
)

# The writes that leave the same state however often they are sent: the same flow-limit
# override set twice is set once, a schedule paused twice is paused, and a backfill
# records each firing once by its nominal time.
_SAME_EACH_TIME = frozenset(
    {FLOW_LIMITS_SET, SCHEDULE_UPDATE, SCHEDULE_PAUSE, SCHEDULE_RESUME, SCHEDULE_BACKFILL}
)

# Failures in which the request never reached the service.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# Failures after the request may have reached it, before its answer came.
_NO_ANSWER = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)


def request_id(given: str | None) -> str:
    """``given`` once checked (1 to 200 letters, digits and ``-_.:``), else a new UUID v4."""
    if given is None:
        return str(uuid.uuid4())
    if not _REQUEST_ID.fullmatch(given):
        raise SchemaError(
            f"request id {given!r}: 1 to 200 characters, letters, digits and '-_.:' only"
        )
    return given


def repeatable(call: Call[Any]) -> bool:
    """Whether sending ``call`` twice does what sending it once does.

    A read, a write whose repeat leaves what the first left, or a write that carries a
    request id.
    """
    return (
        call.path in _READS
        or call.path in _SAME_EACH_TIME
        or getattr(call.body, "request_id", None) is not None
    )


def predates_request_ids(call: Call[Any], error: Exception) -> bool:
    """Whether ``error`` is an older service refusing the client's own request id.

    A release before request ids answers 400 ``INVALID_REQUEST`` naming the unknown field
    ``requestId``. Never for the caller's id: that one is not dropped behind its back.
    """
    return (
        call.own_request_id
        and isinstance(error, InvalidRequestError)
        and "unknown field" in error.message
        and "requestId" in error.message
    )


def without_request_id(call: Call[T]) -> Call[T]:
    """``call`` without its request id, as a release before request ids takes it.

    Without an id it is no longer repeatable: sent again only when the service surely did
    nothing (see :func:`repeatable`).
    """
    body = call.body.model_copy(update={"request_id": None})
    return dataclasses.replace(call, body=body, own_request_id=False)


def _sub_type(response: httpx.Response) -> str | None:
    try:
        return ApiErrorResponse.model_validate_json(response.content).sub_type
    except ValidationError:
        return None


@dataclass(frozen=True)
class CallRetries:
    """How often, and after what pause, a client sends a call again."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    max_delay: float = DEFAULT_MAX_RETRY_DELAY

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.max_delay < 0:
            raise ValueError(f"max_retry_delay must not be negative, not {self.max_delay}")

    def backoff(self, attempt: int) -> float:
        """The pause after failed attempt ``attempt`` (1-based) when the answer names none."""
        pause = min(self.max_delay, FIRST_BACKOFF * 2.0 ** (attempt - 1))
        # Jittered, so that clients that failed together do not all come back together.
        return pause * random.uniform(0.5, 1.0)

    def retry_after(self, response: httpx.Response, attempt: int) -> float:
        """``Retry-After`` in seconds (the service never sends a date), at most ``max_delay``."""
        text = response.headers.get("retry-after", "").strip()
        if text.isdigit():
            return min(self.max_delay, float(text))
        return self.backoff(attempt)

    def after_error(self, call: Call[Any], attempt: int, error: httpx.HTTPError) -> float | None:
        """The pause before sending ``call`` again after ``error``; ``None``: do not."""
        if attempt >= self.max_attempts:
            return None
        if isinstance(error, _NOT_SENT) or (isinstance(error, _NO_ANSWER) and repeatable(call)):
            return self.backoff(attempt)
        return None

    def after_answer(self, call: Call[Any], attempt: int, response: httpx.Response) -> float | None:
        """The pause before sending ``call`` again after ``response``; ``None``: do not."""
        if response.status_code != 503 or attempt >= self.max_attempts:
            return None
        if _sub_type(response) == ErrorSubType.OVERLOADED or repeatable(call):
            return self.retry_after(response, attempt)
        return None
