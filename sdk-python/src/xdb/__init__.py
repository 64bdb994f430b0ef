"""Python SDK for XDB: async processes on your own PostgreSQL or MySQL database.

- Define a process: subclass :class:`Process` and :class:`AsyncState`; declare RPCs with
  :func:`rpc`; read and write attributes through :class:`Persistence` and publish
  through :class:`Communication`.
- Host it: :class:`WorkerService` is an ASGI app serving the worker API; mount it in
  your own service.
- Drive it: :class:`AsyncClient` (or the blocking :class:`Client`) calls the service,
  including the operator's calls (``states``, ``retry_now``, ``give_up``, ``pause``,
  ``resume``, ``reprioritize``).
- Register it: ``await worker.register_definitions(client, WorkerDeployment(...))`` tells
  XDB the hosted processes' definitions, so it checks requests and routes starts;
  ``list_deployments``, ``set_current_deployment`` and ``move_executions`` on a client
  roll back and move executions between deployments (``docs/definitions.md``).
- Pace the calls to a worker: ``flow_limits`` on a process or a state declares how many
  calls a second it takes and how many at once (and, on a process, how many executions
  of a start's ``concurrency_key``, or of the value it writes for the
  ``concurrency_key_attribute``, run at once, and the ``priority``, the
  ``fairness_key_attribute`` and the ``fairness_weight`` of its starts that name none);
  ``set_flow_limits``, ``list_flow_limits`` and ``flow_limit_history`` on a client
  override them, show them and their changes.
- Start it on a schedule: ``schedules`` on a process declares the schedules that start it
  (:class:`ScheduleDeclaration`, with :func:`cron_spec` or :func:`interval_spec`);
  registration creates, changes and deletes them to match.
- Act on many executions: ``start_batch`` applies one operation (terminate, pause,
  publish, reset, move, reprioritize, ...) to every execution a filter selects, as a
  durable job (:mod:`xdb.batch`).

Writes carry a request id, and a call whose answer was lost (a dropped connection, a 503)
is sent again with the same id, a bounded number of times (:mod:`xdb.retries`).
"""

from xdb.client import (
    AsyncClient,
    Client,
    ProcessStartOptions,
    decode_payload,
    local_queue_message,
)
from xdb.command import CommandRequest, CommandResults, LocalQueueCommand, TimerCommand
from xdb.communication import Communication
from xdb.context import Context, TraceContext, current_trace_context, trace_context
from xdb.decision import NextState, StateDecision
from xdb.definitions import export_definition
from xdb.errors import (
    ApiError,
    AppDatabaseError,
    BatchNotFoundError,
    ClientError,
    ControlNotApplicableError,
    DatabaseUnavailableError,
    DefinitionIncompatibleError,
    DefinitionNotFoundError,
    EncodingError,
    ForbiddenError,
    HttpError,
    InternalServiceError,
    InvalidRequestError,
    InvalidResponseError,
    OverloadedError,
    PayloadTooLargeError,
    ProcessAlreadyStartedError,
    ProcessClosedDuringRpcError,
    ProcessNotFoundError,
    ProcessNotRunningError,
    RequestIdConflictError,
    ScheduleAlreadyExistsError,
    ScheduleNotFoundError,
    SchemaError,
    TransportError,
    UnauthorizedError,
    WorkerApiError,
    XdbError,
)
from xdb.history import state_execution_id_of, state_execution_ids_of
from xdb.persistence import Persistence
from xdb.process import Process, ProcessDefinition
from xdb.protocol import (
    AsyncStateConfig,
    BatchDescribeResponse,
    BatchInfo,
    BatchItem,
    BatchItemOutcome,
    BatchListResponse,
    BatchOperation,
    BatchReset,
    BatchStartResponse,
    BatchStatus,
    BusinessTableRef,
    CallPhase,
    ClaimOrder,
    DeploymentRef,
    DeploymentsListResponse,
    DeploymentSummary,
    ErrorSubType,
    ExecutionsMoveResponse,
    FailureRecoveryPolicy,
    FilterNode,
    FlowLimitChange,
    FlowLimits,
    FlowLimitsEntry,
    FlowLimitsHistoryResponse,
    FlowLimitsListResponse,
    FlowLimitSource,
    GlobalAttributeLoading,
    HistoryEventType,
    LocalAttributeLoading,
    LocalQueueCommandStatus,
    LocalQueueMessage,
    LockType,
    ProcessExecutionStopType,
    ProcessIdReusePolicy,
    ProcessStatus,
    RegisterDefinitionsResponse,
    Reprioritization,
    ReprioritizedDetails,
    RetryPolicy,
    ScheduleDeclaration,
    ScheduleOverlapPolicy,
    ScheduleSpec,
    StateApiFailureDetails,
    StateApiName,
    StateExecutionStatus,
    StateFailureRecoveryOptions,
    TimerStatus,
    VersioningPolicy,
    WorkerDeployment,
)
from xdb.rpc import RpcMethod, RpcOptions, rpc
from xdb.schedule import cron_spec, interval_spec
from xdb.schema import (
    CommunicationMethod,
    CommunicationSchema,
    PersistenceField,
    PersistenceSchema,
    StateSchema,
)
from xdb.state import AsyncState
from xdb.worker import WorkerCallError, WorkerService

