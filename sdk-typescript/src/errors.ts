/**
 * The SDK's error types: what user code and the client throw, each carrying what a
 * caller needs to decide (the service's error sub-type, the HTTP status, the worker's
 * error kind). Nothing here does IO.
 */
import type { ApiErrorResponse, ErrorSubType } from "./protocol.js";

/** Base of every error the SDK throws. */
export class XdbError extends Error {
  override name = "XdbError";
}

/**
 * Encoding, decoding or schema checks in the SDK: a value that is not JSON, a payload in
 * another encoding, an attribute or queue the process did not declare, a state it did not
 * register.
 */
export class XdbSdkError extends XdbError {
  override name = "XdbSdkError";
  constructor(
    /** `ENCODE`, `DECODE`, `UNSUPPORTED_ENCODING`, `UNDECLARED`, `UNKNOWN_STATE`, `NOT_ALLOWED`. */
    readonly kind: SdkErrorKind,
    message: string,
  ) {
    super(message);
  }
}

export type SdkErrorKind =
  | "ENCODE"
  | "DECODE"
  | "UNSUPPORTED_ENCODING"
  | "UNDECLARED"
  | "UNKNOWN_STATE"
  | "NOT_ALLOWED";

/** A service sub-type, or a newer one this SDK does not know by name. */
export type ApiErrorSubType = ErrorSubType | (string & Record<never, never>);

/** The service refused a call with its JSON error body. */
export class XdbApiError extends XdbError {
  override name = "XdbApiError";
  readonly subType: ApiErrorSubType;
  /** The worker's own error detail, with `WORKER_API_ERROR`. */
  readonly workerError: string | undefined;
  constructor(
    readonly status: number,
    readonly body: ApiErrorResponse,
    readonly path: string,
  ) {
    super(`XDB service answered HTTP ${status} ${body.subType} on ${path}: ${body.message}`);
    this.subType = body.subType;
    this.workerError = body.workerError ?? undefined;
  }
}

/** A non-2xx answer without the service's error body (a proxy, a crash). */
export class XdbHttpError extends XdbError {
  override name = "XdbHttpError";
  constructor(
    readonly status: number,
    readonly responseText: string,
    readonly path: string,
  ) {
    super(`XDB service answered HTTP ${status} on ${path}: ${responseText.slice(0, 500)}`);
  }
}

/** The request got no answer: connection refused, reset, or timed out. */
export class XdbTransportError extends XdbError {
  override name = "XdbTransportError";
  constructor(
    message: string,
    readonly path: string,
    options?: { cause?: unknown },
  ) {
    super(`request to the XDB service (${path}) failed: ${message}`, options);
  }
}

/** A 2xx answer whose body is not what the contract says. */
export class XdbInvalidResponseError extends XdbError {
  override name = "XdbInvalidResponseError";
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(`unreadable XDB service answer on ${path}: ${message}`);
  }
}

/** Whether `error` is the service refusing a call, optionally with sub-type `subType`. */
export function isApiError(error: unknown, subType?: ApiErrorSubType): error is XdbApiError {
  return error instanceof XdbApiError && (subType === undefined || error.subType === subType);
}
