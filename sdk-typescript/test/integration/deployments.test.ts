// Deployments and versions against the real service: two deployments of one process type
// at two worker URLs. An execution stays on the deployment it started on while a new start
// goes to the current one; the operator lists both, moves the execution to the new one,
// and it completes there. Each dialect on a database and server of its own (its
// registrations decide where starts go).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import {
  Client, Command, CommandRequest, CommunicationSchema, StateDecision, StateSchema, WorkerService, isApiError,
  type AsyncState, type DeploymentSummary, type Process, type WorkerContext, type WorkerDeployment,
} from "@xdb/sdk";

import { DIALECTS, TestEnv, eventually, type TestWorker } from "./harness.js";

/** Waits for a message on `go`, then completes with the version that executed it. */
class Wait implements AsyncState<string> {
  constructor(private readonly version: string, private readonly calls: string[]) {}
  waitUntil(ctx: WorkerContext) {
    this.calls.push(`${this.version}:${ctx.processId}:waitUntil`);
    return CommandRequest.allOf(Command.localQueue("go"));
  }
  execute(ctx: WorkerContext, input: string) {
    this.calls.push(`${this.version}:${ctx.processId}:execute`);
    return StateDecision.gracefulCompleteProcess(`${input} done by ${this.version}`);
  }
}

class VersionedProcess implements Process {
  constructor(readonly version = "1", readonly calls: string[] = []) {}
  stateSchema() {
    return StateSchema.withStartingState(new Wait(this.version, this.calls));
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("go");
  }
}

function byVersion(deployments: readonly DeploymentSummary[]): Map<string, DeploymentSummary> {
  return new Map(deployments.map((d) => [d.deployment.version, d]));
}

for (const dialect of DIALECTS) {
  describe(`deployments on ${dialect}`, () => {
    let env: TestEnv;
    let worker1: TestWorker;
    let worker2: TestWorker;
    let client: Client;
    const calls: string[] = [];
    const v1Process = new VersionedProcess("1", calls);
    const v2Process = new VersionedProcess("2", calls);

    before(async () => {
      env = await TestEnv.start(dialect, "deployments");
      worker1 = await env.worker(new WorkerService({ onError: () => undefined }).register(v1Process).nodeHandler());
      worker2 = await env.worker(new WorkerService({ onError: () => undefined }).register(v2Process).nodeHandler());
      client = new Client({ serviceUrl: env.server.url }); // no worker URL: the current deployment's
    });
    after(async () => {
      await env?.stop();
    });

    it("keeps an execution on its deployment until moved, while new starts go to the current one", async () => {
      const v1: WorkerDeployment = { name: "versioned", version: "1", workerUrl: worker1.url };
      const v2: WorkerDeployment = { name: "versioned", version: "2", workerUrl: worker2.url };
      await client.registerDefinitions(v1, [v1Process]);
      const old = `old-${dialect}`;
      await client.startProcess(v1Process, old, "old");
      await eventually("the first execution's waitUntil on v1", 30_000, () => calls.includes(`1:${old}:waitUntil`));

      await client.registerDefinitions(v2, [v2Process]);
      const fresh = `new-${dialect}`;
      await client.startProcess(v2Process, fresh, "new");
      assert.equal((await client.describe(old)).workerUrl, worker1.url);
      assert.equal((await client.describe(fresh)).workerUrl, worker2.url);

      const listed = byVersion((await client.listDeployments()).deployments);
      assert.deepEqual(listed.get("2")?.currentFor, ["VersionedProcess"]);
      assert.equal(listed.get("2")?.runningExecutions, 1);
      assert.deepEqual(listed.get("1")?.currentFor, []);
      assert.deepEqual(listed.get("1")?.processTypes, ["VersionedProcess"]);
      assert.equal(listed.get("1")?.runningExecutions, 1);
      assert.equal(listed.get("1")?.drained, false);

      await assert.rejects(
        client.moveExecutions(VersionedProcess, { name: "versioned", version: "9" }),
        (e: unknown) => isApiError(e, "DEFINITION_NOT_FOUND"),
      );
      assert.equal((await client.moveExecutions(VersionedProcess, v2, { from: v1 })).moved, 1);
      assert.equal((await client.describe(old)).workerUrl, worker2.url);
      const after = byVersion((await client.listDeployments()).deployments);
      assert.deepEqual([after.get("1")?.runningExecutions, after.get("1")?.drained], [0, true]);
      assert.equal(after.get("2")?.runningExecutions, 2);

      await client.publishToLocalQueue(old, "go");
      const done = await client.waitForCompletion<string>(old, { timeoutMs: 30_000 });
      assert.equal(done.status, "COMPLETED");
      assert.equal(done.output, "old done by 2");
      assert.deepEqual(calls.filter((c) => c.includes(`:${old}:`)), [`1:${old}:waitUntil`, `2:${old}:execute`]);
    });
  });
}
