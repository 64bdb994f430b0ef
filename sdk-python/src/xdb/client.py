"""Clients of the XDB service API: :class:`AsyncClient` (asyncio) and :class:`Client` (sync).

The operator's calls (states, retry-now, give-up, pause, resume) are in :mod:`xdb.operate`,
the batch operations in :mod:`xdb.batch`, and when a call is sent again in
:mod:`xdb.retries`.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar, overload

import httpx
from pydantic import ValidationError

from xdb import encoding
from xdb.batch import AsyncBatchCalls, BatchCalls
from xdb.call import Call
from xdb.context import current_trace_context
from xdb.definitions import DefinitionSource, export_definitions
from xdb.errors import (
    InvalidRequestError,
    InvalidResponseError,
    SchemaError,
    TransportError,
    error_from_response,
)
from xdb.operate import AsyncOperatorCalls, OperatorCalls
from xdb.process import Process, ProcessDefinition
from xdb.protocol import (
    COUNT,
    DEFINITIONS_DESCRIBE,
    DEFINITIONS_LIST,
    DEFINITIONS_REGISTER,
    DEPLOYMENTS_LIST,
    DEPLOYMENTS_MOVE,
    DEPLOYMENTS_SET_CURRENT,
    DESCRIBE,
    HISTORY,
    LIST,
    PUBLISH_TO_LOCAL_QUEUE,
    RPC,
    START,
    STOP,
    WAIT_FOR_COMPLETION,
    DefinitionDescribeRequest,
    DefinitionDescribeResponse,
    DefinitionsListRequest,
    DefinitionsListResponse,
    DeploymentRef,
    DeploymentSetCurrentRequest,
    DeploymentsListRequest,
    DeploymentsListResponse,
    EncodedObject,
    ExecutionsMoveRequest,
    ExecutionsMoveResponse,
    GlobalAttributeConfig,
    GlobalAttributeValue,
    HistoryEvent,
    HistoryEventType,
    LocalAttributeValue,
    LocalQueueMessage,
    LockType,
    ProcessExecutionCountRequest,
    ProcessExecutionCountResponse,
    ProcessExecutionDescribeRequest,
    ProcessExecutionDescribeResponse,
    ProcessExecutionHistoryRequest,
    ProcessExecutionHistoryResponse,
    ProcessExecutionListFilter,
    ProcessExecutionListRequest,
    ProcessExecutionListResponse,
    ProcessExecutionRpcRequest,
    ProcessExecutionRpcResponse,
    ProcessExecutionStartRequest,
    ProcessExecutionStartResponse,
    ProcessExecutionStopRequest,
    ProcessExecutionStopType,
    ProcessExecutionWaitForCompletionRequest,
    ProcessExecutionWaitForCompletionResponse,
    ProcessIdReusePolicy,
    ProcessStartConfig,
    ProcessStatus,
    PublishToLocalQueueRequest,
    RegisterDefinitionsRequest,
    RegisterDefinitionsResponse,
    WorkerDeployment,
)
from xdb.retries import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_RETRY_DELAY,
    CallRetries,
    predates_request_ids,
    without_request_id,
)
from xdb.retries import request_id as checked_request_id
from xdb.rpc import RpcMethod

InT = TypeVar("InT")
OutT = TypeVar("OutT")
T = TypeVar("T")
# The transport of a client: the only part that differs between the two.
H = TypeVar("H", httpx.AsyncClient, httpx.Client)

# The longest wait the service grants one wait-for-completion call.
MAX_WAIT_SECONDS = 300
DEFAULT_RPC_TIMEOUT_SECONDS = 10

log = logging.getLogger("xdb.client")


@dataclass(frozen=True)
class ProcessStartOptions:
    """Options of ``start_process``.

    ``global_attribute_pk_value`` picks the execution's row in the process's table
    (required when the process has one); ``initial_global_attributes`` are upserted into
    that row, and ``initial_local_attributes`` written, in the start transaction.
    """

    global_attribute_pk_value: Any = None
    initial_global_attributes: Mapping[str, Any] | None = None
    initial_local_attributes: Mapping[str, Any] | None = None
    id_reuse_policy: ProcessIdReusePolicy | None = None
    timeout: timedelta | float | None = None
    worker_url: str | None = None
    """The worker hosting the process; default the client's. Neither: the URL of the
    deployment that registered the process type (the service answers 400 if none did)."""


def build_start_request(
    definition: ProcessDefinition,
    process_id: str,
    worker_url: str,
    input: Any,
    options: ProcessStartOptions,
) -> ProcessExecutionStartRequest:
    """The start request for ``definition``, checked against its schema.

    Mistakes (an undeclared column, a missing primary-key value) fail here, not in
    the service.
    """
    schema = definition.persistence
    for column in options.initial_global_attributes or {}:
        if column not in schema.global_attributes and column != schema.primary_key:
            raise SchemaError(
                f"global attribute {column!r} is not declared in {definition.process_type}"
            )
    for key in options.initial_local_attributes or {}:
        if key not in schema.local_attributes:
            raise SchemaError(
                f"local attribute {key!r} is not declared in {definition.process_type}"
            )
    global_config: GlobalAttributeConfig | None = None
    if schema.table_name is not None and schema.primary_key is not None:
        if options.global_attribute_pk_value is None:
            raise SchemaError(
                f"{definition.process_type} keeps global attributes in table "
                f"{schema.table_name!r}: global_attribute_pk_value is required"
            )
        global_config = GlobalAttributeConfig(
            table_name=schema.table_name,
            primary_key=GlobalAttributeValue(
                column=schema.primary_key,
                value=encoding.to_json_value(
                    "global attribute primary key value", options.global_attribute_pk_value
                ),
            ),
            initial_write=[
                GlobalAttributeValue(
                    column=c, value=encoding.to_json_value(f"global attribute {c!r}", v)
                )
                for c, v in (options.initial_global_attributes or {}).items()
            ],
        )
    elif options.global_attribute_pk_value is not None or options.initial_global_attributes:
        raise SchemaError(f"{definition.process_type} declares no global attribute table")
    start_input = encoding.encode_optional("start state input", input)
    if definition.starting_state_id is None and start_input is not None:
        raise SchemaError(f"{definition.process_type} has no starting state to take an input")
    timeout = options.timeout
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    return ProcessExecutionStartRequest(
        process_id=process_id,
        process_type=definition.process_type,
        worker_url=worker_url,
        start_state_id=definition.starting_state_id,
        start_state_input=start_input,
        start_state_config=(
            definition.state_config(definition.starting_state_id)
            if definition.starting_state_id is not None
            else None
        ),
        process_start_config=ProcessStartConfig(
            timeout_seconds=math.ceil(seconds) if seconds is not None else None,
            id_reuse_policy=options.id_reuse_policy,
            global_attribute_config=global_config,
            local_attribute_initial_write=[
                LocalAttributeValue(key=k, value=encoding.encode(f"local attribute {k!r}", v))
                for k, v in (options.initial_local_attributes or {}).items()
            ],
        ),
    )


@overload
def decode_payload(obj: EncodedObject | None) -> Any: ...
@overload
def decode_payload(obj: EncodedObject | None, type_: type[OutT]) -> OutT: ...
@overload
def decode_payload(obj: EncodedObject | None, type_: Any) -> Any: ...
def decode_payload(obj: EncodedObject | None, type_: Any = Any) -> Any:
    """A process result, RPC output or message payload read as ``type_``."""
    return encoding.decode("payload", obj, type_)


def local_queue_message(
    queue_name: str, payload: Any = None, dedup_id: str | None = None
) -> LocalQueueMessage:
    """A message for queue ``queue_name``, its ``payload`` encoded (``None``: no payload).

    For ``start_batch(BatchOperation.PUBLISH_TO_LOCAL_QUEUE, messages=[...])``.
    """
    return LocalQueueMessage(
        queue_name=queue_name,
        dedup_id=dedup_id,
        payload=encoding.encode_optional(f"message to local queue {queue_name!r}", payload),
    )


def _no_answer(content: bytes) -> None:
    """The read of calls whose answer carries nothing (stop, publish): the body is ignored."""


def _list_filter(
    status: ProcessStatus | None,
    process_type: str | type[Process] | None,
    process_id: str | None,
    start_time_min_ms: int | None,
    start_time_max_ms: int | None,
) -> ProcessExecutionListFilter:
    if isinstance(process_type, type):
        process_type = ProcessDefinition.of(process_type).process_type
    return ProcessExecutionListFilter(
        status=status,
        process_type=process_type,
        process_id=process_id,
        start_time_min_ms=start_time_min_ms,
        start_time_max_ms=start_time_max_ms,
    )


def _deployment_ref(deployment: DeploymentRef | WorkerDeployment) -> DeploymentRef:
    if isinstance(deployment, WorkerDeployment):
        return DeploymentRef(name=deployment.name, version=deployment.version)
    return deployment


def _deadline(timeout: timedelta | float) -> float:
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    return time.monotonic() + seconds


def _poll_again(response: ProcessExecutionWaitForCompletionResponse, deadline: float) -> bool:
    """Whether wait-for-completion asks again: the service's wait ran out, ours has not."""
    return response.timed_out and time.monotonic() < deadline


