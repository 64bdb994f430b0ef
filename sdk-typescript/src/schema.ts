/**
 * What a process declares about its data: the global-attribute table (one row of the
 * user's own table, chosen by its primary key), its columns, local-attribute keys, and
 * local queues. Declarations catch typos: the SDK loads every declared attribute by
 * default and refuses writes to, or publishing on, anything undeclared.
 */

/** Where a process's global attributes live: one row of a user table. */
export interface GlobalAttributeTable {
  /** The user table, optionally schema-qualified (`schema.table`). */
  readonly tableName: string;
  /** The primary-key column; each execution picks its row with a value given at start. */
  readonly primaryKeyColumn: string;
}

/** The attributes a process reads and writes. Immutable; each method returns a copy. */
export class PersistenceSchema {
  private constructor(
    readonly table: GlobalAttributeTable | undefined,
    readonly globalAttributeColumns: readonly string[],
    readonly localAttributeKeys: readonly string[],
  ) {}

  /** No global-attribute table (local attributes may still be declared). */
  static none(): PersistenceSchema {
    return new PersistenceSchema(undefined, [], []);
  }

  /** Global attributes are columns of `tableName`, whose rows are keyed by `primaryKeyColumn`. */
  static withTable(tableName: string, primaryKeyColumn: string): PersistenceSchema {
    return new PersistenceSchema({ tableName, primaryKeyColumn }, [], []);
  }

  /** Declares global-attribute columns of the table. */
  globalAttributes(...columns: string[]): PersistenceSchema {
    return new PersistenceSchema(
      this.table,
      unique([...this.globalAttributeColumns, ...columns]),
      this.localAttributeKeys,
    );
  }

  /** Declares local-attribute keys (kept by XDB per execution). */
  localAttributes(...keys: string[]): PersistenceSchema {
    return new PersistenceSchema(
      this.table,
      this.globalAttributeColumns,
      unique([...this.localAttributeKeys, ...keys]),
    );
  }

  declaresGlobalAttribute(column: string): boolean {
    return this.table !== undefined && this.globalAttributeColumns.includes(column);
  }

  declaresLocalAttribute(key: string): boolean {
    return this.localAttributeKeys.includes(key);
  }
}

/** The local queues a process uses. */
export class CommunicationSchema {
  private constructor(readonly localQueueNames: readonly string[]) {}

  static none(): CommunicationSchema {
    return new CommunicationSchema([]);
  }

  /** Declares local queues. */
  static localQueues(...names: string[]): CommunicationSchema {
    return new CommunicationSchema(unique(names));
  }

  declaresLocalQueue(name: string): boolean {
    return this.localQueueNames.includes(name);
  }
}

function unique(values: string[]): string[] {
  return [...new Set(values)];
}
