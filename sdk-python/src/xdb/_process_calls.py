"""The process, definitions and deployments calls: one builder each, for either client.

Start, stop, describe, list, count, history, publish, RPC and wait, and the definitions'
and deployments' calls. The operator's requests are built in :mod:`xdb.operate`, the
batches' in :mod:`xdb.batch`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any, TypeVar, overload

from xdb import encoding
from xdb._start import ProcessStartOptions, build_start_request
from xdb.call import Call
from xdb.definitions import DefinitionSource, export_definitions
from xdb.errors import SchemaError
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
    BusinessTableRef,
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
    FilterNode,
    HistoryEventType,
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
    ProcessExecutionStartResponse,
    ProcessExecutionStopRequest,
    ProcessExecutionStopType,
    ProcessExecutionWaitForCompletionRequest,
    ProcessExecutionWaitForCompletionResponse,
    ProcessStatus,
    PublishToLocalQueueRequest,
    RegisterDefinitionsRequest,
    RegisterDefinitionsResponse,
    WorkerDeployment,
)
from xdb.retries import request_id as checked_request_id
from xdb.rpc import RpcMethod

OutT = TypeVar("OutT")

# The longest wait the service grants one wait-for-completion call.
MAX_WAIT_SECONDS = 300
DEFAULT_RPC_TIMEOUT_SECONDS = 10


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


def list_filter(
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


def filter_node(where: FilterNode | Mapping[str, Any] | None) -> FilterNode | None:
    """A ``where`` tree given as a :class:`~xdb.protocol.FilterNode` or its JSON form."""
    if where is None or isinstance(where, FilterNode):
        return where
    return FilterNode.model_validate(where)


def _deployment_ref(deployment: DeploymentRef | WorkerDeployment) -> DeploymentRef:
    if isinstance(deployment, WorkerDeployment):
        return DeploymentRef(name=deployment.name, version=deployment.version)
    return deployment


def wait_deadline(timeout: timedelta | float) -> float:
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)
    return time.monotonic() + seconds


def poll_again(response: ProcessExecutionWaitForCompletionResponse, deadline: float) -> bool:
    """Whether wait-for-completion asks again: the service's wait ran out, ours has not."""
    return response.timed_out and time.monotonic() < deadline


class ProcessCalls:
    """Builds the process, definitions and deployments calls; each client sends them."""

    request_timeout: float
    worker_url: str | None

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
        where: FilterNode | Mapping[str, Any] | None = None,
        business_table: BusinessTableRef | None = None,
        explain: bool = False,
    ) -> Call[ProcessExecutionListResponse]:
        body = ProcessExecutionListRequest(
            filter=filter,
            page_size=page_size,
            next_page_token=next_page_token,
            where=filter_node(where),
            business_table=business_table,
            explain=explain,
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
