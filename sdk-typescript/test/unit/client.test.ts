// The client against a fake fetch: request bodies and headers, and the mapping of every
// kind of failure to a typed error.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  Client, OPERATE_PATHS, SERVICE_PATHS, XdbApiError, XdbHttpError, XdbInvalidResponseError, XdbSdkError, XdbTransportError,
  isApiError, type ErrorSubType,
} from "@xdb/sdk";

import { UserSignupProcess, startUserSignup, verifyByRpc } from "../../samples/user-signup.js";
import { contractProblems } from "./contract.js";

interface Sent { url: string; headers: Headers; body: unknown }

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** `body` less its `requestId`, which must be a UUID v4 if there is one (request ids are tested in retries.test.ts). */
function withoutRequestId(body: unknown): unknown {
  if (typeof body !== "object" || body === null || !("requestId" in body)) return body;
  const { requestId, ...rest } = body;
  assert.match(String(requestId), UUID_V4);
  return rest;
}

/** A fetch answering from `answers` in turn, recording what was sent. */
function fakeFetch(...answers: (() => Response)[]): { fetch: typeof fetch; sent: Sent[] } {
  const sent: Sent[] = [];
  return {
    sent,
    fetch: (input, init) => {
      const url = input instanceof Request ? input.url : input.toString();
      sent.push({ url, headers: new Headers(init?.headers), body: JSON.parse(typeof init?.body === "string" ? init.body : "null") });
      const answer = answers.shift();
      return answer ? Promise.resolve(answer()) : Promise.reject(new TypeError("fetch failed"));
    },
  };
}

