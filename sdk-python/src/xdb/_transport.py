"""How the clients send a call: one ``httpx`` request, again while the retry policy says so.

A write whose own request id a service of the release before request ids refuses goes
again without it (:func:`xdb.retries.predates_request_ids`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Generic, TypeVar

import httpx
from pydantic import ValidationError

from xdb.call import Call
from xdb.context import current_trace_context
from xdb.errors import (
    InvalidRequestError,
    InvalidResponseError,
    TransportError,
    error_from_response,
)
from xdb.retries import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_RETRY_DELAY,
    CallRetries,
    predates_request_ids,
    without_request_id,
)

T = TypeVar("T")
# The transport of a client: the only part that differs between the two.
H = TypeVar("H", httpx.AsyncClient, httpx.Client)

log = logging.getLogger("xdb.client")


def _transport_error(error: httpx.HTTPError, attempts: int) -> TransportError:
    """A request that got no answer, as :class:`TransportError`."""
    tries = f" (after {attempts} attempts)" if attempts > 1 else ""
    return TransportError(f"request to the XDB service failed{tries}: {error!r}")


def _log_retry(call: Call[Any], attempt: int, why: str, pause: float) -> None:
    log.debug("%s: %s; sending it again in %.2f s (attempt %d)", call.path, why, pause, attempt + 1)


def _log_without_request_id(call: Call[Any]) -> None:
    log.debug("%s: the service predates request ids; sending the call without one", call.path)


class Transport(Generic[H]):
    """What both clients share in sending a call: its settings, request and answer.

    The calls are built elsewhere (:mod:`xdb._process_calls`, :mod:`xdb.operate`,
    :mod:`xdb.batch`); :class:`SyncTransport` and :class:`AsyncTransport` send a
    :class:`~xdb.call.Call` over their ``httpx`` client (``httpx.Client`` or
    ``httpx.AsyncClient``), again when :class:`~xdb.retries.CallRetries` says so.

    ``max_attempts`` (default 5) bounds how many times one call is sent, and
    ``max_retry_delay`` (seconds, default 5) the pause before each further attempt (the
    answer's ``Retry-After``, else a backoff doubling from 0.25 s); ``max_attempts=1``
    never sends a call again.
    """

    def __init__(
        self,
        service_url: str,
        *,
        worker_url: str | None = None,
        bearer_token: str | None = None,
        request_timeout: float = 60.0,
        http_client: H | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_retry_delay: float = DEFAULT_MAX_RETRY_DELAY,
    ) -> None:
        self.service_url = service_url.rstrip("/")
        self.worker_url = worker_url
        self.bearer_token = bearer_token
        self.request_timeout = request_timeout
        self.retries = CallRetries(max_attempts=max_attempts, max_delay=max_retry_delay)
        self._http: H = http_client or self._new_http_client()

    @staticmethod
    def _new_http_client() -> H:
        """The client's own ``httpx`` client, when none is given."""
        raise NotImplementedError

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self.bearer_token:
            headers["authorization"] = f"Bearer {self.bearer_token}"
        trace = current_trace_context()
        if trace is not None:
            headers.update(trace.headers())
        return headers

    def _request(self, call: Call[Any], content: str) -> httpx.Request:
        """The request of ``call``; ``content`` is its body, the same in every attempt."""
        return self._http.build_request(
            "POST",
            self.service_url + call.path,
            content=content,
            headers=self._headers(),
            timeout=call.timeout,
        )

    @staticmethod
    def _result(call: Call[T], response: httpx.Response) -> T:
        if not response.is_success:
            raise error_from_response(response.status_code, response.content)
        try:
            return call.read(response.content)
        except ValidationError as e:
            raise InvalidResponseError(f"{call.path}: {e}") from e


class SyncTransport(Transport[httpx.Client]):
    """Sends a call over ``httpx.Client``, blocking."""

    def _send(self, call: Call[T]) -> T:
        try:
            return self._send_as_is(call)
        except InvalidRequestError as e:
            if not predates_request_ids(call, e):
                raise
            _log_without_request_id(call)
            return self._send_as_is(without_request_id(call))

    def _send_as_is(self, call: Call[T]) -> T:
        content = call.body.model_dump_json()
        attempt = 1
        while True:
            try:
                response = self._http.send(self._request(call, content))
            except httpx.HTTPError as e:
                pause = self.retries.after_error(call, attempt, e)
                if pause is None:
                    raise _transport_error(e, attempt) from e
                _log_retry(call, attempt, repr(e), pause)
            else:
                pause = self.retries.after_answer(call, attempt, response)
                if pause is None:
                    return self._result(call, response)
                _log_retry(call, attempt, f"HTTP {response.status_code}", pause)
            attempt += 1
            time.sleep(pause)


class AsyncTransport(Transport[httpx.AsyncClient]):
    """Sends a call over ``httpx.AsyncClient``."""

    async def _send(self, call: Call[T]) -> T:
        try:
            return await self._send_as_is(call)
        except InvalidRequestError as e:
            if not predates_request_ids(call, e):
                raise
            _log_without_request_id(call)
            return await self._send_as_is(without_request_id(call))

    async def _send_as_is(self, call: Call[T]) -> T:
        content = call.body.model_dump_json()
        attempt = 1
        while True:
            try:
                response = await self._http.send(self._request(call, content))
            except httpx.HTTPError as e:
                pause = self.retries.after_error(call, attempt, e)
                if pause is None:
                    raise _transport_error(e, attempt) from e
                _log_retry(call, attempt, repr(e), pause)
            else:
                pause = self.retries.after_answer(call, attempt, response)
                if pause is None:
                    return self._result(call, response)
                _log_retry(call, attempt, f"HTTP {response.status_code}", pause)
            attempt += 1
            await asyncio.sleep(pause)
