/**
 * Attribute reads and writes for one call of user code.
 *
 * Reads see the attributes XDB loaded for the call and the call's own earlier writes.
 * Writes go back in the response; XDB applies them in the transaction that records the
 * call's outcome, so they happen only if the outcome is recorded.
 */
import { decode, encode, toJsonValue } from "./encoding.js";
import { XdbSdkError } from "./errors.js";
import type {
  AttributeWrites,
  EncodedObject,
  GlobalAttributeValue,
  LoadedAttributes,
  LocalAttributeValue,
} from "./protocol.js";
import type { PersistenceSchema } from "./schema.js";
import type { Parser } from "./state.js";

export class Persistence {
  private readonly globals = new Map<string, unknown>();
  private readonly locals = new Map<string, EncodedObject>();
  private readonly globalWrites = new Map<string, GlobalAttributeValue>();
  private readonly localWrites = new Map<string, LocalAttributeValue>();

  constructor(
    private readonly processType: string,
    private readonly schema: PersistenceSchema,
    loaded: LoadedAttributes = {},
  ) {
    for (const a of loaded.globalAttributes ?? []) this.globals.set(a.column, a.value);
    for (const a of loaded.localAttributes ?? []) this.locals.set(a.key, a.value);
  }

  /**
   * Global attribute `column` (a column of the process's row); `undefined` when not
   * loaded or SQL `NULL`. With `schema` (e.g. a zod schema) the value is checked.
   */
  getGlobalAttribute<T = unknown>(column: string, schema?: Parser<T>): T | undefined {
    const value = this.globals.get(column);
    if (value === undefined || value === null) return undefined;
    return schema ? parseWith(schema, `global attribute ${JSON.stringify(column)}`, value) : (value as T);
  }

  /** Writes `value` to global attribute `column` (a declared column). */
  setGlobalAttribute(column: string, value: unknown): void {
    if (!this.schema.declaresGlobalAttribute(column)) {
      throw this.undeclared("global attribute", column);
    }
    const json = toJsonValue(`global attribute ${JSON.stringify(column)}`, value);
    this.globals.set(column, json);
    this.globalWrites.set(column, { column, value: json });
  }

  /** Local attribute `key`; `undefined` when not loaded or never written. */
  getLocalAttribute<T = unknown>(key: string, schema?: Parser<T>): T | undefined {
    const value = decode<unknown>(`local attribute ${JSON.stringify(key)}`, this.locals.get(key));
    if (value === undefined) return undefined;
    return schema ? parseWith(schema, `local attribute ${JSON.stringify(key)}`, value) : (value as T);
  }

  /** Writes `value` to local attribute `key` (a declared key). */
  setLocalAttribute(key: string, value: unknown): void {
    if (!this.schema.declaresLocalAttribute(key)) {
      throw this.undeclared("local attribute", key);
    }
    const encoded = encode(`local attribute ${JSON.stringify(key)}`, value ?? null);
    this.locals.set(key, encoded);
    this.localWrites.set(key, { key, value: encoded });
  }

  /** The writes made so far: one per column or key, in first-write order, last value winning. */
  writes(): AttributeWrites {
    return {
      globalAttributes: [...this.globalWrites.values()],
      localAttributes: [...this.localWrites.values()],
    };
  }

  private undeclared(kind: string, name: string): XdbSdkError {
    return new XdbSdkError(
      "UNDECLARED",
      `${kind} ${JSON.stringify(name)} is not declared in the schema of process ${this.processType}`,
    );
  }
}

/** Checks `value` with `schema`, naming `what` in the error. */
export function parseWith<T>(schema: Parser<T>, what: string, value: unknown): T {
  try {
    return schema.parse(value);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new XdbSdkError("DECODE", `${what} does not match its schema: ${message}`);
  }
}
