/**
 * The wire types of the XDB REST contract (`/api/v1/xdb/openapi.json`), as zod schemas
 * with their TypeScript types inferred from them: one definition gives both the types the
 * SDK is written against and the checks applied to what arrives (worker calls from XDB,
 * service answers to the client).
 *
 * Reading is lenient, as XDB reads worker answers: unknown fields are dropped, so a
 * service newer than this SDK keeps working. Nothing here does IO.
 */
import { z } from "zod";

/** The worker API paths, relative to a worker's base URL. */
export const WORKER_PATHS = {
  waitUntil: "/api/v1/xdb/worker/async-state/wait-until",
  execute: "/api/v1/xdb/worker/async-state/execute",
  rpc: "/api/v1/xdb/worker/process/rpc",
} as const;

/** The service API paths, relative to the service's base URL. */
export const SERVICE_PATHS = {
  start: "/api/v1/xdb/service/process-execution/start",
  stop: "/api/v1/xdb/service/process-execution/stop",
  describe: "/api/v1/xdb/service/process-execution/describe",
  list: "/api/v1/xdb/service/process-execution/list",
  history: "/api/v1/xdb/service/process-execution/history",
  publishToLocalQueue: "/api/v1/xdb/service/process-execution/publish-to-local-queue",
  rpc: "/api/v1/xdb/service/process-execution/rpc",
  waitForCompletion: "/api/v1/xdb/service/process-execution/wait-for-completion",
} as const;

/** Where the service serves its OpenAPI document. */
export const OPENAPI_PATH = "/api/v1/xdb/openapi.json";

export const ErrorSubType = z.enum([
  "INVALID_REQUEST",
  "UNAUTHORIZED",
  "FORBIDDEN",
  "PROCESS_NOT_FOUND",
  "PROCESS_ALREADY_STARTED",
  "PROCESS_NOT_RUNNING",
  "PROCESS_CLOSED_DURING_RPC",
  "CONTROL_NOT_APPLICABLE",
  "PAYLOAD_TOO_LARGE",
  "WORKER_API_ERROR",
  "APP_DATABASE_ERROR",
  "INTERNAL_ERROR",
  "OVERLOADED",
  "DATABASE_UNAVAILABLE",
]);
export type ErrorSubType = z.infer<typeof ErrorSubType>;

export const LockType = z.enum(["NO_LOCK", "SHARED_LOCK", "EXCLUSIVE_LOCK"]);
export type LockType = z.infer<typeof LockType>;

export const ProcessIdReusePolicy = z.enum([
  "ALLOW_IF_NO_RUNNING",
  "ALLOW_IF_PREVIOUS_EXIT_ABNORMALLY",
  "DISALLOW_REUSE",
  "TERMINATE_IF_RUNNING",
]);
export type ProcessIdReusePolicy = z.infer<typeof ProcessIdReusePolicy>;

