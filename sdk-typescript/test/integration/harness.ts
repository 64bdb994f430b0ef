/**
 * The integration tests' harness: a fresh database per test file on the real PostgreSQL
 * and MariaDB servers, the real `xdb-server` built from this repository on a free port,
 * and SDK workers on node:http in this process. Waits are conditions with deadlines,
 * never fixed sleeps. A missing server fails the test, naming the script that starts it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import mysql from "mysql2/promise";
import pg from "pg";

import type { NodeHandler } from "@xdb/sdk";

export type Dialect = "postgres" | "mysql";
export const DIALECTS: readonly Dialect[] = ["postgres", "mysql"];

/** The repository root (this file runs from sdk-typescript/dist/test/integration/). */
export const REPO_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

const POSTGRES_URL = process.env.XDB_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const MYSQL_URL = process.env.XDB_TEST_MYSQL_URL ?? "mysql://root@127.0.0.1:3306/mysql";

/** A fresh database on one server, dropped by `drop()`. */
export class TestDatabase {
  private constructor(
    readonly dialect: Dialect,
    readonly name: string,
    readonly url: string,
    private readonly adminUrl: string,
  ) {}

  /** Creates a database named after `label`, with the samples' business tables. */
  static async create(dialect: Dialect, label: string): Promise<TestDatabase> {
    const name = `xdb_ts_${label.replace(/[^a-z0-9]/gi, "_").toLowerCase()}_${randomBytes(4).toString("hex")}`;
    const adminUrl = dialect === "postgres" ? POSTGRES_URL : MYSQL_URL;
    const db = new TestDatabase(dialect, name, withDatabase(adminUrl, name), adminUrl);
    await db.admin(dialect === "postgres" ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} CHARACTER SET utf8mb4`);
    for (const sample of ["user_signup", "site_creation"]) {
      await db.execute(readFileSync(join(REPO_ROOT, "samples", "sql", dialect, `${sample}.sql`), "utf8"));
    }
    return db;
  }

  /** Runs `sql` (several statements allowed) in this database. */
  async execute(sql: string): Promise<void> {
    await this.query(sql);
  }

  /** Rows of `sql` with `params` ($1.. on PostgreSQL, ? on MySQL). */
  async query<T = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<T[]> {
    if (this.dialect === "postgres") {
      const client = await connectPostgres(this.url);
      try {
        return (await client.query(sql, params)).rows as T[];
      } finally {
        await client.end();
      }
    }
    const conn = await connectMysql(this.url);
    try {
      const [rows] = await conn.query(sql, params);
      return (Array.isArray(rows) ? rows : []) as T[];
    } finally {
      await conn.end();
    }
  }

  /** The business row of table `table` keyed by `column = value`, or undefined. */
  async row(table: string, column: string, value: string): Promise<Record<string, unknown> | undefined> {
    const q = this.dialect === "postgres" ? `SELECT * FROM "${table}" WHERE ${column} = $1` : `SELECT * FROM \`${table}\` WHERE ${column} = ?`;
    return (await this.query(q, [value]))[0];
  }

  async drop(): Promise<void> {
    await this.admin(
      this.dialect === "postgres" ? `DROP DATABASE IF EXISTS ${this.name} WITH (FORCE)` : `DROP DATABASE IF EXISTS ${this.name}`,
    );
  }

  private async admin(sql: string): Promise<void> {
    if (this.dialect === "postgres") {
      const client = await connectPostgres(this.adminUrl);
      try {
        await client.query(sql);
      } finally {
        await client.end();
      }
    } else {
      const conn = await connectMysql(this.adminUrl);
      try {
        await conn.query(sql);
      } finally {
        await conn.end();
      }
    }
  }
}

async function connectPostgres(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(
      `PostgreSQL is not reachable at ${redact(url)} (${String(error)}): start it with scripts/ensure-postgres.sh`,
    );
  }
  return client;
}

