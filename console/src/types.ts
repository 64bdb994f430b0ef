// The parts of the XDB REST contract (xdb-protocol/openapi.json) the console reads.

export const STATUSES = ["RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "TERMINATED"] as const;
export type ProcessStatus = (typeof STATUSES)[number];

export interface EncodedObject {
  encoding: string;
  data: string;
}

export interface ListFilter {
  status?: ProcessStatus;
  processType?: string;
  processId?: string;
  startTimeMinMs?: number;
  startTimeMaxMs?: number;
}

export interface ExecutionSummary {
  processExecutionId: string;
  processId: string;
  processType: string;
  status: ProcessStatus;
  startTimestampMs: number;
  closeTimestampMs?: number | null;
  paused?: boolean;
}

export interface ListResponse {
  executions: ExecutionSummary[];
  nextPageToken?: string | null;
}

export interface PauseInfo {
  sinceTimestampMs: number;
  reason?: string | null;
  identity?: string | null;
}

export interface GlobalAttributeValue {
  column: string;
  value: unknown;
}

export interface DescribeResponse {
  processExecutionId: string;
  processId: string;
  processType: string;
  workerUrl: string;
  status: ProcessStatus;
  startTimestampMs: number;
  closeTimestampMs?: number | null;
  runningStateExecutions: number;
  result?: EncodedObject | null;
  failure?: { reason: string; details?: string | null } | null;
  globalAttributeConfig?: { tableName: string; primaryKey: GlobalAttributeValue } | null;
  paused?: PauseInfo | null;
  parkedTasks: number;
}

export interface HistoryEvent {
  eventId: number;
  eventTimestampMs: number;
  eventType: string;
  details: Record<string, unknown>;
}

export interface HistoryResponse {
  processExecutionId: string;
  events: HistoryEvent[];
  nextAfterEventId?: number | null;
}

export interface PendingCall {
  api: "waitUntil" | "execute";
  attempt: number;
  phase: "SCHEDULED" | "RUNNING" | "PARKED" | "PAUSED";
  dueTimestampMs: number;
  parkedReason?: string | null;
}

export interface StateFailure {
  api: string;
  attempt: number;
  error: string;
  timestampMs: number;
}

export interface TimerWait {
  delayInSeconds: number;
  dueTimestampMs?: number | null;
  status?: string | null;
}

export interface LocalQueueWait {
  queueName: string;
  count: number;
  queued: number;
  status?: string | null;
}

export interface StateInfo {
  stateExecutionId: string;
  stateId: string;
  status: string;
  startedTimestampMs: number;
  pendingCall?: PendingCall | null;
  lastFailure?: StateFailure | null;
  waitingFor?: { waitingType: string; timers: TimerWait[]; localQueues: LocalQueueWait[] } | null;
}

export interface StatesResponse {
  processExecutionId: string;
  status: ProcessStatus;
  paused?: PauseInfo | null;
  states: StateInfo[];
}

export interface AttributesResponse {
  processExecutionId: string;
  globalAttributes?: {
    tableName: string;
    primaryKey: GlobalAttributeValue;
    row: Record<string, unknown> | null;
  } | null;
  localAttributes: { key: string; value: EncodedObject }[];
}

export interface ControlRequest {
  processId: string;
  processExecutionId?: string;
  stateExecutionId?: string;
  reason?: string;
  identity?: string;
}

export interface ControlResponse {
  stateExecutionIds: string[];
}
