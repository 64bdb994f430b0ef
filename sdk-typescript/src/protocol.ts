/**
 * The wire types of the XDB REST contract (`/api/v1/xdb/openapi.json`): the types of what
 * the SDK sends and receives, and zod schemas (`<Type>Schema`) that check what arrives
 * (worker calls from XDB, service answers to the client). Both are generated from the
 * document into `generated/` by `scripts/generate-wire-types.sh`; this module names them
 * for the SDK, beside the paths.
 *
 * Reading is lenient, as XDB reads worker answers: unknown fields are dropped, so a
 * service newer than this SDK keeps working. Nothing here does IO.
 */

export type {
  ApiErrorResponse,
  AsyncStateConfig,
  AsyncStateExecuteRequest,
  AsyncStateExecuteResponse,
  AsyncStateWaitUntilRequest,
  AsyncStateWaitUntilResponse,
  AttributeDefinition,
  AttributeType,
  AttributeWrites,
  BusinessRow,
  CallPhase,
  CommandWaitingType,
  ConsumedMessage,
  Context,
  ControlDetails,
  DefinitionDescribeRequest,
  DefinitionDescribeResponse,
  DefinitionRevision,
  DefinitionsListRequest,
  DefinitionsListResponse,
  DeploymentRef,
  DeploymentSetCurrentRequest,
  DeploymentSummary,
  DeploymentsListRequest,
  DeploymentsListResponse,
  EmptyResponse,
  EncodedObject,
  ErrorSubType,
  ExecutionsMoveRequest,
  ExecutionsMoveResponse,
  ExecuteCompletedDetails,
  FailureRecoveryPolicy,
  GlobalAttributeConfig,
  GlobalAttributeLoading,
  GlobalAttributeValue,
  GlobalAttributesDefinition,
  HistoryEvent,
  HistoryEventType,
  LoadedAttributes,
  LocalAttributeLoading,
  LocalAttributeValue,
  LocalQueueCommand,
  LocalQueueCommandStatus,
  LocalQueueMessage,
  LocalQueueMessagesConsumedDetails,
  LocalQueueMessagesPublishedDetails,
  LocalQueueResult,
  LocalQueueWait,
  LockType,
  PauseInfo,
  PendingCall,
  ProcessClosedDetails,
  ProcessExecutionAttributesRequest,
  ProcessExecutionAttributesResponse,
  ProcessExecutionControlRequest,
  ProcessExecutionControlResponse,
  ProcessExecutionDescribeRequest,
  ProcessExecutionDescribeResponse,
  ProcessExecutionHistoryRequest,
  ProcessExecutionHistoryResponse,
  ProcessExecutionListFilter,
  ProcessExecutionListRequest,
  ProcessExecutionListResponse,
  ProcessExecutionResetRequest,
  ProcessExecutionResetResponse,
  ProcessResetDetails,
  ProcessExecutionRpcRequest,
  ProcessExecutionRpcResponse,
  ProcessExecutionStartRequest,
  ProcessExecutionStartResponse,
  ProcessExecutionStatesRequest,
  ProcessExecutionStatesResponse,
  ProcessExecutionStopRequest,
  ProcessExecutionStopType,
  ProcessExecutionSummary,
  ProcessExecutionWaitForCompletionRequest,
  ProcessExecutionWaitForCompletionResponse,
  ProcessFailure,
  ProcessIdReusePolicy,
  ProcessRpcWorkerRequest,
  ProcessRpcWorkerResponse,
  ProcessStartConfig,
  ProcessStartedDetails,
  ProcessStatus,
  PublishToLocalQueueRequest,
  RegisterDefinitionsRequest,
  RegisterDefinitionsResponse,
  RegisteredDefinition,
  RetryPolicy,
  RpcCompletedDetails,
  RpcDefinition,
  StateApiFailureDetails,
  StateApiName,
  StateDefinition,
  StateExecutionInfo,
  StateExecutionStatus,
  StateFailure,
  StateFailureRecoveryOptions,
  StateMovement,
  TaskParkedDetails,
  ThreadCloseDecision,
  ThreadCloseType,
  TimerCommand,
  TimerFiredDetails,
  TimerResult,
  TimerStatus,
  TimerWait,
  VersioningPolicy,
  WaitUntilCompletedDetails,
  WaitingFor,
  WorkerDeployment,
  WorkerErrorResponse,
  CommandRequest as CommandRequestWire,
  CommandResults as CommandResultsWire,
  ProcessDefinition as ProcessDefinitionWire,
  StateDecision as StateDecisionWire,
} from "./generated/types.gen.js";
export {
  ApiErrorResponseSchema,
  AsyncStateExecuteRequestSchema,
  AsyncStateWaitUntilRequestSchema,
  DefinitionDescribeResponseSchema,
  DefinitionsListResponseSchema,
  DeploymentsListResponseSchema,
  ExecutionsMoveResponseSchema,
  ProcessExecutionControlResponseSchema,
  ProcessExecutionDescribeResponseSchema,
  ProcessExecutionHistoryResponseSchema,
  ProcessExecutionListResponseSchema,
  ProcessExecutionResetResponseSchema,
  ProcessExecutionRpcResponseSchema,
  ProcessExecutionStartResponseSchema,
  ProcessExecutionStatesResponseSchema,
  ProcessExecutionWaitForCompletionResponseSchema,
  ProcessRpcWorkerRequestSchema,
  RegisterDefinitionsResponseSchema,
  StateApiFailureDetailsSchema,
} from "./generated/zod.gen.js";

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

/** The registered definitions' paths: a worker deployment registers (role `deploy`); clients read. */
export const DEFINITIONS_PATHS = {
  register: "/api/v1/xdb/service/definitions/register",
  list: "/api/v1/xdb/service/definitions/list",
  describe: "/api/v1/xdb/service/definitions/describe",
} as const;

/**
 * The deployments' paths: operators list them (role `read`), make one current again
 * (`deploy`) and move running executions between them (`operate`).
 */
export const DEPLOYMENTS_PATHS = {
  list: "/api/v1/xdb/service/deployments/list",
  setCurrent: "/api/v1/xdb/service/deployments/set-current",
  move: "/api/v1/xdb/service/deployments/move",
} as const;

/** Where the service serves its OpenAPI document. */
export const OPENAPI_PATH = "/api/v1/xdb/openapi.json";
