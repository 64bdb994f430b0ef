/**
 * The client of the XDB service API: typed calls built from a process definition
 * (start, RPC), the plain calls (stop, describe, list, history, publish, wait), the
 * operator's calls, batches, schedules and flow limits. How a call is sent, sent again and its failures mapped
 * to typed errors is in `transport.ts`; the options in `client-options.ts`; the requests
 * built from a call's arguments in `requests.ts`.
 */
import { definitionOf, type ProcessDefinition } from "./definition.js";
import { exportDefinitions, type DefinitionSource } from "./definitions.js";
import { decode, encodeOptional } from "./encoding.js";
import { XdbSdkError } from "./errors.js";
import { OPERATE_PATHS } from "./operate.js";
import type { Process, RpcInput, RpcName, RpcOutput } from "./process.js";
import {
  BATCH_PATHS,
  FLOW_LIMITS_PATHS,
  FlowLimitsEntrySchema,
  FlowLimitsHistoryResponseSchema,
  FlowLimitsListResponseSchema,
  type FlowLimits,
  type FlowLimitsEntry,
  type FlowLimitsHistoryRequest,
  type FlowLimitsHistoryResponse,
  type FlowLimitsListResponse,
  type FlowLimitsSetRequest,
  SCHEDULE_PATHS,
  ScheduleBackfillResponseSchema,
  ScheduleDescribeResponseSchema,
  ScheduleHistoryResponseSchema,
  ScheduleListResponseSchema,
  ScheduleTriggerResponseSchema,
  type ScheduleBackfillRequest,
  type ScheduleBackfillResponse,
  type ScheduleCreateRequest,
  type ScheduleDescribeResponse,
  type ScheduleHistoryRequest,
  type ScheduleHistoryResponse,
  type ScheduleListRequest,
  type ScheduleListResponse,
  type ScheduleOverlapPolicy,
  type ScheduleTriggerResponse,
  type ScheduleUpdateRequest,
  BatchDescribeResponseSchema,
  BatchListResponseSchema,
  BatchStartResponseSchema,
  DEFINITIONS_PATHS,
  DefinitionDescribeResponseSchema,
  DefinitionsListResponseSchema,
  DEPLOYMENTS_PATHS,
  DeploymentsListResponseSchema,
  ExecutionsMoveResponseSchema,
  ProcessExecutionControlResponseSchema,
  ProcessExecutionDescribeResponseSchema,
  ProcessExecutionHistoryResponseSchema,
  ProcessExecutionListResponseSchema,
  ProcessExecutionCountResponseSchema,
  ProcessExecutionResetResponseSchema,
  ProcessExecutionRpcResponseSchema,
  ProcessExecutionStartResponseSchema,
  ProcessExecutionStatesResponseSchema,
  ProcessExecutionWaitForCompletionResponseSchema,
  RegisterDefinitionsResponseSchema,
  SERVICE_PATHS,
  type BatchCancelRequest,
  type BatchDescribeResponse,
  type BatchListRequest,
  type BatchListResponse,
  type BatchStartRequest,
  type BatchStartResponse,
  type DefinitionDescribeRequest,
  type DefinitionDescribeResponse,
  type DefinitionsListResponse,
  type DeploymentRef,
  type DeploymentSetCurrentRequest,
  type DeploymentsListResponse,
  type ExecutionsMoveRequest,
  type ExecutionsMoveResponse,
  type HistoryEvent,
  type LocalQueueMessage,
  type ProcessExecutionControlResponse,
  type ProcessExecutionDescribeResponse,
  type ProcessExecutionHistoryResponse,
  type ProcessExecutionListRequest,
  type ProcessExecutionListResponse,
  type ProcessExecutionCountRequest,
  type ProcessExecutionCountResponse,
  type ProcessExecutionResetResponse,
  type ProcessExecutionRpcRequest,
  type ProcessExecutionRpcResponse,
  type ProcessExecutionStartRequest,
  type ProcessExecutionStartResponse,
  type ProcessExecutionStatesResponse,
  type ProcessExecutionStopRequest,
  type PublishToLocalQueueRequest,
  type RegisterDefinitionsRequest,
  type RegisterDefinitionsResponse,
  type Reprioritization,
  type WorkerDeployment,
} from "./protocol.js";
import type { InputArgs } from "./state.js";
import type {
  ControlOptions,
  Completion,
  HistoryOptions,
  ProcessStartOptions,
  PublishOptions,
  ReprioritizeOptions,
  ResetOptions,
  StopOptions,
} from "./client-options.js";
import { buildStartRequest, deploymentRef, historyRequest, localQueueMessage, withOptional } from "./requests.js";
import { ServiceTransport } from "./transport.js";

