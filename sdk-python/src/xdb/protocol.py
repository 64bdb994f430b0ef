"""The XDB REST contract as pydantic models (see ``xdb-protocol/openapi.json``).

Field names are snake_case in Python and camelCase on the wire. Answers are read
leniently (unknown fields ignored) so that a newer service keeps working with this SDK;
absent optional fields are left out of what the SDK sends.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

T = TypeVar("T")


def _is_none(value: object) -> bool:
    return value is None


# An optional field that is left out of the JSON when unset, as the Rust SDK does.
Opt = Annotated[T | None, Field(exclude_if=_is_none)]

# Paths of the service API (clients call them on the XDB API service).
SERVICE_PREFIX = "/api/v1/xdb/service/process-execution"
START = f"{SERVICE_PREFIX}/start"
STOP = f"{SERVICE_PREFIX}/stop"
DESCRIBE = f"{SERVICE_PREFIX}/describe"
LIST = f"{SERVICE_PREFIX}/list"
HISTORY = f"{SERVICE_PREFIX}/history"
PUBLISH_TO_LOCAL_QUEUE = f"{SERVICE_PREFIX}/publish-to-local-queue"
RPC = f"{SERVICE_PREFIX}/rpc"
WAIT_FOR_COMPLETION = f"{SERVICE_PREFIX}/wait-for-completion"
STATES = f"{SERVICE_PREFIX}/states"
RETRY_NOW = f"{SERVICE_PREFIX}/retry-now"
GIVE_UP = f"{SERVICE_PREFIX}/give-up"
PAUSE = f"{SERVICE_PREFIX}/pause"
RESUME = f"{SERVICE_PREFIX}/resume"
OPENAPI = "/api/v1/xdb/openapi.json"

# Paths of the worker API (XDB calls them on the worker URL given at start).
WORKER_WAIT_UNTIL = "/api/v1/xdb/worker/async-state/wait-until"
WORKER_EXECUTE = "/api/v1/xdb/worker/async-state/execute"
WORKER_RPC = "/api/v1/xdb/worker/process/rpc"


class WireModel(BaseModel):
    """Base of every wire model: camelCase on the wire, unknown fields ignored."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON object sent over the wire."""
        return self.model_dump(mode="json")


# ---- enums ----


class LockType(StrEnum):
    """How a row is locked while attributes are loaded for a call."""

    NO_LOCK = "NO_LOCK"
    SHARED_LOCK = "SHARED_LOCK"
    EXCLUSIVE_LOCK = "EXCLUSIVE_LOCK"


class ProcessIdReusePolicy(StrEnum):
    """What a start does when the process id already has an execution."""

    ALLOW_IF_NO_RUNNING = "ALLOW_IF_NO_RUNNING"
    ALLOW_IF_PREVIOUS_EXIT_ABNORMALLY = "ALLOW_IF_PREVIOUS_EXIT_ABNORMALLY"
    DISALLOW_REUSE = "DISALLOW_REUSE"
    TERMINATE_IF_RUNNING = "TERMINATE_IF_RUNNING"


class FailureRecoveryPolicy(StrEnum):
    """What happens when a state API exhausts its retry policy."""

    FAIL_PROCESS_ON_STATE_FAILURE = "FAIL_PROCESS_ON_STATE_FAILURE"
    PROCEED_TO_CONFIGURED_STATE = "PROCEED_TO_CONFIGURED_STATE"


class ProcessStatus(StrEnum):
    """Status of a process execution."""

    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    TERMINATED = "TERMINATED"


class ProcessExecutionStopType(StrEnum):
    """How ``stop`` ends an execution."""

    TERMINATE = "TERMINATE"
    FAIL = "FAIL"


class CommandWaitingType(StrEnum):
    """How the commands of a waitUntil combine."""

    ANY_OF_COMPLETION = "ANY_OF_COMPLETION"
    ALL_OF_COMPLETION = "ALL_OF_COMPLETION"


