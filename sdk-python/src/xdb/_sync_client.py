"""The blocking client of the XDB service API: :class:`Client`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import timedelta
from typing import Any, TypeVar, overload

import httpx

from xdb._process_calls import (
    ProcessCalls,
    list_filter,
    local_queue_message,
    poll_again,
    wait_deadline,
)
from xdb._start import ProcessStartOptions
from xdb._transport import SyncTransport
from xdb.batch import BatchCalls
from xdb.definitions import DefinitionSource
from xdb.flow_limits import FlowLimitCalls
from xdb.operate import OperatorCalls
from xdb.process import Process
from xdb.protocol import (
    BusinessTableRef,
    DefinitionDescribeResponse,
    DefinitionsListResponse,
    DeploymentRef,
    DeploymentsListResponse,
    ExecutionsMoveResponse,
    FilterNode,
    HistoryEvent,
    HistoryEventType,
    LocalQueueMessage,
    ProcessExecutionCountRequest,
    ProcessExecutionCountResponse,
    ProcessExecutionDescribeResponse,
    ProcessExecutionHistoryResponse,
    ProcessExecutionListResponse,
    ProcessExecutionStopType,
    ProcessExecutionWaitForCompletionResponse,
    ProcessStatus,
    RegisterDefinitionsResponse,
    WorkerDeployment,
)
from xdb.rpc import RpcMethod
from xdb.schedule import ScheduleCalls

InT = TypeVar("InT")
OutT = TypeVar("OutT")


class Client(SyncTransport, ProcessCalls, OperatorCalls, BatchCalls, ScheduleCalls, FlowLimitCalls):
    """Talks to one XDB service, blocking; the same calls as :class:`AsyncClient`."""

    @staticmethod
    def _new_http_client() -> httpx.Client:
        return httpx.Client()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection pool."""
        self._http.close()

    def start_process(
        self,
        process_id: str,
        process: Process | type[Process],
        input: Any = None,
        options: ProcessStartOptions | None = None,
        *,
        request_id: str | None = None,
    ) -> str:
        """Starts ``process`` as ``process_id``; returns the new execution's id.

        ``request_id`` makes the start idempotent for 24 hours: sent again with the same
        id and body, it answers the first start's execution without starting another (by
        default the client makes one id per call, and sends it again on a lost answer).
        """
        return self._send(self._start(process_id, process, input, options, request_id))

    def stop_process(
        self,
        process_id: str,
        stop_type: ProcessExecutionStopType = ProcessExecutionStopType.TERMINATE,
        reason: str | None = None,
        *,
        process_execution_id: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Ends the current execution of ``process_id``.

        With ``process_execution_id``, only if that execution is the current one.
        """
        self._send(self._stop(process_id, stop_type, reason, process_execution_id, request_id))

    def describe_process(
        self, process_id: str, process_execution_id: str | None = None
    ) -> ProcessExecutionDescribeResponse:
        """Describes the current (or a given) execution of ``process_id``."""
        return self._send(self._describe(process_id, process_execution_id))

    def list_processes(
        self,
        *,
        status: ProcessStatus | None = None,
        process_type: str | type[Process] | None = None,
        process_id: str | None = None,
        start_time_min_ms: int | None = None,
        start_time_max_ms: int | None = None,
        page_size: int | None = None,
        next_page_token: str | None = None,
        where: FilterNode | Mapping[str, Any] | None = None,
        business_table: BusinessTableRef | None = None,
        explain: bool = False,
    ) -> ProcessExecutionListResponse:
        """A page of executions matching every filter given, newest first.

        ``where`` filters by execution fields and business-row columns, as
        ``count_processes`` takes it (a :class:`~xdb.protocol.FilterNode` or its JSON form;
        see docs/queries.md); ``business_table`` names the type's table when no registered
        definition declares it. ``explain`` (with ``where``) answers the database's plan
        (``plan``: whether an index serves the filter) instead of the page.
        """
        filter = list_filter(status, process_type, process_id, start_time_min_ms, start_time_max_ms)
        return self._send(
            self._list(filter, page_size, next_page_token, where, business_table, explain)
        )

    def count_processes(
        self, request: ProcessExecutionCountRequest | None = None
    ) -> ProcessExecutionCountResponse:
        """Counts executions exactly, optionally per group (``group_by``).

        ``where`` filters them by execution fields and business-row columns (see
        docs/queries.md).
        """
        return self._send(self._count(request))

    def get_process_history(
        self,
        process_id: str,
        process_execution_id: str | None = None,
        *,
        after_event_id: int | None = None,
        page_size: int | None = None,
        event_types: Iterable[HistoryEventType | str] | None = None,
    ) -> ProcessExecutionHistoryResponse:
        """A page of the events of the current (or a given) execution, oldest first.

        ``after_event_id`` is the previous page's ``next_after_event_id`` (set when more
        events follow); ``page_size`` is 1 to 1000 (1000 when absent); ``event_types``
        keeps only those types (every type when absent or empty).
        """
        return self._send(
            self._history(process_id, process_execution_id, after_event_id, page_size, event_types)
        )

    def iter_process_history(
        self,
        process_id: str,
        process_execution_id: str | None = None,
        *,
        after_event_id: int | None = None,
        page_size: int | None = None,
        event_types: Iterable[HistoryEventType | str] | None = None,
    ) -> Iterator[HistoryEvent]:
        """Every event of the current (or a given) execution after ``after_event_id``.

        Oldest first, fetched ``page_size`` events at a time.
        """
        types = list(event_types or ())
        while True:
            page = self._send(
                self._history(process_id, process_execution_id, after_event_id, page_size, types)
            )
            yield from page.events
            if page.next_after_event_id is None:
                return
            after_event_id = page.next_after_event_id

    def publish_to_local_queue(
        self,
        process_id: str,
        queue_name: str,
        payload: Any = None,
        dedup_id: str | None = None,
        *,
        process_execution_id: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Publishes ``payload`` to queue ``queue_name`` of the current execution.

        With ``process_execution_id``, only if that execution is the current one.
        """
        message = local_queue_message(queue_name, payload, dedup_id)
        self._send(self._publish(process_id, [message], process_execution_id, request_id))

    def publish_messages(
        self,
        process_id: str,
        messages: Iterable[LocalQueueMessage],
        *,
        process_execution_id: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Publishes 1 to 1000 messages (:func:`local_queue_message`) in one transaction."""
        self._send(self._publish(process_id, messages, process_execution_id, request_id))

    @overload
    def invoke_rpc(
        self,
        process_id: str,
        rpc: RpcMethod[Any, InT, OutT],
        input: InT | None = None,
        *,
        process: Process | type[Process] | None = None,
        timeout_seconds: int | None = None,
    ) -> OutT: ...
    @overload
    def invoke_rpc(
        self,
        process_id: str,
        rpc: str,
        input: Any = None,
        *,
        process: Process | type[Process] | None = None,
        timeout_seconds: int | None = None,
    ) -> Any: ...
    def invoke_rpc(
        self,
        process_id: str,
        rpc: RpcMethod[Any, Any, Any] | str,
        input: Any = None,
        *,
        process: Process | type[Process] | None = None,
        timeout_seconds: int | None = None,
    ) -> Any:
        """Calls ``rpc`` on the current execution; see :meth:`AsyncClient.invoke_rpc`."""
        return self._send(self._rpc(process_id, rpc, input, process, timeout_seconds))

    def wait_for_completion(
        self, process_id: str, timeout: timedelta | float = 30.0
    ) -> ProcessExecutionWaitForCompletionResponse:
        """Waits up to ``timeout`` for the current execution to close."""
        deadline = wait_deadline(timeout)
        while True:
            response = self._send(self._wait(process_id, deadline))
            if not poll_again(response, deadline):
                return response

    def register_definitions(
        self,
        deployment: WorkerDeployment,
        definitions: Iterable[DefinitionSource],
        *,
        force: bool = False,
    ) -> RegisterDefinitionsResponse:
        """Registers definitions; see :meth:`AsyncClient.register_definitions`."""
        return self._send(self._register_definitions(deployment, definitions, force))

    def list_definitions(self) -> DefinitionsListResponse:
        """The current revision of every registered process type."""
        return self._send(self._list_definitions())

    def describe_definition(
        self, process_type: str | type[Process], revision: int | None = None
    ) -> DefinitionDescribeResponse:
        """A registered process type's definition; see :meth:`AsyncClient.describe_definition`."""
        return self._send(self._describe_definition(process_type, revision))

    def list_deployments(self) -> DeploymentsListResponse:
        """Every deployment with its types, current-for types and running executions."""
        return self._send(self._list_deployments())

    def set_current_deployment(
        self, name: str, version: str, force: bool = False
    ) -> RegisterDefinitionsResponse:
        """Makes deployment ``name``@``version`` current again for every type it registered."""
        return self._send(self._set_current_deployment(name, version, force))

    def move_executions(
        self,
        process_type: str | type[Process],
        to: DeploymentRef | WorkerDeployment,
        from_: DeploymentRef | WorkerDeployment | None = None,
        process_ids: Iterable[str] = (),
    ) -> ExecutionsMoveResponse:
        """Moves running executions of ``process_type`` to ``to``; see the async client."""
        return self._send(self._move_executions(process_type, to, from_, process_ids))