async function connectMysql(url: string): Promise<mysql.Connection> {
  try {
    return await mysql.createConnection({ uri: url, multipleStatements: true });
  } catch (error) {
    throw new Error(`MariaDB is not reachable at ${redact(url)} (${String(error)}): start it with scripts/ensure-mariadb.sh`);
  }
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

function redact(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = "***";
  return parsed.toString();
}

/** The xdb-server binary: XDB_SERVER_BIN, else `$CARGO_TARGET_DIR/debug/xdb-server`. */
export function serverBinary(): string {
  const explicit = process.env.XDB_SERVER_BIN;
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache", "xdb-ci-target");
  const binary = explicit ?? join(targetDir, "debug", "xdb-server");
  if (!existsSync(binary)) {
    throw new Error(
      `xdb-server not found at ${binary}: build it with scripts/test-sdk-typescript.sh ` +
        "(or `cargo build -p xdb-server`, and set XDB_SERVER_BIN or CARGO_TARGET_DIR)",
    );
  }
  return binary;
}

export interface ServerOptions {
  /** `security.worker_signing_secret`. */
  readonly signingSecret?: string;
  /** `security.api_tokens`. */
  readonly apiTokens?: string[];
}

/** A running `xdb-server` (API + async service) on a free port. */
export class XdbServer {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
    private readonly logs: string[],
  ) {}

  static async start(db: TestDatabase, options: ServerOptions = {}): Promise<XdbServer> {
    const args = [
      "--database-url", db.url,
      "--install-schema",
      "--listen", "127.0.0.1:0",
      "--log-format", "json",
      "--log-level", "info",
      "--set", "async.shutdown_grace_seconds=1",
    ];
    if (options.signingSecret) args.push("--set", `security.worker_signing_secret=${options.signingSecret}`);
    if (options.apiTokens) args.push("--set", `security.api_tokens=${JSON.stringify(options.apiTokens)}`);
    const env = { ...process.env };
    delete env.RUST_LOG; // it would win over --log-level
    const child = spawn(serverBinary(), args, { stdio: ["ignore", "pipe", "pipe"], env });
    const logs: string[] = [];
    const address = new Promise<string>((resolve, reject) => {
      const onLine = (line: string): void => {
        logs.push(line);
        if (logs.length > 2000) logs.shift();
        const found = /XDB API service listening.*?"address":"([^"]+)"|"address":"([^"]+)".*?XDB API service listening/.exec(line);
        if (found) resolve(found[1] ?? found[2] ?? "");
      };
      lines(child.stdout, onLine);
      lines(child.stderr, onLine);
      child.once("exit", (code) => reject(new Error(`xdb-server exited with ${code} before listening:\n${logs.slice(-30).join("\n")}`)));
      child.once("error", reject);
    });
    const timeout = deadline(60_000, () => `xdb-server did not listen within 60 s:\n${logs.slice(-30).join("\n")}`);
    let listen: string;
    try {
      listen = await Promise.race([address, timeout.promise]);
    } catch (error) {
      child.kill("SIGKILL");
      throw error;
    } finally {
      timeout.cancel();
    }
    const server = new XdbServer(child, `http://${listen}`, logs);
    await eventually("xdb-server to be ready", 30_000, async () => {
      const response = await fetch(`${server.url}/health/ready`).catch(() => undefined);
      return response?.ok === true;
    });
    return server;
  }

  /** The last log lines, for failure messages. */
  recentLogs(n = 40): string {
    return this.logs.slice(-n).join("\n");
  }

  /** Stops the server: SIGTERM, then SIGKILL after 10 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

function lines(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  let buffered = "";
  stream?.setEncoding("utf8");
  stream?.on("data", (chunk: string) => {
    buffered += chunk;
    let newline: number;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      onLine(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
    }
  });
}

/** A worker on node:http in this process, on a free port. */
export class TestWorker {
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(handler: NodeHandler): Promise<TestWorker> {
    const server = createServer((req, res) => handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    return new TestWorker(server, `http://127.0.0.1:${port}`);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Polls `check` until it holds, failing after `timeoutMs` with `what` in the message. */
export async function eventually(what: string, timeoutMs: number, check: () => boolean | Promise<boolean>): Promise<void> {
  const end = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await check()) return;
      lastError = undefined;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= end) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError instanceof Error ? `: ${lastError.message}` : ""}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function deadline(ms: number, message: () => string): { promise: Promise<never>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), ms);
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

/** One dialect's environment for a test file: database, server, and what to clean up. */
export class TestEnv {
  private readonly workers: TestWorker[] = [];

  private constructor(
    readonly db: TestDatabase,
    readonly server: XdbServer,
  ) {}

  static async start(dialect: Dialect, label: string, options: ServerOptions = {}): Promise<TestEnv> {
    const db = await TestDatabase.create(dialect, label);
    try {
      return new TestEnv(db, await XdbServer.start(db, options));
    } catch (error) {
      await db.drop().catch(() => undefined);
      throw error;
    }
  }

  async worker(handler: NodeHandler): Promise<TestWorker> {
    const worker = await TestWorker.start(handler);
    this.workers.push(worker);
    return worker;
  }

  async stop(): Promise<void> {
    await this.server.stop();
    for (const worker of this.workers) await worker.stop();
    await this.db.drop();
  }
}
