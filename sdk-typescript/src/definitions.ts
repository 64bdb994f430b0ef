/**
 * Registered process definitions: a process as the service's wire `ProcessDefinition`.
 *
 * A worker deployment registers the processes it hosts (`definitions/register`, role
 * `deploy`) so that the service checks starts, publishes and RPCs before writing anything,
 * and routes starts that name no worker URL to the deployment. `exportDefinition` builds
 * the wire form of one process. Nothing here does IO.
 */
import { toJSONSchema, type z } from "zod";

import { definitionOf, ProcessDefinition } from "./definition.js";
import { XdbSdkError } from "./errors.js";
import type { Process } from "./process.js";
import type {
  AttributeDefinition,
  FlowLimits,
  ProcessDefinitionWire,
  RpcDefinition,
  ScheduleDeclaration,
  StateDefinition,
} from "./protocol.js";
import type { Parser } from "./state.js";

/**
 * What `registerDefinitions` takes: processes (instances, or classes with a no-argument
 * constructor), the SDK's `ProcessDefinition`s, or wire definitions as they are sent.
 */
export type DefinitionSource = Process | ProcessDefinition | (new () => Process) | ProcessDefinitionWire;

/**
 * The wire `ProcessDefinition` of `process`, as a worker registers it:
 *
 * - `states`: each state's id, whether it has a `waitUntil`, its config as the SDK sends
 *   it at a start or a move (`skipWaitUntil` when it has no `waitUntil`, default loading
 *   filled in), and the JSON Schema of its `inputSchema` when that is a zod schema zod can
 *   describe (otherwise none: any input);
 * - `startStates`: empty (a start may name any state);
 * - `localQueues`: the communication schema's queues;
 * - `rpcs`: name, the loading the client sends for it, the input's JSON Schema;
 * - `globalAttributes`: the table, its key and the declared columns;
 *   `localAttributes`: the declared keys. The persistence schema declares names, not
 *   types, so every attribute's type is `ANY`;
 * - `versioningPolicy`: the process's, `PINNED` unless it says `MOVE_TO_CURRENT`;
 * - `flowLimits`: the process's and each state's `flowLimits` (absent: none; a state's
 *   may not set `maxRunningExecutions`, `concurrencyKeyAttribute`, `priority`,
 *   `fairnessKeyAttribute` or `fairnessWeight`, which are the type's,
 *   `concurrencyKeyAttribute` needs `maxRunningExecutions`, `priority` is an integer from
 *   1 to 5 and `fairnessWeight` one from 1 to 1,000);
 * - `schedules`: the process's `schedules` as declared (absent when it declares none).
 */
export function exportDefinition(process: Process | ProcessDefinition | (new () => Process)): ProcessDefinitionWire {
  const definition = definitionOf(process);
  const states: StateDefinition[] = definition.stateIds().map((id) => {
    const state = definition.state(id)!;
    const out: StateDefinition = {
      id,
      hasWaitUntil: typeof state.waitUntil === "function",
      config: definition.stateConfig(id),
    };
    const schema = inputJsonSchema(state.inputSchema);
    if (schema) out.inputSchema = schema;
    if (state.flowLimits) out.flowLimits = stateFlowLimitsOf(`${definition.processType}.${id}`, state.flowLimits);
    return out;
  });
  const rpcs: RpcDefinition[] = definition.rpcNames().map((name) => {
    const { globalAttributeLoading, localAttributeLoading } = definition.rpcRequestOptions(name);
    const out: RpcDefinition = { name };
    if (globalAttributeLoading) out.globalAttributeLoading = globalAttributeLoading;
    if (localAttributeLoading) out.localAttributeLoading = localAttributeLoading;
    const schema = inputJsonSchema(definition.rpc(name)?.options.inputSchema);
    if (schema) out.inputSchema = schema;
    return out;
  });
  const { persistence } = definition;
  const wire: ProcessDefinitionWire = {
    processType: definition.processType,
    states,
    startStates: [],
    localQueues: [...definition.communication.localQueueNames],
    rpcs,
    localAttributes: persistence.localAttributeKeys.map(anyAttribute),
    versioningPolicy: definition.versioningPolicy,
  };
  if (definition.process.flowLimits) {
    wire.flowLimits = flowLimitsOf(definition.processType, definition.process.flowLimits);
  }
  const schedules = schedulesOf(definition);
  if (schedules.length > 0) wire.schedules = schedules;
  if (persistence.table) {
    wire.globalAttributes = {
      tableName: persistence.table.tableName,
      primaryKeyColumn: persistence.table.primaryKeyColumn,
      columns: persistence.globalAttributeColumns.map(anyAttribute),
    };
  }
  return wire;
}

