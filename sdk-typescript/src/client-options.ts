/**
 * The options of the client (`ClientOptions`) and of its calls, and what
 * `waitForCompletion` returns.
 */
import type {
  AsyncStateConfig,
  HistoryEventType,
  ProcessExecutionStopType,
  ProcessExecutionWaitForCompletionResponse,
  ProcessIdReusePolicy,
} from "./protocol.js";
import type { TraceContext } from "./trace.js";

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
  /**
   * The key the type's `maxRunningExecutions` counts the execution under (a customer's id,
   * say; 1 to 255 characters, no control characters): at most that many executions of a
   * key run at once, and a start over the limit waits `PENDING` until one of its key
   * closes, in start order. Absent: the value the start writes for the limits'
   * `concurrencyKeyAttribute` (in `initialGlobalAttributes`, or as `globalAttributePkValue`
   * when it is the primary key) when they name one, and the service refuses the start
   * (`INVALID_REQUEST` naming `processStartConfig.concurrencyKey`) if it writes none; else
   * the key every start without one shares. Ignored by a type without that limit.
   */
  readonly concurrencyKey?: string;
  /**
   * How soon the execution's tasks are claimed when tasks wait: 1 (claimed first) to 5
   * (claimed last); absent: the type's (its flow limits' `priority`), else the service's
   * default, 3. Every task of the execution has it, and so does the execution a reset
   * starts from it; `describe` answers it as `priority`.
   * Out of range is `INVALID_REQUEST` naming `processStartConfig.priority`.
   */
  readonly priority?: number;
  /**
   * The key claims share the execution's priority by (a tenant, a customer's id; 1 to 255
   * characters, no control characters): when tasks of several keys wait at one priority,
   * claims serve each key in turn, each taking up to its `fairnessWeight` of tasks a turn,
   * so one key's backlog never starves another's next task. Absent: the value the start
   * writes for its type's `fairnessKeyAttribute` (its flow limits'; in
   * `initialGlobalAttributes`, or as `globalAttributePkValue` when it is the primary key;
   * a number as its JSON text) when they name one, else (or when it writes none) the key
   * every start without one shares. Every task of the execution has it, and so does the
   * execution a reset starts from it; `describe` answers it as `fairnessKey`. Empty,
   * longer or with a control character, named or written, is `INVALID_REQUEST` naming
   * `processStartConfig.fairnessKey`.
   */
  readonly fairnessKey?: string;
  /**
   * How many tasks the `fairnessKey` takes in each turn: 1 to 1,000; absent: the type's
   * (its flow limits' `fairnessWeight`), else 1. Only beside a `fairnessKey` the start
   * names (not one its type's `fairnessKeyAttribute` gives); `describe` answers it as
   * `fairnessWeight`. Out of range, or without a key, is `INVALID_REQUEST` naming
   * `processStartConfig.fairnessWeight`.
   */
  readonly fairnessWeight?: number;
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

/** Options of the operator's controls (`retryNow`, `giveUp`, `pause`, `resume`, `reprioritize`). */
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

/**
 * Options of `reprioritize`: besides those of every control, the execution's new claim
 * order. A field left out stays as it is; at least one must be given (else the service
 * answers `INVALID_REQUEST` naming `reprioritize`). The service checks them as a start's:
 * out of range is `INVALID_REQUEST` naming `reprioritize.priority`,
 * `reprioritize.fairnessKey` or `reprioritize.fairnessWeight`.
 */
export interface ReprioritizeOptions extends Omit<ControlOptions, "stateExecutionId"> {
  /** 1 (claimed first) to 5; `describe` answers it as `priority`. */
  readonly priority?: number;
  /**
   * The new fairness key (1 to 255 characters, no control characters); `""` removes the
   * execution's key, and its weight with it. A new key without `fairnessWeight` keeps
   * the execution's weight (1 if it had no key).
   */
  readonly fairnessKey?: string;
  /**
   * The weight of the execution's key, the new one or the one it has: 1 to 1,000. On an
   * execution left without a key it is refused: `CONTROL_NOT_APPLICABLE` (409) when the
   * execution has none, `INVALID_REQUEST` beside `fairnessKey: ""`.
   */
  readonly fairnessWeight?: number;
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
