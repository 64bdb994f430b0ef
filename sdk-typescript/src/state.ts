/**
 * `AsyncState`: a step of a process. XDB calls `waitUntil` (when the state has one),
 * waits for the commands it returns, then calls `execute`, which decides what follows.
 * Also the references decisions use to name a state, and the context user code gets.
 */
import type { CommandRequest, CommandResults } from "./command.js";
import type { Communication } from "./communication.js";
import type { StateDecision } from "./decision.js";
import type { Persistence } from "./persistence.js";
import type { AsyncStateConfig, Context, FlowLimits } from "./protocol.js";

/** The call being served: the protocol's context plus the caller's trace context. */
export interface WorkerContext extends Context {
  /** W3C `traceparent` of XDB's call, to continue the process's trace. */
  readonly traceparent?: string;
  /** W3C `tracestate` of XDB's call. */
  readonly tracestate?: string;
}

/** Anything that checks and returns a value, such as a zod schema. */
export interface Parser<T> {
  parse(value: unknown): T;
}

/** A state's options; loading policies left unset load every declared attribute unlocked. */
export type StateOptions = Omit<AsyncStateConfig, "skipWaitUntil">;

/**
 * A step of a process, with input type `I` (`void` for none). The state id is the class's
 * static `stateId` if it has one, else the class name.
 */
export interface AsyncState<I = void> {
  /** Timeouts, retry policies, failure recovery and loading policies of this state. */
  readonly options?: StateOptions;
  /**
   * Limits on this state's worker calls across all async instances
   * (`{ maxCallsPerSecond: 0.5 }`: one call every two seconds; `{ maxConcurrentCalls: 4 }`:
   * at most four running at once; both may be given); sent at registration, and an
   * operator may override them at run time. `maxRunningExecutions`,
   * `concurrencyKeyAttribute`, `priority`, `fairnessKeyAttribute` and `fairnessWeight` are
   * the process type's alone: a state declaring any of them is refused at export.
   */
  readonly flowLimits?: FlowLimits;
  /**
   * Checks the decoded input before `waitUntil`/`execute` see it (a bad input is a 400).
   * A zod schema also gives the state's registered definition its input's JSON Schema.
   * (Any parser in `AsyncState<never>`, the type `StateSchema` holds states of any input as.)
   */
  readonly inputSchema?: [I] extends [never] ? Parser<unknown> : Parser<I>;
  /** What XDB waits for before `execute`; a state without it goes straight to `execute`. */
  waitUntil?(
    ctx: WorkerContext,
    input: I,
    persistence: Persistence,
    communication: Communication,
  ): CommandRequest | Promise<CommandRequest>;
  /** Decides what follows this state. */
  execute(
    ctx: WorkerContext,
    input: I,
    commandResults: CommandResults,
    persistence: Persistence,
    communication: Communication,
  ): StateDecision | Promise<StateDecision>;
}

/** A state class; its constructor's arguments do not matter here. */
export type StateClass<I = unknown> = abstract new (...args: never[]) => AsyncState<I>;

/** Names a state: its class, or its id. */
export type StateRef<I = unknown> = StateClass<I> | string;

/** The arguments after a state reference: the input, optional when it may be undefined. */
export type InputArgs<I> = undefined extends I ? [input?: I] : [input: I];

/** The id of a state class: its static `stateId`, else its name. */
export function stateIdOfClass(cls: abstract new (...args: never[]) => unknown): string {
  const declared = (cls as { stateId?: unknown }).stateId;
  return typeof declared === "string" ? declared : cls.name;
}

/** The id a reference names. */
export function stateIdOf(ref: StateRef): string {
  return typeof ref === "string" ? ref : stateIdOfClass(ref);
}

/** The id of a state instance (its class's id). */
export function stateIdOfInstance(state: AsyncState<never>): string {
  return stateIdOfClass(state.constructor as abstract new (...args: never[]) => unknown);
}