/** The priority claimed first (`processStartConfig.priority`, `FlowLimits.priority`). */
const HIGHEST_PRIORITY = 1;
/** The priority claimed last. */
const LOWEST_PRIORITY = 5;
/** The largest fairness weight (`processStartConfig.fairnessWeight`, `FlowLimits.fairnessWeight`). */
const MAX_FAIRNESS_WEIGHT = 1000;

/**
 * `limits` as sent; throws when they are not an object, name a `concurrencyKeyAttribute`
 * without the `maxRunningExecutions` it keys, give a `priority` that is not an integer
 * from 1 to 5, or a `fairnessWeight` that is not one from 1 to 1,000 (definition bugs,
 * caught at export; the service refuses the latter three at registration too).
 */
function flowLimitsOf(owner: string, limits: FlowLimits): FlowLimits {
  if (typeof limits !== "object" || Array.isArray(limits)) {
    throw new XdbSdkError("NOT_ALLOWED", `${owner}: flowLimits must be an object such as { maxCallsPerSecond: 20 }`);
  }
  if (given(limits.concurrencyKeyAttribute) && !given(limits.maxRunningExecutions)) {
    throw new XdbSdkError(
      "NOT_ALLOWED",
      `${owner}: flowLimits.concurrencyKeyAttribute keys the running-executions limit: declare maxRunningExecutions with it`,
    );
  }
  const priority: unknown = limits.priority;
  if (given(priority) && !isPriority(priority)) {
    throw new XdbSdkError(
      "NOT_ALLOWED",
      `${owner}: flowLimits.priority must be an integer from ${HIGHEST_PRIORITY} (claimed first) to ${LOWEST_PRIORITY}, not ${shown(priority)}`,
    );
  }
  const weight: unknown = limits.fairnessWeight;
  if (given(weight) && !isFairnessWeight(weight)) {
    throw new XdbSdkError(
      "NOT_ALLOWED",
      `${owner}: flowLimits.fairnessWeight must be an integer from 1 to ${MAX_FAIRNESS_WEIGHT}, not ${shown(weight)}`,
    );
  }
  return { ...limits };
}

/**
 * A state's `limits` as sent; throws as `flowLimitsOf` does, and when they carry the type's
 * own: its running executions' limit or key, or the priority, fairness key attribute or
 * fairness weight of its starts (the service refuses them too, at registration).
 */
function stateFlowLimitsOf(owner: string, limits: FlowLimits): FlowLimits {
  if (typeof limits === "object" && !Array.isArray(limits)) {
    const typeOnly = [
      ["maxRunningExecutions", limits.maxRunningExecutions, "limits a process type's running executions"],
      ["concurrencyKeyAttribute", limits.concurrencyKeyAttribute, "keys the limit of a process type's running executions"],
      ["priority", limits.priority, "is the priority of a process type's starts"],
      ["fairnessKeyAttribute", limits.fairnessKeyAttribute, "keys a process type's starts"],
      ["fairnessWeight", limits.fairnessWeight, "weighs a process type's starts"],
    ] as const;
    for (const [name, value, what] of typeOnly) {
      if (given(value)) {
        throw new XdbSdkError(
          "NOT_ALLOWED",
          `${owner}: flowLimits.${name} ${what}: declare it in the process's flowLimits, not a state's`,
        );
      }
    }
  }
  return flowLimitsOf(owner, limits);
}

