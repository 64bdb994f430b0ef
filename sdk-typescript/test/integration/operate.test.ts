// The operator's calls against the real service: a process stuck on a failing call is
// seen in `states`, paused and resumed, retried at once and given up, each control
// recorded in its history with who asked and why; reprioritized, alone and by a batch,
// its new order described and recorded before and after; and request ids: a write sent
// again with its id is answered as the first, an id reused for another request refused.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client, WorkerService, isApiError, reprioritizedDetailsOf, type FilterNode } from "@xdb/sdk";

import { DIALECTS, TestEnv, eventually } from "./harness.js";
import { StuckProcess, unstick } from "./stuck.js";

/** The execution's claim order as `describe` answers it (no key: both undefined). */
async function claimOrder(client: Client, processId: string): Promise<(string | number | undefined)[]> {
  const described = await client.describe(processId);
  return [described.priority ?? undefined, described.fairnessKey ?? undefined, described.fairnessWeight ?? undefined];
}

/**
 * Waits until the `StuckProcess`'s first attempt has failed and its next one waits out
 * the backoff, unleased: the task a reprioritization reorders. Answers its state execution.
 */
async function waitingForRetry(client: Client, processId: string): Promise<string> {
  let stateExecutionId = "";
  await eventually(`the first attempt of ${processId} to fail`, 30_000, async () => {
    const state = (await client.states(processId)).states[0];
    stateExecutionId = state?.stateExecutionId ?? "";
    return state?.lastFailure?.attempt === 1 && state.pendingCall?.phase === "SCHEDULED";
  });
  return stateExecutionId;
}