class TimerStatus(StrEnum):
    """Whether a timer command fired."""

    FIRED = "FIRED"
    SKIPPED = "SKIPPED"


class LocalQueueCommandStatus(StrEnum):
    """Whether a local-queue command received its messages."""

    RECEIVED = "RECEIVED"
    SKIPPED = "SKIPPED"


class ThreadCloseType(StrEnum):
    """How a thread of a process ends."""

    GRACEFUL_COMPLETE_PROCESS = "GRACEFUL_COMPLETE_PROCESS"
    FORCE_COMPLETE_PROCESS = "FORCE_COMPLETE_PROCESS"
    FORCE_FAIL_PROCESS = "FORCE_FAIL_PROCESS"
    DEAD_END = "DEAD_END"


class HistoryEventType(StrEnum):
    """The kind of a history event (the document types each one's ``details``)."""

    PROCESS_STARTED = "PROCESS_STARTED"
    PROCESS_CLOSED = "PROCESS_CLOSED"
    WAIT_UNTIL_COMPLETED = "WAIT_UNTIL_COMPLETED"
    EXECUTE_COMPLETED = "EXECUTE_COMPLETED"
    STATE_API_FAILED = "STATE_API_FAILED"
    STATE_FAILED = "STATE_FAILED"
    TIMER_FIRED = "TIMER_FIRED"
    LOCAL_QUEUE_MESSAGES_PUBLISHED = "LOCAL_QUEUE_MESSAGES_PUBLISHED"
    LOCAL_QUEUE_MESSAGES_CONSUMED = "LOCAL_QUEUE_MESSAGES_CONSUMED"
    RPC_COMPLETED = "RPC_COMPLETED"
    RETRY_REQUESTED = "RETRY_REQUESTED"
    GIVE_UP_REQUESTED = "GIVE_UP_REQUESTED"
    PAUSED = "PAUSED"
    RESUMED = "RESUMED"
    TASK_PARKED = "TASK_PARKED"


class StateApiName(StrEnum):
    """Which state API a failure or pending call is about."""

    WAIT_UNTIL = "waitUntil"
    EXECUTE = "execute"


class StateExecutionStatus(StrEnum):
    """Where a state execution is in its life."""

    WAIT_UNTIL_RUNNING = "WAIT_UNTIL_RUNNING"
    """Its waitUntil is due, waiting for a retry, or being called."""
    WAITING_COMMANDS = "WAITING_COMMANDS"
    """Its waitUntil answered; it waits for its commands (``waiting_for``)."""
    EXECUTE_RUNNING = "EXECUTE_RUNNING"
    """Its execute is due, waiting for a retry, or being called."""
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    """Its waitUntil or execute failed for good."""
    ABORTED = "ABORTED"
    """Ended by the process closing."""


class CallPhase(StrEnum):
    """Where a state's pending waitUntil or execute call is."""

    SCHEDULED = "SCHEDULED"
    """Due at ``due_timestamp_ms`` (in the past: waiting for an async-service instance)."""
    RUNNING = "RUNNING"
    """An async-service instance holds it: the worker is being called."""
    PARKED = "PARKED"
    """Set aside until someone acts: see ``parked_reason``, and ``retry_now``."""
    PAUSED = "PAUSED"
    """Held while the execution is paused; due again when it resumes."""


class ErrorSubType(StrEnum):
    """Machine-readable kind of a service error; each has one HTTP status."""

    INVALID_REQUEST = "INVALID_REQUEST"
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    PROCESS_NOT_FOUND = "PROCESS_NOT_FOUND"
    PROCESS_ALREADY_STARTED = "PROCESS_ALREADY_STARTED"
    PROCESS_NOT_RUNNING = "PROCESS_NOT_RUNNING"
    PROCESS_CLOSED_DURING_RPC = "PROCESS_CLOSED_DURING_RPC"
    CONTROL_NOT_APPLICABLE = "CONTROL_NOT_APPLICABLE"
    PAYLOAD_TOO_LARGE = "PAYLOAD_TOO_LARGE"
    WORKER_API_ERROR = "WORKER_API_ERROR"
    APP_DATABASE_ERROR = "APP_DATABASE_ERROR"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    OVERLOADED = "OVERLOADED"
    DATABASE_UNAVAILABLE = "DATABASE_UNAVAILABLE"