describe("client requests", () => {
  it("starts the sign-up with the design's options, a bearer token and the trace context", async () => {
    const fake = fakeFetch(() => Response.json({ processExecutionId: "e1" }));
    const client = new Client({
      serviceUrl: "http://xdb:8801/",
      workerUrl: "http://worker:8803",
      bearerToken: "token-0123456789abcdef",
      fetch: fake.fetch,
      traceContext: () => ({ traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" }),
    });
    assert.equal(client.serviceUrl, "http://xdb:8801");
    assert.equal(await startUserSignup(client, "u1", { email: "a@b.c" }), "e1");
    const [sent] = fake.sent;
    assert.equal(sent?.url, `http://xdb:8801${SERVICE_PATHS.start}`);
    assert.equal(sent?.headers.get("authorization"), "Bearer token-0123456789abcdef");
    assert.equal(sent?.headers.get("traceparent"), "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    assert.equal(sent?.headers.get("content-type"), "application/json");
    const body = sent?.body as { processType: string; workerUrl: string; processStartConfig: { globalAttributeConfig: unknown } };
    assert.equal(body.processType, "UserSignupProcess");
    assert.equal(body.workerUrl, "http://worker:8803");
    assert.deepEqual(body.processStartConfig.globalAttributeConfig, {
      tableName: "user",
      primaryKey: { column: "user_id", value: "u1" },
      initialWrite: [
        { column: "form", value: { email: "a@b.c" } },
        { column: "status", value: "waiting" },
      ],
    });
  });

  it("invokes the RPC with its lock and decodes its output", async () => {
    const fake = fakeFetch(() => Response.json({ output: { encoding: "json", data: '"done"' } }));
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    const answer: string = await verifyByRpc(client, "u1", "email");
    assert.equal(answer, "done");
    assert.deepEqual(fake.sent[0]?.body, {
      processId: "user-signup-u1",
      rpcName: "verify",
      globalAttributeLoading: { columns: ["form", "status", "source"], lockType: "EXCLUSIVE_LOCK" },
      input: { encoding: "json", data: '"email"' },
    });
    assert.equal(fake.sent[0]?.headers.get("authorization"), null);
  });

  it("publishes, stops, describes, lists and reads history", async () => {
    const summary = { processExecutionId: "e1", processId: "p", processType: "T", status: "COMPLETED", startTimestampMs: 1 };
    const fake = fakeFetch(
      () => Response.json({}),
      () => Response.json({}),
      () => Response.json({ ...summary, workerUrl: "http://w", runningStateExecutions: 0, result: { encoding: "json", data: "1" } }),
      () => Response.json({ executions: [summary], nextPageToken: "n" }),
      () => Response.json({ processExecutionId: "e1", events: [{ eventId: 1, eventTimestampMs: 2, eventType: "PROCESS_STARTED", details: {} }] }),
    );
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    await client.publishToLocalQueue("p", "verify", { source: "x" }, { dedupId: "d" });
    await client.stop("p", { stopType: "FAIL", reason: "r" });
    assert.equal((await client.describe("p", "e1")).status, "COMPLETED");
    assert.equal((await client.list({ pageSize: 5 })).nextPageToken, "n");
    assert.equal((await client.history("p")).events[0]?.eventType, "PROCESS_STARTED");
    assert.deepEqual(
      fake.sent.map((s) => [new URL(s.url).pathname, withoutRequestId(s.body)]),
      [
        [SERVICE_PATHS.publishToLocalQueue, { processId: "p", messages: [{ queueName: "verify", payload: { encoding: "json", data: '{"source":"x"}' }, dedupId: "d" }] }],
        [SERVICE_PATHS.stop, { processId: "p", stopType: "FAIL", reason: "r" }],
        [SERVICE_PATHS.describe, { processId: "p", processExecutionId: "e1" }],
        [SERVICE_PATHS.list, { pageSize: 5 }],
        [SERVICE_PATHS.history, { processId: "p" }],
      ],
    );
  });

  it("sends a start's priority only when given, and reads a description's", async () => {
    const described = { processExecutionId: "e1", processId: "p", processType: "T", workerUrl: "http://w", status: "RUNNING", startTimestampMs: 1, runningStateExecutions: 1 };
    const fake = fakeFetch(
      () => Response.json({ processExecutionId: "e1" }),
      () => Response.json({ processExecutionId: "e2" }),
      () => Response.json({ ...described, priority: 1 }),
      () => Response.json(described),
    );
    const client = new Client({ serviceUrl: "http://xdb", workerUrl: "http://w:1", fetch: fake.fetch });
    const options = { globalAttributePkValue: "u1" };
    assert.equal(await client.startProcess(UserSignupProcess, "p", undefined, { ...options, priority: 1 }), "e1");
    assert.equal(await client.startProcess(UserSignupProcess, "q", undefined, options), "e2");
    const configs = fake.sent.map((s) => (s.body as { processStartConfig: Record<string, unknown> }).processStartConfig);
    assert.equal(configs[0]?.priority, 1);
    assert.equal("priority" in (configs[1] ?? {}), false);
    for (const s of fake.sent) assert.equal(contractProblems(SERVICE_PATHS.start, s.body), "", JSON.stringify(s.body));
    assert.equal((await client.describe("p")).priority, 1);
    // An answer without it (a service before priorities) reads as the default, 3.
    assert.equal((await client.describe("q")).priority, 3);
  });

  it("sends a start's fairness key and weight only when given, and reads a description's", async () => {
    const described = { processExecutionId: "e1", processId: "p", processType: "T", workerUrl: "http://w", status: "RUNNING", startTimestampMs: 1, runningStateExecutions: 1 };
    const fake = fakeFetch(
      () => Response.json({ processExecutionId: "e1" }),
      () => Response.json({ processExecutionId: "e2" }),
      () => Response.json({ ...described, fairnessKey: "tenant-7", fairnessWeight: 5 }),
      () => Response.json(described),
    );
    const client = new Client({ serviceUrl: "http://xdb", workerUrl: "http://w:1", fetch: fake.fetch });
    const options = { globalAttributePkValue: "u1" };
    const weighed = { ...options, fairnessKey: "tenant-7", fairnessWeight: 5 };
    assert.equal(await client.startProcess(UserSignupProcess, "p", undefined, weighed), "e1");
    assert.equal(await client.startProcess(UserSignupProcess, "q", undefined, options), "e2");
    const configs = fake.sent.map((s) => (s.body as { processStartConfig: Record<string, unknown> }).processStartConfig);
    assert.deepEqual([configs[0]?.fairnessKey, configs[0]?.fairnessWeight], ["tenant-7", 5]);
    for (const field of ["fairnessKey", "fairnessWeight"]) assert.equal(field in (configs[1] ?? {}), false);
    for (const s of fake.sent) assert.equal(contractProblems(SERVICE_PATHS.start, s.body), "", JSON.stringify(s.body));
    const tenant = await client.describe("p");
    assert.deepEqual([tenant.fairnessKey, tenant.fairnessWeight], ["tenant-7", 5]);
    // A start that named no key (or a service before fairness keys): neither is answered.
    const plain = await client.describe("q");
    assert.deepEqual([plain.fairnessKey, plain.fairnessWeight], [undefined, undefined]);
  });

  it("sends the operator's calls and reads their answers", async () => {
    const view = {
      processExecutionId: "e1",
      status: "RUNNING",
      paused: { sinceTimestampMs: 5, reason: "deploy", identity: null },
      states: [
        {
          stateExecutionId: "A-1",
          stateId: "A",
          status: "EXECUTE_RUNNING",
          startedTimestampMs: 1,
          pendingCall: { api: "execute", attempt: 3, phase: "PARKED", dueTimestampMs: 9, parkedReason: "refused" },
          lastFailure: { api: "execute", attempt: 2, error: "HTTP 503", timestampMs: 8 },
        },
      ],
    };
    const acted = () => Response.json({ stateExecutionIds: ["A-1"] });
    const reset = () => Response.json({ processExecutionId: "e2", newExecution: true, stateExecutionId: "B-1" });
    const fake = fakeFetch(() => Response.json(view), acted, acted, acted, acted, reset);
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    const states = await client.states("p", "e1");
    assert.equal(states.paused?.reason, "deploy");
    assert.equal(states.states[0]?.pendingCall?.phase, "PARKED");
    assert.equal(states.states[0]?.lastFailure?.error, "HTTP 503");
    assert.deepEqual((await client.retryNow("p", { stateExecutionId: "A-1", reason: "fixed" })).stateExecutionIds, ["A-1"]);
    await client.giveUp("p", { identity: "ops" });
    await client.pause("p", { processExecutionId: "e1", reason: "deploy" });
    await client.resume("p");
    const answer = await client.reset("p", "B", { n: 1 }, { reason: "bad deploy", stateConfig: { skipWaitUntil: true } });
    assert.equal(answer.processExecutionId, "e2");
    assert.equal(answer.newExecution, true);
    assert.deepEqual(
      fake.sent.map((s) => [new URL(s.url).pathname, withoutRequestId(s.body)]),
      [
        [OPERATE_PATHS.states, { processId: "p", processExecutionId: "e1" }],
        [OPERATE_PATHS.retryNow, { processId: "p", stateExecutionId: "A-1", reason: "fixed" }],
        [OPERATE_PATHS.giveUp, { processId: "p", identity: "ops" }],
        [OPERATE_PATHS.pause, { processId: "p", processExecutionId: "e1", reason: "deploy" }],
        [OPERATE_PATHS.resume, { processId: "p" }],
        [
          OPERATE_PATHS.reset,
          {
            processId: "p",
            stateId: "B",
            reason: "bad deploy",
            stateConfig: { skipWaitUntil: true },
            stateInput: { encoding: "json", data: '{"n":1}' },
          },
        ],
      ],
    );
  });

  it("sends reprioritize with the fields of the change given, as the contract takes it", async () => {
    const acted = () => Response.json({ stateExecutionIds: ["A-1"] });
    const fake = fakeFetch(acted, acted, acted, () => Response.json({ stateExecutionIds: [] }));
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    const answer = await client.reprioritize("p", {
      priority: 1,
      fairnessKey: "tenant-a",
      fairnessWeight: 5,
      processExecutionId: "e1",
      reason: "incident",
      identity: "ops",
      requestId: "reprioritize-1",
    });
    assert.deepEqual(answer.stateExecutionIds, ["A-1"]);
    await client.reprioritize("p", { priority: 5 });
    await client.reprioritize("p", { fairnessKey: "" });
    // Nothing to change is the service's to refuse (naming `reprioritize`): sent as given.
    assert.deepEqual((await client.reprioritize("p", {})).stateExecutionIds, []);
    const sent = fake.sent.map((s) => [new URL(s.url).pathname, s.body] as const);
    assert.deepEqual(sent[0], [
      OPERATE_PATHS.reprioritize,
      {
        processId: "p",
        processExecutionId: "e1",
        reason: "incident",
        identity: "ops",
        requestId: "reprioritize-1",
        reprioritize: { priority: 1, fairnessKey: "tenant-a", fairnessWeight: 5 },
      },
    ]);
    assert.deepEqual(
      sent.slice(1).map(([path, body]) => [path, withoutRequestId(body)]),
      [
        [OPERATE_PATHS.reprioritize, { processId: "p", reprioritize: { priority: 5 } }],
        [OPERATE_PATHS.reprioritize, { processId: "p", reprioritize: { fairnessKey: "" } }],
        [OPERATE_PATHS.reprioritize, { processId: "p", reprioritize: {} }],
      ],
    );
    for (const [path, body] of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));
  });

  it("reads reprioritize's refusals as the service's sub-types", async () => {
    const refusal = (status: number, subType: string, message: string) => () => Response.json({ subType, message }, { status });
    const fake = fakeFetch(
      refusal(400, "INVALID_REQUEST", "reprioritize.priority: must be 1 (claimed first) to 5, not 9"),
      refusal(409, "CONTROL_NOT_APPLICABLE", "the execution has no fairness key to weigh: name reprioritize.fairnessKey too"),
      refusal(409, "PROCESS_NOT_RUNNING", "the execution is closed"),
    );
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    await assert.rejects(
      client.reprioritize("p", { priority: 9 }),
      (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.status === 400 && e.message.includes("reprioritize.priority"),
    );
    await assert.rejects(
      client.reprioritize("p", { fairnessWeight: 3 }),
      (e: unknown) => isApiError(e, "CONTROL_NOT_APPLICABLE") && e.status === 409,
    );
    await assert.rejects(client.reprioritize("p", { priority: 2 }), (e: unknown) => isApiError(e, "PROCESS_NOT_RUNNING"));
    assert.equal(fake.sent.length, 3, "a refusal is not sent again");
  });

  it("sends the history's cursor, page size and event types, and walks every page", async () => {
    const event = (eventId: number) => ({ eventId, eventTimestampMs: eventId, eventType: "TIMER_FIRED", details: {} });
    const fake = fakeFetch(
      () => Response.json({ processExecutionId: "e1", events: [event(4)], nextAfterEventId: 4 }),
      () => Response.json({ processExecutionId: "e1", events: [event(5), event(7)], nextAfterEventId: 7 }),
      () => Response.json({ processExecutionId: "e1", events: [event(9)], nextAfterEventId: 9 }),
      () => Response.json({ processExecutionId: "e1", events: [], nextAfterEventId: null }),
      () => Response.json({ processExecutionId: "e1", events: [event(1)] }),
    );
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    const page = await client.history("p", { processExecutionId: "e1", afterEventId: 3, pageSize: 1, eventTypes: ["TIMER_FIRED"] });
    assert.equal(page.nextAfterEventId, 4);
    const walked = [];
    for await (const e of client.historyEvents("p", { afterEventId: 4, pageSize: 2, eventTypes: ["TIMER_FIRED", "PROCESS_CLOSED"] })) {
      walked.push(e.eventId);
    }
    assert.deepEqual(walked, [5, 7, 9]);
    const all = [];
    for await (const e of client.historyEvents("p", { eventTypes: [] })) all.push(e.eventId);
    assert.deepEqual(all, [1]);
    assert.deepEqual(
      fake.sent.map((s) => s.body),
      [
        { processId: "p", processExecutionId: "e1", afterEventId: 3, pageSize: 1, eventTypes: ["TIMER_FIRED"] },
        { processId: "p", afterEventId: 4, pageSize: 2, eventTypes: ["TIMER_FIRED", "PROCESS_CLOSED"] },
        { processId: "p", afterEventId: 7, pageSize: 2, eventTypes: ["TIMER_FIRED", "PROCESS_CLOSED"] },
        { processId: "p", afterEventId: 9, pageSize: 2, eventTypes: ["TIMER_FIRED", "PROCESS_CLOSED"] },
        { processId: "p" },
      ],
    );
  });

  it("long-polls wait-for-completion until the execution closes", async () => {
    const waiting = { processExecutionId: "e1", status: "RUNNING", timedOut: true };
    const fake = fakeFetch(
      () => Response.json(waiting),
      () => Response.json({ ...waiting, status: "COMPLETED", timedOut: false, result: { encoding: "json", data: '{"n":1}' } }),
    );
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch, maxWaitSeconds: 120 });
    const done = await client.waitForCompletion<{ n: number }>("p", { timeoutMs: 600_000 });
    assert.deepEqual(done.output, { n: 1 });
    assert.equal(done.status, "COMPLETED");
    assert.deepEqual(fake.sent.map((s) => s.body), [
      { processId: "p", timeoutSeconds: 120 },
      { processId: "p", timeoutSeconds: 120 },
    ]);
  });

  it("checks typed calls before sending anything", async () => {
    const fake = fakeFetch();
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    await assert.rejects(client.startProcess(UserSignupProcess, "p", undefined, { globalAttributePkValue: "u", initialGlobalAttributes: { nope: 1 } }), XdbSdkError);
    // @ts-expect-error -- not an RPC of the process: refused by the compiler and at run time
    await assert.rejects(client.invokeRpc(UserSignupProcess, "p", "nope", 1), XdbSdkError);
    assert.equal(fake.sent.length, 0);
  });
});

describe("client errors", () => {
  const call = (answer: () => Response) =>
    new Client({ serviceUrl: "http://xdb", fetch: fakeFetch(answer).fetch, maxAttempts: 1 }).describe("p");

  it("carries the service's sub-type, message and status", async () => {
    const error = await call(() => Response.json({ subType: "PROCESS_NOT_FOUND", message: "no process p" }, { status: 404 })).catch((e: unknown) => e);
    assert.ok(error instanceof XdbApiError);
    assert.equal(isApiError(error, "PROCESS_NOT_RUNNING"), false);
    assert.ok(isApiError(error, "PROCESS_NOT_FOUND"));
    assert.equal(error.status, 404);
    assert.equal(error.body.message, "no process p");
    assert.equal(error.path, SERVICE_PATHS.describe);
    assert.match(error.message, /404 PROCESS_NOT_FOUND .*no process p/);
  });

  it("keeps the worker's detail of a WORKER_API_ERROR, and sub-types it does not know", async () => {
    const error = await call(() =>
      Response.json({ subType: "WORKER_API_ERROR", message: "worker failed", workerError: "boom" }, { status: 424 }),
    ).catch((e: unknown) => e);
    assert.ok(isApiError(error, "WORKER_API_ERROR"));
    assert.equal(error.workerError, "boom");
    const newer = await call(() => Response.json({ subType: "SOMETHING_NEW", message: "m" }, { status: 400 })).catch((e: unknown) => e);
    assert.ok(isApiError(newer, "SOMETHING_NEW"));
  });

  it("knows FORBIDDEN (a token without the path's role), REQUEST_ID_CONFLICT, BATCH_NOT_FOUND, OVERLOADED and DATABASE_UNAVAILABLE", async () => {
    // Typed as the SDK's own sub-types: the compiler refuses a name it does not know.
    const known: [number, ErrorSubType][] = [
      [403, "FORBIDDEN"],
      [409, "REQUEST_ID_CONFLICT"],
      [404, "BATCH_NOT_FOUND"],
      [503, "OVERLOADED"],
      [503, "DATABASE_UNAVAILABLE"],
    ];
    for (const [status, subType] of known) {
      const error = await call(() => Response.json({ subType, message: "m" }, { status })).catch((e: unknown) => e);
      assert.ok(isApiError(error, subType), subType);
      assert.equal(error.status, status);
    }
  });

  it("maps a non-JSON failure, no answer and an unreadable answer", async () => {
    const http = await call(() => new Response("<html>bad gateway</html>", { status: 502 })).catch((e: unknown) => e);
    assert.ok(http instanceof XdbHttpError);
    assert.equal(http.status, 502);
    assert.match(http.responseText, /bad gateway/);
    const transport = await new Client({ serviceUrl: "http://xdb", fetch: fakeFetch().fetch }).describe("p").catch((e: unknown) => e);
    assert.ok(transport instanceof XdbTransportError);
    assert.match(transport.message, /fetch failed/);
    const invalid = await call(() => Response.json({ status: "RUNNING" })).catch((e: unknown) => e);
    assert.ok(invalid instanceof XdbInvalidResponseError);
    const notJson = await call(() => new Response("ok")).catch((e: unknown) => e);
    assert.ok(notJson instanceof XdbInvalidResponseError);
  });

  it("times out a call that gets no answer", async () => {
    let calls = 0;
    const hanging: typeof fetch = (_input, init) => {
      calls++;
      return new Promise((_, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal?.reason as Error)));
    };
    const client = new Client({ serviceUrl: "http://xdb", fetch: hanging, requestTimeoutMs: 20, maxAttempts: 2, maxRetryDelayMs: 0 });
    const keepAlive = setTimeout(() => undefined, 10_000); // the timeout's own timer does not hold the loop
    await assert.rejects(
      client.describe("p"),
      (e: unknown) => e instanceof XdbTransportError && /no answer within 20 ms \(after 2 attempts\)/.test(e.message),
    );
    assert.equal(calls, 2); // a read is sent again after a timeout
    clearTimeout(keepAlive);
  });
});