def _transport_error(error: httpx.HTTPError, attempts: int) -> TransportError:
    """A request that got no answer, as :class:`TransportError`."""
    tries = f" (after {attempts} attempts)" if attempts > 1 else ""
    return TransportError(f"request to the XDB service failed{tries}: {error!r}")


def _log_retry(call: Call[Any], attempt: int, why: str, pause: float) -> None:
    log.debug("%s: %s; sending it again in %.2f s (attempt %d)", call.path, why, pause, attempt + 1)


def _log_without_request_id(call: Call[Any]) -> None:
    log.debug("%s: the service predates request ids; sending the call without one", call.path)


class _Base(Generic[H]):
    """What both clients share: every request is built, and every answer read, here.

    (The operator's requests are built in :mod:`xdb.operate`, the batches' in
    :mod:`xdb.batch`.) A client adds only the sending of a :class:`~xdb.call.Call` over
    its ``httpx`` client (``httpx.AsyncClient`` or ``httpx.Client``), again when
    :class:`~xdb.retries.CallRetries` says so.

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

    # ---- the calls: one builder each, sent by either client ----

    def _start(
        self,
        process_id: str,
        process: Process | type[Process],
        input: Any,
        options: ProcessStartOptions | None,
        request_id: str | None,
    ) -> Call[str]:
        options = options or ProcessStartOptions()
        # Empty: the service routes the start to the deployment that registered the type.
        worker_url = options.worker_url or self.worker_url or ""
        definition = ProcessDefinition.of(process)
        request = build_start_request(definition, process_id, worker_url, input, options)
        request = request.model_copy(update={"request_id": checked_request_id(request_id)})

        def read(content: bytes) -> str:
            answer = ProcessExecutionStartResponse.model_validate_json(content)
            return answer.process_execution_id

        own = request_id is None
        return Call(START, request, self.request_timeout, read, own_request_id=own)

    def _stop(
        self,
        process_id: str,
        stop_type: ProcessExecutionStopType,
        reason: str | None,
        execution_id: str | None,
        request_id: str | None,
    ) -> Call[None]:
        body = ProcessExecutionStopRequest(
            request_id=checked_request_id(request_id),
            process_id=process_id,
            process_execution_id=execution_id,
            stop_type=stop_type,
            reason=reason,
        )
        own = request_id is None
        return Call(STOP, body, self.request_timeout, _no_answer, own_request_id=own)

    def _describe(
        self, process_id: str, execution_id: str | None
    ) -> Call[ProcessExecutionDescribeResponse]:
        body = ProcessExecutionDescribeRequest(
            process_id=process_id, process_execution_id=execution_id
        )
        read = ProcessExecutionDescribeResponse.model_validate_json
        return Call(DESCRIBE, body, self.request_timeout, read)

    def _list(
        self,
        filter: ProcessExecutionListFilter,
        page_size: int | None,
        next_page_token: str | None,
    ) -> Call[ProcessExecutionListResponse]:
        body = ProcessExecutionListRequest(
            filter=filter, page_size=page_size, next_page_token=next_page_token
        )
        read = ProcessExecutionListResponse.model_validate_json
        return Call(LIST, body, self.request_timeout, read)

    def _count(
        self, request: ProcessExecutionCountRequest | None
    ) -> Call[ProcessExecutionCountResponse]:
        body = request or ProcessExecutionCountRequest()
        read = ProcessExecutionCountResponse.model_validate_json
        return Call(COUNT, body, self.request_timeout, read)

    def _history(
        self,
        process_id: str,
        execution_id: str | None,
        after_event_id: int | None = None,
        page_size: int | None = None,
        event_types: Iterable[HistoryEventType | str] | None = None,
    ) -> Call[ProcessExecutionHistoryResponse]:
        types = [HistoryEventType(t) for t in event_types or ()]
        body = ProcessExecutionHistoryRequest(
            process_id=process_id,
            process_execution_id=execution_id,
            after_event_id=after_event_id,
            page_size=page_size,
            event_types=types,
        )
        read = ProcessExecutionHistoryResponse.model_validate_json
        return Call(HISTORY, body, self.request_timeout, read)

    def _publish(
        self,
        process_id: str,
        messages: Iterable[LocalQueueMessage],
        execution_id: str | None,
        request_id: str | None,
    ) -> Call[None]:
        body = PublishToLocalQueueRequest(
            request_id=checked_request_id(request_id),
            process_id=process_id,
            process_execution_id=execution_id,
            messages=list(messages),
        )
        own = request_id is None
        return Call(
            PUBLISH_TO_LOCAL_QUEUE, body, self.request_timeout, _no_answer, own_request_id=own
        )

    def _rpc(
        self,
        process_id: str,
        rpc: RpcMethod[Any, Any, Any] | str,
        input: Any,
        process: Process | type[Process] | None,
        timeout_seconds: int | None,
    ) -> Call[Any]:
        if isinstance(rpc, RpcMethod):
            source: Process | type[Process] | None = process or rpc.owner
            if source is None:
                raise SchemaError(f"rpc {rpc.name!r} is not a method of a Process class")
            definition = ProcessDefinition.of(source)
            method = definition.rpc(rpc.name)
        else:
            if process is None:
                raise SchemaError("an rpc given by name needs process=")
            definition = ProcessDefinition.of(process)
            method = definition.rpc(rpc)
        options = method.options
        lock = options.lock or LockType.NO_LOCK
        body = ProcessExecutionRpcRequest(
            process_id=process_id,
            rpc_name=method.name,
            input=encoding.encode_optional(f"input of rpc {method.name!r}", input),
            timeout_seconds=timeout_seconds or options.timeout_seconds,
            global_attribute_loading=(
                options.global_attribute_loading or definition.default_global_loading(lock)
            ),
            local_attribute_loading=(
                options.local_attribute_loading or definition.default_local_loading(lock)
            ),
        )
        output_type = method.output_type()

        def read(content: bytes) -> Any:
            answer = ProcessExecutionRpcResponse.model_validate_json(content)
            return encoding.decode("rpc output", answer.output, output_type)

        worker_seconds = body.timeout_seconds or DEFAULT_RPC_TIMEOUT_SECONDS
        return Call(RPC, body, self.request_timeout + worker_seconds, read)

    def _wait(
        self, process_id: str, deadline: float
    ) -> Call[ProcessExecutionWaitForCompletionResponse]:
        """One long poll: as long as the service grants one call, up to ``deadline``."""
        seconds = max(1, min(MAX_WAIT_SECONDS, math.ceil(deadline - time.monotonic())))
        body = ProcessExecutionWaitForCompletionRequest(
            process_id=process_id, timeout_seconds=seconds
        )
        read = ProcessExecutionWaitForCompletionResponse.model_validate_json
        return Call(WAIT_FOR_COMPLETION, body, seconds + self.request_timeout, read)

    def _register_definitions(
        self,
        deployment: WorkerDeployment,
        definitions: Iterable[DefinitionSource],
        force: bool,
    ) -> Call[RegisterDefinitionsResponse]:
        body = RegisterDefinitionsRequest(
            deployment=deployment, definitions=export_definitions(definitions), force=force
        )
        if not body.definitions:
            raise SchemaError("register_definitions needs at least one process")
        read = RegisterDefinitionsResponse.model_validate_json
        return Call(DEFINITIONS_REGISTER, body, self.request_timeout, read)

    def _list_definitions(self) -> Call[DefinitionsListResponse]:
        read = DefinitionsListResponse.model_validate_json
        return Call(DEFINITIONS_LIST, DefinitionsListRequest(), self.request_timeout, read)

    def _describe_definition(
        self, process_type: str | type[Process], revision: int | None
    ) -> Call[DefinitionDescribeResponse]:
        if isinstance(process_type, type):
            process_type = ProcessDefinition.of(process_type).process_type
        body = DefinitionDescribeRequest(process_type=process_type, revision=revision)
        read = DefinitionDescribeResponse.model_validate_json
        return Call(DEFINITIONS_DESCRIBE, body, self.request_timeout, read)

    def _list_deployments(self) -> Call[DeploymentsListResponse]:
        read = DeploymentsListResponse.model_validate_json
        return Call(DEPLOYMENTS_LIST, DeploymentsListRequest(), self.request_timeout, read)

    def _set_current_deployment(
        self, name: str, version: str, force: bool
    ) -> Call[RegisterDefinitionsResponse]:
        body = DeploymentSetCurrentRequest(
            deployment=DeploymentRef(name=name, version=version), force=force
        )
        read = RegisterDefinitionsResponse.model_validate_json
        return Call(DEPLOYMENTS_SET_CURRENT, body, self.request_timeout, read)

    def _move_executions(
        self,
        process_type: str | type[Process],
        to: DeploymentRef | WorkerDeployment,
        from_: DeploymentRef | WorkerDeployment | None,
        process_ids: Iterable[str],
    ) -> Call[ExecutionsMoveResponse]:
        if not isinstance(process_type, str):
            process_type = ProcessDefinition.of(process_type).process_type
        body = ExecutionsMoveRequest(
            process_type=process_type,
            to=_deployment_ref(to),
            from_=_deployment_ref(from_) if from_ is not None else None,
            process_ids=list(process_ids),
        )
        read = ExecutionsMoveResponse.model_validate_json
        return Call(DEPLOYMENTS_MOVE, body, self.request_timeout, read)


class AsyncClient(_Base[httpx.AsyncClient], AsyncOperatorCalls, AsyncBatchCalls):
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
    ) -> ProcessExecutionListResponse:
        """A page of executions matching every filter given, newest first."""
        filter = _list_filter(
            status, process_type, process_id, start_time_min_ms, start_time_max_ms
        )
        return await self._send(self._list(filter, page_size, next_page_token))

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
        deadline = _deadline(timeout)
        while True:
            response = await self._send(self._wait(process_id, deadline))
            if not _poll_again(response, deadline):
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


class Client(_Base[httpx.Client], OperatorCalls, BatchCalls):
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
    ) -> ProcessExecutionListResponse:
        """A page of executions matching every filter given, newest first."""
        filter = _list_filter(
            status, process_type, process_id, start_time_min_ms, start_time_max_ms
        )
        return self._send(self._list(filter, page_size, next_page_token))

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
        deadline = _deadline(timeout)
        while True:
            response = self._send(self._wait(process_id, deadline))
            if not _poll_again(response, deadline):
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
