/**
 * The requests the client builds from a call's arguments: a start from a process
 * definition (checked against its schema), a local queue message, a history page.
 */
import type { ProcessDefinition } from "./definition.js";
import { encode, encodeOptional, toJsonValue } from "./encoding.js";
import { XdbSdkError } from "./errors.js";
import type {
  DeploymentRef,
  GlobalAttributeValue,
  LocalAttributeValue,
  LocalQueueMessage,
  ProcessExecutionHistoryRequest,
  ProcessExecutionStartRequest,
  ProcessStartConfig,
} from "./protocol.js";
import type { HistoryOptions, ProcessStartOptions } from "./client-options.js";

/**
 * A message for local queue `queueName`, its `payload` encoded (none by default): for
 * `publishMessages` and `PUBLISH_TO_LOCAL_QUEUE` batches.
 */
export function localQueueMessage(queueName: string, payload?: unknown, dedupId?: string): LocalQueueMessage {
  const message: LocalQueueMessage = { queueName };
  const encoded = encodeOptional(`message to local queue ${JSON.stringify(queueName)}`, payload);
  if (encoded) message.payload = encoded;
  if (dedupId !== undefined) message.dedupId = dedupId;
  return message;
}

/**
 * Builds the start request for `definition`, checking the options against its schema so
 * mistakes fail here rather than in the service.
 */
export function buildStartRequest(
  definition: ProcessDefinition,
  processId: string,
  input: unknown,
  options: ProcessStartOptions,
): ProcessExecutionStartRequest {
  const { processType, persistence } = definition;
  const undeclared = (kind: string, name: string): XdbSdkError =>
    new XdbSdkError("UNDECLARED", `${kind} ${JSON.stringify(name)} is not declared in the schema of process ${processType}`);
  const initialWrite: GlobalAttributeValue[] = Object.entries(options.initialGlobalAttributes ?? {}).map(
    ([column, value]) => {
      if (column !== persistence.table?.primaryKeyColumn && !persistence.declaresGlobalAttribute(column)) {
        throw undeclared("global attribute", column);
      }
      return { column, value: toJsonValue(`global attribute ${JSON.stringify(column)}`, value) };
    },
  );
  const localWrites: LocalAttributeValue[] = Object.entries(options.initialLocalAttributes ?? {}).map(
    ([key, value]) => {
      if (!persistence.declaresLocalAttribute(key)) throw undeclared("local attribute", key);
      return { key, value: encode(`local attribute ${JSON.stringify(key)}`, value ?? null) };
    },
  );
  const config: ProcessStartConfig = {};
  const table = persistence.table;
  const pk = options.globalAttributePkValue;
  if (table && pk === undefined) {
    throw new XdbSdkError(
      "NOT_ALLOWED",
      `process ${processType} keeps global attributes in table ${table.tableName}: globalAttributePkValue is required`,
    );
  }
  if (!table && (pk !== undefined || initialWrite.length > 0)) {
    throw new XdbSdkError("NOT_ALLOWED", `process ${processType} declares no global attribute table`);
  }
  if (table) {
    config.globalAttributeConfig = {
      tableName: table.tableName,
      primaryKey: { column: table.primaryKeyColumn, value: toJsonValue("global attribute primary key value", pk) },
      initialWrite,
    };
  }
  if (localWrites.length > 0) config.localAttributeInitialWrite = localWrites;
  if (options.timeoutSeconds !== undefined) config.timeoutSeconds = Math.ceil(options.timeoutSeconds);
  if (options.idReusePolicy !== undefined) config.idReusePolicy = options.idReusePolicy;
  if (options.concurrencyKey !== undefined) config.concurrencyKey = options.concurrencyKey;
  if (options.priority !== undefined) config.priority = options.priority;
  if (options.fairnessKey !== undefined) config.fairnessKey = options.fairnessKey;
  if (options.fairnessWeight !== undefined) config.fairnessWeight = options.fairnessWeight;

  const request: ProcessExecutionStartRequest = { processId, processType, processStartConfig: config };
  if (options.requestId !== undefined) request.requestId = options.requestId;
  // None: the service routes the start to the deployment that registered the type.
  if (options.workerUrl) request.workerUrl = options.workerUrl;
  const startInput = encodeOptional("start state input", input);
  if (definition.startingStateId !== undefined) {
    request.startStateId = definition.startingStateId;
    request.startStateConfig = definition.stateConfig(definition.startingStateId);
    if (startInput) request.startStateInput = startInput;
  } else if (startInput) {
    throw new XdbSdkError("NOT_ALLOWED", `process ${processType} has no starting state to take an input`);
  }
  return request;
}

/** The history request: only the options given are sent (an empty `eventTypes` means every type). */
export function historyRequest(processId: string, options: HistoryOptions): ProcessExecutionHistoryRequest {
  const request: ProcessExecutionHistoryRequest = { processId };
  if (options.processExecutionId !== undefined) request.processExecutionId = options.processExecutionId;
  if (options.afterEventId !== undefined) request.afterEventId = options.afterEventId;
  if (options.pageSize !== undefined) request.pageSize = options.pageSize;
  if (options.eventTypes !== undefined && options.eventTypes.length > 0) request.eventTypes = [...options.eventTypes];
  return request;
}

/** `base` with `key` set to `value` when `value` is given. */
export function withOptional<T extends object, K extends string, V>(base: T, key: K, value: V | undefined): T & Partial<Record<K, V>> {
  return value === undefined ? base : { ...base, [key]: value };
}

/** A deployment by name and version (a `WorkerDeployment` carries its URL too: left out). */
export function deploymentRef(deployment: DeploymentRef): DeploymentRef {
  return { name: deployment.name, version: deployment.version };
}
