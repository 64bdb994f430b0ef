// Registered definitions: the export of a process, the client's definitions calls, and
// the worker's registration, against a fake fetch. Pure, no IO.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Ajv2020 } from "ajv/dist/2020.js";
import { z } from "zod";

import {
  Client, CommandRequest, CommunicationSchema, DEFINITIONS_PATHS, DEPLOYMENTS_PATHS, PersistenceSchema, ProcessDefinition, SERVICE_PATHS,
  StateApiFailureDetailsSchema, StateDecision, StateSchema, WorkerService, XdbApiError, XdbSdkError, exportDefinition,
  XdbInvalidResponseError, inputJsonSchema, isApiError, reprioritizedDetailsOf, rpc, stateExecutionIdOf, stateExecutionIdsOf,
  type AsyncState, type HistoryEventType, type Process, type StateApiFailureDetails, type WorkerDeployment,
} from "@xdb/sdk";

const Order = z.object({ item: z.string(), quantity: z.number().int().positive().default(1) });
type Order = z.infer<typeof Order>;

class Take implements AsyncState<Order> {
  readonly inputSchema = Order;
  readonly options = {
    executeApiRetryPolicy: { maximumAttempts: 3 },
    stateFailureRecoveryOptions: { policy: "PROCEED_TO_CONFIGURED_STATE" as const, stateFailureProceedStateId: "Recover" },
  };
  execute() {
    return StateDecision.singleNextState(Ship);
  }
}
class Ship implements AsyncState {
  waitUntil() {
    return CommandRequest.empty();
  }
  execute() {
    return StateDecision.gracefulCompleteProcess("shipped");
  }
}
class Recover implements AsyncState<StateApiFailureDetails> {
  readonly inputSchema = StateApiFailureDetailsSchema;
  execute() {
    return StateDecision.forceFailProcess("gave up");
  }
}
class Transformed implements AsyncState<number> {
  // A transform: the JSON Schema says what it takes (a string), not what it makes.
  readonly inputSchema = z.string().transform((s) => s.length);
  execute() {
    return StateDecision.deadEnd();
  }
}
class Custom implements AsyncState<number> {
  // zod cannot describe a custom check as JSON Schema: no inputSchema exported.
  readonly inputSchema = z.custom<number>((v) => typeof v === "number");
  execute() {
    return StateDecision.deadEnd();
  }
}
class ShopProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new Take(), new Ship(), new Recover(), new Transformed(), new Custom());
  }
  persistenceSchema() {
    return PersistenceSchema.withTable("shop.orders", "order_id").globalAttributes("status", "total").localAttributes("note");
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("paid", "cancelled");
  }
  readonly rpcs = {
    cancel: rpc((_ctx, reason: string) => reason, { lockType: "EXCLUSIVE_LOCK", inputSchema: z.string().min(1) }),
    peek: rpc(() => 1),
  };
}
class Bare implements Process {
  readonly processType = "bare";
  stateSchema() {
    return StateSchema.noStartingState(new Ship());
  }
}

const deployment: WorkerDeployment = { name: "shop", version: "1.2.3", workerUrl: "http://worker:8000" };
const revision = {
  processType: "ShopProcess",
  revision: 1,
  contentHash: "ab".repeat(32),
  deployment,
  registeredAtMs: 1_700_000_000_000,
};

interface Sent { url: string; body: unknown }

function fakeFetch(...answers: (() => Response)[]): { fetch: typeof fetch; sent: Sent[] } {
  const sent: Sent[] = [];
  return {
    sent,
    fetch: (input, init) => {
      const url = input instanceof Request ? input.url : input.toString();
      sent.push({ url: new URL(url).pathname, body: JSON.parse(typeof init?.body === "string" ? init.body : "null") });
      const answer = answers.shift();
      return answer ? Promise.resolve(answer()) : Promise.reject(new TypeError("fetch failed"));
    },
  };
}

