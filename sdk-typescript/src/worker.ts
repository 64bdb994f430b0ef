/**
 * The worker host: serves the three worker API paths for registered processes, as a
 * framework-neutral `handle(request)`, a node:http/Express `(req, res, next)` handler and
 * a fetch-style `Request -> Response` handler. It decodes XDB's calls, verifies their
 * signature when a secret is set, runs user code in the call's trace context, and answers
 * with the wire response or a JSON error body (`{detail, errorType}`):
 *
 * - 400: the call names an unknown process type, state or RPC (`UNKNOWN_*`), its input
 *   does not decode (`UNDECODABLE_INPUT`), or it asks for a waitUntil the state does not
 *   have (`NOT_IMPLEMENTED`): XDB parks such a call after one attempt, for an operator's
 *   retry-now (after a deploy) or give-up; a body that does not decode is
 *   `INVALID_REQUEST`, retried;
 * - 401: a signature is required and missing, old or wrong (`UNAUTHORIZED`);
 * - 500: user code threw (`USER_CODE_ERROR`); XDB retries per the state's retry policy.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { z } from "zod";

import type { Client } from "./client.js";
import { CommandResults } from "./command.js";
import { Communication } from "./communication.js";
import { definitionOf, ProcessDefinition } from "./definition.js";
import { exportDefinition } from "./definitions.js";
import { decode, encodeOptional } from "./encoding.js";
import { XdbError, XdbSdkError } from "./errors.js";
import { Persistence, parseWith } from "./persistence.js";
import type { Process, Rpc } from "./process.js";
import {
  AsyncStateExecuteRequestSchema,
  AsyncStateWaitUntilRequestSchema,
  ProcessRpcWorkerRequestSchema,
  WORKER_PATHS,
  type AsyncStateExecuteRequest,
  type AsyncStateExecuteResponse,
  type AsyncStateWaitUntilRequest,
  type AsyncStateWaitUntilResponse,
  type EncodedObject,
  type ProcessRpcWorkerRequest,
  type ProcessDefinitionWire,
  type ProcessRpcWorkerResponse,
  type RegisterDefinitionsResponse,
  type WorkerDeployment,
  type WorkerErrorResponse,
} from "./protocol.js";
import { DEFAULT_MAX_SKEW_SECONDS, SIGNATURE_HEADER, verify } from "./signature.js";
import type { AsyncState, WorkerContext } from "./state.js";
import { runWithTraceContext } from "./trace.js";

/**
 * `errorType` values of the worker's error bodies (the protocol's `WorkerErrorType`, plus
 * the host's own 404/405/413). XDB parks a waitUntil or execute answered with
 * `UNKNOWN_PROCESS_TYPE`, `UNKNOWN_STATE`, `UNKNOWN_RPC`, `UNDECODABLE_INPUT` or
 * `NOT_IMPLEMENTED` after one attempt: it can never succeed as the worker stands. The
 * others are failed attempts, retried by the state's retry policy.
 */
export const WorkerErrorType = {
  UNKNOWN_PROCESS_TYPE: "UNKNOWN_PROCESS_TYPE",
  UNKNOWN_STATE: "UNKNOWN_STATE",
  UNKNOWN_RPC: "UNKNOWN_RPC",
  UNDECODABLE_INPUT: "UNDECODABLE_INPUT",
  NOT_IMPLEMENTED: "NOT_IMPLEMENTED",
  INVALID_REQUEST: "INVALID_REQUEST",
  USER_CODE_ERROR: "USER_CODE_ERROR",
  UNAUTHORIZED: "UNAUTHORIZED",
  NOT_FOUND: "NOT_FOUND",
  METHOD_NOT_ALLOWED: "METHOD_NOT_ALLOWED",
  PAYLOAD_TOO_LARGE: "PAYLOAD_TOO_LARGE",
} as const;
export type WorkerErrorType = (typeof WorkerErrorType)[keyof typeof WorkerErrorType];

