// Request ids and retries, against a real HTTP server (node:http) that drops, hangs and
// refuses. A write (start, stop, publish, the controls, reset, batch start) carries a
// request id (the caller's, else a UUID v4 made once per call) and is sent again with the
// same id and the same bytes on a lost connection and on 503; reads are sent again too;
// nothing is sent again on another status, and never more than `maxAttempts` times. A
// service of a release before request ids refuses the field: a write whose id is the
// client's own goes again without it, the caller's own id is never dropped.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";

import {
  BATCH_PATHS, CallRetries, Client, OPERATE_PATHS, SERVICE_PATHS, XdbSdkError, XdbTransportError, isApiError, isRepeatable, protocol,
  type ClientOptions,
} from "@xdb/sdk";

import { startUserSignup } from "../../samples/user-signup.js";
import { contractProblems } from "./contract.js";
import { answer, drop, hang, refusal, scriptedService, type ScriptedService, type Step } from "./scripted-service.js";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** A pause short enough for tests: it caps Retry-After and the backoff alike. */
const FAST = 20;

async function serving<T>(steps: Step[], run: (service: ScriptedService) => Promise<T>): Promise<ScriptedService> {
  const service = await scriptedService(...steps);
  try {
    await run(service);
  } finally {
    await service.close();
  }
  return service;
}

function client(service: ScriptedService, options: Partial<ClientOptions> = {}): Client {
  return new Client({ serviceUrl: service.url, workerUrl: "http://worker", maxRetryDelayMs: FAST, ...options });
}

/** Every request went to `path` with the same bytes and a UUID v4; returns the id. */
function assertSentAgainUnchanged(service: ScriptedService, path: string, times: number): string {
  assert.deepEqual(service.seen.map((s) => s.path), Array<string>(times).fill(path));
  assert.equal(new Set(service.seen.map((s) => s.body)).size, 1, "a retry changed the body");
  const requestId = String(service.json()[0]?.requestId);
  assert.match(requestId, UUID_V4);
  return requestId;
}

const CONTROL = { stateExecutionIds: ["Pay-1"] };
const RESET = { processExecutionId: "e-2", newExecution: false, stateExecutionId: "Pay-2" };

/** Every call that carries a request id: its path, the call, and an answer. */
const WRITES: [string, (c: Client) => Promise<unknown>, unknown][] = [
  [SERVICE_PATHS.start, (c) => startUserSignup(c, "u1", { email: "a@b.c" }), { processExecutionId: "e-1" }],
  [SERVICE_PATHS.stop, (c) => c.stop("p", { reason: "done" }), {}],
  [SERVICE_PATHS.publishToLocalQueue, (c) => c.publishToLocalQueue("p", "q", { n: 1 }), {}],
  [OPERATE_PATHS.retryNow, (c) => c.retryNow("p"), CONTROL],
  [OPERATE_PATHS.giveUp, (c) => c.giveUp("p", { stateExecutionId: "Pay-1" }), CONTROL],
  [OPERATE_PATHS.pause, (c) => c.pause("p", { reason: "upgrade" }), CONTROL],
  [OPERATE_PATHS.resume, (c) => c.resume("p"), CONTROL],
  [OPERATE_PATHS.reset, (c) => c.reset("p", "Pay", { amount: 1 }), RESET],
  [BATCH_PATHS.start, (c) => c.startBatch({ operation: "PAUSE", processType: "T" }), { batchId: "b-1", expected: 3 }],
];