# ---- shared ----


class EncodedObject(WireModel):
    """An opaque user payload; this SDK writes and reads ``encoding == "json"``."""

    encoding: str
    data: str


class GlobalAttributeValue(WireModel):
    """One column of the global-attribute row and its plain JSON value."""

    column: str
    value: Any


class LocalAttributeValue(WireModel):
    """One local attribute and its encoded value."""

    key: str
    value: EncodedObject


class GlobalAttributeLoading(WireModel):
    """Which columns are read, and with which lock, before a call."""

    columns: list[str] = []
    lock_type: LockType = LockType.NO_LOCK


class LocalAttributeLoading(WireModel):
    """Which local attributes are read, and with which lock, before a call."""

    keys: list[str] = []
    lock_type: LockType = LockType.NO_LOCK


class RetryPolicy(WireModel):
    """Backoff retry of worker API calls; unset fields take the service's defaults."""

    initial_interval_seconds: Opt[float] = None
    backoff_coefficient: Opt[float] = None
    maximum_interval_seconds: Opt[float] = None
    maximum_attempts: Opt[int] = None
    maximum_attempts_duration_seconds: Opt[int] = None


class StateFailureRecoveryOptions(WireModel):
    """What a state does once its retries are exhausted."""

    policy: FailureRecoveryPolicy = FailureRecoveryPolicy.FAIL_PROCESS_ON_STATE_FAILURE
    state_failure_proceed_state_id: Opt[str] = None
    state_failure_proceed_state_config: Opt[AsyncStateConfig] = None


class AsyncStateConfig(WireModel):
    """Per-state options: timeouts, retries, failure recovery and loading policies."""

    skip_wait_until: bool = False
    wait_until_api_timeout_seconds: Opt[int] = None
    execute_api_timeout_seconds: Opt[int] = None
    wait_until_api_retry_policy: Opt[RetryPolicy] = None
    execute_api_retry_policy: Opt[RetryPolicy] = None
    state_failure_recovery_options: Opt[StateFailureRecoveryOptions] = None
    global_attribute_loading: Opt[GlobalAttributeLoading] = None
    local_attribute_loading: Opt[LocalAttributeLoading] = None


class LocalQueueMessage(WireModel):
    """A message on one execution's local queue."""

    queue_name: str
    dedup_id: Opt[str] = None
    payload: Opt[EncodedObject] = None


class StateMovement(WireModel):
    """A state to move to, with its input and config."""

    state_id: str
    state_input: Opt[EncodedObject] = None
    state_config: Opt[AsyncStateConfig] = None


# ---- service API ----


class GlobalAttributeConfig(WireModel):
    """The row of a user table that holds a process's global attributes."""

    table_name: str
    primary_key: GlobalAttributeValue
    initial_write: list[GlobalAttributeValue] = []


class ProcessStartConfig(WireModel):
    """Options of a process execution."""

    timeout_seconds: Opt[int] = None
    id_reuse_policy: Opt[ProcessIdReusePolicy] = None
    global_attribute_config: Opt[GlobalAttributeConfig] = None
    local_attribute_initial_write: list[LocalAttributeValue] = []


class ProcessExecutionStartRequest(WireModel):
    """``POST .../start``."""

    process_id: str
    process_type: str
    worker_url: str
    start_state_id: Opt[str] = None
    start_state_input: Opt[EncodedObject] = None
    start_state_config: Opt[AsyncStateConfig] = None
    process_start_config: Opt[ProcessStartConfig] = None


class ProcessExecutionStartResponse(WireModel):
    """The new execution's id."""

    process_execution_id: str