__all__ = [
    "ApiError",
    "AppDatabaseError",
    "AsyncClient",
    "AsyncState",
    "AsyncStateConfig",
    "BatchDescribeResponse",
    "BatchInfo",
    "BatchItem",
    "BatchItemOutcome",
    "BatchListResponse",
    "BatchNotFoundError",
    "BatchOperation",
    "BatchReset",
    "BatchStartResponse",
    "BatchStatus",
    "BusinessTableRef",
    "CallPhase",
    "ClaimOrder",
    "Client",
    "ClientError",
    "CommandRequest",
    "CommandResults",
    "Communication",
    "CommunicationMethod",
    "CommunicationSchema",
    "Context",
    "ControlNotApplicableError",
    "DatabaseUnavailableError",
    "DefinitionIncompatibleError",
    "DefinitionNotFoundError",
    "DeploymentRef",
    "DeploymentSummary",
    "DeploymentsListResponse",
    "EncodingError",
    "ErrorSubType",
    "ExecutionsMoveResponse",
    "FailureRecoveryPolicy",
    "FilterNode",
    "FlowLimitChange",
    "FlowLimitSource",
    "FlowLimits",
    "FlowLimitsEntry",
    "FlowLimitsHistoryResponse",
    "FlowLimitsListResponse",
    "ForbiddenError",
    "GlobalAttributeLoading",
    "HistoryEventType",
    "HttpError",
    "InternalServiceError",
    "InvalidRequestError",
    "InvalidResponseError",
    "LocalAttributeLoading",
    "LocalQueueCommand",
    "LocalQueueCommandStatus",
    "LocalQueueMessage",
    "LockType",
    "NextState",
    "OverloadedError",
    "PayloadTooLargeError",
    "Persistence",
    "PersistenceField",
    "PersistenceSchema",
    "Process",
    "ProcessAlreadyStartedError",
    "ProcessClosedDuringRpcError",
    "ProcessDefinition",
    "ProcessExecutionStopType",
    "ProcessIdReusePolicy",
    "ProcessNotFoundError",
    "ProcessNotRunningError",
    "ProcessStartOptions",
    "ProcessStatus",
    "RegisterDefinitionsResponse",
    "Reprioritization",
    "ReprioritizedDetails",
    "RequestIdConflictError",
    "RetryPolicy",
    "RpcMethod",
    "RpcOptions",
    "ScheduleAlreadyExistsError",
    "ScheduleDeclaration",
    "ScheduleNotFoundError",
    "ScheduleOverlapPolicy",
    "ScheduleSpec",
    "SchemaError",
    "StateApiFailureDetails",
    "StateApiName",
    "StateDecision",
    "StateExecutionStatus",
    "StateFailureRecoveryOptions",
    "StateSchema",
    "TimerCommand",
    "TimerStatus",
    "TraceContext",
    "TransportError",
    "UnauthorizedError",
    "VersioningPolicy",
    "WorkerApiError",
    "WorkerCallError",
    "WorkerDeployment",
    "WorkerService",
    "XdbError",
    "cron_spec",
    "current_trace_context",
    "decode_payload",
    "export_definition",
    "interval_spec",
    "local_queue_message",
    "rpc",
    "state_execution_id_of",
    "state_execution_ids_of",
    "trace_context",
]
