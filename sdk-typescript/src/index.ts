/**
 * TypeScript SDK for XDB.
 *
 * - Define a process: implement `Process` and `AsyncState`; declare RPCs with `rpc()`;
 *   read and write attributes through `Persistence`, publish through `Communication`.
 * - Host it: `new WorkerService().register(process)` and mount `nodeHandler()` (node:http,
 *   Express) or `fetchHandler()` in your own service.
 * - Drive it: `Client` calls the XDB service (start, RPC, wait, ...).
 * - Register it: `await worker.registerDefinitions(client, deployment)` tells XDB the
 *   hosted processes' definitions, so it checks requests and routes starts.
 * - Start it on a schedule: `schedules` on a process declares the schedules that start it
 *   (`ScheduleDeclaration`); registration creates, changes and deletes them to match.
 * - Act on many executions: `client.startBatch` applies one operation to every execution a
 *   filter selects, as a durable job.
 *
 * Writes carry a request id, and a call whose answer was lost (a dropped connection, a
 * 503) is sent again with the same id, a bounded number of times (`retries.ts`).
 */
export * from "./client.js";
export * from "./command.js";
export * from "./communication.js";
export * from "./decision.js";
export * from "./definition.js";
export * from "./definitions.js";
export * from "./encoding.js";
export * from "./errors.js";
export * from "./history.js";
export * from "./operate.js";
export * from "./persistence.js";
export * from "./process.js";
export { CallRetries, DEFAULT_MAX_ATTEMPTS, DEFAULT_MAX_RETRY_DELAY_MS, isRepeatable } from "./retries.js";
export * from "./schema.js";
export * from "./signature.js";
export * from "./state.js";
export * from "./trace.js";
export * from "./worker.js";
export * as protocol from "./protocol.js";
export {
  BATCH_PATHS,
  DEFINITIONS_PATHS,
  DEPLOYMENTS_PATHS,
  FLOW_LIMITS_PATHS,
  OPENAPI_PATH,
  ReprioritizedDetailsSchema,
  SERVICE_PATHS,
  StateApiFailureDetailsSchema,
  WORKER_PATHS,
  type BatchDescribeResponse,
  type BatchInfo,
  type BatchItem,
  type BatchItemOutcome,
  type BatchListRequest,
  type BatchListResponse,
  type BatchOperation,
  type BatchReset,
  type BatchStartRequest,
  type BatchStartResponse,
  type BatchStatus,
  type BusinessTableRef,
  type Context,
  type DefinitionDescribeResponse,
  type DefinitionRevision,
  type DefinitionsListResponse,
  type DeploymentRef,
  type DeploymentSummary,
  type DeploymentsListResponse,
  type ErrorSubType,
  type ExecutionsMoveResponse,
  type FilterNode,
  type FlowLimitChange,
  type FlowLimitSource,
  type FlowLimits,
  type FlowLimitsEntry,
  type FlowLimitsHistoryRequest,
  type FlowLimitsHistoryResponse,
  type FlowLimitsListResponse,
  type HistoryEventType,
  type LocalQueueMessage,
  type LockType,
  type PauseInfo,
  type ProcessDefinitionWire,
  type ProcessIdReusePolicy,
  type ProcessStatus,
  type RegisterDefinitionsResponse,
  type RetryPolicy,
  type ScheduleDeclaration,
  type ScheduleOverlapPolicy,
  type ScheduleSpec,
  type StateApiFailureDetails,
  type VersioningPolicy,
  type WorkerDeployment,
} from "./protocol.js";