/** A failed worker call: the status and body the worker answers with. */
export class WorkerCallError extends XdbError {
  override name = "WorkerCallError";
  constructor(
    readonly status: number,
    readonly errorType: WorkerErrorType,
    readonly detail: string,
  ) {
    super(detail);
  }

  get body(): WorkerErrorResponse {
    return { detail: this.detail, errorType: this.errorType };
  }
}

type HeaderValue = string | string[] | undefined;

/** An HTTP request as the worker needs it, from any framework. */
export interface WorkerRequest {
  readonly method?: string;
  /** The request path (a query string is ignored); any prefix before the worker path is allowed. */
  readonly path: string;
  readonly headers?: Headers | Readonly<Record<string, HeaderValue>>;
  /** The raw body: the signature covers these exact bytes. */
  readonly body: Uint8Array | string;
}

/** The answer to send. */
export interface WorkerResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/** A failed call, as told to `onError`. */
export interface WorkerCallFailure {
  readonly api: string;
  readonly status: number;
  readonly errorType: string;
  readonly detail: string;
  readonly error?: unknown;
}

export interface WorkerServiceOptions {
  /** Refuse calls without XDB's signature made with this secret (`security.worker_signing_secret`). */
  readonly signingSecret?: string | Uint8Array;
  /** Allowed distance of a signature's time from this clock, in seconds (default 300). */
  readonly maxSkewSeconds?: number;
  /** Largest body read, in bytes (default 64 MiB). */
  readonly maxBodyBytes?: number;
  /** Told of every failed call; default: `console.warn` for failures of user code. */
  readonly onError?: (failure: WorkerCallFailure) => void;
  /** The clock, in milliseconds since the epoch (tests). */
  readonly now?: () => number;
}

/** A node:http request handler; also Express/Connect middleware (`next` for other paths). */
export type NodeHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  next?: (error?: unknown) => void,
) => void;

type Api = "wait-until" | "execute" | "rpc";

const ROUTES: readonly (readonly [string, Api])[] = [
  [WORKER_PATHS.waitUntil, "wait-until"],
  [WORKER_PATHS.execute, "execute"],
  [WORKER_PATHS.rpc, "rpc"],
];

const JSON_HEADERS = { "content-type": "application/json" } as const;

/** The processes one worker hosts, and the handlers that serve them. */
export class WorkerService {
  private readonly processes = new Map<string, ProcessDefinition>();
  private options: WorkerServiceOptions;

  constructor(options: WorkerServiceOptions = {}) {
    this.options = options;
  }

  /** Hosts `processes`. Throws when a process type is registered twice or is inconsistent. */
  register(...processes: (Process | ProcessDefinition)[]): this {
    for (const process of processes) {
      const definition = definitionOf(process);
      if (this.processes.has(definition.processType)) {
        throw new XdbSdkError("NOT_ALLOWED", `process type ${JSON.stringify(definition.processType)} is registered twice`);
      }
      this.processes.set(definition.processType, definition);
    }
    return this;
  }

  /** Refuses calls that do not carry XDB's signature made with `secret`. */
  withSigningSecret(secret: string | Uint8Array): this {
    this.options = { ...this.options, signingSecret: secret };
    return this;
  }

  /** The definition of `processType`, if hosted. */
  definition(processType: string): ProcessDefinition | undefined {
    return this.processes.get(processType);
  }

  /** The wire definitions of the hosted processes, as `registerDefinitions` sends them. */
  processDefinitions(): ProcessDefinitionWire[] {
    return [...this.processes.values()].map((definition) => exportDefinition(definition));
  }

  /**
   * Registers the hosted processes with XDB as deployed by `deployment`. Call it when the
   * worker starts serving, with `deployment.workerUrl` the URL XDB reaches this worker at:
   * starts that name no worker URL then go there, and XDB checks starts, publishes and RPCs
   * against the definitions. Idempotent (unchanged definitions answer `changed: false`).
   * Throws the client's errors (`XdbApiError`: `FORBIDDEN` without role `deploy`,
   * `DEFINITION_INCOMPATIBLE`, `INVALID_REQUEST` for a definition the database does not
   * fit). A worker that never registers keeps working, with starts naming its URL.
   */
  async registerDefinitions(
    client: Client,
    deployment: WorkerDeployment,
    options: { force?: boolean } = {},
  ): Promise<RegisterDefinitionsResponse> {
    if (this.processes.size === 0) {
      throw new XdbSdkError("NOT_ALLOWED", "the worker hosts no process to register");
    }
    return client.registerDefinitions(deployment, this.processDefinitions(), options);
  }