describe("definition export", () => {
  it("exports states with their config and input schemas, queues, RPCs and attributes", () => {
    const wire = exportDefinition(ShopProcess);
    const definition = new ProcessDefinition(new ShopProcess());
    assert.equal(wire.processType, "ShopProcess");
    assert.deepEqual(wire.startStates, []);
    assert.deepEqual(wire.localQueues, ["paid", "cancelled"]);
    assert.deepEqual(wire.states.map((s) => [s.id, s.hasWaitUntil]), [
      ["Take", false], ["Ship", true], ["Recover", false], ["Transformed", false], ["Custom", false],
    ]);
    for (const state of wire.states) {
      assert.deepEqual(state.config, definition.stateConfig(state.id));
      assert.equal(state.config?.skipWaitUntil, !state.hasWaitUntil);
    }
    const take = wire.states[0]!;
    assert.equal(take.config?.executeApiRetryPolicy?.maximumAttempts, 3);
    assert.deepEqual(take.config?.globalAttributeLoading, { columns: ["status", "total"], lockType: "NO_LOCK" });
    assert.equal(take.inputSchema?.$schema, "https://json-schema.org/draft/2020-12/schema");
    const validate = new Ajv2020({ strict: false }).compile(take.inputSchema);
    assert.equal(validate({ item: "book", quantity: 2 }), true);
    assert.equal(validate({ item: "book" }), true); // quantity has a default: optional on input
    assert.equal(validate({ quantity: 2 }), false);
    assert.equal(validate({ item: "book", quantity: 0 }), false);
    const recover = wire.states[2]!;
    assert.deepEqual((recover.inputSchema as { required?: string[] }).required?.sort(), [
      "api", "attempt", "error", "stateExecutionId",
    ]);
    assert.equal(wire.states[1]!.inputSchema, undefined); // no inputSchema: any input
    assert.equal(wire.states[3]!.inputSchema?.type, "string"); // a transform's input
    assert.equal(wire.states[4]!.inputSchema, undefined); // a custom check: not describable

    assert.deepEqual(wire.rpcs?.map((r) => r.name), ["cancel", "peek"]);
    const [cancel, peek] = wire.rpcs;
    assert.deepEqual(cancel?.globalAttributeLoading, { columns: ["status", "total"], lockType: "EXCLUSIVE_LOCK" });
    assert.deepEqual(cancel?.localAttributeLoading, { keys: ["note"], lockType: "NO_LOCK" });
    assert.equal((cancel?.inputSchema as { type?: string }).type, "string");
    assert.equal(peek?.inputSchema, undefined);
    assert.deepEqual(wire.globalAttributes, {
      tableName: "shop.orders",
      primaryKeyColumn: "order_id",
      columns: [{ name: "status", type: "ANY" }, { name: "total", type: "ANY" }],
    });
    assert.deepEqual(wire.localAttributes, [{ name: "note", type: "ANY" }]);
  });

  it("is stable, and leaves out what a process lacks", () => {
    assert.equal(JSON.stringify(exportDefinition(new ShopProcess())), JSON.stringify(exportDefinition(new ShopProcess())));
    const bare = exportDefinition(new Bare());
    assert.equal(bare.globalAttributes, undefined);
    assert.deepEqual([bare.localAttributes, bare.localQueues, bare.rpcs], [[], [], []]);
  });

  it("derives JSON Schemas from zod schemas only", () => {
    assert.equal(inputJsonSchema(undefined), undefined);
    assert.equal(inputJsonSchema({ parse: (v: unknown) => v }), undefined);
    assert.deepEqual(inputJsonSchema(z.number().int()), {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "integer",
      minimum: Number.MIN_SAFE_INTEGER,
      maximum: Number.MAX_SAFE_INTEGER,
    });
  });
});

