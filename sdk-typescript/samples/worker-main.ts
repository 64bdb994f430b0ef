// A service hosting the sample processes (user sign-up, site creation): the worker on
// node:http, plus `GET /health` and `GET /sample/emails` (the emails the sign-up sent,
// oldest first: `[{to, kind, idempotencyKey}]`). For trying the samples against a
// running XDB, and for the cross-language tests (sdk-python drives it with its client).
//
//   npm run build && node dist/samples/worker-main.js --port 8803 [--host 127.0.0.1]
//       [--reminder-interval-seconds 86400] [--site-failure-rate 0] [--site-seed 1]
//       [--site-deletion-grace-seconds 3]
//
// The worker URL is `http://HOST:PORT`. `--port 0` takes a free port. Once it listens,
// it prints one line `xdb sample worker (TypeScript) listening on http://HOST:PORT`.
// Environment: XDB_SAMPLE_WORKER_PORT (the port when --port is not given),
// XDB_WORKER_SIGNING_SECRET (verify XDB's signatures). SIGTERM or SIGINT stops it.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";

import { WorkerService } from "@xdb/sdk";

import { SiteCreationProcess } from "./site-creation.js";
import { SiteServices } from "./site-services.js";
import { UserSignupProcess, type EmailKind } from "./user-signup.js";

interface Email { to: string; kind: EmailKind; idempotencyKey: string }

const { values } = parseArgs({
  options: {
    host: { type: "string", default: "127.0.0.1" },
    port: { type: "string", default: process.env.XDB_SAMPLE_WORKER_PORT ?? "8803" },
    "reminder-interval-seconds": { type: "string", default: String(24 * 3600) },
    "site-failure-rate": { type: "string", default: "0" },
    "site-seed": { type: "string", default: "1" },
    "site-deletion-grace-seconds": { type: "string", default: "3" },
  },
  strict: true,
});

function number(name: keyof typeof values, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = Number(values[name]);
  if (!Number.isFinite(value) || value < min || value > max) {
    console.error(`xdb sample worker: --${name} must be a number from ${min} to ${max} (got ${String(values[name])})`);
    process.exit(2);
  }
  return value;
}

const port = number("port", 0, 65535);
const reminderSeconds = number("reminder-interval-seconds", 1);
const services = new SiteServices(number("site-failure-rate", 0, 1), number("site-seed", 0));
const deletionGraceSeconds = number("site-deletion-grace-seconds", 0);

// A stand-in for an email API: one email per worker call and kind, as an API keyed by
// the call's idempotency key would send (XDB calls workers at least once).
const outbox: Email[] = [];
function sendEmail(to: string, kind: EmailKind, idempotencyKey: string): void {
  if (outbox.some((e) => e.idempotencyKey === idempotencyKey && e.kind === kind)) return;
  outbox.push({ to, kind, idempotencyKey });
  console.log(`xdb sample worker: ${kind} email to ${to}`);
}

const worker = new WorkerService().register(
  new UserSignupProcess(sendEmail, { seconds: reminderSeconds }),
  new SiteCreationProcess(services, deletionGraceSeconds),
);
const secret = process.env.XDB_WORKER_SIGNING_SECRET;
if (secret) worker.withSigningSecret(secret);
const handler = worker.nodeHandler();

const server = createServer((req, res) => {
  handler(req, res, () => {
    const path = (req.url ?? "/").split("?")[0];
    if (req.method === "GET" && path === "/health") {
      res.writeHead(200, { "content-type": "text/plain" }).end("ok");
    } else if (req.method === "GET" && path === "/sample/emails") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(outbox));
    } else {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found");
    }
  });
});

server.on("error", (error) => {
  console.error(`xdb sample worker: cannot listen on ${values.host}:${port}: ${error.message}`);
  process.exit(1);
});
server.listen(port, values.host, () => {
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  console.log(`xdb sample worker (TypeScript) listening on http://${host}:${address.port}`);
});

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
