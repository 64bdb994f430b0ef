/**
 * The operator's calls (`/api/v1/xdb/openapi.json`, tag `operate`): why an execution is
 * not progressing (`states`), the controls that unstick it (retry now, give up, pause,
 * resume), and the one that reorders it among waiting executions (reprioritize). Their
 * wire types are generated with the others (`protocol.ts`).
 */
export type {
  CallPhase,
  ClaimOrder,
  LocalQueueWait,
  PendingCall,
  ProcessExecutionControlRequest,
  ProcessExecutionControlResponse,
  ProcessExecutionStatesResponse,
  Reprioritization,
  ReprioritizedDetails,
  StateApiName,
  StateExecutionInfo,
  StateExecutionStatus,
  StateFailure,
  TimerWait,
  WaitingFor,
} from "./protocol.js";

/** The operator's paths, relative to the service's base URL. */
export const OPERATE_PATHS = {
  states: "/api/v1/xdb/service/process-execution/states",
  retryNow: "/api/v1/xdb/service/process-execution/retry-now",
  giveUp: "/api/v1/xdb/service/process-execution/give-up",
  pause: "/api/v1/xdb/service/process-execution/pause",
  resume: "/api/v1/xdb/service/process-execution/resume",
  reprioritize: "/api/v1/xdb/service/process-execution/reprioritize",
  reset: "/api/v1/xdb/service/process-execution/reset",
} as const;
