"""The asyncio client of the XDB service API: :class:`AsyncClient`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
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
from xdb._transport import AsyncTransport
from xdb.batch import AsyncBatchCalls
from xdb.definitions import DefinitionSource
from xdb.flow_limits import AsyncFlowLimitCalls
from xdb.operate import AsyncOperatorCalls
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
from xdb.schedule import AsyncScheduleCalls

InT = TypeVar("InT")
OutT = TypeVar("OutT")


class AsyncClient(
    AsyncTransport,
    ProcessCalls,
    AsyncOperatorCalls,
    AsyncBatchCalls,
    AsyncScheduleCalls,
    AsyncFlowLimitCalls,
):
    """Talks to one XDB service with asyncio; use ``async with`` or call :meth:`aclose`.

    Every call carries the current trace context as ``traceparent`` (inside a worker
    call, the call's own), and ``Authorization: Bearer`` when a token is set. Writes carry
    a request id (``request_id=``, else a UUID made once per call), and a call whose
    answer was lost is sent again as :mod:`xdb.retries` says.
    """

    @staticmethod
    def _new_http_client() -> httpx.AsyncClient:
        return httpx.AsyncClient()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Closes the connection pool."""
        await self._http.aclose()

    async def start_process(
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
        return await self._send(self._start(process_id, process, input, options, request_id))

    async def stop_process(
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
        await self._send(
            self._stop(process_id, stop_type, reason, process_execution_id, request_id)
        )

    async def describe_process(
        self, process_id: str, process_execution_id: str | None = None
    ) -> ProcessExecutionDescribeResponse:
        """Describes the current (or a given) execution of ``process_id``."""
        return await self._send(self._describe(process_id, process_execution_id))

    async def list_processes(
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
        return await self._send(
            self._list(filter, page_size, next_page_token, where, business_table, explain)
        )

    async def count_processes(
        self, request: ProcessExecutionCountRequest | None = None
    ) -> ProcessExecutionCountResponse:
        """Counts executions exactly, optionally per group (``group_by``).

        ``where`` filters them by execution fields and business-row columns (see
        docs/queries.md).
        """
        return await self._send(self._count(request))

    async def get_process_history(
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
        return await self._send(
            self._history(process_id, process_execution_id, after_event_id, page_size, event_types)
        )

    async def iter_process_history(
        self,
        process_id: str,
        process_execution_id: str | None = None,
        *,
        after_event_id: int | None = None,
        page_size: int | None = None,
        event_types: Iterable[HistoryEventType | str] | None = None,
    ) -> AsyncIterator[HistoryEvent]:
        """Every event of the current (or a given) execution after ``after_event_id``.

        Oldest first, fetched ``page_size`` events at a time (``async for``).
        """
        types = list(event_types or ())
        while True:
            page = await self._send(
                self._history(process_id, process_execution_id, after_event_id, page_size, types)
            )
            for event in page.events:
                yield event
            if page.next_after_event_id is None:
                return
            after_event_id = page.next_after_event_id

    async def publish_to_local_queue(
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
        await self._send(self._publish(process_id, [message], process_execution_id, request_id))

    async def publish_messages(
        self,
        process_id: str,
        messages: Iterable[LocalQueueMessage],
        *,
        process_execution_id: str | None = None,
        request_id: str | None = None,
    ) -> None:
        """Publishes 1 to 1000 messages (:func:`local_queue_message`) in one transaction."""
        await self._send(self._publish(process_id, messages, process_execution_id, request_id))

    @overload
    async def invoke_rpc(
        self,
        process_id: str,
        rpc: RpcMethod[Any, InT, OutT],
        input: InT | None = None,
        *,
        process: Process | type[Process] | None = None,
        timeout_seconds: int | None = None,
    ) -> OutT: ...
    @overload
    async def invoke_rpc(
        self,
        process_id: str,
        rpc: str,
        input: Any = None,
        *,
        process: Process | type[Process] | None = None,
        timeout_seconds: int | None = None,
    ) -> Any: ...
    async def invoke_rpc(
        self,
        process_id: str,
        rpc: RpcMethod[Any, Any, Any] | str,
        input: Any = None,
        *,
        process: Process | type[Process] | None = None,
        timeout_seconds: int | None = None,
    ) -> Any:
        """Calls ``rpc`` (e.g. ``UserSignupProcess.verify``) on the current execution.

        Attributes are loaded per the RPC's options; the output is read as the
        method's return type.
        """
        return await self._send(self._rpc(process_id, rpc, input, process, timeout_seconds))

    async def wait_for_completion(
        self, process_id: str, timeout: timedelta | float = 30.0
    ) -> ProcessExecutionWaitForCompletionResponse:
        """Waits up to ``timeout`` for the current execution to close.

        Long-polls as often as the service's per-call limit needs; on timeout the last
        answer comes back with ``timed_out`` set.
        """
        deadline = wait_deadline(timeout)
        while True:
            response = await self._send(self._wait(process_id, deadline))
            if not poll_again(response, deadline):
                return response

    async def register_definitions(
        self,
        deployment: WorkerDeployment,
        definitions: Iterable[DefinitionSource],
        *,
        force: bool = False,
    ) -> RegisterDefinitionsResponse:
        """Registers the definitions of ``definitions`` as deployed by ``deployment``.

        Takes processes (instances or classes), :class:`ProcessDefinition` s or wire
        definitions (:func:`xdb.definitions.export_definition`). Idempotent: a definition
        equal to the current one answers ``changed=False`` and writes nothing. Needs a token
        with role ``deploy``. Raises :class:`~xdb.errors.DefinitionIncompatibleError` when
        running executions wait in states a definition removes (unless ``force``), and
        :class:`~xdb.errors.InvalidRequestError` when a definition does not fit the
        database (a missing table or column, a column of another type).
        """
        return await self._send(self._register_definitions(deployment, definitions, force))

    async def list_definitions(self) -> DefinitionsListResponse:
        """The current revision of every registered process type."""
        return await self._send(self._list_definitions())

    async def describe_definition(
        self, process_type: str | type[Process], revision: int | None = None
    ) -> DefinitionDescribeResponse:
        """A registered process type's definition (current or ``revision``) and its revisions.

        Raises :class:`~xdb.errors.DefinitionNotFoundError` when the type (or revision) is
        not registered.
        """
        return await self._send(self._describe_definition(process_type, revision))

    async def list_deployments(self) -> DeploymentsListResponse:
        """Every deployment that registered definitions, with its running executions.

        Each names its types, the types it is current for, and whether it is drained
        (current for nothing, running nothing: it can be shut down). Needs role ``read``.
        """
        return await self._send(self._list_deployments())

    async def set_current_deployment(
        self, name: str, version: str, force: bool = False
    ) -> RegisterDefinitionsResponse:
        """Makes deployment ``name``@``version`` current again for every type it registered.

        A roll back: its last definition of each type becomes a new revision. Needs role
        ``deploy``. Raises :class:`~xdb.errors.DefinitionNotFoundError` for an unknown
        deployment and :class:`~xdb.errors.DefinitionIncompatibleError` when running
        executions wait in states it lacks (unless ``force``).
        """
        return await self._send(self._set_current_deployment(name, version, force))

    async def move_executions(
        self,
        process_type: str | type[Process],
        to: DeploymentRef | WorkerDeployment,
        from_: DeploymentRef | WorkerDeployment | None = None,
        process_ids: Iterable[str] = (),
    ) -> ExecutionsMoveResponse:
        """Moves running executions of ``process_type`` to deployment ``to``.

        All of them, those on ``from_``, or the named ``process_ids``; each runs its next
        worker call there. Needs role ``operate``. Returns how many moved. Raises
        :class:`~xdb.errors.DefinitionNotFoundError` when ``to`` (or ``from_``) did not
        register the type.
        """
        return await self._send(self._move_executions(process_type, to, from_, process_ids))
