"""Flow limits of both clients: how fast a process type's worker is called.

A process type (all its states' calls together) or one of its states may be limited to
at most so many worker calls a second (``max_calls_per_second``) and to at most so many
running at once (``max_concurrent_calls``), across all async instances; a type may also
be limited to at most so many executions running at once per concurrency key
(``max_running_executions``, the start's ``concurrency_key`` or, when it names none and
the limits name a ``concurrency_key_attribute``, the value it writes for that global
attribute), the others waiting ``PENDING`` in start order until one of their key closes.
A type's limits may also give the priority of its starts that name none (``priority``, 1
claimed first to 5; not a limit: it orders which waiting tasks are claimed first), and
their fairness key and weight (``fairness_key_attribute``, the global attribute whose
written value is the key of a start that names none, and ``fairness_weight``, 1 to 1,000,
of its keyed starts that name none; not limits either: they share claims between keys).
A definition declares limits at registration (:attr:`xdb.Process.flow_limits`,
:attr:`xdb.AsyncState.flow_limits`); an operator overrides them at run time with
:meth:`set_flow_limits` and clears the override to return to the declared ones. Every
change, by a registration or an operator, is kept in an audit history.
"""

from __future__ import annotations

from typing import TypeVar

from xdb.call import Call
from xdb.protocol import (
    FLOW_LIMITS_HISTORY,
    FLOW_LIMITS_LIST,
    FLOW_LIMITS_SET,
    FlowLimits,
    FlowLimitsEntry,
    FlowLimitsHistoryRequest,
    FlowLimitsHistoryResponse,
    FlowLimitsListRequest,
    FlowLimitsListResponse,
    FlowLimitsSetRequest,
)

T = TypeVar("T")


class _FlowLimitRequests:
    """Builds the flow-limit calls; each client sends them its own way."""

    request_timeout: float

    def _set_flow_limits_call(
        self,
        process_type: str,
        override: FlowLimits | None,
        state_id: str | None,
        reason: str | None,
    ) -> Call[FlowLimitsEntry]:
        body = FlowLimitsSetRequest(
            process_type=process_type, state_id=state_id, override=override, reason=reason
        )
        return Call(
            FLOW_LIMITS_SET, body, self.request_timeout, FlowLimitsEntry.model_validate_json
        )

    def _list_flow_limits_call(self, process_type: str | None) -> Call[FlowLimitsListResponse]:
        body = FlowLimitsListRequest(process_type=process_type)
        return Call(
            FLOW_LIMITS_LIST,
            body,
            self.request_timeout,
            FlowLimitsListResponse.model_validate_json,
        )

    def _flow_limit_history_call(
        self, process_type: str | None, page_size: int | None, next_page_token: str | None
    ) -> Call[FlowLimitsHistoryResponse]:
        body = FlowLimitsHistoryRequest(
            process_type=process_type, page_size=page_size, next_page_token=next_page_token
        )
        return Call(
            FLOW_LIMITS_HISTORY,
            body,
            self.request_timeout,
            FlowLimitsHistoryResponse.model_validate_json,
        )


class AsyncFlowLimitCalls(_FlowLimitRequests):
    """The flow-limit calls of :class:`~xdb.AsyncClient`."""

    async def _send(self, call: Call[T]) -> T:
        raise NotImplementedError

    async def set_flow_limits(
        self,
        process_type: str,
        override: FlowLimits | None,
        *,
        state_id: str | None = None,
        reason: str | None = None,
    ) -> FlowLimitsEntry:
        """Sets an operator's override of a type's (or a state's) limits; ``None`` clears it.

        ``FlowLimits()`` is no limit, whatever the definition declares; once cleared, the
        declared limits apply again. Answers the entry as it now is. A bad rate or
        concurrency (``override.maxConcurrentCalls`` of 0, say), ``max_running_executions``
        on a state (``override.maxRunningExecutions``: it is the type's), a
        ``concurrency_key_attribute`` that is not a column name, comes without
        ``max_running_executions`` or is given for a state
        (``override.concurrencyKeyAttribute``), a ``priority`` outside 1 to 5 or given for a
        state (``override.priority``: it is the type's), a ``fairness_key_attribute`` that
        is not a column name or is given for a state (``override.fairnessKeyAttribute``), a
        ``fairness_weight`` outside 1 to 1,000 or given for a state
        (``override.fairnessWeight``), a state
        the registered type does not have or a too-long reason raises
        ``InvalidRequestError`` naming the field, and changes nothing. Sending the same
        override twice leaves the same override, so it is sent again like a read.
        """
        return await self._send(
            self._set_flow_limits_call(process_type, override, state_id, reason)
        )

    async def list_flow_limits(self, *, process_type: str | None = None) -> FlowLimitsListResponse:
        """The limits declared, overridden and in force, by process type and state."""
        return await self._send(self._list_flow_limits_call(process_type))

    async def flow_limit_history(
        self,
        *,
        process_type: str | None = None,
        page_size: int | None = None,
        next_page_token: str | None = None,
    ) -> FlowLimitsHistoryResponse:
        """A page of changes of limits, by registrations and operators, newest first."""
        return await self._send(
            self._flow_limit_history_call(process_type, page_size, next_page_token)
        )


class FlowLimitCalls(_FlowLimitRequests):
    """The flow-limit calls of :class:`~xdb.Client`, as :class:`AsyncFlowLimitCalls`."""

    def _send(self, call: Call[T]) -> T:
        raise NotImplementedError

    def set_flow_limits(
        self,
        process_type: str,
        override: FlowLimits | None,
        *,
        state_id: str | None = None,
        reason: str | None = None,
    ) -> FlowLimitsEntry:
        """Sets an operator's override of a type's (or a state's) limits; ``None`` clears it.

        As :meth:`AsyncFlowLimitCalls.set_flow_limits`.
        """
        return self._send(self._set_flow_limits_call(process_type, override, state_id, reason))

    def list_flow_limits(self, *, process_type: str | None = None) -> FlowLimitsListResponse:
        """The limits declared, overridden and in force, by process type and state."""
        return self._send(self._list_flow_limits_call(process_type))

    def flow_limit_history(
        self,
        *,
        process_type: str | None = None,
        page_size: int | None = None,
        next_page_token: str | None = None,
    ) -> FlowLimitsHistoryResponse:
        """A page of changes of limits, by registrations and operators, newest first."""
        return self._send(self._flow_limit_history_call(process_type, page_size, next_page_token))
