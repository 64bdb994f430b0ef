/**
 * When the client sends a call again, and the request ids that make that safe.
 *
 * A call is sent again only when the service cannot have acted on it, or when acting on
 * it twice does what acting once does:
 * - no connection could be made (refused, a connect timeout, a name that did not
 *   resolve), or the service answered 503 `OVERLOADED` (which changes nothing): any call;
 * - the connection failed after the request left (reset, closed without an answer, no
 *   answer within the timeout), or a 503 other than `OVERLOADED` (the service lost its
 *   database, possibly after committing; a proxy with no service behind it): only a read,
 *   a write whose repeat leaves what the first left (setting a flow limit), or a write
 *   that carries a request id. Start, stop, publish, the operator's controls,
 *   reset and batch start always carry one (the caller's `requestId`, or a UUID the client
 *   makes once per call); the service answers a repeated id with what it first answered,
 *   without acting again.
 *
 * Nothing else is sent again: not a 4xx (a 409 `REQUEST_ID_CONFLICT` included), nor a 500,
 * with one exception: a service of a release before request ids refuses the `requestId`
 * field (400 `INVALID_REQUEST`, "unknown field"); when the id is the client's own, not the
 * caller's, the write goes again without it, as that service would have taken it, so that
 * the services can be upgraded after their clients (`predatesRequestIds`).
 * A call is sent at most `maxAttempts` times; the pause before the next is the answer's
 * `Retry-After` (seconds) or else a backoff doubling from 250 ms, each at most
 * `maxRetryDelayMs`. Nothing here does IO.
 */
import { randomUUID } from "node:crypto";

import { XdbApiError, XdbSdkError } from "./errors.js";
import { OPERATE_PATHS } from "./operate.js";
import { BATCH_PATHS, DEFINITIONS_PATHS, DEPLOYMENTS_PATHS, FLOW_LIMITS_PATHS, SCHEDULE_PATHS, SERVICE_PATHS } from "./protocol.js";

/** How many times a call is sent at most, unless the client is told otherwise. */
export const DEFAULT_MAX_ATTEMPTS = 5;
/** The longest pause before sending a call again, whatever `Retry-After` says. */
export const DEFAULT_MAX_RETRY_DELAY_MS = 5_000;
/** The pause after the first failed attempt when the answer names none (then doubling). */
const FIRST_BACKOFF_MS = 250;

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,200}$/;

/** The paths whose calls only read: sending one twice is as sending it once. */
const READS: ReadonlySet<string> = new Set([
  SERVICE_PATHS.describe,
  SERVICE_PATHS.list,
  SERVICE_PATHS.count,
  SERVICE_PATHS.history,
  SERVICE_PATHS.waitForCompletion,
  OPERATE_PATHS.states,
  DEFINITIONS_PATHS.list,
  DEFINITIONS_PATHS.describe,
  DEPLOYMENTS_PATHS.list,
  BATCH_PATHS.list,
  BATCH_PATHS.describe,
  FLOW_LIMITS_PATHS.list,
  FLOW_LIMITS_PATHS.history,
  SCHEDULE_PATHS.list,
  SCHEDULE_PATHS.describe,
  SCHEDULE_PATHS.history,
]);

/**
 * The writes that leave the same state however often sent: one override set twice is set
 * once, a schedule paused twice is paused, a backfill records each firing once by its
 * nominal time.
 */
const SAME_EACH_TIME: ReadonlySet<string> = new Set([
  FLOW_LIMITS_PATHS.set,
  SCHEDULE_PATHS.update,
  SCHEDULE_PATHS.pause,
  SCHEDULE_PATHS.resume,
  SCHEDULE_PATHS.backfill,
]);

/** Network errors in which the request never left: no connection was made. */
const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
]);

/** `given` once checked (1 to 200 letters, digits and `-_.:`), else a new UUID v4. */
export function requestIdOf(given: string | undefined): string {
  if (given === undefined) return randomUUID();
  if (!REQUEST_ID.test(given)) {
    throw new XdbSdkError(
      "NOT_ALLOWED",
      `request id ${JSON.stringify(given)}: 1 to 200 characters, letters, digits and '-_.:' only`,
    );
  }
  return given;
}

