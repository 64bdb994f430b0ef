/**
 * W3C trace-context propagation without a tracing library: the worker keeps the
 * `traceparent`/`tracestate` of the XDB call it serves for the duration of user code
 * (AsyncLocalStorage), and the client sends the current one with its requests, so a
 * client call made inside a state or RPC joins the process's trace. With OpenTelemetry,
 * give the client a `traceContext` provider that injects the active span instead.
 */
import { AsyncLocalStorage } from "node:async_hooks";

/** The W3C trace-context headers of a request. */
export interface TraceContext {
  readonly traceparent?: string;
  readonly tracestate?: string;
}

const current = new AsyncLocalStorage<TraceContext>();

/** Runs `fn` with `trace` as the current trace context. */
export function runWithTraceContext<T>(trace: TraceContext, fn: () => T): T {
  return current.run(trace, fn);
}

/** The trace context of the worker call being served, if any. */
export function currentTraceContext(): TraceContext | undefined {
  return current.getStore();
}

/** Headers carrying `trace`. */
export function traceHeaders(trace: TraceContext | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (trace?.traceparent) headers.traceparent = trace.traceparent;
  if (trace?.tracestate) headers.tracestate = trace.tracestate;
  return headers;
}
