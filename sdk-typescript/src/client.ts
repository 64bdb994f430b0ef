/**
 * The client of the XDB service API: typed calls built from a process definition
 * (start, RPC), the plain calls (stop, describe, list, history, publish, wait), the
 * operator's calls and batches, and the mapping of every failure to a typed error. Writes
 * carry a request id, and a call whose answer was lost is sent again as `retries.ts` says.
 * Uses the global `fetch` (or one given).
 */
import type { z } from "zod";

import { definitionOf, type ProcessDefinition } from "./definition.js";
import { exportDefinitions, type DefinitionSource } from "./definitions.js";
import { decode, encode, encodeOptional, toJsonValue } from "./encoding.js";
import {
  XdbApiError,
  XdbHttpError,
  XdbInvalidResponseError,
  XdbSdkError,
  XdbTransportError,
} from "./errors.js";
import { OPERATE_PATHS } from "./operate.js";
import { CallRetries, predatesRequestIds, requestIdOf } from "./retries.js";
import type { Process, RpcInput, RpcName, RpcOutput } from "./process.js";
import {
  ApiErrorResponseSchema,
  BATCH_PATHS,
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
  type AsyncStateConfig,
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
  type GlobalAttributeValue,
  type HistoryEvent,
  type HistoryEventType,
  type LocalAttributeValue,
  type LocalQueueMessage,
  type ProcessExecutionControlResponse,
  type ProcessExecutionDescribeResponse,
  type ProcessExecutionHistoryRequest,
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
  type ProcessExecutionStopType,
  type ProcessExecutionWaitForCompletionResponse,
  type ProcessIdReusePolicy,
  type ProcessStartConfig,
  type PublishToLocalQueueRequest,
  type RegisterDefinitionsRequest,
  type RegisterDefinitionsResponse,
  type WorkerDeployment,
} from "./protocol.js";
import type { InputArgs } from "./state.js";
import { currentTraceContext, traceHeaders, type TraceContext } from "./trace.js";

export interface ClientOptions {
  /** Base URL of the API service, e.g. `http://127.0.0.1:8801`. */
  readonly serviceUrl: string;
  /** The worker URL starts use when given none. */
  readonly workerUrl?: string;
  /** Sent as `Authorization: Bearer …` (the service's `security.tokens` or `api_tokens`). */
  readonly bearerToken?: string;
  /** Timeout of each call other than the waits, in milliseconds (default 60 s). */
  readonly requestTimeoutMs?: number;
  /** The fetch to use (default: the global one). */
  readonly fetch?: typeof fetch;
  /**
   * The trace context to send with each request; default: the context of the worker call
   * being served, if any. With OpenTelemetry: inject the active context here.
   */
  readonly traceContext?: () => TraceContext | undefined;
  /**
   * The longest wait one wait-for-completion call asks for: the service's
   * `api.max_wait_seconds` (default 300); longer waits are several calls.
   */
  readonly maxWaitSeconds?: number;
  /**
   * How many times one call is sent at most (default 5; 1: never again). A call is sent
   * again, with the same request id and body, when its answer was lost (a connection
   * refused, reset or closed, a timeout) or the service answered 503: see `retries.ts`.
   */
  readonly maxAttempts?: number;
  /**
   * The longest pause before sending a call again, in milliseconds (default 5000): the
   * answer's `Retry-After`, else a backoff doubling from 250 ms, capped by this.
   */
  readonly maxRetryDelayMs?: number;
}

/** The request id option of every write (start, stop, publish, the controls, reset, batch start). */
export interface RequestIdOption {
  /**
   * The request's idempotency key: 1 to 200 letters, digits and `-_.:`. The service
   * answers the same id and body, sent again within 24 hours, as it answered the first,
   * without acting again; the same id with another body is refused with
   * `REQUEST_ID_CONFLICT` (409). Default: a UUID v4 made once per call.
   */
  readonly requestId?: string;
}

/** Options of `startProcess`. */
export interface ProcessStartOptions extends RequestIdOption {
  /**
   * The worker hosting the process; default: the client's `workerUrl`. Neither: the URL of
   * the deployment that registered the process type (the service answers 400 if none did).
   */
  readonly workerUrl?: string;
  /** Selects the execution's row of the global-attribute table; required when the process declares one. */
  readonly globalAttributePkValue?: unknown;
  /** Columns upserted into that row in the start transaction. */
  readonly initialGlobalAttributes?: Readonly<Record<string, unknown>>;
  /** Local attributes written in the start transaction. */
  readonly initialLocalAttributes?: Readonly<Record<string, unknown>>;
  /** The whole execution times out after this many seconds; absent means never. */
  readonly timeoutSeconds?: number;
  /** What to do when the process id already has an execution (service default: `ALLOW_IF_NO_RUNNING`). */
  readonly idReusePolicy?: ProcessIdReusePolicy;
}

