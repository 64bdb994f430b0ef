// At-least-once worker calls: a state failing once is retried with the same idempotency
// key and attempt 2; a state out of attempts fails the process; an RPC whose worker
// fails is refused with WORKER_API_ERROR and the worker's detail, and one whose execution
// closes while it runs with PROCESS_CLOSED_DURING_RPC.
import assert from "node:assert/strict";
import type { IncomingMessage } from "node:http";
import { after, before, describe, it } from "node:test";

import {
  Client, Command, CommandRequest, CommunicationSchema, StateDecision, StateSchema, WorkerService, isApiError, rpc,
  type AsyncState, type Process, type WorkerContext,
} from "@xdb/sdk";

import { DIALECTS, TestEnv } from "./harness.js";

/** Fails the first `failures` attempts of each execute, then completes with the attempt. */
class FlakyState implements AsyncState<{ failures: number }> {
  readonly options = {
    executeApiRetryPolicy: { initialIntervalSeconds: 0.05, backoffCoefficient: 1, maximumAttempts: 3 },
  };
  constructor(private readonly calls: WorkerContext[]) {}
  execute(ctx: WorkerContext, input: { failures: number }) {
    this.calls.push(ctx);
    if (ctx.attempt <= input.failures) throw new Error(`flaky: attempt ${ctx.attempt} fails`);
    return StateDecision.gracefulCompleteProcess({ attempt: ctx.attempt });
  }
}

class FlakyProcess implements Process {
  constructor(readonly calls: WorkerContext[] = []) {}
  stateSchema() {
    return StateSchema.withStartingState(new FlakyState(this.calls));
  }
}

/** Waits on queue `wake`, so RPCs meet a running execution. */
class ParkState implements AsyncState {
  waitUntil() {
    return CommandRequest.allOf(Command.localQueue("wake"));
  }
  execute() {
    return StateDecision.gracefulCompleteProcess();
  }
}

class ParkProcess implements Process {
  constructor(private readonly stopper: (processId: string) => Promise<void>) {}
  stateSchema() {
    return StateSchema.withStartingState(new ParkState());
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("wake");
  }
  readonly rpcs = {
    explode: rpc((_ctx, what: string): string => {
      throw new Error(`rpc exploded: ${what}`);
    }),
    /** Stops its own execution before answering, as a concurrent stop would. */
    stopAndAnswer: rpc(async (ctx, _input: void, _p, c) => {
      await this.stopper(ctx.processId);
      c.publishToLocalQueue("wake");
      return "answered";
    }),
  };
}

for (const dialect of DIALECTS) {
  describe(`retries on ${dialect}`, () => {
    let env: TestEnv;
    let client: Client;
    const process = new FlakyProcess();
    const park = new ParkProcess((processId) => client.stop(processId, { reason: "stopped during its RPC" }));
    const keyHeaders: (string | undefined)[] = [];

    before(async () => {
      env = await TestEnv.start(dialect, "retries");
      const handler = new WorkerService({ onError: () => undefined }).register(process, park).nodeHandler();
      const worker = await env.worker((req: IncomingMessage, res) => {
        const key = req.headers["idempotency-key"];
        keyHeaders.push(Array.isArray(key) ? key[0] : key);
        handler(req, res);
      });
      client = new Client({ serviceUrl: env.server.url, workerUrl: worker.url });
    });
    after(async () => {
      await env?.stop();
    });

    it("retries a failed call with the same idempotency key and attempt 2", async () => {
      const exec = await client.startProcess(process, "flaky-once", { failures: 1 });
      const done = await client.waitForCompletion<{ attempt: number }>("flaky-once", { timeoutMs: 20_000 });
      assert.equal(done.status, "COMPLETED");
      assert.deepEqual(done.output, { attempt: 2 });
      const calls = process.calls.filter((c) => c.processId === "flaky-once");
      assert.deepEqual(calls.map((c) => c.attempt), [1, 2]);
      const [first, second] = calls as [WorkerContext, WorkerContext];
      assert.equal(second.idempotencyKey, first.idempotencyKey);
      assert.equal(first.idempotencyKey, `${exec}/FlakyState-1/execute`);
      assert.equal(second.firstAttemptTimestampMs, first.firstAttemptTimestampMs);
      assert.equal(first.processExecutionId, exec);
      assert.equal(first.stateExecutionId, "FlakyState-1");
      // The key also travels as the Idempotency-Key header of both calls.
      assert.equal(keyHeaders.filter((h) => h === first.idempotencyKey).length, 2);
      const history = await client.history("flaky-once");
      const failed = history.events.filter((e) => e.eventType === "STATE_API_FAILED");
      assert.equal(failed.length, 1);
      assert.match(JSON.stringify(failed[0]?.details), /flaky: attempt 1 fails/);
    });

    it("fails the process once the retry policy runs out", async () => {
      await client.startProcess(process, "flaky-always", { failures: 99 });
      const done = await client.waitForCompletion("flaky-always", { timeoutMs: 20_000 });
      assert.equal(done.status, "FAILED");
      assert.ok(done.failure, "a failed execution says why");
      const attempts = process.calls.filter((c) => c.processId === "flaky-always").map((c) => c.attempt);
      assert.deepEqual(attempts, [1, 2, 3]);
    });

    it("refuses an RPC whose worker fails, with the worker's detail", async () => {
      await client.startProcess(park, "parked");
      await assert.rejects(client.invokeRpc(park, "parked", "explode", "boom"), (error: unknown) => {
        assert.ok(isApiError(error, "WORKER_API_ERROR"), String(error));
        assert.equal(error.status, 424);
        assert.match(error.workerError ?? error.message, /rpc exploded: boom/);
        return true;
      });
      await client.publishToLocalQueue("parked", "wake");
      assert.equal((await client.waitForCompletion("parked", { timeoutMs: 20_000 })).status, "COMPLETED");
    });

    it("refuses an RPC whose execution closed while it ran, discarding its effects", async () => {
      const exec = await client.startProcess(park, "closing");
      await assert.rejects(client.invokeRpc(park, "closing", "stopAndAnswer"), (error: unknown) => {
        assert.ok(isApiError(error, "PROCESS_CLOSED_DURING_RPC"), String(error));
        assert.equal(error.status, 409);
        return true;
      });
      const described = await client.describe("closing");
      assert.equal(described.processExecutionId, exec);
      assert.equal(described.status, "TERMINATED");
      const history = (await client.history("closing")).events.map((e) => e.eventType);
      assert.ok(!history.includes("LOCAL_QUEUE_MESSAGES_PUBLISHED"), `the RPC's message was discarded: ${history.join(", ")}`);
    });
  });
}