export * from "./client-options.js";
export { buildStartRequest, localQueueMessage } from "./requests.js";
export { errorFromResponse } from "./transport.js";

/** The longest wait the service grants one wait-for-completion call by default. */
const MAX_WAIT_SECONDS = 300;

export class Client extends ServiceTransport {
  /**
   * Starts `process` as `processId`: type, starting state (its input and config) and the
   * global-attribute table come from the definition. Returns the process execution id.
   */
  async startProcess<P extends Process>(
    process: P | (new () => P) | ProcessDefinition,
    processId: string,
    input?: unknown,
    options: ProcessStartOptions = {},
  ): Promise<string> {
    const request = buildStartRequest(definitionOf(process), processId, input, {
      ...options,
      workerUrl: options.workerUrl ?? this.options.workerUrl,
    });
    return (await this.start(request)).processExecutionId;
  }

  /**
   * Calls RPC `rpcName` of `process` on the current execution of `processId`, with the
   * RPC's registered loading policy and lock, and returns its decoded output.
   */
  async invokeRpc<P extends Process, N extends RpcName<P>>(
    process: P | (new () => P),
    processId: string,
    rpcName: N,
    ...input: InputArgs<RpcInput<P, N>>
  ): Promise<RpcOutput<P, N>> {
    const definition = definitionOf(process);
    const request: ProcessExecutionRpcRequest = {
      processId,
      rpcName,
      ...definition.rpcRequestOptions(rpcName),
    };
    const encoded = encodeOptional(`input of rpc ${JSON.stringify(rpcName)}`, input[0]);
    if (encoded) request.input = encoded;
    const response = await this.rpc(request);
    return decode<RpcOutput<P, N>>(`output of rpc ${JSON.stringify(rpcName)}`, response.output);
  }

  /** Publishes `payload` (none by default) to local queue `queueName` of the current execution. */
  async publishToLocalQueue(
    processId: string,
    queueName: string,
    payload?: unknown,
    options: PublishOptions & { dedupId?: string } = {},
  ): Promise<void> {
    const { dedupId, ...rest } = options;
    await this.publishMessages(processId, [localQueueMessage(queueName, payload, dedupId)], rest);
  }

  /** Publishes several messages (1 to 1000, see `localQueueMessage`) at once, in one transaction. */
  async publishMessages(processId: string, messages: LocalQueueMessage[], options: PublishOptions = {}): Promise<void> {
    const request: PublishToLocalQueueRequest = { processId, messages };
    if (options.processExecutionId !== undefined) request.processExecutionId = options.processExecutionId;
    await this.write(SERVICE_PATHS.publishToLocalQueue, request, options.requestId);
  }

  /** Ends the current execution of `processId` (`TERMINATE` by default), or only `processExecutionId` if it is the current one. */
  async stop(processId: string, options: StopOptions = {}): Promise<void> {
    const request: ProcessExecutionStopRequest = { ...options, processId };
    await this.write(SERVICE_PATHS.stop, request, options.requestId);
  }

  /** Describes the current execution of `processId`, or the given one. */
  async describe(processId: string, processExecutionId?: string): Promise<ProcessExecutionDescribeResponse> {
    return this.call(
      SERVICE_PATHS.describe,
      withOptional({ processId }, "processExecutionId", processExecutionId),
      ProcessExecutionDescribeResponseSchema,
    );
  }

