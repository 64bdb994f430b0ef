"""Clients of the XDB service API: :class:`AsyncClient` (asyncio) and :class:`Client` (sync).

They are written by concern: the two clients (:mod:`xdb._async_client`,
:mod:`xdb._sync_client`), how a call is sent (:mod:`xdb._transport`), the process,
definitions and deployments calls (:mod:`xdb._process_calls`) and the start request
(:mod:`xdb._start`); the operator's calls (states, retry-now, give-up, pause, resume) are
in :mod:`xdb.operate`, the batch operations in :mod:`xdb.batch`, and when a call is sent
again in :mod:`xdb.retries`. Import them from here (or from :mod:`xdb`).
"""

from __future__ import annotations

from xdb._async_client import AsyncClient
from xdb._process_calls import (
    DEFAULT_RPC_TIMEOUT_SECONDS,
    MAX_WAIT_SECONDS,
    decode_payload,
    local_queue_message,
)
from xdb._start import ProcessStartOptions, build_start_request
from xdb._sync_client import Client

__all__ = [
    "DEFAULT_RPC_TIMEOUT_SECONDS",
    "MAX_WAIT_SECONDS",
    "AsyncClient",
    "Client",
    "ProcessStartOptions",
    "build_start_request",
    "decode_payload",
    "local_queue_message",
]
