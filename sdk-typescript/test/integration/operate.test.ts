// The operator's calls against the real service: a process stuck on a failing call is
// seen in `states`, paused and resumed, retried at once and given up, each control
// recorded in its history with who asked and why; and request ids: a write sent again
// with its id is answered as the first, an id reused for another request refused.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client, WorkerService, isApiError } from "@xdb/sdk";

import { DIALECTS, TestEnv } from "./harness.js";
import { StuckProcess, unstick } from "./stuck.js";

for (const dialect of DIALECTS) {
  describe(`operator controls on ${dialect}`, () => {
    let env: TestEnv;
    let client: Client;

    before(async () => {
      env = await TestEnv.start(dialect, "operate");
      const handler = new WorkerService({ onError: () => undefined }).register(new StuckProcess()).nodeHandler();
      const worker = await env.worker(handler);
      client = new Client({ serviceUrl: env.server.url, workerUrl: worker.url });
    });
    after(async () => {
      await env?.stop();
    });

    it("shows a failing call, pauses, resumes, retries it now and gives it up", async () => {
      await client.startProcess(StuckProcess, "stuck-1");
      await unstick(client, "stuck-1");
    });

    it("refuses controls that do not apply, changing nothing", async () => {
      await assert.rejects(client.states("nobody"), (e: unknown) => isApiError(e, "PROCESS_NOT_FOUND"));
      await assert.rejects(client.resume("nobody"), (e: unknown) => isApiError(e, "PROCESS_NOT_FOUND"));
      await client.startProcess(StuckProcess, "stuck-2");
      await assert.rejects(client.resume("stuck-2"), (e: unknown) => isApiError(e, "CONTROL_NOT_APPLICABLE"));
      await assert.rejects(
        client.retryNow("stuck-2", { stateExecutionId: "not a state execution" }),
        (e: unknown) => isApiError(e, "INVALID_REQUEST"),
      );
      assert.equal((await client.describe("stuck-2")).paused ?? undefined, undefined);
      await client.stop("stuck-2");
    });

    it("answers a write sent again with its request id as it first did, and refuses the id reused", async () => {
      const conflict = (e: unknown) => isApiError(e, "REQUEST_ID_CONFLICT") && e.status === 409;
      // As after a lost answer: the same id and body answer the first start's execution,
      // where a new start would be refused (the execution is running).
      const first = await client.startProcess(StuckProcess, "stuck-3", undefined, { requestId: "start-stuck-3" });
      assert.equal(await client.startProcess(StuckProcess, "stuck-3", undefined, { requestId: "start-stuck-3" }), first);
      const paused = await client.pause("stuck-3", { reason: "once", requestId: "pause-stuck-3" });
      assert.deepEqual(await client.pause("stuck-3", { reason: "once", requestId: "pause-stuck-3" }), paused);
      // The same id with another body, or on another operation: refused, nothing done.
      await assert.rejects(client.pause("stuck-3", { reason: "twice", requestId: "pause-stuck-3" }), conflict);
      await assert.rejects(client.resume("stuck-3", { requestId: "pause-stuck-3" }), conflict);
      assert.equal((await client.history("stuck-3", { eventTypes: ["PAUSED"] })).events.length, 1);
      assert.ok((await client.describe("stuck-3")).paused);
      // A stop of that execution, twice with one id: stopped once, the second answered as the first.
      await client.stop("stuck-3", { processExecutionId: first, requestId: "stop-stuck-3" });
      await client.stop("stuck-3", { processExecutionId: first, requestId: "stop-stuck-3" });
      await assert.rejects(client.stop("stuck-3", { processExecutionId: first }), (e: unknown) => isApiError(e, "PROCESS_NOT_RUNNING"));
      assert.equal((await client.history("stuck-3", { eventTypes: ["PROCESS_CLOSED"] })).events.length, 1);
    });
  });
}
