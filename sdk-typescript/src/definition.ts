/**
 * `ProcessDefinition`: a process read once into what the worker and the client need, and
 * the rules that turn user decisions into wire decisions (each next state's config, with
 * the process's default loading policies where a state sets none). Pure.
 */
import type { StateDecision, NextState } from "./decision.js";
import { XdbSdkError } from "./errors.js";
import type { AnyRpc, Process } from "./process.js";
import type {
  AsyncStateConfig,
  GlobalAttributeLoading,
  LocalAttributeLoading,
  ProcessExecutionRpcRequest,
  StateDecisionWire,
  StateMovement,
  VersioningPolicy,
} from "./protocol.js";
import { CommunicationSchema, PersistenceSchema } from "./schema.js";
import { stateIdOfInstance, type AsyncState } from "./state.js";

const VERSIONING_POLICIES: readonly VersioningPolicy[] = ["PINNED", "MOVE_TO_CURRENT"];

export class ProcessDefinition {
  readonly processType: string;
  readonly startingStateId: string | undefined;
  readonly persistence: PersistenceSchema;
  readonly communication: CommunicationSchema;
  readonly versioningPolicy: VersioningPolicy;
  private readonly states = new Map<string, AsyncState<never>>();
  private readonly rpcs = new Map<string, AnyRpc>();

  /**
   * Reads `process`'s schemas. Throws when two states share an id, or a state is not a
   * class instance: definition bugs, best caught when the worker starts.
   */
  constructor(readonly process: Process) {
    if (process.processType === undefined && process.constructor === Object) {
      throw new XdbSdkError("NOT_ALLOWED", "a process that is not a class instance needs a processType");
    }
    this.processType = process.processType ?? process.constructor.name;
    const schema = process.stateSchema();
    for (const state of schema.states) {
      if (state.constructor === Object) {
        throw new XdbSdkError(
          "NOT_ALLOWED",
          `process ${this.processType}: states must be class instances (the class names the state)`,
        );
      }
      const id = stateIdOfInstance(state);
      if (this.states.has(id)) {
        throw new XdbSdkError("NOT_ALLOWED", `process ${this.processType}: state id ${JSON.stringify(id)} is registered twice`);
      }
      this.states.set(id, state);
    }
    this.startingStateId = schema.startingState ? stateIdOfInstance(schema.startingState) : undefined;
    this.persistence = process.persistenceSchema?.() ?? PersistenceSchema.none();
    this.communication = process.communicationSchema?.() ?? CommunicationSchema.none();
    this.versioningPolicy = process.versioningPolicy ?? "PINNED";
    if (!VERSIONING_POLICIES.includes(this.versioningPolicy)) {
      throw new XdbSdkError(
        "NOT_ALLOWED",
        `process ${this.processType}: versioningPolicy ${JSON.stringify(this.versioningPolicy)} is not one of ${VERSIONING_POLICIES.join(", ")}`,
      );
    }
    for (const [name, rpc] of Object.entries(process.rpcs ?? {})) {
      this.rpcs.set(name, rpc);
    }
  }

  /** State ids in registration order. */
  stateIds(): string[] {
    return [...this.states.keys()];
  }

  state(stateId: string): AsyncState<never> | undefined {
    return this.states.get(stateId);
  }

  rpc(name: string): AnyRpc | undefined {
    return this.rpcs.get(name);
  }

  rpcNames(): string[] {
    return [...this.rpcs.keys()];
  }

  /**
   * The config XDB receives for `stateId`: the state's options, whether it has a
   * waitUntil, and the default loading policies where the state sets none.
   */
  stateConfig(stateId: string): AsyncStateConfig {
    const state = this.requireState(stateId);
    const config: AsyncStateConfig = { ...this.withDefaults(state) };
    const recovery = config.stateFailureRecoveryOptions;
    if (recovery?.stateFailureProceedStateId && !recovery.stateFailureProceedStateConfig) {
      // XDB needs the recovery state's config to start it. Its own recovery options stay
      // as declared: filling them too could loop when two states recover into each other.
      const target = this.requireState(recovery.stateFailureProceedStateId);
      config.stateFailureRecoveryOptions = {
        ...recovery,
        stateFailureProceedStateConfig: this.withDefaults(target),
      };
    }
    return config;
  }