class ProcessExecutionStopRequest(WireModel):
    """``POST .../stop``."""

    process_id: str
    stop_type: ProcessExecutionStopType = ProcessExecutionStopType.TERMINATE
    reason: Opt[str] = None


class ProcessExecutionDescribeRequest(WireModel):
    """``POST .../describe``."""

    process_id: str
    process_execution_id: Opt[str] = None


class ProcessFailure(WireModel):
    """Why an execution failed."""

    reason: str
    details: Opt[str] = None


class PauseInfo(WireModel):
    """Why an execution is paused, and since when (ms since the Unix epoch)."""

    since_timestamp_ms: int
    reason: Opt[str] = None
    identity: Opt[str] = None


class ProcessExecutionDescribeResponse(WireModel):
    """One execution as the service sees it.

    ``paused`` is set while an operator has paused it; ``parked_tasks`` counts its tasks
    set aside after the database refused them too many times in a row (they wait for
    ``retry_now``).
    """

    process_execution_id: str
    process_id: str
    process_type: str
    worker_url: str
    status: ProcessStatus
    start_timestamp_ms: int
    close_timestamp_ms: Opt[int] = None
    running_state_executions: int
    result: Opt[EncodedObject] = None
    failure: Opt[ProcessFailure] = None
    global_attribute_config: Opt[GlobalAttributeConfig] = None
    paused: Opt[PauseInfo] = None
    parked_tasks: int = 0


class PublishToLocalQueueRequest(WireModel):
    """``POST .../publish-to-local-queue``."""

    process_id: str
    messages: list[LocalQueueMessage]


class ProcessExecutionWaitForCompletionRequest(WireModel):
    """``POST .../wait-for-completion``: one long poll."""

    process_id: str
    timeout_seconds: Opt[int] = None


class ProcessExecutionWaitForCompletionResponse(WireModel):
    """How the execution closed, or ``timed_out``."""

    process_execution_id: str
    status: ProcessStatus
    timed_out: bool
    result: Opt[EncodedObject] = None
    failure: Opt[ProcessFailure] = None


class ProcessExecutionRpcRequest(WireModel):
    """``POST .../rpc``."""

    process_id: str
    rpc_name: str
    input: Opt[EncodedObject] = None
    timeout_seconds: Opt[int] = None
    global_attribute_loading: Opt[GlobalAttributeLoading] = None
    local_attribute_loading: Opt[LocalAttributeLoading] = None


class ProcessExecutionRpcResponse(WireModel):
    """The RPC's output."""

    output: Opt[EncodedObject] = None


class ProcessExecutionListFilter(WireModel):
    """Filters of ``list``; every filter given must match."""

    status: Opt[ProcessStatus] = None
    process_type: Opt[str] = None
    process_id: Opt[str] = None
    start_time_min_ms: Opt[int] = None
    start_time_max_ms: Opt[int] = None


class ProcessExecutionListRequest(WireModel):
    """``POST .../list``: newest first."""

    filter: ProcessExecutionListFilter = ProcessExecutionListFilter()
    page_size: Opt[int] = None
    next_page_token: Opt[str] = None


class ProcessExecutionSummary(WireModel):
    """One execution in a list; ``paused`` says whether an operator has paused it."""

    process_execution_id: str
    process_id: str
    process_type: str
    status: ProcessStatus
    start_timestamp_ms: int
    close_timestamp_ms: Opt[int] = None
    paused: bool = False


class ProcessExecutionListResponse(WireModel):
    """A page of executions; ``next_page_token`` is absent on the last page."""

    executions: list[ProcessExecutionSummary]
    next_page_token: Opt[str] = None


class ProcessExecutionHistoryRequest(WireModel):
    """``POST .../history``: a page of an execution's events, oldest first.

    ``after_event_id`` is the previous page's ``next_after_event_id``; ``page_size`` is 1
    to 1000 (1000 when absent); ``event_types`` keeps only those types (every type when
    absent or empty).
    """

    process_id: str
    process_execution_id: Opt[str] = None
    after_event_id: Opt[int] = None
    page_size: Opt[int] = None
    event_types: Opt[list[HistoryEventType]] = None