describe("request ids and retries", () => {
  for (const [path, call, ok] of WRITES) {
    it(`sends ${path} again with its id after a dropped connection and after 503s`, async () => {
      const dropped = await serving([drop, answer(200, ok)], (s) => call(client(s)));
      assertSentAgainUnchanged(dropped, path, 2);
      const refused = await serving(
        [refusal(503, "DATABASE_UNAVAILABLE", "0"), refusal(503, "OVERLOADED", "0"), answer(200, ok)],
        (s) => call(client(s)),
      );
      assertSentAgainUnchanged(refused, path, 3);
    });
  }

  it("sends every write with its request id as the contract takes it", async () => {
    for (const [path, call, ok] of WRITES) {
      const service = await serving([answer(200, ok)], (s) => call(client(s)));
      const [body] = service.json();
      assert.match(String(body?.requestId), UUID_V4);
      assert.equal(contractProblems(path, body), "", `${path}: ${JSON.stringify(body)}`);
    }
  });

  it("gives each call its own id, and sends the caller's as given", async () => {
    const starts = await serving([answer(200, { processExecutionId: "e-1" })], async (s) => {
      const c = client(s);
      await c.start({ processId: "p", processType: "T" });
      await c.start({ processId: "p", processType: "T" });
      await c.start({ processId: "p", processType: "T", requestId: "signup:u1.v2_x-1" });
    });
    const ids = starts.json().map((b) => b.requestId);
    assert.equal(new Set(ids).size, 3);
    assert.equal(ids[2], "signup:u1.v2_x-1");
    const given = await serving(
      [answer(200, CONTROL), answer(200, {}), answer(200, {}), answer(200, {}), answer(200, RESET), answer(200, { batchId: "b", expected: 0 })],
      async (s) => {
        const c = client(s);
        await c.pause("p", { requestId: "pause-1" });
        await c.stop("p", { processExecutionId: "e-1", requestId: "stop-1" });
        await c.publishToLocalQueue("p", "q", undefined, { processExecutionId: "e-1", requestId: "m-1" });
        await c.publishMessages("p", [{ queueName: "q" }], { requestId: "m-2" });
        await c.reset("p", "Pay", undefined, { requestId: "reset-1" });
        await c.startBatch({ operation: "RESUME", requestId: "batch-1" });
      },
    );
    assert.deepEqual(given.json().map((b) => b.requestId), ["pause-1", "stop-1", "m-1", "m-2", "reset-1", "batch-1"]);
    assert.equal(given.json()[1]?.processExecutionId, "e-1");
    assert.equal(given.json()[2]?.processExecutionId, "e-1");
    for (const sent of given.seen) assert.equal(contractProblems(sent.path, JSON.parse(sent.body)), "", sent.body);
  });

  it("refuses a malformed request id before sending anything", async () => {
    const service = await serving([answer(200, CONTROL)], async (s) => {
      const c = client(s);
      for (const bad of ["", "x".repeat(201), "has space", "a/b", "é"]) {
        await assert.rejects(c.pause("p", { requestId: bad }), (e: unknown) => e instanceof XdbSdkError && /request id/.test(e.message));
        await assert.rejects(c.startBatch({ operation: "PAUSE", requestId: bad }), XdbSdkError);
      }
    });
    assert.equal(service.seen.length, 0);
  });

  it("stops after maxAttempts", async () => {
    const refused = await serving([refusal(503, "DATABASE_UNAVAILABLE", "0")], async (s) => {
      await assert.rejects(client(s, { maxAttempts: 3 }).stop("p"), (e: unknown) => isApiError(e, "DATABASE_UNAVAILABLE"));
    });
    assertSentAgainUnchanged(refused, SERVICE_PATHS.stop, 3);
    const dropped = await serving([drop], async (s) => {
      await assert.rejects(client(s).pause("p"), (e: unknown) => e instanceof XdbTransportError && /after 5 attempts/.test(e.message));
    });
    assertSentAgainUnchanged(dropped, OPERATE_PATHS.pause, 5);
    const once = await serving([drop], async (s) => {
      await assert.rejects(client(s, { maxAttempts: 1 }).pause("p"), (e: unknown) => e instanceof XdbTransportError && !/attempts/.test(e.message));
    });
    assert.equal(once.seen.length, 1);
  });

  for (const [status, subType] of [[400, "INVALID_REQUEST"], [409, "REQUEST_ID_CONFLICT"], [404, "PROCESS_NOT_FOUND"], [500, "INTERNAL_ERROR"]] as const) {
    it(`never sends a call again after ${status} ${subType}`, async () => {
      const service = await serving([refusal(status, subType, "0")], async (s) => {
        const c = client(s);
        await assert.rejects(c.retryNow("p"), (e: unknown) => isApiError(e, subType) && e.status === status);
        await assert.rejects(c.describe("p"), (e: unknown) => isApiError(e, subType));
      });
      assert.deepEqual(service.seen.map((s) => s.path), [OPERATE_PATHS.retryNow, SERVICE_PATHS.describe]);
    });
  }

  it("sends reads again, without a request id", async () => {
    const described = {
      processExecutionId: "e-1", processId: "p", processType: "T", workerUrl: "http://w",
      status: "RUNNING", startTimestampMs: 1, runningStateExecutions: 1,
    };
    const service = await serving([drop, refusal(503, "DATABASE_UNAVAILABLE"), answer(200, described)], async (s) => {
      assert.equal((await client(s).describe("p")).processExecutionId, "e-1");
    });
    assert.deepEqual(service.seen.map((s) => s.path), Array<string>(3).fill(SERVICE_PATHS.describe));
    assert.ok(service.json().every((b) => !("requestId" in b)));
    const batches = await serving([drop, refusal(404, "BATCH_NOT_FOUND")], async (s) => {
      await assert.rejects(client(s).describeBatch("b-9"), (e: unknown) => isApiError(e, "BATCH_NOT_FOUND") && e.status === 404);
    });
    assert.deepEqual(batches.seen.map((s) => s.path), [BATCH_PATHS.describe, BATCH_PATHS.describe]);
  });

  it("sends an RPC again only when the service did nothing", async () => {
    const rpc = (c: Client) => c.rpc({ processId: "p", rpcName: "peek" });
    // The worker is called once per RPC: after a lost answer the RPC may have run.
    const dropped = await serving([drop, answer(200, {})], async (s) => {
      await assert.rejects(rpc(client(s)), XdbTransportError);
    });
    assert.deepEqual(dropped.seen.map((s) => s.path), [SERVICE_PATHS.rpc]);
    const unavailable = await serving([refusal(503, "DATABASE_UNAVAILABLE", "0"), answer(200, {})], async (s) => {
      await assert.rejects(rpc(client(s)), (e: unknown) => isApiError(e, "DATABASE_UNAVAILABLE"));
    });
    assert.equal(unavailable.seen.length, 1);
    // OVERLOADED changed nothing: any call is sent again.
    const overloaded = await serving([refusal(503, "OVERLOADED", "0"), answer(200, {})], async (s) => {
      await rpc(client(s));
    });
    assert.deepEqual(overloaded.seen.map((s) => s.path), [SERVICE_PATHS.rpc, SERVICE_PATHS.rpc]);
  });

  it("tries a refused connection again for any call", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    // Nothing listens on the port now: connecting is refused, so nothing was sent.
    const c = new Client({ serviceUrl: `http://127.0.0.1:${port}`, maxAttempts: 3, maxRetryDelayMs: FAST });
    await assert.rejects(c.rpc({ processId: "p", rpcName: "peek" }), (e: unknown) => e instanceof XdbTransportError && /after 3 attempts/.test(e.message));
  });

  it("sends a call whose answer timed out again, with its id", async () => {
    const service = await serving([hang(1_000), answer(200, CONTROL)], async (s) => {
      const answered = await client(s, { requestTimeoutMs: 300 }).giveUp("p");
      assert.deepEqual(answered.stateExecutionIds, ["Pay-1"]);
    });
    assertSentAgainUnchanged(service, OPERATE_PATHS.giveUp, 2);
  });

  it("honours Retry-After up to maxRetryDelayMs", async () => {
    await serving([refusal(503, "OVERLOADED", "1"), answer(200, CONTROL)], async (s) => {
      const started = Date.now();
      await client(s, { maxRetryDelayMs: 5_000 }).resume("p");
      assert.ok(Date.now() - started >= 950); // timers may fire a millisecond early
    });
    await serving([refusal(503, "OVERLOADED", "3600"), answer(200, CONTROL)], async (s) => {
      const started = Date.now();
      await client(s, { maxRetryDelayMs: 100 }).resume("p");
      assert.ok(Date.now() - started < 2_000);
    });
  });
});