  /** The wire form of a move to another state of this process. */
  stateMovement(next: NextState): StateMovement {
    const movement: StateMovement = { stateId: next.stateId, stateConfig: this.stateConfig(next.stateId) };
    if (next.input) movement.stateInput = next.input;
    return movement;
  }

  /** The wire form of a decision, with every next state checked and configured. */
  stateDecision(decision: StateDecision): StateDecisionWire {
    const d = decision.decision;
    if (d.kind === "next") {
      return { nextStates: d.nextStates.map((n) => this.stateMovement(n)) };
    }
    const close: NonNullable<StateDecisionWire["threadCloseDecision"]> = { closeType: d.closeType };
    if (d.output) close.output = d.output;
    return { nextStates: [], threadCloseDecision: close };
  }

  /** Every declared column unlocked, or `undefined` without a table or columns. */
  defaultGlobalLoading(): GlobalAttributeLoading | undefined {
    const columns = this.persistence.globalAttributeColumns;
    return this.persistence.table && columns.length > 0
      ? { columns: [...columns], lockType: "NO_LOCK" }
      : undefined;
  }

  /** Every declared local key unlocked, or `undefined` without keys. */
  defaultLocalLoading(): LocalAttributeLoading | undefined {
    const keys = this.persistence.localAttributeKeys;
    return keys.length > 0 ? { keys: [...keys], lockType: "NO_LOCK" } : undefined;
  }

  /** The loading and timeout parts of the service's RPC request for RPC `name`. */
  rpcRequestOptions(name: string): Pick<
    ProcessExecutionRpcRequest,
    "timeoutSeconds" | "globalAttributeLoading" | "localAttributeLoading"
  > {
    const rpc = this.rpcs.get(name);
    if (!rpc) {
      throw new XdbSdkError("NOT_ALLOWED", `process ${this.processType} has no rpc ${JSON.stringify(name)}`);
    }
    const { timeoutSeconds, lockType, globalAttributeLoading, localAttributeLoading } = rpc.options;
    const defaults = this.defaultGlobalLoading();
    let global: GlobalAttributeLoading | undefined = defaults;
    if (globalAttributeLoading) {
      global = { columns: defaults?.columns ?? [], lockType: "NO_LOCK", ...globalAttributeLoading };
    } else if (lockType && defaults) {
      global = { ...defaults, lockType };
    }
    const out: ReturnType<ProcessDefinition["rpcRequestOptions"]> = {};
    if (timeoutSeconds !== undefined) out.timeoutSeconds = timeoutSeconds;
    if (global) out.globalAttributeLoading = global;
    const local = localAttributeLoading ?? this.defaultLocalLoading();
    if (local) out.localAttributeLoading = local;
    return out;
  }

  private withDefaults(state: AsyncState<never>): AsyncStateConfig {
    const config: AsyncStateConfig = { ...(state.options ?? {}) };
    config.skipWaitUntil = typeof state.waitUntil !== "function";
    config.globalAttributeLoading ??= this.defaultGlobalLoading() ?? null;
    config.localAttributeLoading ??= this.defaultLocalLoading() ?? null;
    if (config.globalAttributeLoading === null) delete config.globalAttributeLoading;
    if (config.localAttributeLoading === null) delete config.localAttributeLoading;
    return config;
  }

  private requireState(stateId: string): AsyncState<never> {
    const state = this.states.get(stateId);
    if (!state) {
      throw new XdbSdkError(
        "UNKNOWN_STATE",
        `state ${JSON.stringify(stateId)} is not registered in process ${this.processType}`,
      );
    }
    return state;
  }
}

const cache = new WeakMap<object, ProcessDefinition>();

/** The definition of `process` (an instance, or a class with a no-argument constructor), read once. */
export function definitionOf(process: Process | ProcessDefinition | (new () => Process)): ProcessDefinition {
  if (process instanceof ProcessDefinition) return process;
  let definition = cache.get(process);
  if (!definition) {
    definition = new ProcessDefinition(typeof process === "function" ? new process() : process);
    cache.set(process, definition);
  }
  return definition;
}