class HistoryEvent(WireModel):
    """One event in an execution's history."""

    event_id: int
    event_timestamp_ms: int
    event_type: str
    details: Any = None


class ProcessExecutionHistoryResponse(WireModel):
    """A page of the events of one execution, oldest first.

    ``next_after_event_id`` is set when more events follow: the ``after_event_id`` of the
    next page.
    """

    process_execution_id: str
    events: list[HistoryEvent]
    next_after_event_id: Opt[int] = None


class ApiErrorResponse(WireModel):
    """The JSON body of every non-2xx service answer."""

    sub_type: str
    message: str
    worker_error: Opt[str] = None


# ---- worker API ----


class Context(WireModel):
    """Identifies the worker call being served (wire form)."""

    process_id: str
    process_execution_id: str
    process_type: str
    state_execution_id: Opt[str] = None
    attempt: int
    first_attempt_timestamp_ms: int
    process_started_timestamp_ms: int
    idempotency_key: str


class TimerCommand(WireModel):
    """A durable timer (wire form)."""

    delay_in_seconds: int


class LocalQueueCommand(WireModel):
    """Wait for ``count`` messages on a local queue (wire form)."""

    queue_name: str
    count: Opt[int] = None


class CommandRequest(WireModel):
    """What a state waits for (wire form)."""

    waiting_type: CommandWaitingType = CommandWaitingType.ANY_OF_COMPLETION
    timer_commands: list[TimerCommand] = []
    local_queue_commands: list[LocalQueueCommand] = []


class TimerResult(WireModel):
    """The outcome of one timer command."""

    status: TimerStatus


class LocalQueueResult(WireModel):
    """The outcome of one local-queue command, with the messages it consumed."""

    queue_name: str
    status: LocalQueueCommandStatus
    messages: list[LocalQueueMessage] = []


class CommandResultsWire(WireModel):
    """Results of the commands, in the order of the command request (wire form)."""

    timer_results: list[TimerResult] = []
    local_queue_results: list[LocalQueueResult] = []


class LoadedAttributes(WireModel):
    """The attributes loaded for a call."""

    global_attributes: list[GlobalAttributeValue] = []
    local_attributes: list[LocalAttributeValue] = []


class AttributeWrites(WireModel):
    """Writes a worker asks for, applied with its answer."""

    global_attributes: list[GlobalAttributeValue] = []
    local_attributes: list[LocalAttributeValue] = []


class AsyncStateWaitUntilRequest(WireModel):
    """``POST {workerUrl}/api/v1/xdb/worker/async-state/wait-until``."""

    context: Context
    process_type: str
    state_id: str
    state_input: Opt[EncodedObject] = None
    attributes: LoadedAttributes = LoadedAttributes()


class AsyncStateWaitUntilResponse(WireModel):
    """The commands to wait for, and the call's writes."""

    command_request: CommandRequest = CommandRequest()
    writes: AttributeWrites = AttributeWrites()
    publish_to_local_queue: list[LocalQueueMessage] = []


class AsyncStateExecuteRequest(WireModel):
    """``POST {workerUrl}/api/v1/xdb/worker/async-state/execute``."""

    context: Context
    process_type: str
    state_id: str
    state_input: Opt[EncodedObject] = None
    command_results: CommandResultsWire = CommandResultsWire()
    attributes: LoadedAttributes = LoadedAttributes()


class ThreadCloseDecision(WireModel):
    """How a thread closes, with the process output or failure details."""

    close_type: ThreadCloseType
    output: Opt[EncodedObject] = None


class StateDecisionWire(WireModel):
    """Next states or a close (wire form)."""

    next_states: list[StateMovement] = []
    thread_close_decision: Opt[ThreadCloseDecision] = None


class AsyncStateExecuteResponse(WireModel):
    """The decision, and the call's writes."""

    state_decision: StateDecisionWire
    writes: AttributeWrites = AttributeWrites()
    publish_to_local_queue: list[LocalQueueMessage] = []


