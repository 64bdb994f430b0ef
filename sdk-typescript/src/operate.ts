/**
 * The wire types of the operator's calls (`/api/v1/xdb/openapi.json`, tag `operate`):
 * why an execution is not progressing (`states`), and the controls that unstick it
 * (retry now, give up, pause, resume). Read leniently, as `protocol.ts` is.
 */
import { z } from "zod";

import {
  CommandResultsWire,
  CommandWaitingType,
  LocalQueueCommandStatus,
  PauseInfo,
  ProcessStatus,
  TimerStatus,
} from "./protocol.js";

/** The operator's paths, relative to the service's base URL. */
export const OPERATE_PATHS = {
  states: "/api/v1/xdb/service/process-execution/states",
  retryNow: "/api/v1/xdb/service/process-execution/retry-now",
  giveUp: "/api/v1/xdb/service/process-execution/give-up",
  pause: "/api/v1/xdb/service/process-execution/pause",
  resume: "/api/v1/xdb/service/process-execution/resume",
} as const;

/** Where a state execution is in its life. */
export const StateExecutionStatus = z.enum([
  "WAIT_UNTIL_RUNNING",
  "WAITING_COMMANDS",
  "EXECUTE_RUNNING",
  "COMPLETED",
  "FAILED",
  "ABORTED",
]);
export type StateExecutionStatus = z.infer<typeof StateExecutionStatus>;

/** Which state API: as history events name it. */
export const StateApiName = z.enum(["waitUntil", "execute"]);
export type StateApiName = z.infer<typeof StateApiName>;

/**
 * Where a pending waitUntil or execute call is: `SCHEDULED` (due at `dueTimestampMs`),
 * `RUNNING` (the worker is being called), `PARKED` (set aside until `retryNow`),
 * `PAUSED` (held until the execution resumes).
 */
export const CallPhase = z.enum(["SCHEDULED", "RUNNING", "PARKED", "PAUSED"]);
export type CallPhase = z.infer<typeof CallPhase>;

export const PendingCall = z.object({
  api: StateApiName,
  /** The attempt that is running or comes next (1-based). */
  attempt: z.number().int(),
  phase: CallPhase,
  /** When the attempt is (or was) due, ms since the Unix epoch. */
  dueTimestampMs: z.number().int(),
  /** Why it was parked (`PARKED` only). */
  parkedReason: z.string().nullish(),
});
export type PendingCall = z.infer<typeof PendingCall>;

/** A failed attempt of a state's waitUntil or execute. */
export const StateFailure = z.object({
  api: StateApiName,
  attempt: z.number().int(),
  error: z.string(),
  timestampMs: z.number().int(),
});
export type StateFailure = z.infer<typeof StateFailure>;

export const TimerWait = z.object({
  delayInSeconds: z.number().int(),
  /** When it fires; absent once it fired or was skipped. */
  dueTimestampMs: z.number().int().nullish(),
  status: TimerStatus.nullish(),
});
export type TimerWait = z.infer<typeof TimerWait>;

export const LocalQueueWait = z.object({
  queueName: z.string(),
  /** Messages the command waits for. */
  count: z.number().int(),
  /** Messages queued now and not yet consumed. */
  queued: z.number().int(),
  status: LocalQueueCommandStatus.nullish(),
});
export type LocalQueueWait = z.infer<typeof LocalQueueWait>;

/** What a waiting state's commands wait for. */
export const WaitingFor = z.object({
  waitingType: CommandWaitingType,
  timers: z.array(TimerWait),
  localQueues: z.array(LocalQueueWait),
});
export type WaitingFor = z.infer<typeof WaitingFor>;

export const StateExecutionInfo = z.object({
  /** `stateId-number`, as history events name it. */
  stateExecutionId: z.string(),
  stateId: z.string(),
  status: StateExecutionStatus,
  startedTimestampMs: z.number().int(),
  pendingCall: PendingCall.nullish(),
  lastFailure: StateFailure.nullish(),
  waitingFor: WaitingFor.nullish(),
  commandResults: CommandResultsWire.nullish(),
});
export type StateExecutionInfo = z.infer<typeof StateExecutionInfo>;

export const ProcessExecutionStatesResponse = z.object({
  processExecutionId: z.string(),
  status: ProcessStatus,
  /** Set while the execution is paused. */
  paused: PauseInfo.nullish(),
  /** Every state execution, in the order they started. */
  states: z.array(StateExecutionInfo),
});
export type ProcessExecutionStatesResponse = z.infer<typeof ProcessExecutionStatesResponse>;

/** `POST .../retry-now`, `.../give-up`, `.../pause`, `.../resume`. */
export interface ProcessExecutionControlRequest {
  processId: string;
  /** An execution of the process id; absent: the latest. */
  processExecutionId?: string;
  /** retry-now and give-up only: just this state execution (`stateId-number`). */
  stateExecutionId?: string;
  /** Why; kept in the history event. */
  reason?: string;
  /** Who asks; kept in the history event. */
  identity?: string;
}

export const ProcessExecutionControlResponse = z.object({
  /** The state executions the control acted on (`stateId-number`). */
  stateExecutionIds: z.array(z.string()),
});
export type ProcessExecutionControlResponse = z.infer<typeof ProcessExecutionControlResponse>;