/** Options of `history` and `historyEvents`. */
export interface HistoryOptions {
  /** The execution to read; default: the current one. */
  readonly processExecutionId?: string;
  /** Only events after this one: the previous page's `nextAfterEventId`. */
  readonly afterEventId?: number;
  /** Events per page, 1 to 1000 (the service's default: 1000). */
  readonly pageSize?: number;
  /** Only events of these types (every type when absent or empty). */
  readonly eventTypes?: readonly HistoryEventType[];
}

/** Options of `stop`. */
export interface StopOptions extends RequestIdOption {
  /** `TERMINATE` (the default) or `FAIL`. */
  readonly stopType?: ProcessExecutionStopType;
  /** Kept as the failure's `details`. */
  readonly reason?: string;
  /** Only if this execution is the process id's current one; default: whichever is. */
  readonly processExecutionId?: string;
}

/** Options of `publishMessages`. */
export interface PublishOptions extends RequestIdOption {
  /** Only if this execution is the process id's current one; default: whichever is. */
  readonly processExecutionId?: string;
}

/** Options of the operator's controls (`retryNow`, `giveUp`, `pause`, `resume`). */
export interface ControlOptions extends RequestIdOption {
  /** The execution to act on; default: the current one. */
  readonly processExecutionId?: string;
  /** `retryNow` and `giveUp` only: just this state execution (`stateId-number`); default: every one it applies to. */
  readonly stateExecutionId?: string;
  /** Why; kept in the history event. */
  readonly reason?: string;
  /** Who asks (a person or a tool); kept in the history event. */
  readonly identity?: string;
}

/** Options of `reset`: besides those of every control, the state's options. */
export interface ResetOptions extends Omit<ControlOptions, "stateExecutionId"> {
  /** The state's options; default: those its registered definition declares, else the defaults. */
  readonly stateConfig?: AsyncStateConfig;
}

/** What `waitForCompletion` returns: the service's answer, with the result decoded. */
export type Completion<T = unknown> = ProcessExecutionWaitForCompletionResponse & {
  readonly output: T | undefined;
};

/** The longest wait the service grants one wait-for-completion call by default. */
const MAX_WAIT_SECONDS = 300;

/**
 * A message for local queue `queueName`, its `payload` encoded (none by default): for
 * `publishMessages` and `PUBLISH_TO_LOCAL_QUEUE` batches.
 */
export function localQueueMessage(queueName: string, payload?: unknown, dedupId?: string): LocalQueueMessage {
  const message: LocalQueueMessage = { queueName };
  const encoded = encodeOptional(`message to local queue ${JSON.stringify(queueName)}`, payload);
  if (encoded) message.payload = encoded;
  if (dedupId !== undefined) message.dedupId = dedupId;
  return message;
}

export class Client {
  readonly serviceUrl: string;
  /** When a call is sent again (from `maxAttempts` and `maxRetryDelayMs`). */
  readonly retries: CallRetries;
  private readonly options: ClientOptions;

  constructor(options: ClientOptions | string) {
    this.options = typeof options === "string" ? { serviceUrl: options } : options;
    this.serviceUrl = this.options.serviceUrl.replace(/\/+$/, "");
    this.retries = new CallRetries(this.options.maxAttempts, this.options.maxRetryDelayMs);
  }

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

  /** Lists executions, newest first. */
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

  private async control(path: string, processId: string, options: ControlOptions): Promise<ProcessExecutionControlResponse> {
    return this.write(path, { ...options, processId }, options.requestId, ProcessExecutionControlResponseSchema);
  }

  // ---- batch operations ----

  /**
   * Starts a batch: `request.operation` applied to every execution the selection matches
   * (`processType`, the `where` tree of `list` and `count`, `businessTable`; none of them:
   * every execution), at most once each, at `ratePerSecond` (default 100, at most
   * 10000), as a durable job the service drives and resumes after any crash. The
   * operation's arguments: `messages` (`PUBLISH_TO_LOCAL_QUEUE`, see `localQueueMessage`),
   * `reset` (`RESET`), `moveTo` (`MOVE_TO_DEPLOYMENT`, with `processType`). Preview the
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

  // ---- plain calls, one per endpoint ----

  /** Sends `request` as is, with a new request id if it has none. */
  async start(request: ProcessExecutionStartRequest): Promise<ProcessExecutionStartResponse> {
    return this.write(SERVICE_PATHS.start, request, request.requestId, ProcessExecutionStartResponseSchema);
  }

