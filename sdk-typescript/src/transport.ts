/**
 * How the client sends a call: one POST with its headers and timeout, sent again (the
 * same bytes) while `retries.ts` says so, and the mapping of every failure to a typed
 * error. A write carries a request id; a service of the release before request ids
 * refuses the field, and then the write goes again without the client's own id.
 * Uses the global `fetch` (or one given).
 */
import type { z } from "zod";

import { XdbApiError, XdbHttpError, XdbInvalidResponseError, XdbTransportError } from "./errors.js";
import { CallRetries, predatesRequestIds, requestIdOf } from "./retries.js";
import { ApiErrorResponseSchema } from "./protocol.js";
import { currentTraceContext, traceHeaders } from "./trace.js";
import type { ClientOptions } from "./client-options.js";

/** What every call of the client goes through; `Client` adds the calls themselves. */
export class ServiceTransport {
  readonly serviceUrl: string;
  /** When a call is sent again (from `maxAttempts` and `maxRetryDelayMs`). */
  readonly retries: CallRetries;
  protected readonly options: ClientOptions;

  constructor(options: ClientOptions | string) {
    this.options = typeof options === "string" ? { serviceUrl: options } : options;
    this.serviceUrl = this.options.serviceUrl.replace(/\/+$/, "");
    this.retries = new CallRetries(this.options.maxAttempts, this.options.maxRetryDelayMs);
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
  protected async write<S extends z.ZodType = z.ZodType<unknown>>(
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

function describeCause(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return `${error.message}${cause}`;
  }
  return String(error);
}
