// Worker dispatch through handle(), the node:http/Express handler and the fetch handler:
// answers, error statuses and types, signatures, and the trace context user code sees.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";

import {
  Client, Command, CommandRequest, CommandResults, CommunicationSchema, Persistence, PersistenceSchema, StateDecision,
  StateSchema, WORKER_PATHS, WorkerService, encode, rpc, sign,
  type AsyncState, type Communication, type Process, type WorkerContext, type WorkerResponse,
} from "@xdb/sdk";

const context = (attempt = 1): WorkerContext => ({
  processId: "p1",
  processExecutionId: "e1",
  processType: "Shop",
  attempt,
  firstAttemptTimestampMs: 1,
  processStartedTimestampMs: 1,
  idempotencyKey: "e1/Pick-1/execute",
  stateExecutionId: "Pick-1",
});

class Pick implements AsyncState<{ item: string }> {
  waitUntil(_ctx: WorkerContext, input: { item: string }, _p: Persistence, c: Communication) {
    c.publishToLocalQueue("log", `waiting for ${input.item}`);
    return CommandRequest.anyOf(Command.timer({ minutes: 1 }), Command.localQueue("paid"));
  }
  execute(ctx: WorkerContext, input: { item: string }, results: CommandResults, p: Persistence) {
    if (input.item === "explode") throw new Error("out of stock");
    if (input.item === "bad-queue") {
      return StateDecision.singleNextState("Ghost");
    }
    p.setGlobalAttribute("status", results.receivedFromQueue("paid") ? "paid" : "expired");
    p.setLocalAttribute("seen", ctx.traceparent ?? null);
    return StateDecision.singleNextState(Ship, { item: input.item });
  }
}
class Ship implements AsyncState<{ item: string }> {
  execute() {
    return StateDecision.gracefulCompleteProcess("shipped");
  }
}
class Shop implements Process {
  constructor(private readonly client?: Client) {}
  stateSchema() {
    return StateSchema.withStartingState(new Pick(), new Ship());
  }
  persistenceSchema() {
    return PersistenceSchema.withTable("orders", "id").globalAttributes("status").localAttributes("seen");
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("paid", "log");
  }
  readonly rpcs = {
    cancel: rpc((_ctx, reason: string, p, c) => {
      p.setGlobalAttribute("status", `cancelled: ${reason}`);
      c.triggerStateMovement(Ship, { item: "refund" });
      return { ok: true };
    }),
    describeOther: rpc(async () => (await this.client?.describe("other"))?.status),
    strict: rpc((_ctx, n: number) => n * 2, {
      inputSchema: { parse: (v: unknown) => { if (typeof v !== "number") throw new Error("expected a number"); return v; } },
    }),
  };
}

const request = (stateId: string, input: unknown, extra: object = {}) => ({
  context: context(),
  processType: "Shop",
  stateId,
  stateInput: encode("input", input),
  attributes: { globalAttributes: [{ column: "status", value: "new" }] },
  ...extra,
});

async function call(worker: WorkerService, path: string, body: unknown, headers: Record<string, string> = {}): Promise<WorkerResponse & { json: Record<string, unknown> }> {
  const answer = await worker.handle({ method: "POST", path, headers, body: typeof body === "string" ? body : JSON.stringify(body) });
  return { ...answer, json: JSON.parse(answer.body) as Record<string, unknown> };
}

const quiet = () => new WorkerService({ onError: () => undefined });