  /** Whether `path` is one of the worker API paths this service answers. */
  handles(path: string): boolean {
    return routeOf(path) !== undefined;
  }

  /** Serves one HTTP request; never throws. */
  async handle(request: WorkerRequest): Promise<WorkerResponse> {
    const api = routeOf(request.path);
    if (!api) {
      return errorResponse(new WorkerCallError(404, "NOT_FOUND", `no worker API at ${request.path}`));
    }
    if (request.method !== undefined && request.method.toUpperCase() !== "POST") {
      return errorResponse(new WorkerCallError(405, "METHOD_NOT_ALLOWED", `${api} takes POST, not ${request.method}`));
    }
    const secret = this.options.signingSecret;
    if (secret !== undefined) {
      const nowSeconds = Math.floor((this.options.now?.() ?? Date.now()) / 1000);
      const failure = verify(
        secret,
        headerOf(request.headers, SIGNATURE_HEADER),
        request.body,
        nowSeconds,
        this.options.maxSkewSeconds ?? DEFAULT_MAX_SKEW_SECONDS,
      );
      if (failure) {
        return this.fail(api, new WorkerCallError(401, "UNAUTHORIZED", failure.message));
      }
    }
    const trace = {
      traceparent: headerOf(request.headers, "traceparent"),
      tracestate: headerOf(request.headers, "tracestate"),
    };
    try {
      const text = typeof request.body === "string" ? request.body : Buffer.from(request.body).toString("utf8");
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (error) {
        throw new WorkerCallError(400, "INVALID_REQUEST", `malformed request body: ${String(error)}`);
      }
      const answer = await runWithTraceContext(trace, () => this.dispatch(api, json, trace));
      return { status: 200, headers: JSON_HEADERS, body: JSON.stringify(answer) };
    } catch (error) {
      return this.fail(api, toCallError(error), error);
    }
  }

  /** Serves one waitUntil call. */
  async waitUntil(
    request: AsyncStateWaitUntilRequest,
    trace: { traceparent?: string | undefined; tracestate?: string | undefined } = {},
  ): Promise<AsyncStateWaitUntilResponse> {
    const definition = this.process(request.processType);
    const state = this.state(definition, request.stateId);
    if (typeof state.waitUntil !== "function") {
      throw new WorkerCallError(400, "NOT_IMPLEMENTED", `state ${JSON.stringify(request.stateId)} does not implement waitUntil`);
    }
    const input = decodeInput(state, request.stateId, request.stateInput);
    const { persistence, communication } = scope(definition, request.attributes, false);
    const commandRequest = await userCode(() =>
      state.waitUntil!(withTrace(request.context, trace), input as never, persistence, communication),
    );
    for (const queue of commandRequest.queueNames()) communication.checkQueue(queue);
    return {
      commandRequest: commandRequest.toWire(),
      writes: persistence.writes(),
      publishToLocalQueue: [...communication.published()],
    };
  }

  /** Serves one execute call. */
  async execute(
    request: AsyncStateExecuteRequest,
    trace: { traceparent?: string | undefined; tracestate?: string | undefined } = {},
  ): Promise<AsyncStateExecuteResponse> {
    const definition = this.process(request.processType);
    const state = this.state(definition, request.stateId);
    const input = decodeInput(state, request.stateId, request.stateInput);
    const { persistence, communication } = scope(definition, request.attributes, false);
    const decision = await userCode(() =>
      state.execute(
        withTrace(request.context, trace),
        input as never,
        new CommandResults(request.commandResults ?? {}),
        persistence,
        communication,
      ),
    );
    return {
      stateDecision: definition.stateDecision(decision),
      writes: persistence.writes(),
      publishToLocalQueue: [...communication.published()],
    };
  }