  async rpc(request: ProcessExecutionRpcRequest): Promise<ProcessExecutionRpcResponse> {
    // The service waits for the worker: allow the worker's timeout on top of ours.
    return this.call(SERVICE_PATHS.rpc, request, ProcessExecutionRpcResponseSchema, (request.timeoutSeconds ?? 10) * 1000);
  }

  /**
   * POSTs `body` to `path` and returns the answer, checked with `schema` when given. Sends
   * it again (the same bytes) on a lost answer or a 503 as `retries.ts` says: a read, or a
   * body with a `requestId`, after any; anything else only when the service cannot have
   * acted on it. Throws `XdbApiError` for the service's refusals, `XdbHttpError` for other
   * non-2xx answers, `XdbTransportError` when no answer came, `XdbInvalidResponseError` for
   * an unreadable 2xx answer.
   */
  async call<S extends z.ZodType = z.ZodType<unknown>>(
    path: string,
    body: unknown,
    schema?: S,
    extraTimeoutMs = 0,
  ): Promise<z.infer<S>> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "application/json",
      ...traceHeaders(this.options.traceContext ? this.options.traceContext() : currentTraceContext()),
    };
    if (this.options.bearerToken) headers.authorization = `Bearer ${this.options.bearerToken}`;
    const timeoutMs = (this.options.requestTimeoutMs ?? 60_000) + extraTimeoutMs;
    const { response, text } = await this.send(path, body, headers, timeoutMs);
    if (!response.ok) {
      throw errorFromResponse(response.status, text, path);
    }
    if (!schema) return undefined as z.infer<S>;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (error) {
      throw new XdbInvalidResponseError(`not JSON: ${String(error)}`, path);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      throw new XdbInvalidResponseError(parsed.error.message, path);
    }
    return parsed.data;
  }

  /**
   * `call` of a write with a request id: `given` (the caller's, checked), else a new one.
   * A service of a release before request ids refuses the field (`predatesRequestIds`):
   * when the id is the client's own, the write goes again without it, as that service
   * would have taken it, so that the services can be upgraded after their clients. Without
   * an id it is sent again only when the service surely did nothing.
   */
  private async write<S extends z.ZodType = z.ZodType<unknown>>(
    path: string,
    body: object,
    given: string | null | undefined,
    schema?: S,
  ): Promise<z.infer<S>> {
    const requestId = requestIdOf(given ?? undefined);
    try {
      return await this.call(path, { ...body, requestId }, schema);
    } catch (error) {
      if ((given !== undefined && given !== null) || !predatesRequestIds(error)) throw error;
      const withoutId: Record<string, unknown> = { ...body };
      delete withoutId.requestId;
      return this.call(path, withoutId, schema);
    }
  }

  /** The answer to `body` on `path`, sent again (the same bytes) while `retries` says so. */
  private async send(
    path: string,
    body: unknown,
    headers: Record<string, string>,
    timeoutMs: number,
  ): Promise<{ response: Response; text: string }> {
    const doFetch = this.options.fetch ?? fetch;
    const content = JSON.stringify(body);
    for (let attempt = 1; ; attempt++) {
      let pause: number | undefined;
      try {
        const response = await doFetch(`${this.serviceUrl}${path}`, {
          method: "POST",
          headers,
          body: content,
          signal: AbortSignal.timeout(timeoutMs),
        });
        const text = await response.text();
        pause = this.retries.afterAnswer(path, body, attempt, response.status, response.headers, text);
        if (pause === undefined) return { response, text };
      } catch (error) {
        pause = this.retries.afterError(path, body, attempt, error);
        if (pause === undefined) {
          const timedOut = error instanceof DOMException && error.name === "TimeoutError";
          const message = timedOut ? `no answer within ${timeoutMs} ms` : describeCause(error);
          const tries = attempt > 1 ? ` (after ${attempt} attempts)` : "";
          throw new XdbTransportError(`${message}${tries}`, path, { cause: error });
        }
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** Sorts a non-2xx answer: the service's error body, or plain HTTP. */
export function errorFromResponse(status: number, text: string, path: string): XdbApiError | XdbHttpError {
  try {
    const parsed = ApiErrorResponseSchema.safeParse(JSON.parse(text));
    if (parsed.success) return new XdbApiError(status, parsed.data, path);
  } catch {
    // not JSON: plain HTTP below
  }
  return new XdbHttpError(status, text, path);
}

/**
 * Builds the start request for `definition`, checking the options against its schema so
 * mistakes fail here rather than in the service.
 */
export function buildStartRequest(
  definition: ProcessDefinition,
  processId: string,
  input: unknown,
  options: ProcessStartOptions,
): ProcessExecutionStartRequest {
  const { processType, persistence } = definition;
  const undeclared = (kind: string, name: string): XdbSdkError =>
    new XdbSdkError("UNDECLARED", `${kind} ${JSON.stringify(name)} is not declared in the schema of process ${processType}`);
  const initialWrite: GlobalAttributeValue[] = Object.entries(options.initialGlobalAttributes ?? {}).map(
    ([column, value]) => {
      if (column !== persistence.table?.primaryKeyColumn && !persistence.declaresGlobalAttribute(column)) {
        throw undeclared("global attribute", column);
      }
      return { column, value: toJsonValue(`global attribute ${JSON.stringify(column)}`, value) };
    },
  );
  const localWrites: LocalAttributeValue[] = Object.entries(options.initialLocalAttributes ?? {}).map(
    ([key, value]) => {
      if (!persistence.declaresLocalAttribute(key)) throw undeclared("local attribute", key);
      return { key, value: encode(`local attribute ${JSON.stringify(key)}`, value ?? null) };
    },
  );
  const config: ProcessStartConfig = {};
  const table = persistence.table;
  const pk = options.globalAttributePkValue;
  if (table && pk === undefined) {
    throw new XdbSdkError(
      "NOT_ALLOWED",
      `process ${processType} keeps global attributes in table ${table.tableName}: globalAttributePkValue is required`,
    );
  }
  if (!table && (pk !== undefined || initialWrite.length > 0)) {
    throw new XdbSdkError("NOT_ALLOWED", `process ${processType} declares no global attribute table`);
  }
  if (table) {
    config.globalAttributeConfig = {
      tableName: table.tableName,
      primaryKey: { column: table.primaryKeyColumn, value: toJsonValue("global attribute primary key value", pk) },
      initialWrite,
    };
  }
  if (localWrites.length > 0) config.localAttributeInitialWrite = localWrites;
  if (options.timeoutSeconds !== undefined) config.timeoutSeconds = Math.ceil(options.timeoutSeconds);
  if (options.idReusePolicy !== undefined) config.idReusePolicy = options.idReusePolicy;

  const request: ProcessExecutionStartRequest = { processId, processType, processStartConfig: config };
  if (options.requestId !== undefined) request.requestId = options.requestId;
  // None: the service routes the start to the deployment that registered the type.
  if (options.workerUrl) request.workerUrl = options.workerUrl;
  const startInput = encodeOptional("start state input", input);
  if (definition.startingStateId !== undefined) {
    request.startStateId = definition.startingStateId;
    request.startStateConfig = definition.stateConfig(definition.startingStateId);
    if (startInput) request.startStateInput = startInput;
  } else if (startInput) {
    throw new XdbSdkError("NOT_ALLOWED", `process ${processType} has no starting state to take an input`);
  }
  return request;
}

/** The history request: only the options given are sent (an empty `eventTypes` means every type). */
function historyRequest(processId: string, options: HistoryOptions): ProcessExecutionHistoryRequest {
  const request: ProcessExecutionHistoryRequest = { processId };
  if (options.processExecutionId !== undefined) request.processExecutionId = options.processExecutionId;
  if (options.afterEventId !== undefined) request.afterEventId = options.afterEventId;
  if (options.pageSize !== undefined) request.pageSize = options.pageSize;
  if (options.eventTypes !== undefined && options.eventTypes.length > 0) request.eventTypes = [...options.eventTypes];
  return request;
}

function withOptional<T extends object, K extends string, V>(base: T, key: K, value: V | undefined): T & Partial<Record<K, V>> {
  return value === undefined ? base : { ...base, [key]: value };
}

function describeCause(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}

/** A deployment by name and version (a `WorkerDeployment` carries its URL too: left out). */
function deploymentRef(deployment: DeploymentRef): DeploymentRef {
  return { name: deployment.name, version: deployment.version };
}