/** Whether `value` is a priority: an integer from 1 (claimed first) to 5. */
function isPriority(value: unknown): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= HIGHEST_PRIORITY && value <= LOWEST_PRIORITY;
}

/** Whether `value` is a fairness weight: an integer from 1 to 1,000. */
function isFairnessWeight(value: unknown): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_FAIRNESS_WEIGHT;
}

/**
 * A bad limit's value for a message: a number as `String` writes it (JSON would turn `NaN`
 * into `null`), anything else as JSON (so `"2"` keeps the quotes that tell it is text).
 */
function shown(value: unknown): string {
  return typeof value === "number" ? String(value) : JSON.stringify(value);
}

/** Whether a limit's field is set (neither absent nor null). */
function given(value: unknown): boolean {
  return value !== undefined && value !== null;
}

/**
 * The process's declared schedules as sent; throws when they are not a list of
 * declarations with unique ids, each starting no state or one of the process's.
 */
function schedulesOf(definition: ProcessDefinition): ScheduleDeclaration[] {
  const owner = definition.processType;
  const declared = definition.process.schedules ?? [];
  if (!Array.isArray(declared)) {
    throw new XdbSdkError(
      "NOT_ALLOWED",
      `${owner}: schedules must be a list such as [{ scheduleId: "nightly", spec: { cron: { expression: "0 3 * * *" } } }]`,
    );
  }
  const ids = new Set<string>();
  return declared.map((declaration: ScheduleDeclaration) => {
    if (typeof declaration !== "object" || declaration === null || typeof declaration.scheduleId !== "string") {
      throw new XdbSdkError("NOT_ALLOWED", `${owner}: schedules: ${JSON.stringify(declaration)} is not a schedule declaration`);
    }
    const id = declaration.scheduleId;
    if (ids.has(id)) throw new XdbSdkError("NOT_ALLOWED", `${owner}: schedule id ${JSON.stringify(id)} is declared twice`);
    ids.add(id);
    const stateId = declaration.startStateId;
    if (stateId !== undefined && stateId !== null && !definition.state(stateId)) {
      throw new XdbSdkError(
        "NOT_ALLOWED",
        `${owner}: schedule ${JSON.stringify(id)} starts state ${JSON.stringify(stateId)}, which is not registered`,
      );
    }
    return { ...declaration };
  });
}

/** The wire definitions of `sources`; wire definitions are taken as they are. */
export function exportDefinitions(sources: readonly DefinitionSource[]): ProcessDefinitionWire[] {
  return sources.map((source) => (isWireDefinition(source) ? source : exportDefinition(source)));
}

/**
 * The JSON Schema (draft 2020-12) of the values `parser` accepts, when it is a zod schema
 * zod can describe; `undefined` for any other parser (it still checks inputs in the worker).
 */
export function inputJsonSchema(parser: Parser<unknown> | undefined): Record<string, unknown> | undefined {
  if (!isZodSchema(parser)) return undefined;
  try {
    return toJSONSchema(parser, { target: "draft-2020-12", io: "input", unrepresentable: "throw" });
  } catch {
    return undefined; // a custom check, a bigint: zod cannot say what it accepts
  }
}

function isZodSchema(parser: unknown): parser is z.ZodType {
  return typeof parser === "object" && parser !== null && "_zod" in parser;
}

function isWireDefinition(source: DefinitionSource): source is ProcessDefinitionWire {
  return (
    !(source instanceof ProcessDefinition) &&
    typeof source === "object" &&
    Array.isArray((source as { states?: unknown }).states) &&
    typeof (source as { stateSchema?: unknown }).stateSchema !== "function"
  );
}

function anyAttribute(name: string): AttributeDefinition {
  return { name, type: "ANY" };
}
