// The parts of the XDB REST contract (xdb-protocol/openapi.json) the console reads, under
// the console's names: the types are generated from the document into
// generated/types.gen.ts (scripts/generate-wire-types.sh).
import type * as wire from "./generated/types.gen.js";

export type ProcessStatus = wire.ProcessStatus;
export type EncodedObject = wire.EncodedObject;
export type ListFilter = wire.ProcessExecutionListFilter;
export type ExecutionSummary = wire.ProcessExecutionSummary;
export type ListResponse = wire.ProcessExecutionListResponse;
export type CountRequest = wire.ProcessExecutionCountRequest;
export type CountResponse = wire.ProcessExecutionCountResponse;
export type FilterNode = wire.FilterNode;
export type ExecutionField = wire.ExecutionField;
export type BackingOff = wire.BackingOff;
export type PauseInfo = wire.PauseInfo;
export type GlobalAttributeValue = wire.GlobalAttributeValue;
export type DescribeResponse = wire.ProcessExecutionDescribeResponse;
export type HistoryEvent = wire.HistoryEvent;
export type HistoryResponse = wire.ProcessExecutionHistoryResponse;
export type PendingCall = wire.PendingCall;
export type StateFailure = wire.StateFailure;
export type TimerWait = wire.TimerWait;
export type LocalQueueWait = wire.LocalQueueWait;
export type StateInfo = wire.StateExecutionInfo;
export type StatesResponse = wire.ProcessExecutionStatesResponse;
export type AttributesResponse = wire.ProcessExecutionAttributesResponse;
export type ControlRequest = wire.ProcessExecutionControlRequest;
export type ControlResponse = wire.ProcessExecutionControlResponse;
export type ResetRequest = wire.ProcessExecutionResetRequest;
export type ResetResponse = wire.ProcessExecutionResetResponse;
export type StopType = wire.ProcessExecutionStopType;
export type HistoryEventType = wire.HistoryEventType;
export type RpcResponse = wire.ProcessExecutionRpcResponse;
export type StateDecision = wire.StateDecision;
export type RetryPolicy = wire.RetryPolicy;
export type AsyncStateConfig = wire.AsyncStateConfig;
export type DefinitionRevision = wire.DefinitionRevision;
export type DefinitionsListResponse = wire.DefinitionsListResponse;
export type DeploymentRef = wire.DeploymentRef;
export type DeploymentSummary = wire.DeploymentSummary;
export type DeploymentsListResponse = wire.DeploymentsListResponse;
export type ExecutionsMoveResponse = wire.ExecutionsMoveResponse;
export type RegisterDefinitionsResponse = wire.RegisterDefinitionsResponse;
export type DefinitionDescribeResponse = wire.DefinitionDescribeResponse;
export type ProcessDefinition = wire.ProcessDefinition;
export type StateDefinition = wire.StateDefinition;
export type RpcDefinition = wire.RpcDefinition;
export type BusinessTableRef = wire.BusinessTableRef;
export type BatchOperation = wire.BatchOperation;
export type BatchInfo = wire.BatchInfo;
export type BatchStartRequest = wire.BatchStartRequest;
export type BatchStartResponse = wire.BatchStartResponse;
export type BatchListRequest = wire.BatchListRequest;
export type BatchListResponse = wire.BatchListResponse;
export type BatchDescribeResponse = wire.BatchDescribeResponse;
export type ScheduleSpec = wire.ScheduleSpec;
export type ScheduleInfo = wire.ScheduleInfo;
export type ScheduleFiring = wire.ScheduleFiring;
export type ScheduleOverlapPolicy = wire.ScheduleOverlapPolicy;
export type ScheduleCreateRequest = wire.ScheduleCreateRequest;
export type ScheduleListRequest = wire.ScheduleListRequest;
export type ScheduleListResponse = wire.ScheduleListResponse;
export type ScheduleDescribeResponse = wire.ScheduleDescribeResponse;
export type ScheduleTriggerResponse = wire.ScheduleTriggerResponse;
export type FlowLimits = wire.FlowLimits;
export type FlowLimitsEntry = wire.FlowLimitsEntry;
export type FlowLimitChange = wire.FlowLimitChange;
export type FlowLimitsSetRequest = wire.FlowLimitsSetRequest;
export type FlowLimitsListResponse = wire.FlowLimitsListResponse;
export type FlowLimitsHistoryRequest = wire.FlowLimitsHistoryRequest;
export type FlowLimitsHistoryResponse = wire.FlowLimitsHistoryResponse;

/** The statuses the filter offers, in its order. */
export const STATUSES = ["RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "TERMINATED"] as const satisfies readonly ProcessStatus[];
// A status the contract gains and STATUSES does not offer fails to compile here.
type _Holds<T extends true> = T;
type _EveryStatusOffered = _Holds<[Exclude<ProcessStatus, (typeof STATUSES)[number]>] extends [never] ? true : false>;