  /**
   * Lists executions, newest first. `where` filters them by execution fields and
   * business-row columns (see docs/queries.md); with `where`, `explain: true` answers the
   * database's plan (`plan`: whether an index serves the filter) instead of the page.
   */
  async list(request: ProcessExecutionListRequest = {}): Promise<ProcessExecutionListResponse> {
    return this.call(SERVICE_PATHS.list, request, ProcessExecutionListResponseSchema);
  }

  /**
   * Counts executions exactly, optionally per group (`groupBy`); `where` filters them by
   * execution fields and business-row columns (see docs/queries.md).
   */
  async count(request: ProcessExecutionCountRequest = {}): Promise<ProcessExecutionCountResponse> {
    return this.call(SERVICE_PATHS.count, request, ProcessExecutionCountResponseSchema);
  }

  /**
   * A page of the history events of the current execution of `processId`, or the given
   * one, oldest first. The answer's `nextAfterEventId`, set when more events follow, is
   * the `afterEventId` of the next page; `historyEvents` walks every page.
   */
  async history(
    processId: string,
    processExecutionIdOrOptions?: string | HistoryOptions,
  ): Promise<ProcessExecutionHistoryResponse> {
    const options =
      typeof processExecutionIdOrOptions === "string"
        ? { processExecutionId: processExecutionIdOrOptions }
        : (processExecutionIdOrOptions ?? {});
    return this.call(SERVICE_PATHS.history, historyRequest(processId, options), ProcessExecutionHistoryResponseSchema);
  }

  /**
   * Every history event of the current execution of `processId` (or the given one) after
   * `afterEventId`, oldest first, fetched a page (`pageSize` events) at a time.
   */
  async *historyEvents(processId: string, options: HistoryOptions = {}): AsyncGenerator<HistoryEvent, void, undefined> {
    let afterEventId = options.afterEventId;
    for (;;) {
      const page = await this.history(processId, { ...options, afterEventId });
      yield* page.events;
      if (page.nextAfterEventId === undefined || page.nextAfterEventId === null) return;
      afterEventId = page.nextAfterEventId;
    }
  }