describe("worker dispatch", () => {
  const worker = quiet().register(new Shop());

  it("answers waitUntil with the command request and messages", async () => {
    const answer = await call(worker, WORKER_PATHS.waitUntil, request("Pick", { item: "book" }));
    assert.equal(answer.status, 200);
    assert.equal(answer.headers["content-type"], "application/json");
    assert.deepEqual(answer.json, {
      commandRequest: {
        waitingType: "ANY_OF_COMPLETION",
        timerCommands: [{ delayInSeconds: 60 }],
        localQueueCommands: [{ queueName: "paid", count: 1 }],
      },
      writes: { globalAttributes: [], localAttributes: [] },
      publishToLocalQueue: [{ queueName: "log", payload: { encoding: "json", data: '"waiting for book"' } }],
    });
  });

  it("answers execute with the decision, the next state's config and the writes", async () => {
    const answer = await call(
      worker,
      WORKER_PATHS.execute,
      request("Pick", { item: "book" }, { commandResults: { localQueueResults: [{ queueName: "paid", status: "RECEIVED" }] } }),
      { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
    );
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json.stateDecision, {
      nextStates: [
        {
          stateId: "Ship",
          stateConfig: {
            skipWaitUntil: true,
            globalAttributeLoading: { columns: ["status"], lockType: "NO_LOCK" },
            localAttributeLoading: { keys: ["seen"], lockType: "NO_LOCK" },
          },
          stateInput: { encoding: "json", data: '{"item":"book"}' },
        },
      ],
    });
    assert.deepEqual(answer.json.writes, {
      globalAttributes: [{ column: "status", value: "paid" }],
      localAttributes: [{ key: "seen", value: { encoding: "json", data: '"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"' } }],
    });
  });

  it("answers an RPC with its output, writes and the states it starts", async () => {
    const answer = await call(worker, WORKER_PATHS.rpc, {
      context: { ...context(), stateExecutionId: null },
      processType: "Shop",
      rpcName: "cancel",
      input: encode("i", "changed my mind"),
    });
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.json.output, { encoding: "json", data: '{"ok":true}' });
    assert.deepEqual(answer.json.writes, { globalAttributes: [{ column: "status", value: "cancelled: changed my mind" }], localAttributes: [] });
    assert.deepEqual((answer.json.appendNextStates as { stateId: string }[]).map((s) => s.stateId), ["Ship"]);
  });

  it("answers the caller's mistakes with 400 and a type", async () => {
    const cases: [string, unknown, string][] = [
      [WORKER_PATHS.execute, { ...request("Pick", {}), processType: "Nope" }, "UNKNOWN_PROCESS_TYPE"],
      [WORKER_PATHS.execute, request("Nope", {}), "UNKNOWN_STATE"],
      [WORKER_PATHS.rpc, { context: context(), processType: "Shop", rpcName: "nope" }, "UNKNOWN_RPC"],
      [WORKER_PATHS.execute, "{not json", "INVALID_REQUEST"],
      [WORKER_PATHS.execute, { processType: "Shop", stateId: "Pick" }, "INVALID_REQUEST"],
      [WORKER_PATHS.execute, { ...request("Pick", {}), stateInput: { encoding: "xml", data: "<a/>" } }, "UNDECODABLE_INPUT"],
      [WORKER_PATHS.execute, { ...request("Pick", {}), stateInput: { encoding: "json", data: "not json" } }, "UNDECODABLE_INPUT"],
      [WORKER_PATHS.waitUntil, request("Ship", {}), "NOT_IMPLEMENTED"],
      [WORKER_PATHS.rpc, { context: context(), processType: "Shop", rpcName: "strict", input: encode("i", "two") }, "UNDECODABLE_INPUT"],
    ];
    for (const [path, body, errorType] of cases) {
      const answer = await call(worker, path, body);
      assert.equal(answer.status, 400, `${errorType}: ${answer.body}`);
      assert.equal(answer.json.errorType, errorType, answer.body);
      assert.equal(typeof answer.json.detail, "string");
    }
    assert.equal((await call(worker, "/elsewhere", {})).status, 404);
    const get = await worker.handle({ method: "GET", path: WORKER_PATHS.execute, body: "" });
    assert.equal(get.status, 405);
  });

  it("answers user code failures with 500 USER_CODE_ERROR and tells onError", async () => {
    const failures: string[] = [];
    const told = new WorkerService({ onError: (f) => failures.push(`${f.api} ${f.status} ${f.detail}`) }).register(new Shop());
    const answer = await call(told, WORKER_PATHS.execute, request("Pick", { item: "explode" }));
    assert.equal(answer.status, 500);
    assert.deepEqual(answer.json, { detail: "out of stock", errorType: "USER_CODE_ERROR" });
    assert.deepEqual(failures, ["execute 500 out of stock"]);
    const unknownNext = await call(told, WORKER_PATHS.execute, request("Pick", { item: "bad-queue" }));
    assert.equal(unknownNext.status, 500, "a decision naming an unregistered state fails the call");
    assert.match(String(unknownNext.json.detail), /state "Ghost" is not registered/);
  });

  it("refuses a second registration of a process type", () => {
    assert.throws(() => quiet().register(new Shop(), new Shop()), /registered twice/);
  });
});

