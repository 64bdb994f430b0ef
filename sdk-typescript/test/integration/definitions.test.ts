// Registered definitions against the real service: the worker registers what it hosts
// (changed, then unchanged on a second registration), list and describe answer, a start
// without a worker URL runs to completion on the registered worker, and a start naming an
// unknown state (or an input its state's zod schema refuses) is refused with 400 and
// writes nothing. Each dialect on a database and server of its own.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { z } from "zod";

import {
  Client, CommunicationSchema, PersistenceSchema, SERVICE_PATHS, StateDecision, StateSchema, WorkerService,
  exportDefinition, isApiError, rpc,
  type AsyncState, type Persistence, type Process, type WorkerContext, type WorkerDeployment,
} from "@xdb/sdk";

import { UserSignupProcess } from "../../samples/user-signup.js";
import { DIALECTS, TestEnv, type TestWorker } from "./harness.js";

const Order = z.object({ item: z.string(), quantity: z.number().int().positive().default(1) });
type Order = z.infer<typeof Order>;

class PlaceOrder implements AsyncState<Order> {
  readonly inputSchema = Order;
  readonly options = { executeApiRetryPolicy: { maximumAttempts: 5 } };
  constructor(private readonly calls: string[]) {}
  execute(ctx: WorkerContext, input: Order, _results: unknown, persistence: Persistence) {
    this.calls.push(`${ctx.processId}:PlaceOrder`);
    persistence.setLocalAttribute("quantity", input.quantity);
    return StateDecision.singleNextState(ShipOrder, input.item);
  }
}

class ShipOrder implements AsyncState<string> {
  readonly inputSchema = z.string();
  constructor(private readonly calls: string[]) {}
  execute(ctx: WorkerContext, item: string, _results: unknown, persistence: Persistence) {
    this.calls.push(`${ctx.processId}:ShipOrder`);
    return StateDecision.gracefulCompleteProcess(`shipped ${persistence.getLocalAttribute<number>("quantity")} x ${item}`);
  }
}

class RegisteredOrderProcess implements Process {
  constructor(readonly calls: string[] = []) {}
  stateSchema() {
    return StateSchema.withStartingState(new PlaceOrder(this.calls), new ShipOrder(this.calls));
  }
  persistenceSchema() {
    return PersistenceSchema.none().localAttributes("quantity");
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("cancel");
  }
  readonly rpcs = {
    quantity: rpc((_ctx, _input: void, p) => p.getLocalAttribute<number>("quantity")),
  };
}

/** `value` without the object fields that are `null`, at any depth. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null).map(([k, v]) => [k, withoutNulls(v)]));
}

for (const dialect of DIALECTS) {
  describe(`registered definitions on ${dialect}`, () => {
    let env: TestEnv;
    let worker: TestWorker;
    let service: WorkerService;
    let deployment: WorkerDeployment;
    let client: Client;
    const orders = new RegisteredOrderProcess();

    before(async () => {
      env = await TestEnv.start(dialect, "definitions");
      service = new WorkerService({ onError: () => undefined }).register(
        orders,
        new UserSignupProcess(() => undefined, { seconds: 1 }),
      );
      worker = await env.worker(service.nodeHandler());
      deployment = { name: "orders", version: "1.0.0", workerUrl: worker.url };
      client = new Client({ serviceUrl: env.server.url }); // no worker URL: the deployment's
    });
    after(async () => {
      await env?.stop();
    });

    it("registers the worker's definitions, idempotently, and runs a start without a worker URL on it", async () => {
      const first = await service.registerDefinitions(client, deployment);
      assert.deepEqual(first.registered.map((r) => r.revision.processType), ["RegisteredOrderProcess", "UserSignupProcess"]);
      assert.ok(first.registered.every((r) => r.changed && r.revision.revision === 1));
      assert.ok(first.registered.every((r) => r.revision.deployment.workerUrl === worker.url));

      const again = await service.registerDefinitions(client, deployment);
      assert.deepEqual(again.registered.map((r) => [r.changed, r.revision]), first.registered.map((r) => [false, r.revision]));

      const listed = await client.listDefinitions();
      assert.deepEqual(listed.definitions.map((d) => d.processType).sort(), ["RegisteredOrderProcess", "UserSignupProcess"]);
      const described = await client.describeDefinition(RegisteredOrderProcess);
      // Absent fields come back as null, and the schedules the process does not declare as [].
      assert.deepEqual(withoutNulls(described.definition), { ...exportDefinition(orders), schedules: [] });
      assert.deepEqual(described.revisions.map((r) => r.revision), [1]);
      await assert.rejects(client.describeDefinition("NoSuchProcess"), (e: unknown) => isApiError(e, "DEFINITION_NOT_FOUND"));

      const pid = `order-${dialect}-1`;
      await client.startProcess(orders, pid, { item: "tea", quantity: 3 });
      const done = await client.waitForCompletion<string>(pid, { timeoutMs: 30_000 });
      assert.equal(done.status, "COMPLETED");
      assert.equal(done.output, "shipped 3 x tea");
      assert.equal((await client.describe(pid)).workerUrl, worker.url);
      assert.deepEqual(orders.calls.filter((c) => c.startsWith(`${pid}:`)), [`${pid}:PlaceOrder`, `${pid}:ShipOrder`]);
    });

    it("refuses a start naming an unknown state, and one whose input breaks the schema, writing nothing", async () => {
      await service.registerDefinitions(client, deployment);
      const pid = `order-${dialect}-unknown-state`;
      const refusal = await client
        .start({ processId: pid, processType: "RegisteredOrderProcess", startStateId: "NoSuchState" })
        .then(() => undefined, (e: unknown) => e);
      assert.ok(isApiError(refusal, "INVALID_REQUEST"), `a 400, not ${String(refusal)}`);
      assert.equal(refusal.status, 400);
      assert.match(refusal.body.message, /NoSuchState/);
      assert.equal(refusal.path, SERVICE_PATHS.start);

      // An order names its item: the state's zod schema, registered as JSON Schema.
      await assert.rejects(client.startProcess(orders, pid, { quantity: 2 }), (e: unknown) => isApiError(e, "INVALID_REQUEST"));

      await assert.rejects(client.describe(pid), (e: unknown) => isApiError(e, "PROCESS_NOT_FOUND"));
      assert.deepEqual((await client.list({ filter: { processId: pid } })).executions, []);
      assert.deepEqual(orders.calls.filter((c) => c.startsWith(`${pid}:`)), []);
    });
  });
}