  /** Serves one RPC call. */
  async rpc(
    request: ProcessRpcWorkerRequest,
    trace: { traceparent?: string | undefined; tracestate?: string | undefined } = {},
  ): Promise<ProcessRpcWorkerResponse> {
    const definition = this.process(request.processType);
    const rpc = definition.rpc(request.rpcName);
    if (!rpc) {
      throw new WorkerCallError(
        400,
        "UNKNOWN_RPC",
        `process ${JSON.stringify(definition.processType)} has no rpc ${JSON.stringify(request.rpcName)}`,
      );
    }
    const what = `input of rpc ${JSON.stringify(request.rpcName)}`;
    const { handler, options } = rpc as Rpc<unknown, unknown>;
    const input = undecodableOnThrow(() => {
      const raw = decode<unknown>(what, request.input);
      return options.inputSchema ? parseWith(options.inputSchema, what, raw) : raw;
    });
    const { persistence, communication } = scope(definition, request.attributes, true);
    const output = await userCode(() =>
      handler(withTrace(request.context, trace), input, persistence, communication),
    );
    const response: ProcessRpcWorkerResponse = {
      writes: persistence.writes(),
      publishToLocalQueue: [...communication.published()],
      appendNextStates: communication.stateMovements().map((m) => definition.stateMovement(m)),
    };
    const encoded = encodeOptional(`output of rpc ${JSON.stringify(request.rpcName)}`, output);
    if (encoded) response.output = encoded;
    return response;
  }

  /** A node:http handler; as Express middleware, calls `next()` for other paths. */
  nodeHandler(): NodeHandler {
    return (req, res, next) => {
      const path = req.url ?? "/";
      if (next && !this.handles(path)) {
        next();
        return;
      }
      void readNodeBody(req, this.options.maxBodyBytes ?? MAX_BODY_BYTES)
        .then(
          (body) => this.handle({ method: req.method ?? "POST", path, headers: req.headers, body }),
          (error: unknown) => errorResponse(toCallError(error)),
        )
        .then((answer) => {
          res.writeHead(answer.status, answer.headers);
          res.end(answer.body);
        });
    };
  }

  /** A fetch-style handler (`Request -> Response`), for runtimes and frameworks built on it. */
  fetchHandler(): (request: Request) => Promise<Response> {
    return async (request) => {
      const body = new Uint8Array(await request.arrayBuffer());
      const answer = await this.handle({
        method: request.method,
        path: new URL(request.url).pathname,
        headers: request.headers,
        body,
      });
      return new Response(answer.body, { status: answer.status, headers: answer.headers });
    };
  }

  private async dispatch(api: Api, json: unknown, trace: { traceparent?: string | undefined; tracestate?: string | undefined }): Promise<unknown> {
    switch (api) {
      case "wait-until":
        return this.waitUntil(parseRequest(AsyncStateWaitUntilRequestSchema, json), trace);
      case "execute":
        return this.execute(parseRequest(AsyncStateExecuteRequestSchema, json), trace);
      case "rpc":
        return this.rpc(parseRequest(ProcessRpcWorkerRequestSchema, json), trace);
    }
  }

  private fail(api: string, error: WorkerCallError, cause?: unknown): WorkerResponse {
    const failure: WorkerCallFailure = {
      api,
      status: error.status,
      errorType: error.errorType,
      detail: error.detail,
      error: cause,
    };
    if (this.options.onError) {
      this.options.onError(failure);
    } else if (error.status >= 500) {
      console.warn(`xdb worker: ${api} failed (${error.status} ${error.errorType}): ${error.detail}`);
    }
    return errorResponse(error);
  }

  private process(processType: string): ProcessDefinition {
    const definition = this.processes.get(processType);
    if (!definition) {
      throw new WorkerCallError(400, "UNKNOWN_PROCESS_TYPE", `this worker hosts no process type ${JSON.stringify(processType)}`);
    }
    return definition;
  }