describe("definitions calls", () => {
  it("registers processes, definitions and wire definitions with the deployment", async () => {
    const fake = fakeFetch(() => Response.json({ registered: [{ revision, changed: true }, { revision, changed: false }] }));
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    const answer = await client.registerDefinitions(deployment, [ShopProcess, exportDefinition(new Bare())], { force: true });
    assert.deepEqual(answer.registered.map((r) => r.changed), [true, false]);
    assert.equal(answer.registered[0]?.revision.deployment.workerUrl, "http://worker:8000");
    assert.deepEqual(fake.sent, [{
      url: DEFINITIONS_PATHS.register,
      body: { deployment, definitions: [exportDefinition(ShopProcess), exportDefinition(new Bare())], force: true },
    }]);
    await assert.rejects(client.registerDefinitions(deployment, []), (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED");
  });

  it("lists and describes definitions", async () => {
    const definition = exportDefinition(ShopProcess);
    const fake = fakeFetch(
      () => Response.json({ definitions: [revision] }),
      () => Response.json({ revision, definition, revisions: [revision] }),
      () => Response.json({ subType: "DEFINITION_NOT_FOUND", message: "no process type nope is registered" }, { status: 404 }),
    );
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    assert.deepEqual((await client.listDefinitions()).definitions.map((d) => d.processType), ["ShopProcess"]);
    const described = await client.describeDefinition(ShopProcess, 1);
    assert.deepEqual(described.definition.states.map((s) => s.id), ["Take", "Ship", "Recover", "Transformed", "Custom"]);
    await assert.rejects(client.describeDefinition("nope"), (e) => isApiError(e, "DEFINITION_NOT_FOUND") && e.status === 404);
    assert.deepEqual(fake.sent.map((s) => [s.url, s.body]), [
      [DEFINITIONS_PATHS.list, {}],
      [DEFINITIONS_PATHS.describe, { processType: "ShopProcess", revision: 1 }],
      [DEFINITIONS_PATHS.describe, { processType: "nope" }],
    ]);
  });

  it("lets the worker register what it hosts, with the service's refusals as errors", async () => {
    const fake = fakeFetch(
      () => Response.json({ registered: [{ revision, changed: true }, { revision, changed: true }] }),
      () => Response.json({ subType: "DEFINITION_INCOMPATIBLE", message: "2 executions wait in Ship" }, { status: 409 }),
    );
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    const worker = new WorkerService().register(new ShopProcess(), new Bare());
    assert.equal((await worker.registerDefinitions(client, deployment)).registered.length, 2);
    await assert.rejects(
      worker.registerDefinitions(client, deployment),
      (e) => e instanceof XdbApiError && e.subType === "DEFINITION_INCOMPATIBLE" && e.status === 409 && /2 executions/.test(e.message),
    );
    await assert.rejects(new WorkerService().registerDefinitions(client, deployment), /hosts no process/);
    const body = fake.sent[0]?.body as { definitions: { processType: string }[] };
    assert.deepEqual(body.definitions.map((d) => d.processType), ["ShopProcess", "bare"]);
    assert.deepEqual(worker.processDefinitions(), [exportDefinition(new ShopProcess()), exportDefinition(new Bare())]);
  });

  it("starts without a worker URL, leaving it to the registered deployment", async () => {
    const fake = fakeFetch(() => Response.json({ processExecutionId: "e1" }));
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    await client.startProcess(new Bare(), "p");
    assert.equal(fake.sent[0]?.url, SERVICE_PATHS.start);
    assert.equal((fake.sent[0]?.body as { workerUrl?: string }).workerUrl, undefined);
  });
});

describe("deployments calls", () => {
  const summary = {
    deployment: { name: "shop", version: "2", workerUrl: "http://worker-2:8000" },
    processTypes: ["ShopProcess"],
    currentFor: ["ShopProcess"],
    runningExecutions: 3,
    drained: false,
  };

  it("lists deployments, makes one current and moves executions", async () => {
    const fake = fakeFetch(
      () => Response.json({ deployments: [summary] }),
      () => Response.json({ registered: [{ revision, changed: true }] }),
      () => Response.json({ moved: 2 }),
      () => Response.json({ moved: 0 }),
      () => Response.json({ subType: "DEFINITION_NOT_FOUND", message: "no deployment shop@9" }, { status: 404 }),
    );
    const client = new Client({ serviceUrl: "http://xdb", fetch: fake.fetch });
    const [listed] = (await client.listDeployments()).deployments;
    assert.deepEqual([listed?.deployment.version, listed?.currentFor, listed?.runningExecutions, listed?.drained], [
      "2", ["ShopProcess"], 3, false,
    ]);
    assert.equal((await client.setCurrentDeployment("shop", "1.2.3")).registered[0]?.changed, true);
    assert.equal((await client.moveExecutions(ShopProcess, { name: "shop", version: "2" }, { from: deployment })).moved, 2);
    assert.equal((await client.moveExecutions("ShopProcess", deployment, { processIds: ["p-1", "p-2"] })).moved, 0);
    await assert.rejects(
      client.setCurrentDeployment("shop", "9", { force: true }),
      (e) => isApiError(e, "DEFINITION_NOT_FOUND") && e.status === 404,
    );
    const shop1 = { name: "shop", version: "1.2.3" };
    const shop2 = { name: "shop", version: "2" };
    assert.deepEqual(fake.sent.map((s) => [s.url, s.body]), [
      [DEPLOYMENTS_PATHS.list, {}],
      [DEPLOYMENTS_PATHS.setCurrent, { deployment: shop1, force: false }],
      [DEPLOYMENTS_PATHS.move, { processType: "ShopProcess", to: shop2, processIds: [], from: shop1 }],
      [DEPLOYMENTS_PATHS.move, { processType: "ShopProcess", to: shop1, processIds: ["p-1", "p-2"] }],
      [DEPLOYMENTS_PATHS.setCurrent, { deployment: { name: "shop", version: "9" }, force: true }],
    ]);
  });

  it("exports a process's versioning policy, PINNED unless it says otherwise", () => {
    class Moving extends Bare {
      readonly versioningPolicy = "MOVE_TO_CURRENT" as const;
    }
    assert.equal(exportDefinition(new Bare()).versioningPolicy, "PINNED");
    assert.equal(exportDefinition(new Moving()).versioningPolicy, "MOVE_TO_CURRENT");
    const unknown = { processType: "odd", versioningPolicy: "SOMETIMES", stateSchema: () => StateSchema.noStartingState(new Ship()) };
    assert.throws(
      () => exportDefinition(unknown as unknown as Process),
      (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED" && /SOMETIMES/.test(e.message),
    );
  });
});

describe("history events", () => {
  const event = (eventType: HistoryEventType, details: Record<string, unknown>) => ({ eventId: 1, eventTimestampMs: 0, eventType, details });
  it("name the state execution they are about", () => {
    const failed = event("STATE_API_FAILED", { api: "execute", attempt: 1, error: "x", stateExecutionId: "Take-1" });
    assert.equal(stateExecutionIdOf(failed), "Take-1");
    assert.deepEqual(stateExecutionIdsOf(failed), ["Take-1"]);
    const control = event("RETRY_REQUESTED", { stateExecutionIds: ["Take-1", "Ship-2"] });
    assert.equal(stateExecutionIdOf(control), undefined);
    assert.deepEqual(stateExecutionIdsOf(control), ["Take-1", "Ship-2"]);
    assert.deepEqual(stateExecutionIdsOf(event("PROCESS_STARTED", { processType: "P" })), []);
  });

  it("read a reprioritization's order before and after", () => {
    const reprioritized = event("REPRIORITIZED", {
      before: { priority: 3 },
      after: { priority: 1, fairnessKey: "tenant-a", fairnessWeight: 2 },
      reason: "incident",
      identity: "ops",
      stateExecutionIds: ["Take-1"],
      future: "ignored",
    });
    assert.deepEqual(reprioritizedDetailsOf(reprioritized), {
      before: { priority: 3 },
      after: { priority: 1, fairnessKey: "tenant-a", fairnessWeight: 2 },
      reason: "incident",
      identity: "ops",
      stateExecutionIds: ["Take-1"],
    });
    assert.deepEqual(stateExecutionIdsOf(reprioritized), ["Take-1"]);
    assert.equal(reprioritizedDetailsOf(event("PAUSED", { stateExecutionIds: [] })), undefined);
    assert.throws(
      () => reprioritizedDetailsOf(event("REPRIORITIZED", { before: { priority: 3 }, stateExecutionIds: [] })),
      (e) => e instanceof XdbInvalidResponseError && /REPRIORITIZED event 1/.test(e.message) && /after/.test(e.message),
    );
  });
});