export const ProcessStatus = z.enum(["RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "TERMINATED"]);
export type ProcessStatus = z.infer<typeof ProcessStatus>;

export const ProcessExecutionStopType = z.enum(["TERMINATE", "FAIL"]);
export type ProcessExecutionStopType = z.infer<typeof ProcessExecutionStopType>;

export const CommandWaitingType = z.enum(["ANY_OF_COMPLETION", "ALL_OF_COMPLETION"]);
export type CommandWaitingType = z.infer<typeof CommandWaitingType>;

export const ThreadCloseType = z.enum([
  "GRACEFUL_COMPLETE_PROCESS",
  "FORCE_COMPLETE_PROCESS",
  "FORCE_FAIL_PROCESS",
  "DEAD_END",
]);
export type ThreadCloseType = z.infer<typeof ThreadCloseType>;

export const TimerStatus = z.enum(["FIRED", "SKIPPED"]);
export type TimerStatus = z.infer<typeof TimerStatus>;

export const LocalQueueCommandStatus = z.enum(["RECEIVED", "SKIPPED"]);
export type LocalQueueCommandStatus = z.infer<typeof LocalQueueCommandStatus>;

export const FailureRecoveryPolicy = z.enum([
  "FAIL_PROCESS_ON_STATE_FAILURE",
  "PROCEED_TO_CONFIGURED_STATE",
]);
export type FailureRecoveryPolicy = z.infer<typeof FailureRecoveryPolicy>;

/** A user payload: `data` is the JSON text of the value when `encoding` is `"json"`. */
export const EncodedObject = z.object({ encoding: z.string(), data: z.string() });
export type EncodedObject = z.infer<typeof EncodedObject>;

/** A column of the global-attribute row; values are plain JSON. */
export const GlobalAttributeValue = z.object({ column: z.string(), value: z.unknown() });
export type GlobalAttributeValue = z.infer<typeof GlobalAttributeValue>;

export const LocalAttributeValue = z.object({ key: z.string(), value: EncodedObject });
export type LocalAttributeValue = z.infer<typeof LocalAttributeValue>;

export const LoadedAttributes = z.object({
  globalAttributes: z.array(GlobalAttributeValue).optional(),
  localAttributes: z.array(LocalAttributeValue).optional(),
});
export type LoadedAttributes = z.infer<typeof LoadedAttributes>;

export const GlobalAttributeLoading = z.object({
  columns: z.array(z.string()).optional(),
  lockType: LockType.optional(),
});
export type GlobalAttributeLoading = z.infer<typeof GlobalAttributeLoading>;

export const LocalAttributeLoading = z.object({
  keys: z.array(z.string()).optional(),
  lockType: LockType.optional(),
});
export type LocalAttributeLoading = z.infer<typeof LocalAttributeLoading>;

/** Identifies the call a worker serves; `idempotencyKey` is stable across attempts. */
export const Context = z.object({
  processId: z.string(),
  processExecutionId: z.string(),
  processType: z.string(),
  attempt: z.number().int(),
  firstAttemptTimestampMs: z.number().int(),
  processStartedTimestampMs: z.number().int(),
  idempotencyKey: z.string(),
  stateExecutionId: z.string().nullish(),
});
export type Context = z.infer<typeof Context>;

export const RetryPolicy = z.object({
  initialIntervalSeconds: z.number().nullish(),
  backoffCoefficient: z.number().nullish(),
  maximumIntervalSeconds: z.number().nullish(),
  maximumAttempts: z.number().int().nullish(),
  maximumAttemptsDurationSeconds: z.number().int().nullish(),
});
export type RetryPolicy = z.infer<typeof RetryPolicy>;

export interface StateFailureRecoveryOptions {
  policy?: FailureRecoveryPolicy;
  stateFailureProceedStateId?: string | null;
  stateFailureProceedStateConfig?: AsyncStateConfig | null;
}

/** Per-state options, sent by the SDK with every move to the state. */
export interface AsyncStateConfig {
  skipWaitUntil?: boolean;
  waitUntilApiTimeoutSeconds?: number | null;
  executeApiTimeoutSeconds?: number | null;
  waitUntilApiRetryPolicy?: RetryPolicy | null;
  executeApiRetryPolicy?: RetryPolicy | null;
  stateFailureRecoveryOptions?: StateFailureRecoveryOptions | null;
  globalAttributeLoading?: GlobalAttributeLoading | null;
  localAttributeLoading?: LocalAttributeLoading | null;
}

export const LocalQueueMessage = z.object({
  queueName: z.string(),
  dedupId: z.string().nullish(),
  payload: EncodedObject.nullish(),
});
export type LocalQueueMessage = z.infer<typeof LocalQueueMessage>;

export const TimerCommand = z.object({ delayInSeconds: z.number().int() });
export type TimerCommand = z.infer<typeof TimerCommand>;

export const LocalQueueCommand = z.object({
  queueName: z.string(),
  count: z.number().int().nullish(),
});
export type LocalQueueCommand = z.infer<typeof LocalQueueCommand>;

export interface CommandRequestWire {
  waitingType?: CommandWaitingType;
  timerCommands?: TimerCommand[];
  localQueueCommands?: LocalQueueCommand[];
}

export const TimerResult = z.object({ status: TimerStatus });
export const LocalQueueResult = z.object({
  queueName: z.string(),
  status: LocalQueueCommandStatus,
  messages: z.array(LocalQueueMessage).optional(),
});
export type LocalQueueResult = z.infer<typeof LocalQueueResult>;

export const CommandResultsWire = z.object({
  timerResults: z.array(TimerResult).optional(),
  localQueueResults: z.array(LocalQueueResult).optional(),
});
export type CommandResultsWire = z.infer<typeof CommandResultsWire>;

export interface AttributeWrites {
  globalAttributes?: GlobalAttributeValue[];
  localAttributes?: LocalAttributeValue[];
}

export interface StateMovement {
  stateId: string;
  stateInput?: EncodedObject | null;
  stateConfig?: AsyncStateConfig | null;
}

export interface StateDecisionWire {
  nextStates?: StateMovement[];
  threadCloseDecision?: { closeType: ThreadCloseType; output?: EncodedObject | null } | null;
}

// ---- worker API ----

export const AsyncStateWaitUntilRequest = z.object({
  context: Context,
  processType: z.string(),
  stateId: z.string(),
  stateInput: EncodedObject.nullish(),
  attributes: LoadedAttributes.optional(),
});
export type AsyncStateWaitUntilRequest = z.infer<typeof AsyncStateWaitUntilRequest>;

export const AsyncStateExecuteRequest = AsyncStateWaitUntilRequest.extend({
  commandResults: CommandResultsWire.optional(),
});
export type AsyncStateExecuteRequest = z.infer<typeof AsyncStateExecuteRequest>;

export const ProcessRpcWorkerRequest = z.object({
  context: Context,
  processType: z.string(),
  rpcName: z.string(),
  input: EncodedObject.nullish(),
  attributes: LoadedAttributes.optional(),
});
export type ProcessRpcWorkerRequest = z.infer<typeof ProcessRpcWorkerRequest>;

export interface AsyncStateWaitUntilResponse {
  commandRequest: CommandRequestWire;
  writes: AttributeWrites;
  publishToLocalQueue: LocalQueueMessage[];
}

export interface AsyncStateExecuteResponse {
  stateDecision: StateDecisionWire;
  writes: AttributeWrites;
  publishToLocalQueue: LocalQueueMessage[];
}

export interface ProcessRpcWorkerResponse {
  output?: EncodedObject;
  writes: AttributeWrites;
  publishToLocalQueue: LocalQueueMessage[];
  appendNextStates: StateMovement[];
}

/** The body a worker answers a failed call with. */
export interface WorkerErrorResponse {
  detail: string;
  errorType?: string;
}

// ---- service API ----

export interface GlobalAttributeConfig {
  tableName: string;
  primaryKey: GlobalAttributeValue;
  initialWrite?: GlobalAttributeValue[];
}

export interface ProcessStartConfig {
  timeoutSeconds?: number;
  idReusePolicy?: ProcessIdReusePolicy;
  globalAttributeConfig?: GlobalAttributeConfig;
  localAttributeInitialWrite?: LocalAttributeValue[];
}

export interface ProcessExecutionStartRequest {
  processId: string;
  processType: string;
  workerUrl: string;
  startStateId?: string;
  startStateInput?: EncodedObject;
  startStateConfig?: AsyncStateConfig;
  processStartConfig?: ProcessStartConfig;
}

export const ProcessExecutionStartResponse = z.object({ processExecutionId: z.string() });
export type ProcessExecutionStartResponse = z.infer<typeof ProcessExecutionStartResponse>;

export interface ProcessExecutionStopRequest {
  processId: string;
  stopType?: ProcessExecutionStopType;
  reason?: string;
}

export const ProcessFailure = z.object({ reason: z.string(), details: z.string().nullish() });
export type ProcessFailure = z.infer<typeof ProcessFailure>;

/** Why an execution is paused, and since when. */
export const PauseInfo = z.object({
  /** Milliseconds since the Unix epoch. */
  sinceTimestampMs: z.number().int(),
  reason: z.string().nullish(),
  identity: z.string().nullish(),
});
export type PauseInfo = z.infer<typeof PauseInfo>;

export const ProcessExecutionDescribeResponse = z.object({
  processExecutionId: z.string(),
  processId: z.string(),
  processType: z.string(),
  workerUrl: z.string(),
  status: ProcessStatus,
  startTimestampMs: z.number().int(),
  closeTimestampMs: z.number().int().nullish(),
  runningStateExecutions: z.number().int(),
  result: EncodedObject.nullish(),
  failure: ProcessFailure.nullish(),
  globalAttributeConfig: z
    .object({
      tableName: z.string(),
      primaryKey: GlobalAttributeValue,
      initialWrite: z.array(GlobalAttributeValue).optional(),
    })
    .nullish(),
  /** Set while an operator has paused the execution (see `Client.pause`). */
  paused: PauseInfo.nullish(),
  /** Tasks set aside after the database refused them too many times; they wait for `Client.retryNow`. */
  parkedTasks: z.number().int().optional(),
});
export type ProcessExecutionDescribeResponse = z.infer<typeof ProcessExecutionDescribeResponse>;

export interface ProcessExecutionListFilter {
  processId?: string;
  processType?: string;
  status?: ProcessStatus;
  startTimeMinMs?: number;
  startTimeMaxMs?: number;
}

export interface ProcessExecutionListRequest {
  filter?: ProcessExecutionListFilter;
  pageSize?: number;
  nextPageToken?: string;
}

export const ProcessExecutionSummary = z.object({
  processExecutionId: z.string(),
  processId: z.string(),
  processType: z.string(),
  status: ProcessStatus,
  startTimestampMs: z.number().int(),
  closeTimestampMs: z.number().int().nullish(),
  /** Whether an operator has paused it. */
  paused: z.boolean().optional(),
});
export type ProcessExecutionSummary = z.infer<typeof ProcessExecutionSummary>;

export const ProcessExecutionListResponse = z.object({
  executions: z.array(ProcessExecutionSummary),
  nextPageToken: z.string().nullish(),
});
export type ProcessExecutionListResponse = z.infer<typeof ProcessExecutionListResponse>;

/** The event types of an execution's history (the document types each one's `details`). */
export const HistoryEventType = z.enum([
  "PROCESS_STARTED",
  "PROCESS_CLOSED",
  "WAIT_UNTIL_COMPLETED",
  "EXECUTE_COMPLETED",
  "STATE_API_FAILED",
  "STATE_FAILED",
  "TIMER_FIRED",
  "LOCAL_QUEUE_MESSAGES_PUBLISHED",
  "LOCAL_QUEUE_MESSAGES_CONSUMED",
  "RPC_COMPLETED",
  "RETRY_REQUESTED",
  "GIVE_UP_REQUESTED",
  "PAUSED",
  "RESUMED",
  "TASK_PARKED",
]);
export type HistoryEventType = z.infer<typeof HistoryEventType>;

/** One history event; `eventType` (a `HistoryEventType`) is kept as a string, so a newer service's types still read. */
export const HistoryEvent = z.object({
  eventId: z.number().int(),
  eventTimestampMs: z.number().int(),
  eventType: z.string(),
  details: z.record(z.string(), z.unknown()),
});
export type HistoryEvent = z.infer<typeof HistoryEvent>;

/** `POST .../history`: a page of the events of the current (or a given) execution, oldest first. */
export interface ProcessExecutionHistoryRequest {
  processId: string;
  processExecutionId?: string;
  /** Only events after this one: the previous page's `nextAfterEventId`. */
  afterEventId?: number;
  /** Events per page, 1 to 1000 (1000 when absent). */
  pageSize?: number;
  /** Only events of these types (every type when absent or empty). */
  eventTypes?: HistoryEventType[];
}

export const ProcessExecutionHistoryResponse = z.object({
  processExecutionId: z.string(),
  events: z.array(HistoryEvent),
  /** Set when more events follow: pass it as `afterEventId` for the next page. */
  nextAfterEventId: z.number().int().nullish(),
});
export type ProcessExecutionHistoryResponse = z.infer<typeof ProcessExecutionHistoryResponse>;

export interface PublishToLocalQueueRequest {
  processId: string;
  messages: LocalQueueMessage[];
}

export interface ProcessExecutionRpcRequest {
  processId: string;
  rpcName: string;
  input?: EncodedObject;
  timeoutSeconds?: number;
  globalAttributeLoading?: GlobalAttributeLoading;
  localAttributeLoading?: LocalAttributeLoading;
}

export const ProcessExecutionRpcResponse = z.object({ output: EncodedObject.nullish() });
export type ProcessExecutionRpcResponse = z.infer<typeof ProcessExecutionRpcResponse>;

export const ProcessExecutionWaitForCompletionResponse = z.object({
  processExecutionId: z.string(),
  status: ProcessStatus,
  timedOut: z.boolean(),
  result: EncodedObject.nullish(),
  failure: ProcessFailure.nullish(),
});
export type ProcessExecutionWaitForCompletionResponse = z.infer<
  typeof ProcessExecutionWaitForCompletionResponse
>;

/** A refused service call: the JSON body of every non-2xx answer. */
export const ApiErrorResponse = z.object({
  subType: z.string(),
  message: z.string(),
  workerError: z.string().nullish(),
});
export type ApiErrorResponse = z.infer<typeof ApiErrorResponse>;