  /**
   * Waits up to `timeoutMs` (default 30 s) for the current execution of `processId` to
   * close, long polling as often as the service's per-call limit requires. On timeout the
   * last answer comes back with `timedOut: true`.
   */
  async waitForCompletion<T = unknown>(processId: string, options: { timeoutMs?: number } = {}): Promise<Completion<T>> {
    const deadline = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const left = Math.max(1, Math.ceil((deadline - Date.now()) / 1000));
      const timeoutSeconds = Math.min(left, this.options.maxWaitSeconds ?? MAX_WAIT_SECONDS);
      const response = await this.call(
        SERVICE_PATHS.waitForCompletion,
        { processId, timeoutSeconds },
        ProcessExecutionWaitForCompletionResponseSchema,
        timeoutSeconds * 1000,
      );
      if (!response.timedOut || Date.now() >= deadline) {
        return { ...response, output: decode<T>("process result", response.result) };
      }
    }
  }

  // ---- registered definitions ----

  /**
   * Registers the definitions of `definitions` (processes, the SDK's definitions, or wire
   * definitions from `exportDefinition`) as deployed by `deployment`. Idempotent: a
   * definition equal to the current one answers `changed: false` and writes nothing.
   * Needs a token with role `deploy`. Throws `XdbApiError` with `DEFINITION_INCOMPATIBLE`
   * (409) when running executions wait in states a definition removes (unless `force`),
   * `INVALID_REQUEST` when a definition does not fit the database (a missing table or
   * column, a column of another type), `FORBIDDEN` without the role.
   */
  async registerDefinitions(
    deployment: WorkerDeployment,
    definitions: readonly DefinitionSource[],
    options: { force?: boolean } = {},
  ): Promise<RegisterDefinitionsResponse> {
    if (definitions.length === 0) {
      throw new XdbSdkError("NOT_ALLOWED", "registerDefinitions needs at least one process");
    }
    const request: RegisterDefinitionsRequest = {
      deployment,
      definitions: exportDefinitions(definitions),
      force: options.force ?? false,
    };
    return this.call(DEFINITIONS_PATHS.register, request, RegisterDefinitionsResponseSchema);
  }

  /** The current revision of every registered process type. */
  async listDefinitions(): Promise<DefinitionsListResponse> {
    return this.call(DEFINITIONS_PATHS.list, {}, DefinitionsListResponseSchema);
  }

  /**
   * A registered process type's definition (the current revision, or `revision`) and its
   * revisions, newest first. Throws `XdbApiError` with `DEFINITION_NOT_FOUND` (404) when the
   * type or the revision is not registered.
   */
  async describeDefinition(
    process: string | Process | (new () => Process),
    revision?: number,
  ): Promise<DefinitionDescribeResponse> {
    const processType = typeof process === "string" ? process : definitionOf(process).processType;
    const request: DefinitionDescribeRequest = { processType };
    if (revision !== undefined) request.revision = revision;
    // The generated schema checks `definition` lazily (it is recursive), so its inferred
    // type leaves it optional; the schema still requires it.
    const answer = await this.call(DEFINITIONS_PATHS.describe, request, DefinitionDescribeResponseSchema);
    return answer as DefinitionDescribeResponse;
  }

  // ---- deployments ----

  /**
   * Every deployment that registered definitions: its process types, the types it is
   * current for, its running executions, and whether it is drained (current for nothing,
   * running nothing: it can be shut down). Needs role `read`.
   */
  async listDeployments(): Promise<DeploymentsListResponse> {
    return this.call(DEPLOYMENTS_PATHS.list, {}, DeploymentsListResponseSchema);
  }

  /**
   * Makes deployment `name`@`version` current again for every type it registered (a roll
   * back): its last definition of each type becomes a new revision. Needs role `deploy`.
   * Throws `XdbApiError` with `DEFINITION_NOT_FOUND` (404) for an unknown deployment,
   * `DEFINITION_INCOMPATIBLE` (409) when running executions wait in states it lacks
   * (unless `force`).
   */
  async setCurrentDeployment(
    name: string,
    version: string,
    options: { force?: boolean } = {},
  ): Promise<RegisterDefinitionsResponse> {
    const request: DeploymentSetCurrentRequest = { deployment: { name, version }, force: options.force ?? false };
    return this.call(DEPLOYMENTS_PATHS.setCurrent, request, RegisterDefinitionsResponseSchema);
  }

  /**
   * Moves running executions of `process` to deployment `to`: all of them, those on
   * `options.from`, or the named `options.processIds`; each runs its next worker call
   * there. Needs role `operate`. Throws `XdbApiError` with `DEFINITION_NOT_FOUND` (404)
   * when `to` (or `from`) did not register the type.
   */
  async moveExecutions(
    process: string | Process | (new () => Process),
    to: DeploymentRef,
    options: { from?: DeploymentRef; processIds?: readonly string[] } = {},
  ): Promise<ExecutionsMoveResponse> {
    const processType = typeof process === "string" ? process : definitionOf(process).processType;
    const request: ExecutionsMoveRequest = {
      processType,
      to: deploymentRef(to),
      processIds: [...(options.processIds ?? [])],
    };
    if (options.from) request.from = deploymentRef(options.from);
    return this.call(DEPLOYMENTS_PATHS.move, request, ExecutionsMoveResponseSchema);
  }

  // ---- the operator's calls ----

  /**
   * The state executions of the current execution of `processId` (or the given one): the
   * call each waits on and in which phase (scheduled, running, parked, paused), its last
   * failure, and what a waiting state's commands wait for.
   */
  async states(processId: string, processExecutionId?: string): Promise<ProcessExecutionStatesResponse> {
    return this.call(
      OPERATE_PATHS.states,
      withOptional({ processId }, "processExecutionId", processExecutionId),
      ProcessExecutionStatesResponseSchema,
    );
  }

  /**
   * Makes due at once the calls waiting out a retry backoff (attempt counts kept) and
   * puts parked tasks back in the queue. Throws `XdbApiError` with
   * `CONTROL_NOT_APPLICABLE` when none waits so, an attempt is running, or the execution
   * is paused.
   */
  async retryNow(processId: string, options: ControlOptions = {}): Promise<ProcessExecutionControlResponse> {
    return this.control(OPERATE_PATHS.retryNow, processId, options);
  }

  /**
   * Sends a state whose call failed and waits for its next attempt (or is parked) to its
   * failure recovery now, as if its retries ran out: the process fails, or proceeds to
   * the configured state.
   */
  async giveUp(processId: string, options: ControlOptions = {}): Promise<ProcessExecutionControlResponse> {
    return this.control(OPERATE_PATHS.giveUp, processId, options);
  }

  /** Holds the execution: none of its states' calls or timers run until `resume`. RPCs and messages are still taken. */
  async pause(
    processId: string,
    options: Omit<ControlOptions, "stateExecutionId"> = {},
  ): Promise<ProcessExecutionControlResponse> {
    return this.control(OPERATE_PATHS.pause, processId, options);
  }

  /** Releases a paused execution: what fell due meanwhile runs now. */
  async resume(
    processId: string,
    options: Omit<ControlOptions, "stateExecutionId"> = {},
  ): Promise<ProcessExecutionControlResponse> {
    return this.control(OPERATE_PATHS.resume, processId, options);
  }

  /**
   * Changes a running execution's claim order: its `priority`, `fairnessKey` or
   * `fairnessWeight` (a field left out stays). Its waiting tasks take the new order at
   * once, and the tasks it writes later inherit it; the answer names the state
   * executions whose waiting calls were reordered, and the history records
   * `REPRIORITIZED` with the order before and after (`reprioritizedDetailsOf`). Throws
   * `XdbApiError` with `INVALID_REQUEST` naming the field for a change out of range or
   * naming nothing, `CONTROL_NOT_APPLICABLE` for a weight on an execution without a
   * fairness key, and `PROCESS_NOT_RUNNING` for a closed execution.
   */
  async reprioritize(processId: string, options: ReprioritizeOptions): Promise<ProcessExecutionControlResponse> {
    const { priority, fairnessKey, fairnessWeight, ...control } = options;
    // A field left out is absent from the JSON (not null), which the service reads as "stays".
    return this.control(OPERATE_PATHS.reprioritize, processId, { ...control, reprioritize: { priority, fairnessKey, fairnessWeight } });
  }

  /**
   * Restarts the execution from `stateId` with `input`. A running execution's open
   * states are aborted (their calls, timers and waits cancelled); a closed one is
   * continued by a new execution of the process id, linked to it (`resetFrom`). The
   * answer names the execution that continues.
   */
  async reset(
    processId: string,
    stateId: string,
    input?: unknown,
    options: ResetOptions = {},
  ): Promise<ProcessExecutionResetResponse> {
    const stateInput = encodeOptional(`input of reset state ${JSON.stringify(stateId)}`, input);
    const body = withOptional({ ...options, processId, stateId }, "stateInput", stateInput);
    return this.write(OPERATE_PATHS.reset, body, options.requestId, ProcessExecutionResetResponseSchema);
  }

  private async control(
    path: string,
    processId: string,
    options: ControlOptions & { readonly reprioritize?: Reprioritization },
  ): Promise<ProcessExecutionControlResponse> {
    return this.write(path, { ...options, processId }, options.requestId, ProcessExecutionControlResponseSchema);
  }

  // ---- batch operations ----

  /**
   * Starts a batch: `request.operation` applied to every execution the selection matches
   * (`processType`, the `where` tree of `list` and `count`, `businessTable`; none of them:
   * every execution), at most once each, at `ratePerSecond` (default 100, at most
   * 10000), as a durable job the service drives and resumes after any crash. The
   * operation's arguments: `messages` (`PUBLISH_TO_LOCAL_QUEUE`, see `localQueueMessage`),
   * `reset` (`RESET`), `moveTo` (`MOVE_TO_DEPLOYMENT`, with `processType`), `reprioritize`
   * (`REPRIORITIZE`: `{ priority?, fairnessKey?, fairnessWeight? }`, as `reprioritize`
   * takes them; an execution the change does not apply to is skipped). Preview the
   * selection with `count` first. Needs role `operate`. Answers the batch id and how many
   * executions matched when it started.
   */
  async startBatch(request: BatchStartRequest): Promise<BatchStartResponse> {
    return this.write(BATCH_PATHS.start, request, request.requestId, BatchStartResponseSchema);
  }

  /** A page of batches, newest first (`pageSize` default 50, at most 1000; `status` filters). */
  async listBatches(request: BatchListRequest = {}): Promise<BatchListResponse> {
    // The generated schemas check a batch's `request` lazily (its `where` tree is
    // recursive), so their inferred types leave it optional; the schemas still require it.
    return (await this.call(BATCH_PATHS.list, request, BatchListResponseSchema)) as BatchListResponse;
  }

  /**
   * A batch, its progress (`expected`, `matched` = `done` + `skipped` + `failed`) and the
   * latest executions it skipped or failed on (`notDone`). Throws `XdbApiError` with
   * `BATCH_NOT_FOUND` (404) for an unknown id.
   */
  async describeBatch(batchId: string): Promise<BatchDescribeResponse> {
    return (await this.call(BATCH_PATHS.describe, { batchId }, BatchDescribeResponseSchema)) as BatchDescribeResponse;
  }

  /** Stops a running batch after the execution in hand (what it did stays done); answers it as `describeBatch` does. */
  async cancelBatch(batchId: string, options: Omit<BatchCancelRequest, "batchId"> = {}): Promise<BatchDescribeResponse> {
    const answer = await this.call(BATCH_PATHS.cancel, { ...options, batchId }, BatchDescribeResponseSchema);
    return answer as BatchDescribeResponse;
  }

  // ---- schedules: a process type started on a cron expression or an interval ----

  /** Creates a schedule (`SCHEDULE_ALREADY_EXISTS` when the id is taken; a bad spec is `INVALID_REQUEST` naming the field). */
  async createSchedule(request: ScheduleCreateRequest): Promise<ScheduleDescribeResponse> {
    return (await this.call(SCHEDULE_PATHS.create, request, ScheduleDescribeResponseSchema)) as ScheduleDescribeResponse;
  }

  /** Replaces a schedule's spec, template and policies; it fires anew from now. */
  async updateSchedule(request: ScheduleUpdateRequest): Promise<ScheduleDescribeResponse> {
    return (await this.call(SCHEDULE_PATHS.update, request, ScheduleDescribeResponseSchema)) as ScheduleDescribeResponse;
  }

  /** Pauses a schedule: nothing fires until it is resumed. */
  async pauseSchedule(scheduleId: string, reason?: string): Promise<ScheduleDescribeResponse> {
    return (await this.call(SCHEDULE_PATHS.pause, { scheduleId, reason }, ScheduleDescribeResponseSchema)) as ScheduleDescribeResponse;
  }

  /** Resumes a schedule; missed firings within its catch-up window run. */
  async resumeSchedule(scheduleId: string, reason?: string): Promise<ScheduleDescribeResponse> {
    return (await this.call(SCHEDULE_PATHS.resume, { scheduleId, reason }, ScheduleDescribeResponseSchema)) as ScheduleDescribeResponse;
  }

  /** Fires a schedule now, whatever its spec and paused flag say. */
  async triggerSchedule(scheduleId: string, overlapPolicy?: ScheduleOverlapPolicy): Promise<ScheduleTriggerResponse> {
    return this.call(SCHEDULE_PATHS.trigger, { scheduleId, overlapPolicy }, ScheduleTriggerResponseSchema);
  }

  /** Runs the firings the spec had in `[startTimestampMs, endTimestampMs)`; each is recorded once. */
  async backfillSchedule(request: ScheduleBackfillRequest): Promise<ScheduleBackfillResponse> {
    return this.call(SCHEDULE_PATHS.backfill, request, ScheduleBackfillResponseSchema);
  }

  /** Deletes a schedule (`SCHEDULE_NOT_FOUND` when there is none); its executions run on. */
  async deleteSchedule(scheduleId: string, reason?: string): Promise<void> {
    await this.call(SCHEDULE_PATHS.delete, { scheduleId, reason });
  }

  /** A page of schedules, by id. */
  async listSchedules(request: ScheduleListRequest = {}): Promise<ScheduleListResponse> {
    return (await this.call(SCHEDULE_PATHS.list, request, ScheduleListResponseSchema)) as ScheduleListResponse;
  }

  /** A schedule, its next 10 fire times and its latest firings (`SCHEDULE_NOT_FOUND` for an unknown id). */
  async describeSchedule(scheduleId: string): Promise<ScheduleDescribeResponse> {
    return (await this.call(SCHEDULE_PATHS.describe, { scheduleId }, ScheduleDescribeResponseSchema)) as ScheduleDescribeResponse;
  }

  /**
   * A page of operators' changes of schedules, newest first: each names the action, who
   * made it (the token's name, `anonymous` without tokens), the schedule before and after,
   * and why. `request.scheduleId` need not exist any more: a deleted schedule's history is kept.
   */
  async scheduleHistory(request: ScheduleHistoryRequest = {}): Promise<ScheduleHistoryResponse> {
    return this.call(SCHEDULE_PATHS.history, request, ScheduleHistoryResponseSchema);
  }

  // ---- flow limits: how fast a process type's or a state's worker is called ----

  /**
   * Sets an operator's override of a type's limits (or, with `options.stateId`, a state's);
   * `null` clears it, so the declared limits apply again, and `{}` is no limit whatever is
   * declared. Answers the entry as it now is. A bad rate or concurrency (a
   * `maxConcurrentCalls` of 0 is `override.maxConcurrentCalls`), `maxRunningExecutions` on
   * a state (`override.maxRunningExecutions`: it is the type's), a `concurrencyKeyAttribute`
   * that is not a column name, comes without `maxRunningExecutions` or is given for a state
   * (`override.concurrencyKeyAttribute`), a `priority` outside 1 to 5 or given for a state
   * (`override.priority`: it is the type's), a `fairnessKeyAttribute` that is not a column
   * name or is given for a state (`override.fairnessKeyAttribute`), a `fairnessWeight`
   * outside 1 to 1,000 or given for a state (`override.fairnessWeight`), a state the
   * registered type does not have or a too-long reason is `INVALID_REQUEST` naming the
   * field, and changes nothing. Sending the same override twice leaves the same override,
   * so it is sent again like a read.
   */
  async setFlowLimits(
    processType: string,
    override: FlowLimits | null,
    options: { stateId?: string; reason?: string } = {},
  ): Promise<FlowLimitsEntry> {
    const request: FlowLimitsSetRequest = { processType, stateId: options.stateId, reason: options.reason };
    if (override !== null) request.override = override;
    return this.call(FLOW_LIMITS_PATHS.set, request, FlowLimitsEntrySchema);
  }

  /** The limits declared, overridden and in force, by process type and state. */
  async listFlowLimits(processType?: string): Promise<FlowLimitsListResponse> {
    return this.call(FLOW_LIMITS_PATHS.list, { processType }, FlowLimitsListResponseSchema);
  }

  /** A page of changes of limits, by registrations and operators, newest first. */
  async flowLimitHistory(request: FlowLimitsHistoryRequest = {}): Promise<FlowLimitsHistoryResponse> {
    return this.call(FLOW_LIMITS_PATHS.history, request, FlowLimitsHistoryResponseSchema);
  }

  // ---- plain calls, one per endpoint ----

  /** Sends `request` as is, with a new request id if it has none. */
  async start(request: ProcessExecutionStartRequest): Promise<ProcessExecutionStartResponse> {
    return this.write(SERVICE_PATHS.start, request, request.requestId, ProcessExecutionStartResponseSchema);
  }

  async rpc(request: ProcessExecutionRpcRequest): Promise<ProcessExecutionRpcResponse> {
    // The service waits for the worker: allow the worker's timeout on top of ours.
    return this.call(SERVICE_PATHS.rpc, request, ProcessExecutionRpcResponseSchema, (request.timeoutSeconds ?? 10) * 1000);
  }
}