/** What a service of a release before request ids answers a request carrying one. */
const refusedRequestId: Step = answer(400, {
  subType: "INVALID_REQUEST",
  message: "request body: unknown field `requestId`, expected one of `processId`, `reason`",
});

describe("a service of the release before request ids", () => {
  for (const [path, call, ok] of WRITES) {
    it(`gets ${path} again without the client's own id, and takes it`, async () => {
      const service = await serving([refusedRequestId, answer(200, ok)], (s) => call(client(s)));
      assert.deepEqual(service.seen.map((s) => s.path), [path, path]);
      const [first, second] = service.json();
      assert.match(String(first?.requestId), UUID_V4);
      assert.ok(second !== undefined && !("requestId" in second), JSON.stringify(second));
      const { requestId: _id, ...rest } = first ?? {};
      assert.deepEqual(second, rest);
    });
  }

  it("refuses the caller's own id: that refusal reaches the caller", async () => {
    const service = await serving([refusedRequestId], async (s) => {
      const c = client(s);
      const refused = (e: unknown) => isApiError(e, "INVALID_REQUEST") && /unknown field `requestId`/.test(e.message);
      await assert.rejects(c.pause("p", { requestId: "pause-1" }), refused);
      await assert.rejects(c.start({ processId: "p", processType: "T", requestId: "start-1" }), refused);
      await assert.rejects(c.startBatch({ operation: "PAUSE", requestId: "batch-1" }), refused);
    });
    assert.deepEqual(service.json().map((b) => b.requestId), ["pause-1", "start-1", "batch-1"]);
  });

  const otherRefusals: [string, Step][] = [
    ["another message", refusal(400, "INVALID_REQUEST")],
    ["another unknown field", answer(400, { subType: "INVALID_REQUEST", message: "unknown field `identityx`" })],
    ["a malformed id", answer(400, { subType: "INVALID_REQUEST", message: "requestId: at most 200 characters" })],
    ["another sub type", answer(409, { subType: "REQUEST_ID_CONFLICT", message: "unknown field requestId" })],
  ];
  for (const [what, refused] of otherRefusals) {
    it(`does not drop the id after ${what}`, async () => {
      const service = await serving([refused, answer(200, CONTROL)], async (s) => {
        await assert.rejects(client(s).pause("p"), (e: unknown) => isApiError(e));
      });
      assert.equal(service.seen.length, 1);
    });
  }

  it("sends the write without its id again only when the service did nothing", async () => {
    // Without an id, a repeat could act twice: a lost answer is not sent again.
    const dropped = await serving([refusedRequestId, drop, answer(200, {})], async (s) => {
      await assert.rejects(client(s).stop("p"), XdbTransportError);
    });
    assert.equal(dropped.seen.length, 2);
    // OVERLOADED changed nothing: sent again, still without the id.
    const overloaded = await serving([refusedRequestId, refusal(503, "OVERLOADED", "0"), answer(200, {})], async (s) => {
      await client(s).stop("p");
    });
    assert.deepEqual(overloaded.json().map((b) => "requestId" in b), [true, false, false]);
  });
});