/**
 * Whether `error` is a service of a release before request ids refusing the field: 400
 * `INVALID_REQUEST` naming the unknown field `requestId`. The client then sends its own
 * id's write again without it; the caller's id is never dropped.
 */
export function predatesRequestIds(error: unknown): boolean {
  if (!(error instanceof XdbApiError) || error.subType !== "INVALID_REQUEST") return false;
  const message = error.body.message;
  return message.includes("unknown field") && message.includes("requestId");
}

/** Whether sending `body` to `path` twice does what sending it once does: a read, or a write carrying a request id. */
export function isRepeatable(path: string, body: unknown): boolean {
  if (READS.has(path) || SAME_EACH_TIME.has(path)) return true;
  return typeof body === "object" && body !== null && typeof (body as { requestId?: unknown }).requestId === "string";
}

/**
 * How a failed fetch failed: `"not-sent"` (no connection was made), `"no-answer"` (the
 * connection failed or timed out after the request may have left), or `"other"` (not a
 * network failure: a bad URL, a bug; never retried).
 */
export function failureKind(error: unknown): "not-sent" | "no-answer" | "other" {
  if (error instanceof DOMException && error.name === "TimeoutError") return "no-answer";
  const code = networkCode(error);
  if (code === undefined) return "other";
  return NOT_SENT_CODES.has(code) ? "not-sent" : "no-answer";
}

/** The system or undici error code in `error`'s chain of causes (fetch wraps it in a `TypeError`). */
function networkCode(error: unknown): string | undefined {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string") return code;
    if (e instanceof AggregateError) {
      const first: unknown = e.errors[0];
      const inner = (first as { code?: unknown } | undefined)?.code;
      if (typeof inner === "string") return inner;
    }
  }
  return undefined;
}

/** How often, and after what pause, the client sends a call again. */
export class CallRetries {
  constructor(
    readonly maxAttempts: number = DEFAULT_MAX_ATTEMPTS,
    readonly maxDelayMs: number = DEFAULT_MAX_RETRY_DELAY_MS,
  ) {
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
      throw new RangeError(`maxAttempts must be an integer of at least 1, not ${maxAttempts}`);
    }
    if (!(maxDelayMs >= 0)) throw new RangeError(`maxRetryDelayMs must not be negative, not ${maxDelayMs}`);
  }

  /** The pause after failed attempt `attempt` (1-based) when the answer names none. */
  backoffMs(attempt: number): number {
    const pause = Math.min(this.maxDelayMs, FIRST_BACKOFF_MS * 2 ** (attempt - 1));
    // Jittered, so that clients that failed together do not all come back together.
    return pause * (0.5 + Math.random() / 2);
  }

  /** The pause before sending again after `error`; `undefined`: do not. */
  afterError(path: string, body: unknown, attempt: number, error: unknown): number | undefined {
    if (attempt >= this.maxAttempts) return undefined;
    const kind = failureKind(error);
    if (kind === "not-sent" || (kind === "no-answer" && isRepeatable(path, body))) return this.backoffMs(attempt);
    return undefined;
  }

  /** The pause before sending again after an answer of `status`; `undefined`: do not. */
  afterAnswer(
    path: string,
    body: unknown,
    attempt: number,
    status: number,
    headers: Headers,
    text: string,
  ): number | undefined {
    if (status !== 503 || attempt >= this.maxAttempts) return undefined;
    if (subTypeOf(text) !== "OVERLOADED" && !isRepeatable(path, body)) return undefined;
    const retryAfter = (headers.get("retry-after") ?? "").trim();
    return /^\d+$/.test(retryAfter) ? Math.min(this.maxDelayMs, Number(retryAfter) * 1000) : this.backoffMs(attempt);
  }
}

function subTypeOf(text: string): unknown {
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null ? (parsed as { subType?: unknown }).subType : undefined;
  } catch {
    return undefined;
  }
}