class ProcessRpcWorkerRequest(WireModel):
    """``POST {workerUrl}/api/v1/xdb/worker/process/rpc``."""

    context: Context
    process_type: str
    rpc_name: str
    input: Opt[EncodedObject] = None
    attributes: LoadedAttributes = LoadedAttributes()


class ProcessRpcWorkerResponse(WireModel):
    """The RPC's output, writes, messages and new threads."""

    output: Opt[EncodedObject] = None
    writes: AttributeWrites = AttributeWrites()
    publish_to_local_queue: list[LocalQueueMessage] = []
    append_next_states: list[StateMovement] = []


class WorkerErrorResponse(WireModel):
    """The body a worker answers a failed call with."""

    detail: str
    error_type: Opt[str] = None


# ---- the operator's calls ----


class ProcessExecutionStatesRequest(WireModel):
    """``POST .../states``: the state executions of the current (or a given) execution."""

    process_id: str
    process_execution_id: Opt[str] = None


class PendingCall(WireModel):
    """A state's pending waitUntil or execute call.

    ``attempt`` is the attempt that is running or comes next (1-based);
    ``due_timestamp_ms`` is when it is (or was) due, after a failed attempt the end of its
    backoff; ``parked_reason`` says why it was parked (``PARKED`` only).
    """

    api: StateApiName
    attempt: int
    phase: CallPhase
    due_timestamp_ms: int
    parked_reason: Opt[str] = None


class StateFailure(WireModel):
    """A failed attempt of a state's waitUntil or execute, and how it failed."""

    api: StateApiName
    attempt: int
    error: str
    timestamp_ms: int


class TimerWait(WireModel):
    """A timer a waiting state waits for; ``due_timestamp_ms`` is absent once it is done."""

    delay_in_seconds: int
    due_timestamp_ms: Opt[int] = None
    status: Opt[TimerStatus] = None


class LocalQueueWait(WireModel):
    """A local-queue command of a waiting state.

    ``count`` messages are waited for; ``queued`` are queued now and not yet consumed.
    """

    queue_name: str
    count: int
    queued: int
    status: Opt[LocalQueueCommandStatus] = None


class WaitingFor(WireModel):
    """What a waiting state's commands wait for, in the order of its commands."""

    waiting_type: CommandWaitingType
    timers: list[TimerWait]
    local_queues: list[LocalQueueWait]


class StateExecutionInfo(WireModel):
    """One state execution: where it is, what it waits on, how it last failed.

    ``state_execution_id`` is ``stateId-number``, as history events name it.
    """

    state_execution_id: str
    state_id: str
    status: StateExecutionStatus
    started_timestamp_ms: int
    pending_call: Opt[PendingCall] = None
    last_failure: Opt[StateFailure] = None
    waiting_for: Opt[WaitingFor] = None
    command_results: Opt[CommandResultsWire] = None


class ProcessExecutionStatesResponse(WireModel):
    """Every state execution of the execution, in the order they started.

    ``paused`` is set while the execution is paused.
    """

    process_execution_id: str
    status: ProcessStatus
    paused: Opt[PauseInfo] = None
    states: list[StateExecutionInfo]


class ProcessExecutionControlRequest(WireModel):
    """``POST .../retry-now``, ``.../give-up``, ``.../pause``, ``.../resume``.

    An operator's control of the current (or a given) execution; ``reason`` and
    ``identity`` are kept in its history event. ``state_execution_id`` (retry-now and
    give-up only) narrows it to one state execution.
    """

    process_id: str
    process_execution_id: Opt[str] = None
    state_execution_id: Opt[str] = None
    reason: Opt[str] = None
    identity: Opt[str] = None


class ProcessExecutionControlResponse(WireModel):
    """The state executions the control acted on (for pause and resume: held or released)."""

    state_execution_ids: list[str]


StateFailureRecoveryOptions.model_rebuild()
