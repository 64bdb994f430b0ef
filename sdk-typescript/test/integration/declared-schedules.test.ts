// A schedule a process declares, against the real service: the worker's registration
// creates it as the process type's, and its firings start and complete executions of the
// type on the registering worker. Each dialect on a database and server of its own.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client, StateDecision, StateSchema, WorkerService, type AsyncState, type Process, type ScheduleDeclaration } from "@xdb/sdk";

import { DIALECTS, TestEnv, eventually, type TestWorker } from "./harness.js";

class Tick implements AsyncState {
  execute() {
    return StateDecision.gracefulCompleteProcess("ticked");
  }
}

class DeclaredTicker implements Process {
  readonly schedules: readonly ScheduleDeclaration[] = [
    { scheduleId: "ts-ticks", spec: { interval: { everySeconds: 1 } }, startStateId: "Tick", overlapPolicy: "ALLOW_ALL" },
  ];
  stateSchema() {
    return StateSchema.withStartingState(new Tick());
  }
}

for (const dialect of DIALECTS) {
  describe(`declared schedules on ${dialect}`, () => {
    let env: TestEnv;
    let worker: TestWorker;
    let service: WorkerService;
    let client: Client;

    before(async () => {
      env = await TestEnv.start(dialect, "schedules");
      service = new WorkerService({ onError: () => undefined }).register(new DeclaredTicker());
      worker = await env.worker(service.nodeHandler());
      client = new Client({ serviceUrl: env.server.url });
    });
    after(async () => {
      await env?.stop();
    });

    it("are created by the registration and start the type on its worker", async () => {
      await service.registerDefinitions(client, { name: "ticker", version: "1", workerUrl: worker.url });
      const { schedule } = await client.describeSchedule("ts-ticks");
      assert.equal(schedule.declaredBy, "DeclaredTicker");
      assert.equal(schedule.start.workerUrl, worker.url);

      let processId: string | undefined;
      await eventually("a declared firing to start", 30_000, async () => {
        const { recentFirings } = await client.describeSchedule("ts-ticks");
        processId = recentFirings?.find((f) => f.outcome === "STARTED")?.processId;
        return processId !== undefined;
      });
      const done = await client.waitForCompletion<string>(processId!, { timeoutMs: 30_000 });
      assert.equal(done.status, "COMPLETED");
      assert.equal(done.output, "ticked");
      assert.equal((await client.describe(processId!)).processType, "DeclaredTicker");
    });
  });
}