  private state(definition: ProcessDefinition, stateId: string): AsyncState<never> {
    const state = definition.state(stateId);
    if (!state) {
      throw new WorkerCallError(
        400,
        "UNKNOWN_STATE",
        `process ${JSON.stringify(definition.processType)} has no state ${JSON.stringify(stateId)}`,
      );
    }
    return state;
  }
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;

function routeOf(path: string): Api | undefined {
  const pathname = path.split("?", 1)[0] ?? path;
  return ROUTES.find(([suffix]) => pathname.endsWith(suffix))?.[1];
}

function headerOf(headers: WorkerRequest["headers"], name: string): string | undefined {
  if (!headers) return undefined;
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const lower = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === lower) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
}

function errorResponse(error: WorkerCallError): WorkerResponse {
  return { status: error.status, headers: JSON_HEADERS, body: JSON.stringify(error.body) };
}

/** Sorts a thrown value: SDK refusals of the request are 400, anything else is user code's 500. */
function toCallError(error: unknown): WorkerCallError {
  if (error instanceof WorkerCallError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new WorkerCallError(500, "USER_CODE_ERROR", message);
}

function parseRequest<S extends z.ZodType>(schema: S, json: unknown): z.infer<S> {
  const result = schema.safeParse(json);
  if (!result.success) {
    const issues = result.error.issues
      .map((i) => `${i.path.length > 0 ? i.path.join(".") : "body"}: ${i.message}`)
      .join("; ");
    throw new WorkerCallError(400, "INVALID_REQUEST", `malformed request body: ${issues}`);
  }
  return result.data;
}

/** Decodes an input: a failure is `UNDECODABLE_INPUT`. */
function undecodableOnThrow<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw new WorkerCallError(400, "UNDECODABLE_INPUT", error instanceof Error ? error.message : String(error));
  }
}

function decodeInput(state: AsyncState<never>, stateId: string, input: EncodedObject | null | undefined): unknown {
  const what = `input of state ${JSON.stringify(stateId)}`;
  return undecodableOnThrow(() => {
    const raw = decode<unknown>(what, input);
    return state.inputSchema ? parseWith(state.inputSchema as { parse(v: unknown): unknown }, what, raw) : raw;
  });
}

/** Runs user code; whatever it throws (other than a WorkerCallError) is a 500. */
async function userCode<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    throw toCallError(error);
  }
}

function scope(
  definition: ProcessDefinition,
  attributes: AsyncStateWaitUntilRequest["attributes"],
  inRpc: boolean,
): { persistence: Persistence; communication: Communication } {
  return {
    persistence: new Persistence(definition.processType, definition.persistence, attributes ?? {}),
    communication: new Communication(definition.processType, definition.communication, inRpc),
  };
}

function withTrace(
  context: AsyncStateWaitUntilRequest["context"],
  trace: { traceparent?: string | undefined; tracestate?: string | undefined },
): WorkerContext {
  const ctx: { -readonly [K in keyof WorkerContext]: WorkerContext[K] } = { ...context };
  if (trace.traceparent) ctx.traceparent = trace.traceparent;
  if (trace.tracestate) ctx.tracestate = trace.tracestate;
  return ctx;
}

async function readNodeBody(req: IncomingMessage, limit: number): Promise<Uint8Array | string> {
  // A framework may have read the body already: raw bytes from a raw-body parser are
  // used as they are (a parsed JSON object cannot be: the signature covers the bytes).
  const parsed = req as IncomingMessage & { rawBody?: unknown; body?: unknown };
  if (parsed.rawBody instanceof Uint8Array || typeof parsed.rawBody === "string") return parsed.rawBody;
  if (parsed.body instanceof Uint8Array || typeof parsed.body === "string") return parsed.body;
  if (parsed.body !== undefined && parsed.readableEnded) return JSON.stringify(parsed.body);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
    size += buffer.length;
    if (size > limit) {
      throw new WorkerCallError(413, "PAYLOAD_TOO_LARGE", `the request body is over ${limit} bytes`);
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}