describe("the retry policy", () => {
  it("refuses a nonsense bound", () => {
    assert.throws(() => new Client({ serviceUrl: "http://xdb", maxAttempts: 0 }), RangeError);
    assert.throws(() => new Client({ serviceUrl: "http://xdb", maxAttempts: 1.5 }), RangeError);
    assert.throws(() => new Client({ serviceUrl: "http://xdb", maxRetryDelayMs: -1 }), RangeError);
  });

  it("doubles the backoff up to the cap, with jitter", () => {
    const policy = new CallRetries(10, 1_000);
    for (const [attempt, full] of [[1, 250], [2, 500], [3, 1_000], [4, 1_000], [9, 1_000]] as const) {
      const pause = policy.backoffMs(attempt);
      assert.ok(pause >= full / 2 && pause <= full, `${attempt}: ${pause}`);
    }
  });

  it("knows which calls are repeatable", () => {
    assert.ok(isRepeatable(SERVICE_PATHS.describe, { processId: "p" }));
    assert.ok(isRepeatable(OPERATE_PATHS.pause, { processId: "p", requestId: "r" }));
    assert.ok(!isRepeatable(OPERATE_PATHS.pause, { processId: "p" }));
    assert.ok(!isRepeatable(SERVICE_PATHS.rpc, { processId: "p", rpcName: "r" }));
    assert.ok(!isRepeatable(BATCH_PATHS.cancel, { batchId: "b" }));
    // Schedules: reads and the writes that leave the same schedule when sent twice, not
    // those that would start or delete twice.
    for (const path of ["list", "describe", "history", "update", "pause", "resume", "backfill"] as const) {
      assert.ok(isRepeatable(protocol.SCHEDULE_PATHS[path], { scheduleId: "s" }), path);
    }
    for (const path of ["create", "trigger", "delete"] as const) {
      assert.ok(!isRepeatable(protocol.SCHEDULE_PATHS[path], { scheduleId: "s" }), path);
    }
  });

  it("treats a proxy's 503 as a 503: sent again only if repeatable", () => {
    const policy = new CallRetries(2, 0);
    const headers = new Headers();
    assert.equal(policy.afterAnswer(SERVICE_PATHS.stop, { requestId: "r" }, 1, 503, headers, "<html>no upstream</html>"), 0);
    assert.equal(policy.afterAnswer(SERVICE_PATHS.rpc, {}, 1, 503, headers, "<html>no upstream</html>"), undefined);
    assert.equal(policy.afterAnswer(SERVICE_PATHS.stop, { requestId: "r" }, 2, 503, headers, ""), undefined);
  });

  it("does not send again after an error that is not the network's", () => {
    const policy = new CallRetries(5, 0);
    assert.equal(policy.afterError(SERVICE_PATHS.describe, {}, 1, new TypeError("Failed to parse URL")), undefined);
    const refused = new TypeError("fetch failed", { cause: Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }) });
    assert.equal(policy.afterError(SERVICE_PATHS.rpc, {}, 1, refused), 0);
    const reset = new TypeError("fetch failed", { cause: Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" }) });
    assert.equal(policy.afterError(SERVICE_PATHS.rpc, {}, 1, reset), undefined);
    assert.equal(policy.afterError(SERVICE_PATHS.describe, {}, 1, reset), 0);
  });
});