async function reprioritizedEvents(client: Client, processId: string) {
  return (await client.history(processId, { eventTypes: ["REPRIORITIZED"] })).events.map(reprioritizedDetailsOf);
}

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

    it("reprioritizes a running execution: its new order described, recorded before and after", async () => {
      const processId = "reprioritized-1";
      const execution = await client.startProcess(StuckProcess, processId);
      assert.deepEqual(await claimOrder(client, processId), [3, undefined, undefined], "the service's default priority, no key");
      const waiting = await waitingForRetry(client, processId);

      const who = { reason: "incident 7", identity: "ops@example.com" };
      const change = { priority: 1, fairnessKey: "tenant-a", ...who, requestId: "reprioritize-1" };
      const answer = await client.reprioritize(processId, change);
      assert.deepEqual(answer.stateExecutionIds, [waiting], "its waiting retry is reordered");
      // Sent again with its id, as after a lost answer: answered as the first, done once.
      assert.deepEqual(await client.reprioritize(processId, change), answer);
      assert.deepEqual(await claimOrder(client, processId), [1, "tenant-a", 1], "a new key keeps the weight it had: 1");
      assert.deepEqual(await reprioritizedEvents(client, processId), [
        { before: { priority: 3 }, after: { priority: 1, fairnessKey: "tenant-a", fairnessWeight: 1 }, ...who, stateExecutionIds: [waiting] },
      ]);
      assert.equal((await client.states(processId)).states[0]?.pendingCall?.phase, "SCHEDULED", "still waiting out its backoff");

      // A weight alone weighs the key it has; "" removes the key and its weight.
      await client.reprioritize(processId, { fairnessWeight: 7, processExecutionId: execution });
      assert.deepEqual(await claimOrder(client, processId), [1, "tenant-a", 7]);
      await client.reprioritize(processId, { fairnessKey: "" });
      assert.deepEqual(await claimOrder(client, processId), [1, undefined, undefined]);
      const [, weighed, unkeyed] = await reprioritizedEvents(client, processId);
      assert.deepEqual([weighed?.before, weighed?.after], [
        { priority: 1, fairnessKey: "tenant-a", fairnessWeight: 1 },
        { priority: 1, fairnessKey: "tenant-a", fairnessWeight: 7 },
      ]);
      assert.deepEqual([unkeyed?.before, unkeyed?.after, unkeyed?.reason ?? undefined], [
        { priority: 1, fairnessKey: "tenant-a", fairnessWeight: 7 },
        { priority: 1 },
        undefined,
      ]);

      await client.stop(processId);
      await assert.rejects(
        client.reprioritize(processId, { priority: 2 }),
        (e: unknown) => isApiError(e, "PROCESS_NOT_RUNNING") && e.status === 409,
      );
      assert.equal((await reprioritizedEvents(client, processId)).length, 3);
    });

    it("refuses a reprioritization that is wrong or does not apply, changing nothing", async () => {
      const processId = "reprioritized-2";
      await client.startProcess(StuckProcess, processId);
      await assert.rejects(
        client.reprioritize(processId, { fairnessWeight: 5 }),
        (e: unknown) => isApiError(e, "CONTROL_NOT_APPLICABLE") && e.status === 409 && e.message.includes("no fairness key"),
      );
      const invalid: [string, Parameters<Client["reprioritize"]>[1], string][] = [
        ["nothing to change", {}, "reprioritize"],
        ["a priority out of range", { priority: 6 }, "reprioritize.priority"],
        ["a weight out of range", { fairnessKey: "tenant-a", fairnessWeight: 1001 }, "reprioritize.fairnessWeight"],
        ["a weight beside the key's removal", { fairnessKey: "", fairnessWeight: 2 }, "reprioritize.fairnessWeight"],
      ];
      for (const [what, options, field] of invalid) {
        await assert.rejects(
          client.reprioritize(processId, options),
          (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.status === 400 && e.message.includes(field),
          what,
        );
      }
      await assert.rejects(client.reprioritize("nobody", { priority: 1 }), (e: unknown) => isApiError(e, "PROCESS_NOT_FOUND"));
      assert.deepEqual(await claimOrder(client, processId), [3, undefined, undefined]);
      assert.deepEqual(await reprioritizedEvents(client, processId), []);
      await client.stop(processId);
    });

    it("reprioritizes the executions a batch's filter selects, and skips those the change does not apply to", async () => {
      const selected = ["bulk-1", "bulk-2"];
      for (const processId of [...selected, "other-1"]) await client.startProcess(StuckProcess, processId);
      const where: FilterNode = { and: [{ field: "processId", op: "PREFIX", value: "bulk-" }, { field: "status", op: "=", value: "RUNNING" }] };
      assert.equal((await client.count({ processType: "StuckProcess", where })).count, 2);
      const finished = async (batchId: string) => {
        await eventually(`batch ${batchId} to complete`, 30_000, async () => (await client.describeBatch(batchId)).batch.status === "COMPLETED");
        return client.describeBatch(batchId);
      };
      await assert.rejects(
        client.startBatch({ operation: "REPRIORITIZE", processType: "StuckProcess", where }),
        (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.message.includes("reprioritize"),
      );

      const who = { reason: "bulk import", identity: "ops@example.com" };
      const change = { priority: 5, fairnessKey: "bulk", fairnessWeight: 4 };
      const started = await client.startBatch({ operation: "REPRIORITIZE", processType: "StuckProcess", where, reprioritize: change, ...who });
      assert.equal(started.expected, 2);
      const { batch } = await finished(started.batchId);
      assert.deepEqual([batch.operation, batch.matched, batch.done, batch.skipped, batch.failed], ["REPRIORITIZE", 2, 2, 0, 0]);
      for (const processId of selected) {
        assert.deepEqual(await claimOrder(client, processId), [5, "bulk", 4], processId);
        const [event, ...more] = await reprioritizedEvents(client, processId);
        assert.deepEqual([event?.before, event?.after, event?.reason, event?.identity, more], [{ priority: 3 }, change, who.reason, who.identity, []]);
      }
      assert.deepEqual(await claimOrder(client, "other-1"), [3, undefined, undefined], "outside the filter");
      assert.deepEqual(await reprioritizedEvents(client, "other-1"), []);

      // A weight for an execution without a key does not apply to it: skipped, with why.
      const keyless: FilterNode = { field: "processId", op: "=", value: "other-1" };
      const weighed = await client.startBatch({ operation: "REPRIORITIZE", where: keyless, reprioritize: { fairnessWeight: 2 } });
      const skipped = await finished(weighed.batchId);
      assert.deepEqual([skipped.batch.done, skipped.batch.skipped], [0, 1]);
      assert.match(skipped.notDone?.[0]?.reason ?? "", /no fairness key/);
      assert.deepEqual(await claimOrder(client, "other-1"), [3, undefined, undefined]);

      for (const processId of [...selected, "other-1"]) await client.stop(processId);
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
