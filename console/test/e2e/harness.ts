/**
 * The browser test's harness: a fresh PostgreSQL database, the real `xdb-server` built
 * from this repository on a free port, a worker built with the TypeScript SDK on
 * node:http, and headless Chromium (Debian's, driven by playwright-core; never a
 * downloaded browser). The pieces follow sdk-typescript/test/integration/harness.ts.
 * Waits are conditions with deadlines, never fixed sleeps.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import pg from "pg";
import { chromium, type Browser } from "playwright-core";

import type { NodeHandler } from "@xdb/sdk";

/** The repository root (this file runs from console/build/test/e2e/). */
export const REPO_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

const POSTGRES_URL = process.env.XDB_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const CHROMIUM = process.env.XDB_CHROMIUM ?? "/usr/bin/chromium";

async function admin<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
  } catch (error) {
    throw new Error(`PostgreSQL is not reachable (${String(error)}): start it with scripts/ensure-postgres.sh`);
  }
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** A fresh database with the sign-up sample's business table `user`. */
export class TestDatabase {
  private constructor(
    readonly name: string,
    readonly url: string,
  ) {}

  static async create(): Promise<TestDatabase> {
    const name = `xdb_console_${randomBytes(4).toString("hex")}`;
    await admin(POSTGRES_URL, (c) => c.query(`CREATE DATABASE ${name}`));
    const url = new URL(POSTGRES_URL);
    url.pathname = `/${name}`;
    const db = new TestDatabase(name, url.toString());
    const sql = readFileSync(join(REPO_ROOT, "samples", "sql", "postgres", "user_signup.sql"), "utf8");
    await admin(db.url, (c) => c.query(sql));
    return db;
  }

  async drop(): Promise<void> {
    await admin(POSTGRES_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${this.name} WITH (FORCE)`));
  }
}

/** The xdb-server binary: XDB_SERVER_BIN, else `$CARGO_TARGET_DIR/debug/xdb-server`. */
function serverBinary(): string {
  const targetDir = process.env.CARGO_TARGET_DIR ?? join(homedir(), ".cache", "xdb-ci-target");
  const binary = process.env.XDB_SERVER_BIN ?? join(targetDir, "debug", "xdb-server");
  if (!existsSync(binary)) {
    throw new Error(`xdb-server not found at ${binary}: run scripts/test-console.sh (or cargo build -p xdb-server)`);
  }
  return binary;
}

/** A running `xdb-server` (API + async service) on a free port. */
export class XdbServer {
  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  /** Starts a server on `db` with `settings` (`--set key=value` each). */
  static async start(db: TestDatabase, settings: string[] = []): Promise<XdbServer> {
    const args = [
      "--database-url", db.url, "--install-schema", "--listen", "127.0.0.1:0",
      "--log-format", "json", "--log-level", "info", "--set", "async.shutdown_grace_seconds=1",
      ...settings.flatMap((setting) => ["--set", setting]),
    ];
    const env = { ...process.env };
    delete env.RUST_LOG; // it would win over --log-level
    const child = spawn(serverBinary(), args, { stdio: ["ignore", "pipe", "pipe"], env });
    const logs: string[] = [];
    const listening = new Promise<string>((resolve, reject) => {
      const onLine = (line: string): void => {
        logs.push(line);
        if (logs.length > 500) logs.shift();
        const found = /XDB API service listening.*?"address":"([^"]+)"|"address":"([^"]+)".*?XDB API service listening/.exec(line);
        if (found) resolve(found[1] ?? found[2] ?? "");
      };
      lines(child.stdout, onLine);
      lines(child.stderr, onLine);
      child.once("exit", (code) => reject(new Error(`xdb-server exited with ${code}:\n${logs.slice(-30).join("\n")}`)));
      child.once("error", reject);
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`xdb-server did not listen within 60 s:\n${logs.slice(-30).join("\n")}`)), 60_000);
    });
    try {
      const address = await Promise.race([listening, timeout]);
      const server = new XdbServer(child, `http://${address}`);
      await eventually("xdb-server to be ready", 30_000, async () => (await fetch(`${server.url}/health/ready`).catch(() => undefined))?.ok === true);
      return server;
    } catch (error) {
      child.kill("SIGKILL");
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGTERM, then SIGKILL after 10 s. */
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

/** Headless Chromium: Debian's package, never a downloaded build. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's package (apt-get install -y chromium)`);
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--no-first-run",
    ],
  });
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
