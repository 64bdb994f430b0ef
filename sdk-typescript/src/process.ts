/**
 * `Process`: a process type's states, schemas and RPCs, hosted by a worker and started by
 * clients. Also `StateSchema` and `rpc()`, which declare them.
 */
import type { Communication } from "./communication.js";
import type { Persistence } from "./persistence.js";
import type {
  FlowLimits,
  GlobalAttributeLoading,
  LocalAttributeLoading,
  LockType,
  ScheduleDeclaration,
  VersioningPolicy,
} from "./protocol.js";
import type { CommunicationSchema, PersistenceSchema } from "./schema.js";
import type { AsyncState, Parser, WorkerContext } from "./state.js";

/** The states of a process, and the one (if any) that runs when it starts. */
export class StateSchema {
  private constructor(
    readonly states: readonly AsyncState<never>[],
    readonly startingState: AsyncState<never> | undefined,
  ) {}

  /** `first` runs when the process starts; `others` are reached by decisions and RPCs. */
  static withStartingState(
    first: AsyncState<never>,
    ...others: AsyncState<never>[]
  ): StateSchema {
    return new StateSchema([first, ...others], first);
  }

  /** No state runs at start (work begins with RPCs). */
  static noStartingState(...states: AsyncState<never>[]): StateSchema {
    return new StateSchema(states, undefined);
  }
}

/** Options of an RPC, used by clients that invoke it. */
export interface RpcOptions<I = unknown> {
  /** Timeout of the worker call, in seconds (service default 10, at most 60). */
  readonly timeoutSeconds?: number;
  /**
   * Lock of the process's row while the RPC runs and its writes commit: `EXCLUSIVE_LOCK`
   * serializes read-modify-write RPCs on the same row. Loads every declared column.
   */
  readonly lockType?: LockType;
  /** Which columns to load, and the lock (overrides `lockType`; columns default to all). */
  readonly globalAttributeLoading?: GlobalAttributeLoading;
  /** Which local attributes to load (default: every declared key, unlocked). */
  readonly localAttributeLoading?: LocalAttributeLoading;
  /** Checks the decoded input before the handler sees it. */
  readonly inputSchema?: Parser<I>;
}

/** An RPC handler: input `I`, output `O`. */
export type RpcHandler<I, O> = (
  ctx: WorkerContext,
  input: I,
  persistence: Persistence,
  communication: Communication,
) => O | Promise<O>;

/** A registered RPC. */
export interface Rpc<I, O> {
  readonly handler: RpcHandler<I, O>;
  readonly options: RpcOptions<I>;
}

/** Declares an RPC: `rpcs = { verify: rpc(async (ctx, source: string, p, c) => ...) }`. */
export function rpc<I, O>(handler: RpcHandler<I, O>, options: RpcOptions<I> = {}): Rpc<I, O> {
  return { handler, options };
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any input and output type
export type AnyRpc = Rpc<any, any>;

/**
 * A process definition. The process type is `processType`, else the class name; the
 * same name every SDK uses for the same process, so workers and clients in different
 * languages interoperate.
 */
export interface Process {
  readonly processType?: string;
  /** The states, and which one (if any) runs first. */
  stateSchema(): StateSchema;
  /** Global-attribute table and columns, and local-attribute keys (default: none). */
  persistenceSchema?(): PersistenceSchema;
  /** Local queues (default: none). */
  communicationSchema?(): CommunicationSchema;
  /** RPCs by name, callable by clients while an execution runs. */
  readonly rpcs?: Readonly<Record<string, AnyRpc>>;
  /**
   * What happens to running executions when another deployment of the type becomes
   * current: `PINNED` (the default: they stay on the deployment they started on) or
   * `MOVE_TO_CURRENT` (they move to it). See docs/definitions.md.
   */
  readonly versioningPolicy?: VersioningPolicy;
  /**
   * Limits on the worker calls of all the type's states together, across all async
   * instances: how many a second (`{ maxCallsPerSecond: 20 }`), how many running at once
   * (`{ maxConcurrentCalls: 8 }`), or both; each state may declare its own. Sent at
   * registration; an operator may override them at run time (`setFlowLimits`). A type's
   * limits (not a state's) may also cap its running executions per concurrency key
   * (`{ maxRunningExecutions: 2 }`: at most two executions of a start's `concurrencyKey`
   * run at once; the others wait `PENDING`, in start order), and name the global attribute
   * whose value a start writes is its key when it names none
   * (`{ maxRunningExecutions: 2, concurrencyKeyAttribute: "customer_id" }`), give the
   * priority of its starts that name none (`{ priority: 2 }`: 1, claimed first, to 5; a
   * start's own `priority` wins), name the global attribute whose value a start writes is
   * its fairness key when it names none (`{ fairnessKeyAttribute: "tenant_id" }`; a start
   * writing no value has no key), and weigh its keyed starts that name no weight
   * (`{ fairnessWeight: 5 }`: 1 to 1,000). A `priority` that is not an integer from 1 to
   * 5, or a `fairnessWeight` not one from 1 to 1,000, is refused at export.
   */
  readonly flowLimits?: FlowLimits;
  /**
   * Schedules that start this type, owned by this code: each registration creates,
   * changes and deletes them to match, and each firing starts the type at the registering
   * deployment's worker URL. Operators may pause, resume and trigger them, not update or
   * delete them. For example `[{ scheduleId: "nightly-report", spec: { cron: { expression:
   * "0 3 * * *" } }, startStateId: "Report" }]`; see docs/schedules.md.
   */
  readonly schedules?: readonly ScheduleDeclaration[];
}

/** The RPC map of process `P`. */
export type RpcsOf<P> = P extends { readonly rpcs?: infer R } ? NonNullable<R> : never;
/** Names of `P`'s RPCs. */
export type RpcName<P> = keyof RpcsOf<P> & string;
/** Input type of RPC `N` of `P`. */
export type RpcInput<P, N extends RpcName<P>> = RpcsOf<P>[N] extends Rpc<infer I, unknown> ? I : never;
/** Output type of RPC `N` of `P`. */
export type RpcOutput<P, N extends RpcName<P>> = RpcsOf<P>[N] extends Rpc<infer _I, infer O> ? Awaited<O> : never;
