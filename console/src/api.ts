// Calls to the API service that serves the page (same origin). When it answers 401 the
// user is asked for a bearer token, which is kept in sessionStorage for this tab only
// and sent on every later call. A 403 is a token without the role the call needs: asking
// for a token again would not help, so the call fails with a message saying so.
import type {
  AttributesResponse, ControlRequest, ControlResponse, DefinitionDescribeResponse, DefinitionsListResponse, DeploymentRef,
  DeploymentsListResponse, ExecutionsMoveResponse, RegisterDefinitionsResponse,
  BatchDescribeResponse, BatchListRequest, BatchListResponse, BatchStartRequest, BatchStartResponse,
  BusinessTableRef, CountRequest, CountResponse, FilterNode, DescribeResponse, EncodedObject, HistoryEventType, HistoryResponse, ListFilter, ListResponse,
  ResetRequest,
  ResetResponse, RpcResponse, StatesResponse, StopType,
  ScheduleCreateRequest, ScheduleDescribeResponse, ScheduleHistoryRequest, ScheduleHistoryResponse, ScheduleListRequest, ScheduleListResponse,
  ScheduleOverlapPolicy, ScheduleTriggerResponse,
  FlowLimitsEntry, FlowLimitsHistoryRequest, FlowLimitsHistoryResponse, FlowLimitsListResponse, FlowLimitsSetRequest,
} from "./types.js";

const SERVICE = "/api/v1/xdb/service/process-execution/";
const DEFINITIONS = "/api/v1/xdb/service/definitions/";
const DEPLOYMENTS = "/api/v1/xdb/service/deployments/";
const BATCH = "/api/v1/xdb/service/batch/";
const SCHEDULE = "/api/v1/xdb/service/schedule/";
const FLOW_LIMITS = "/api/v1/xdb/service/flow-limits/";
const CONSOLE = "/api/v1/xdb/console/process-execution/";
const TOKEN_KEY = "xdb.console.token";

/** An error the API answered, with its machine-readable sub-type. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly subType: string,
    message: string,
  ) {
    super(message);
  }
}

/** Asks the user for a token; resolves once one was given. Set by the token dialog. */
type TokenPrompt = (message: string) => Promise<string>;
let askForToken: TokenPrompt | undefined;
/** Only one prompt at a time: concurrent 401s wait for the same answer. */
let pendingPrompt: Promise<string> | undefined;

export function onTokenNeeded(prompt: TokenPrompt): void {
  askForToken = prompt;
}

export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

async function newToken(message: string): Promise<void> {
  if (!askForToken) throw new ApiError(401, "UNAUTHORIZED", message);
  pendingPrompt ??= askForToken(message).finally(() => {
    pendingPrompt = undefined;
  });
  sessionStorage.setItem(TOKEN_KEY, await pendingPrompt);
}

/** POSTs `body` as JSON to `path`; on 401 asks for a token and tries again. */
export async function post<T>(path: string, body: unknown): Promise<T> {
  for (;;) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    const current = token();
    if (current) headers.authorization = `Bearer ${current}`;
    const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    const text = await response.text();
    let json: unknown = undefined;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      json = undefined;
    }
    const error = (json ?? {}) as { subType?: string; message?: string };
    if (response.status === 401) {
      // Sent before another call's prompt got a token: try again with it.
      if (token() !== current) continue;
      await newToken(current ? "The token was not accepted. Enter another one." : "This XDB service requires a token.");
      continue;
    }
    if (response.status === 403 && error.subType === "FORBIDDEN") {
      throw new ApiError(403, "FORBIDDEN", `this token lacks the role this needs: ${error.message ?? ""}`);
    }
    if (!response.ok) {
      throw new ApiError(response.status, error.subType ?? "", error.message ?? (text || response.statusText));
    }
    return json as T;
  }
}

/** The text at `path` (GET, with the token if any), or undefined when it is not served
 * or the token may not read it. */
export async function getText(path: string): Promise<string | undefined> {
  const current = token();
  const response = await fetch(path, current ? { headers: { authorization: `Bearer ${current}` } } : {});
  return response.ok ? response.text() : undefined;
}