describe("worker signatures and trace context", () => {
  const SECRET = "0123456789abcdef-secret";

  it("requires a valid signature when a secret is set", async () => {
    const worker = quiet().register(new Shop()).withSigningSecret(SECRET);
    const body = JSON.stringify(request("Pick", { item: "book" }));
    const now = Math.floor(Date.now() / 1000);
    const unsigned = await call(worker, WORKER_PATHS.waitUntil, body);
    assert.equal(unsigned.status, 401);
    assert.equal(unsigned.json.errorType, "UNAUTHORIZED");
    const forged = await call(worker, WORKER_PATHS.waitUntil, body, { "x-xdb-signature": sign("wrong-secret-0123456", now, body) });
    assert.equal(forged.status, 401);
    assert.match(String(forged.json.detail), /does not match/);
    const signed = await call(worker, WORKER_PATHS.waitUntil, body, { "X-XDB-Signature": sign(SECRET, now, body) });
    assert.equal(signed.status, 200);
  });

  it("lets a client called from user code continue the caller's trace", async () => {
    const sent: Headers[] = [];
    const fakeFetch: typeof fetch = (_input, init) => {
      sent.push(new Headers(init?.headers));
      return Promise.resolve(Response.json({
        processExecutionId: "e2", processId: "other", processType: "Shop", workerUrl: "http://w", status: "RUNNING",
        startTimestampMs: 1, runningStateExecutions: 1,
      }));
    };
    const worker = quiet().register(new Shop(new Client({ serviceUrl: "http://xdb", fetch: fakeFetch })));
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const answer = await call(
      worker,
      WORKER_PATHS.rpc,
      { context: context(), processType: "Shop", rpcName: "describeOther" },
      { traceparent, tracestate: "xdb=1" },
    );
    assert.equal(answer.status, 200, answer.body);
    assert.deepEqual(answer.json.output, { encoding: "json", data: '"RUNNING"' });
    assert.equal(sent[0]?.get("traceparent"), traceparent);
    assert.equal(sent[0]?.get("tracestate"), "xdb=1");
  });
});

describe("worker mounting", () => {
  it("serves node:http, and passes other paths on as Express middleware does", async () => {
    const handler = quiet().register(new Shop()).nodeHandler();
    const server = createServer((req, res) =>
      handler(req, res, () => {
        res.writeHead(200, { "content-type": "text/plain" }).end("app route");
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const answer = await fetch(`${base}/prefix${WORKER_PATHS.waitUntil}`, { method: "POST", body: JSON.stringify(request("Pick", { item: "x" })) });
      assert.equal(answer.status, 200);
      assert.equal(((await answer.json()) as { commandRequest: { waitingType: string } }).commandRequest.waitingType, "ANY_OF_COMPLETION");
      assert.equal(await (await fetch(`${base}/health`)).text(), "app route");
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("serves fetch-style Request -> Response", async () => {
    const handler = quiet().register(new Shop()).fetchHandler();
    const response = await handler(
      new Request(`http://worker${WORKER_PATHS.execute}`, { method: "POST", body: JSON.stringify(request("Ship", { item: "x" })) }),
    );
    assert.equal(response.status, 200);
    const body = (await response.json()) as { stateDecision: { threadCloseDecision: { closeType: string } } };
    assert.equal(body.stateDecision.threadCloseDecision.closeType, "GRACEFUL_COMPLETE_PROCESS");
  });
});
