// The operator's calls against the real service: a process stuck on a failing call is
// seen in `states`, paused and resumed, retried at once and given up, each control
// recorded in its history with who asked and why.
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
  });
}