export const api = {
  /** A page of executions; with `explain` (and `where`), the database's plan for it
   * (`plan`) instead, and no executions. */
  list: (filter: ListFilter, pageSize: number, nextPageToken?: string, where?: FilterNode, businessTable?: BusinessTableRef, explain = false) =>
    post<ListResponse>(`${SERVICE}list`, {
      filter,
      pageSize,
      ...(nextPageToken ? { nextPageToken } : {}),
      ...(where ? { where } : {}),
      ...(businessTable ? { businessTable } : {}),
      ...(explain ? { explain } : {}),
    }),
  count: (request: CountRequest) => post<CountResponse>(`${SERVICE}count`, request),
  describe: (processId: string, processExecutionId?: string) =>
    post<DescribeResponse>(`${SERVICE}describe`, { processId, ...(processExecutionId ? { processExecutionId } : {}) }),
  history: (processId: string, processExecutionId: string, pageSize: number, afterEventId?: number, eventTypes?: HistoryEventType[]) =>
    post<HistoryResponse>(`${SERVICE}history`, {
      processId,
      processExecutionId,
      pageSize,
      ...(afterEventId !== undefined ? { afterEventId } : {}),
      ...(eventTypes ? { eventTypes } : {}),
    }),
  states: (processId: string, processExecutionId: string) =>
    post<StatesResponse>(`${SERVICE}states`, { processId, processExecutionId }),
  attributes: (processId: string, processExecutionId: string) =>
    post<AttributesResponse>(`${CONSOLE}attributes`, { processId, processExecutionId }),
  stop: (processId: string, stopType: StopType, reason?: string) =>
    post<object>(`${SERVICE}stop`, { processId, stopType, ...(reason ? { reason } : {}) }),
  retryNow: (request: ControlRequest) => post<ControlResponse>(`${SERVICE}retry-now`, request),
  giveUp: (request: ControlRequest) => post<ControlResponse>(`${SERVICE}give-up`, request),
  pause: (request: ControlRequest) => post<ControlResponse>(`${SERVICE}pause`, request),
  resume: (request: ControlRequest) => post<ControlResponse>(`${SERVICE}resume`, request),
  /** The control request with `reprioritize`, the change to make. */
  reprioritize: (request: ControlRequest) => post<ControlResponse>(`${SERVICE}reprioritize`, request),
  reset: (request: ResetRequest) => post<ResetResponse>(`${SERVICE}reset`, request),
  publish: (processId: string, queueName: string, payload: EncodedObject | undefined, dedupId?: string) =>
    post<object>(`${SERVICE}publish-to-local-queue`, {
      processId,
      messages: [{ queueName, ...(payload ? { payload } : {}), ...(dedupId ? { dedupId } : {}) }],
    }),
  rpc: (processId: string, rpcName: string, input: EncodedObject | undefined) =>
    post<RpcResponse>(`${SERVICE}rpc`, { processId, rpcName, ...(input ? { input } : {}) }),
  batchStart: (request: BatchStartRequest) => post<BatchStartResponse>(`${BATCH}start`, request),
  batchList: (request: BatchListRequest) => post<BatchListResponse>(`${BATCH}list`, request),
  batchDescribe: (batchId: string) => post<BatchDescribeResponse>(`${BATCH}describe`, { batchId }),
  batchCancel: (batchId: string, reason?: string) => post<object>(`${BATCH}cancel`, { batchId, ...(reason ? { reason } : {}) }),
  scheduleCreate: (request: ScheduleCreateRequest) => post<ScheduleDescribeResponse>(`${SCHEDULE}create`, request),
  scheduleList: (request: ScheduleListRequest) => post<ScheduleListResponse>(`${SCHEDULE}list`, request),
  scheduleDescribe: (scheduleId: string) => post<ScheduleDescribeResponse>(`${SCHEDULE}describe`, { scheduleId }),
  schedulePause: (scheduleId: string, reason?: string) =>
    post<ScheduleDescribeResponse>(`${SCHEDULE}pause`, { scheduleId, ...(reason ? { reason } : {}) }),
  scheduleResume: (scheduleId: string, reason?: string) =>
    post<ScheduleDescribeResponse>(`${SCHEDULE}resume`, { scheduleId, ...(reason ? { reason } : {}) }),
  scheduleTrigger: (scheduleId: string, overlapPolicy?: ScheduleOverlapPolicy) =>
    post<ScheduleTriggerResponse>(`${SCHEDULE}trigger`, { scheduleId, ...(overlapPolicy ? { overlapPolicy } : {}) }),
  scheduleDelete: (scheduleId: string, reason?: string) => post<object>(`${SCHEDULE}delete`, { scheduleId, ...(reason ? { reason } : {}) }),
  scheduleHistory: (request: ScheduleHistoryRequest) => post<ScheduleHistoryResponse>(`${SCHEDULE}history`, request),
  flowLimitsSet: (request: FlowLimitsSetRequest) => post<FlowLimitsEntry>(`${FLOW_LIMITS}set`, request),
  flowLimitsList: (processType?: string) => post<FlowLimitsListResponse>(`${FLOW_LIMITS}list`, processType ? { processType } : {}),
  flowLimitsHistory: (request: FlowLimitsHistoryRequest) => post<FlowLimitsHistoryResponse>(`${FLOW_LIMITS}history`, request),
  definitions: () => post<DefinitionsListResponse>(`${DEFINITIONS}list`, {}),
  definition: (processType: string, revision?: number) =>
    post<DefinitionDescribeResponse>(`${DEFINITIONS}describe`, { processType, ...(revision !== undefined ? { revision } : {}) }),
  deployments: () => post<DeploymentsListResponse>(`${DEPLOYMENTS}list`, {}),
  setCurrentDeployment: (deployment: DeploymentRef, force = false) =>
    post<RegisterDefinitionsResponse>(`${DEPLOYMENTS}set-current`, { deployment: { name: deployment.name, version: deployment.version }, force }),
  moveExecutions: (processType: string, to: DeploymentRef) =>
    post<ExecutionsMoveResponse>(`${DEPLOYMENTS}move`, { processType, to: { name: to.name, version: to.version }, processIds: [] }),
};

/** The current definition of `processType`, or undefined when the type is not registered
 * (404), the service has no definitions, or the token may not read them: callers then
 * fall back to what they can do without one. */
export async function definitionOrNothing(processType: string): Promise<DefinitionDescribeResponse | undefined> {
  try {
    return await api.definition(processType);
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 403 || error.status === 405)) return undefined;
    throw error;
  }
}
