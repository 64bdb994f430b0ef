// The flow-limit calls against a fake fetch (their requests checked against the
// repository's OpenAPI document too), their retries against a scripted HTTP server, and
// the limits processes and states declare for registration. Also the running-execution
// limit's parts: a start's concurrency key, and the PENDING executions lists and
// descriptions show.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  Client, FLOW_LIMITS_PATHS, OPERATE_PATHS, PersistenceSchema, SERVICE_PATHS, StateDecision, StateSchema, XdbSdkError,
  exportDefinition, isApiError, type AsyncState, type FlowLimits, type Process,
} from "@xdb/sdk";

import { contractProblems } from "./contract.js";
import { answer, drop, refusal, scriptedService } from "./scripted-service.js";

interface Sent { path: string; body: Record<string, unknown> }

const ENTRY = {
  processType: "Order",
  stateId: "Charge",
  declared: { maxCallsPerSecond: 10 },
  override: { maxCallsPerSecond: 2.5 },
  effective: { maxCallsPerSecond: 2.5 },
  updatedTimestampMs: 1_700_000_000_000,
  future: "ignored",
};
const CHANGE = {
  changeId: 7,
  processType: "Order",
  source: "OPERATOR",
  before: { maxCallsPerSecond: 10 },
  changedBy: "ops",
  reason: "payments slow",
  changedTimestampMs: 1_700_000_000_001,
};

/** A fetch answering as the service would, recording what was sent. */
function fakeService(): { client: Client; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    const path = new URL(input instanceof Request ? input.url : input.toString()).pathname;
    const body = JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown>;
    sent.push({ path, body });
    if (path === FLOW_LIMITS_PATHS.set) return Promise.resolve(Response.json(ENTRY));
    if (path === FLOW_LIMITS_PATHS.list) return Promise.resolve(Response.json({ limits: [ENTRY] }));
    return Promise.resolve(Response.json({ changes: [CHANGE], nextPageToken: "n" }));
  };
  return { client: new Client({ serviceUrl: "http://xdb", fetch }), sent };
}

describe("flow-limit calls", () => {
  it("set an override, no limit, or clear it, as the contract takes them", async () => {
    const { client, sent } = fakeService();
    const entry = await client.setFlowLimits("Order", { maxCallsPerSecond: 2.5 }, { stateId: "Charge", reason: "payments slow" });
    assert.deepEqual(entry.override, { maxCallsPerSecond: 2.5 });
    assert.deepEqual(entry.declared, { maxCallsPerSecond: 10 });
    await client.setFlowLimits("Order", {});
    await client.setFlowLimits("Order", null, { reason: "back to normal" });
    assert.deepEqual(sent, [
      { path: FLOW_LIMITS_PATHS.set, body: { processType: "Order", stateId: "Charge", reason: "payments slow", override: { maxCallsPerSecond: 2.5 } } },
      { path: FLOW_LIMITS_PATHS.set, body: { processType: "Order", override: {} } },
      { path: FLOW_LIMITS_PATHS.set, body: { processType: "Order", reason: "back to normal" } },
    ]);
    for (const { path, body } of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));
  });

  it("set a concurrency alone or with a rate, and read one answered", async () => {
    const { client, sent } = fakeService();
    await client.setFlowLimits("Order", { maxConcurrentCalls: 8 });
    await client.setFlowLimits("Order", { maxCallsPerSecond: 2.5, maxConcurrentCalls: 3 }, { stateId: "Charge" });
    assert.deepEqual(sent.map((s) => s.body.override), [{ maxConcurrentCalls: 8 }, { maxCallsPerSecond: 2.5, maxConcurrentCalls: 3 }]);
    for (const { path, body } of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));

    const concurrent = { ...ENTRY, override: { maxConcurrentCalls: 8 }, effective: { maxConcurrentCalls: 8 } };
    const fetch: typeof globalThis.fetch = () => Promise.resolve(Response.json({ limits: [concurrent] }));
    const listed = await new Client({ serviceUrl: "http://xdb", fetch }).listFlowLimits();
    assert.equal(listed.limits[0]?.effective.maxCallsPerSecond ?? undefined, undefined);
    assert.deepEqual(listed.limits[0]?.effective, { maxConcurrentCalls: 8 });
  });

  it("refuse a concurrency of 0 on its field, once", async () => {
    const bad = await scriptedService(answer(400, {
      subType: "INVALID_REQUEST",
      message: "override.maxConcurrentCalls: must be 1 to 100000, not 0",
    }));
    try {
      const client = new Client({ serviceUrl: bad.url, maxRetryDelayMs: 20 });
      await assert.rejects(
        client.setFlowLimits("Order", { maxConcurrentCalls: 0 }),
        (e) => isApiError(e, "INVALID_REQUEST") && /override\.maxConcurrentCalls/.test(e.message),
      );
    } finally {
      await bad.close();
    }
    assert.equal(bad.seen.length, 1, "a refusal is final");
    assert.deepEqual(bad.json()[0]?.override, { maxConcurrentCalls: 0 });
  });

  it("list the limits and page through their history", async () => {
    const { client, sent } = fakeService();
    const listed = await client.listFlowLimits("Order");
    assert.deepEqual(listed.limits.map((e) => [e.stateId, e.effective.maxCallsPerSecond]), [["Charge", 2.5]]);
    const history = await client.flowLimitHistory({ processType: "Order", pageSize: 2 });
    assert.equal(history.nextPageToken, "n");
    assert.deepEqual([history.changes[0]?.source, history.changes[0]?.before, history.changes[0]?.after], ["OPERATOR", { maxCallsPerSecond: 10 }, undefined]);
    await client.listFlowLimits();
    assert.deepEqual(sent, [
      { path: FLOW_LIMITS_PATHS.list, body: { processType: "Order" } },
      { path: FLOW_LIMITS_PATHS.history, body: { processType: "Order", pageSize: 2 } },
      { path: FLOW_LIMITS_PATHS.list, body: {} },
    ]);
    for (const { path, body } of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));
  });

  it("send a set again unchanged after a lost answer, and never after a refusal", async () => {
    const service = await scriptedService(drop, refusal(503, "DATABASE_UNAVAILABLE", "0"), answer(200, ENTRY));
    try {
      const client = new Client({ serviceUrl: service.url, maxRetryDelayMs: 20 });
      const entry = await client.setFlowLimits("Order", { maxCallsPerSecond: 2.5 });
      assert.equal(entry.effective.maxCallsPerSecond, 2.5);
    } finally {
      await service.close();
    }
    assert.deepEqual(service.seen.map((s) => s.path), Array<string>(3).fill(FLOW_LIMITS_PATHS.set));
    assert.equal(new Set(service.seen.map((s) => s.body)).size, 1, "a retry changed the body");
    assert.equal(service.json()[0]?.requestId, undefined);

    const bad = await scriptedService(answer(400, { subType: "INVALID_REQUEST", message: "override.maxCallsPerSecond: more than 0" }));
    try {
      const client = new Client({ serviceUrl: bad.url, maxRetryDelayMs: 20 });
      await assert.rejects(
        client.setFlowLimits("Order", { maxCallsPerSecond: 0 }),
        (e) => isApiError(e, "INVALID_REQUEST") && /override\.maxCallsPerSecond/.test(e.message),
      );
    } finally {
      await bad.close();
    }
    assert.equal(bad.seen.length, 1);
  });
});

class Charge implements AsyncState {
  readonly flowLimits = { maxCallsPerSecond: 0.5, maxConcurrentCalls: 4 };
  execute() {
    return StateDecision.deadEnd();
  }
}
class Ship implements AsyncState {
  execute() {
    return StateDecision.gracefulCompleteProcess("shipped");
  }
}

describe("declared flow limits", () => {
  it("go with the process's and each state's definition, and are absent when none", () => {
    class Limited implements Process {
      readonly processType = "Limited";
      readonly flowLimits = { maxConcurrentCalls: 16 };
      stateSchema() {
        return StateSchema.withStartingState(new Charge(), new Ship());
      }
    }
    const wire = exportDefinition(new Limited());
    assert.deepEqual(wire.flowLimits, { maxConcurrentCalls: 16 });
    assert.deepEqual(wire.states.map((s) => [s.id, s.flowLimits]), [["Charge", { maxCallsPerSecond: 0.5, maxConcurrentCalls: 4 }], ["Ship", undefined]]);
    assert.equal(contractProblems("/api/v1/xdb/service/definitions/register", {
      deployment: { name: "d", version: "1", workerUrl: "http://w" },
      definitions: [wire],
    }), "");
    const bare = { processType: "bare", stateSchema: () => StateSchema.noStartingState(new Ship()) };
    assert.equal("flowLimits" in exportDefinition(bare), false);
  });

  it("that are not an object are refused at export", () => {
    const wrong = {
      processType: "wrong",
      flowLimits: 5 as unknown as FlowLimits,
      stateSchema: () => StateSchema.noStartingState(new Ship()),
    };
    assert.throws(
      () => exportDefinition(wrong),
      (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED" && /wrong: flowLimits/.test(e.message),
    );
  });
});

describe("running-execution limits", () => {
  it("set maxRunningExecutions on a type, alone or with a concurrency, and read it back", async () => {
    const entry = {
      processType: "Order",
      override: { maxRunningExecutions: 3 },
      effective: { maxRunningExecutions: 3 },
      updatedTimestampMs: 1_700_000_000_000,
    };
    const sent: Record<string, unknown>[] = [];
    const fetch: typeof globalThis.fetch = (_input, init) => {
      sent.push(JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown>);
      return Promise.resolve(Response.json(entry));
    };
    const client = new Client({ serviceUrl: "http://xdb", fetch });
    const answered = await client.setFlowLimits("Order", { maxRunningExecutions: 3 }, { reason: "one export per customer" });
    await client.setFlowLimits("Order", { maxConcurrentCalls: 8, maxRunningExecutions: 100_000 });
    assert.deepEqual(answered.effective, { maxRunningExecutions: 3 });
    assert.deepEqual(sent, [
      { processType: "Order", reason: "one export per customer", override: { maxRunningExecutions: 3 } },
      { processType: "Order", override: { maxConcurrentCalls: 8, maxRunningExecutions: 100_000 } },
    ]);
    for (const body of sent) assert.equal(contractProblems(FLOW_LIMITS_PATHS.set, body), "", JSON.stringify(body));
  });

  it("refuse maxRunningExecutions on a state on its field, once", async () => {
    const bad = await scriptedService(answer(400, {
      subType: "INVALID_REQUEST",
      message: "override.maxRunningExecutions: limits a process type's executions: set it on the type, not on a state",
    }));
    try {
      const client = new Client({ serviceUrl: bad.url, maxRetryDelayMs: 20 });
      await assert.rejects(
        client.setFlowLimits("Order", { maxRunningExecutions: 1 }, { stateId: "Charge" }),
        (e) => isApiError(e, "INVALID_REQUEST") && /override\.maxRunningExecutions/.test(e.message),
      );
    } finally {
      await bad.close();
    }
    assert.equal(bad.seen.length, 1, "a refusal is final");
    assert.equal(bad.json()[0]?.stateId, "Charge");
  });

  it("send a start's concurrency key only when given", async () => {
    const sent: Record<string, unknown>[] = [];
    const fetch: typeof globalThis.fetch = (_input, init) => {
      sent.push(JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown>);
      return Promise.resolve(Response.json({ processExecutionId: "e-1" }));
    };
    const client = new Client({ serviceUrl: "http://xdb", workerUrl: "http://w:1", fetch });
    class Export implements Process {
      readonly processType = "Export";
      stateSchema() {
        return StateSchema.withStartingState(new Ship());
      }
    }
    assert.equal(await client.startProcess(Export, "export-1", undefined, { concurrencyKey: "customer-42" }), "e-1");
    await client.startProcess(Export, "export-2");
    const configs = sent.map((body) => body.processStartConfig as Record<string, unknown>);
    assert.deepEqual(configs.map((c) => c.concurrencyKey), ["customer-42", undefined]);
    assert.equal("concurrencyKey" in (configs[1] ?? {}), false);
    for (const body of sent) assert.equal(contractProblems(SERVICE_PATHS.start, body), "", JSON.stringify(body));
  });

  it("read a PENDING execution from lists and descriptions, and its refused resume", async () => {
    const summary = (processId: string, flags: Record<string, boolean>) => ({
      processExecutionId: `e-${processId}`, processId, processType: "Export", status: "RUNNING", startTimestampMs: 1, ...flags,
    });
    const fetch: typeof globalThis.fetch = (input) => {
      const path = new URL(input instanceof Request ? input.url : input.toString()).pathname;
      if (path === SERVICE_PATHS.describe) {
        return Promise.resolve(Response.json({
          processExecutionId: "e-2", processId: "p", processType: "Export", workerUrl: "http://w", status: "RUNNING",
          startTimestampMs: 1, runningStateExecutions: 1, parkedTasks: 1,
          paused: {
            sinceTimestampMs: 2,
            reason: "PENDING: waiting for a running slot (customer-42: at most 1 running at once)",
            identity: "maxRunningExecutions",
            pendingOnKey: "customer-42",
          },
        }));
      }
      if (path === SERVICE_PATHS.list) {
        return Promise.resolve(Response.json({
          executions: [summary("waiting", { paused: true, pending: true }), summary("paused", { paused: true }), summary("running", {})],
        }));
      }
      assert.equal(path, OPERATE_PATHS.resume);
      return Promise.resolve(Response.json(
        { subType: "CONTROL_NOT_APPLICABLE", message: "the execution is PENDING, held by its type's maxRunningExecutions" },
        { status: 409 },
      ));
    };
    const client = new Client({ serviceUrl: "http://xdb", fetch });
    const described = await client.describe("p");
    assert.equal(described.paused?.pendingOnKey, "customer-42");
    assert.equal(described.paused?.identity, "maxRunningExecutions");
    const listed = await client.list({ filter: { processType: "Export" } });
    assert.deepEqual(listed.executions.map((e) => [e.processId, e.paused, e.pending]), [
      ["waiting", true, true],
      ["paused", true, false],
      ["running", false, false],
    ]);
    await assert.rejects(client.resume("p"), (e) => isApiError(e, "CONTROL_NOT_APPLICABLE") && /PENDING/.test(e.message));
  });

  it("are declared by a process, and refused on a state at export", () => {
    class OnePerKey implements Process {
      readonly processType = "OnePerKey";
      readonly flowLimits = { maxConcurrentCalls: 16, maxRunningExecutions: 2 };
      stateSchema() {
        return StateSchema.withStartingState(new Ship());
      }
    }
    const wire = exportDefinition(new OnePerKey());
    assert.deepEqual(wire.flowLimits, { maxConcurrentCalls: 16, maxRunningExecutions: 2 });
    assert.equal(contractProblems("/api/v1/xdb/service/definitions/register", {
      deployment: { name: "d", version: "1", workerUrl: "http://w" },
      definitions: [wire],
    }), "");

    class RunningCharge implements AsyncState {
      static readonly stateId = "Charge";
      readonly flowLimits = { maxRunningExecutions: 1 };
      execute() {
        return StateDecision.deadEnd();
      }
    }
    const stateLimited = { processType: "StateLimited", stateSchema: () => StateSchema.withStartingState(new RunningCharge()) };
    assert.throws(
      () => exportDefinition(stateLimited),
      (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED" && /StateLimited\.Charge: flowLimits\.maxRunningExecutions/.test(e.message),
    );
  });
});

describe("running limits keyed by a global attribute", () => {
  it("set concurrencyKeyAttribute with maxRunningExecutions and read it back", async () => {
    const keyed = { maxRunningExecutions: 2, concurrencyKeyAttribute: "customer_id" };
    const entry = { processType: "Export", override: keyed, effective: keyed, updatedTimestampMs: 1_700_000_000_000 };
    const sent: Record<string, unknown>[] = [];
    const fetch: typeof globalThis.fetch = (_input, init) => {
      sent.push(JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown>);
      return Promise.resolve(Response.json(entry));
    };
    const client = new Client({ serviceUrl: "http://xdb", fetch });
    const answered = await client.setFlowLimits("Export", keyed, { reason: "per customer" });
    assert.equal(answered.effective.concurrencyKeyAttribute, "customer_id");
    assert.deepEqual(answered.override, keyed);
    assert.deepEqual(sent, [{ processType: "Export", reason: "per customer", override: keyed }]);
    assert.equal(contractProblems(FLOW_LIMITS_PATHS.set, sent[0]), "");
  });

  it("refuse a bad attribute on its field, once", async () => {
    const bad = await scriptedService(answer(400, {
      subType: "INVALID_REQUEST",
      message: "override.concurrencyKeyAttribute: 'customer id' is not a valid SQL identifier (letters, digits and _, at most 64, not starting with a digit)",
    }));
    try {
      const client = new Client({ serviceUrl: bad.url, maxRetryDelayMs: 20 });
      await assert.rejects(
        client.setFlowLimits("Export", { maxRunningExecutions: 1, concurrencyKeyAttribute: "customer id" }),
        (e) => isApiError(e, "INVALID_REQUEST") && /override\.concurrencyKeyAttribute/.test(e.message),
      );
    } finally {
      await bad.close();
    }
    assert.equal(bad.seen.length, 1, "a refusal is final");
    assert.deepEqual(bad.json()[0]?.override, { maxRunningExecutions: 1, concurrencyKeyAttribute: "customer id" });
  });

  it("send a start's row values and no key; a start writing none is refused naming the key", async () => {
    class Export implements Process {
      readonly processType = "Export";
      readonly flowLimits = { maxRunningExecutions: 1, concurrencyKeyAttribute: "customer_id" };
      stateSchema() {
        return StateSchema.withStartingState(new Ship());
      }
      persistenceSchema() {
        return PersistenceSchema.withTable("exports", "id").globalAttributes("customer_id");
      }
    }
    const sent: Record<string, unknown>[] = [];
    const fetch: typeof globalThis.fetch = (_input, init) => {
      sent.push(JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown>);
      return Promise.resolve(Response.json({ processExecutionId: "e-1" }));
    };
    const client = new Client({ serviceUrl: "http://xdb", workerUrl: "http://w:1", fetch });
    await client.startProcess(Export, "export-1", undefined, { globalAttributePkValue: "export-1", initialGlobalAttributes: { customer_id: 42 } });
    // The service reads the key from the row's values; the client sends them as given.
    const config = sent[0]?.processStartConfig as Record<string, unknown>;
    assert.equal("concurrencyKey" in config, false);
    assert.deepEqual((config.globalAttributeConfig as Record<string, unknown>).initialWrite, [{ column: "customer_id", value: 42 }]);
    assert.equal(contractProblems(SERVICE_PATHS.start, sent[0]), "");

    const bad = await scriptedService(answer(400, {
      subType: "INVALID_REQUEST",
      message: "processStartConfig.concurrencyKey: the type counts its running executions per global attribute 'customer_id' (concurrencyKeyAttribute): write a value for it in the start, or name a concurrencyKey",
    }));
    try {
      const refusing = new Client({ serviceUrl: bad.url, workerUrl: "http://w:1", maxRetryDelayMs: 20 });
      await assert.rejects(
        refusing.startProcess(Export, "export-2", undefined, { globalAttributePkValue: "export-2" }),
        (e) => isApiError(e, "INVALID_REQUEST") && /processStartConfig\.concurrencyKey/.test(e.message),
      );
    } finally {
      await bad.close();
    }
    assert.equal(bad.seen.length, 1, "a refusal is final");
  });

  it("are declared by a process with its limit, and refused alone or on a state at export", () => {
    class PerCustomer implements Process {
      readonly processType = "PerCustomer";
      readonly flowLimits = { maxRunningExecutions: 2, concurrencyKeyAttribute: "customer_id" };
      stateSchema() {
        return StateSchema.withStartingState(new Ship());
      }
    }
    const wire = exportDefinition(new PerCustomer());
    assert.deepEqual(wire.flowLimits, { maxRunningExecutions: 2, concurrencyKeyAttribute: "customer_id" });
    assert.equal(contractProblems("/api/v1/xdb/service/definitions/register", {
      deployment: { name: "d", version: "1", workerUrl: "http://w" },
      definitions: [wire],
    }), "");

    const keyAlone = {
      processType: "KeyAlone",
      flowLimits: { maxConcurrentCalls: 4, concurrencyKeyAttribute: "customer_id" },
      stateSchema: () => StateSchema.withStartingState(new Ship()),
    };
    assert.throws(
      () => exportDefinition(keyAlone),
      (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED" && /KeyAlone: flowLimits\.concurrencyKeyAttribute .*maxRunningExecutions/.test(e.message),
    );

    class KeyedCharge implements AsyncState {
      static readonly stateId = "Charge";
      readonly flowLimits = { maxCallsPerSecond: 1, concurrencyKeyAttribute: "customer_id" };
      execute() {
        return StateDecision.deadEnd();
      }
    }
    const stateKeyed = { processType: "StateKeyed", stateSchema: () => StateSchema.withStartingState(new KeyedCharge()) };
    assert.throws(
      () => exportDefinition(stateKeyed),
      (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED" && /StateKeyed\.Charge: flowLimits\.concurrencyKeyAttribute .*not a state's/.test(e.message),
    );
  });
});

describe("a type's priority", () => {
  it("is declared by a process, sent with its definition, and refused out of range or on a state at export", () => {
    class Urgent implements Process {
      readonly processType = "Urgent";
      readonly flowLimits = { maxConcurrentCalls: 16, priority: 2 };
      stateSchema() {
        return StateSchema.withStartingState(new Ship());
      }
    }
    const wire = exportDefinition(new Urgent());
    assert.deepEqual(wire.flowLimits, { maxConcurrentCalls: 16, priority: 2 });
    assert.ok(wire.states.every((s) => s.flowLimits === undefined));
    assert.equal(contractProblems("/api/v1/xdb/service/definitions/register", {
      deployment: { name: "d", version: "1", workerUrl: "http://w" },
      definitions: [wire],
    }), "");

    const withPriority = (priority: unknown) => ({
      processType: "Prioritized",
      flowLimits: { priority } as FlowLimits,
      stateSchema: () => StateSchema.withStartingState(new Ship()),
    });
    for (const bound of [1, 5]) assert.deepEqual(exportDefinition(withPriority(bound)).flowLimits, { priority: bound });
    for (const [bad, shown] of [[0, "0"], [6, "6"], [2.5, "2.5"], [Number.NaN, "NaN"], ["2", '"2"']] as const) {
      assert.throws(
        () => exportDefinition(withPriority(bad)),
        (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED"
          && e.message === `Prioritized: flowLimits.priority must be an integer from 1 (claimed first) to 5, not ${shown}`,
        String(bad),
      );
    }

    class PrioritizedCharge implements AsyncState {
      static readonly stateId = "Charge";
      readonly flowLimits = { maxCallsPerSecond: 1, priority: 1 };
      execute() {
        return StateDecision.deadEnd();
      }
    }
    const statePrioritized = { processType: "StatePrioritized", stateSchema: () => StateSchema.withStartingState(new PrioritizedCharge()) };
    assert.throws(
      () => exportDefinition(statePrioritized),
      (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED"
        && /StatePrioritized\.Charge: flowLimits\.priority is the priority of a process type's starts: .*not a state's/.test(e.message),
    );
  });

  it("is set by an operator and read back from the answer and the history", async () => {
    const entry = {
      processType: "Urgent",
      declared: { priority: 2 },
      override: { priority: 1 },
      effective: { priority: 1 },
      updatedTimestampMs: 1_700_000_000_000,
    };
    // An operator's change: the override before (none) and after.
    const change = { ...CHANGE, before: null, after: { priority: 1 }, reason: "launch day" };
    const sent: Sent[] = [];
    const fetch: typeof globalThis.fetch = (input, init) => {
      const path = new URL(input instanceof Request ? input.url : input.toString()).pathname;
      sent.push({ path, body: JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown> });
      return Promise.resolve(Response.json(path === FLOW_LIMITS_PATHS.set ? entry : { changes: [change] }));
    };
    const client = new Client({ serviceUrl: "http://xdb", fetch });
    const answered = await client.setFlowLimits("Urgent", { priority: 1 }, { reason: "launch day" });
    await client.setFlowLimits("Urgent", { maxConcurrentCalls: 8, priority: 1 });
    const history = await client.flowLimitHistory({ processType: "Urgent" });
    assert.deepEqual([answered.declared, answered.effective], [{ priority: 2 }, { priority: 1 }]);
    assert.deepEqual(history.changes.map((c) => [c.source, c.before ?? null, c.after]), [["OPERATOR", null, { priority: 1 }]]);
    assert.deepEqual(sent.filter((s) => s.path === FLOW_LIMITS_PATHS.set).map((s) => s.body.override), [
      { priority: 1 },
      { maxConcurrentCalls: 8, priority: 1 },
    ]);
    for (const { path, body } of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));
  });

  for (const [override, stateId, message] of [
    [{ priority: 1 }, "Charge", "override.priority: is the priority of a process type's starts: set it on the type, not on a state"],
    [{ priority: 9 }, undefined, "override.priority: must be 1 (claimed first) to 5, not 9"],
  ] as const) {
    it(`is refused by the service on its field, once: ${JSON.stringify([override, stateId ?? null])}`, async () => {
      // The client sends an override as given; the service refuses it, and names the field.
      const bad = await scriptedService(answer(400, { subType: "INVALID_REQUEST", message }));
      try {
        const client = new Client({ serviceUrl: bad.url, maxRetryDelayMs: 20 });
        await assert.rejects(
          client.setFlowLimits("Urgent", override, stateId === undefined ? {} : { stateId }),
          (e) => isApiError(e, "INVALID_REQUEST") && e.status === 400 && /override\.priority/.test(e.message),
        );
      } finally {
        await bad.close();
      }
      assert.equal(bad.seen.length, 1, "a refusal is final");
      assert.deepEqual([bad.json()[0]?.override, bad.json()[0]?.stateId], [override, stateId]);
    });
  }
});

describe("a type's fairness", () => {
  it("is declared by a process, sent with its definition, and refused out of range or on a state at export", () => {
    class PerTenant implements Process {
      readonly processType = "PerTenant";
      readonly flowLimits = { maxConcurrentCalls: 16, fairnessKeyAttribute: "tenant_id", fairnessWeight: 3 };
      stateSchema() {
        return StateSchema.withStartingState(new Ship());
      }
      persistenceSchema() {
        return PersistenceSchema.withTable("exports", "id").globalAttributes("tenant_id");
      }
    }
    const wire = exportDefinition(new PerTenant());
    assert.deepEqual(wire.flowLimits, { maxConcurrentCalls: 16, fairnessKeyAttribute: "tenant_id", fairnessWeight: 3 });
    assert.ok(wire.states.every((s) => s.flowLimits === undefined));
    assert.equal(contractProblems("/api/v1/xdb/service/definitions/register", {
      deployment: { name: "d", version: "1", workerUrl: "http://w" },
      definitions: [wire],
    }), "");

    // Unlike concurrencyKeyAttribute, the attribute needs no other limit: it keys, it limits nothing.
    const alone = { processType: "Alone", flowLimits: { fairnessKeyAttribute: "tenant_id" }, stateSchema: () => StateSchema.withStartingState(new Ship()) };
    assert.deepEqual(exportDefinition(alone).flowLimits, { fairnessKeyAttribute: "tenant_id" });

    const withWeight = (fairnessWeight: unknown) => ({
      processType: "Weighed",
      flowLimits: { fairnessWeight } as FlowLimits,
      stateSchema: () => StateSchema.withStartingState(new Ship()),
    });
    for (const bound of [1, 1000]) assert.deepEqual(exportDefinition(withWeight(bound)).flowLimits, { fairnessWeight: bound });
    for (const [bad, shown] of [[0, "0"], [1001, "1001"], [2.5, "2.5"], [Number.NaN, "NaN"], ["2", '"2"']] as const) {
      assert.throws(
        () => exportDefinition(withWeight(bad)),
        (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED"
          && e.message === `Weighed: flowLimits.fairnessWeight must be an integer from 1 to 1000, not ${shown}`,
        String(bad),
      );
    }

    for (const [field, limits, what] of [
      ["fairnessKeyAttribute", { maxCallsPerSecond: 1, fairnessKeyAttribute: "tenant_id" }, "keys a process type's starts"],
      ["fairnessWeight", { maxCallsPerSecond: 1, fairnessWeight: 2 }, "weighs a process type's starts"],
    ] as const) {
      class FairCharge implements AsyncState {
        static readonly stateId = "Charge";
        readonly flowLimits = limits;
        execute() {
          return StateDecision.deadEnd();
        }
      }
      const stateFair = { processType: "StateFair", stateSchema: () => StateSchema.withStartingState(new FairCharge()) };
      assert.throws(
        () => exportDefinition(stateFair),
        (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED"
          && e.message === `StateFair.Charge: flowLimits.${field} ${what}: declare it in the process's flowLimits, not a state's`,
        field,
      );
    }
  });

  it("is set by an operator and read back from the answer and the history", async () => {
    const fair = { fairnessKeyAttribute: "tenant_id", fairnessWeight: 5 };
    const entry = {
      processType: "PerTenant",
      declared: { fairnessKeyAttribute: "customer_id" },
      override: fair,
      effective: fair,
      updatedTimestampMs: 1_700_000_000_000,
    };
    const change = { ...CHANGE, processType: "PerTenant", before: null, after: fair, reason: "fair per tenant" };
    const sent: Sent[] = [];
    const fetch: typeof globalThis.fetch = (input, init) => {
      const path = new URL(input instanceof Request ? input.url : input.toString()).pathname;
      sent.push({ path, body: JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown> });
      return Promise.resolve(Response.json(path === FLOW_LIMITS_PATHS.set ? entry : { changes: [change] }));
    };
    const client = new Client({ serviceUrl: "http://xdb", fetch });
    const answered = await client.setFlowLimits("PerTenant", fair, { reason: "fair per tenant" });
    const history = await client.flowLimitHistory({ processType: "PerTenant" });
    assert.deepEqual(
      [answered.declared, answered.effective.fairnessKeyAttribute, answered.effective.fairnessWeight],
      [{ fairnessKeyAttribute: "customer_id" }, "tenant_id", 5],
    );
    assert.deepEqual(history.changes.map((c) => [c.source, c.before ?? null, c.after]), [["OPERATOR", null, fair]]);
    assert.deepEqual(sent[0]?.body, { processType: "PerTenant", reason: "fair per tenant", override: fair });
    for (const { path, body } of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));
    // The document bounds the weight as the service does.
    assert.match(contractProblems(FLOW_LIMITS_PATHS.set, { processType: "PerTenant", override: { fairnessWeight: 1001 } }), /fairnessWeight/);
  });

  for (const [override, stateId, message] of [
    [{ fairnessKeyAttribute: "tenant_id" }, "Charge", "override.fairnessKeyAttribute: keys a process type's starts: set it on the type, not on a state"],
    [{ fairnessKeyAttribute: "tenant id" }, undefined, "override.fairnessKeyAttribute: 'tenant id' is not a valid SQL identifier (letters, digits and _, at most 64, not starting with a digit)"],
    [{ fairnessWeight: 2 }, "Charge", "override.fairnessWeight: weighs a process type's starts: set it on the type, not on a state"],
    [{ fairnessWeight: 0 }, undefined, "override.fairnessWeight: must be 1 to 1000, not 0"],
  ] as const) {
    it(`is refused by the service on its field, once: ${JSON.stringify([override, stateId ?? null])}`, async () => {
      // The client sends an override as given; the service refuses it, and names the field.
      const field = message.slice(0, message.indexOf(":"));
      const bad = await scriptedService(answer(400, { subType: "INVALID_REQUEST", message }));
      try {
        const client = new Client({ serviceUrl: bad.url, maxRetryDelayMs: 20 });
        await assert.rejects(
          client.setFlowLimits("PerTenant", override, stateId === undefined ? {} : { stateId }),
          (e) => isApiError(e, "INVALID_REQUEST") && e.status === 400 && e.message.includes(field),
        );
      } finally {
        await bad.close();
      }
      assert.equal(bad.seen.length, 1, "a refusal is final");
      assert.deepEqual([bad.json()[0]?.override, bad.json()[0]?.stateId], [override, stateId]);
    });
  }

  it("keys a start by the row value it sends, with no key named", async () => {
    class PerTenant implements Process {
      readonly processType = "PerTenant";
      readonly flowLimits = { fairnessKeyAttribute: "tenant_id", fairnessWeight: 3 };
      stateSchema() {
        return StateSchema.withStartingState(new Ship());
      }
      persistenceSchema() {
        return PersistenceSchema.withTable("exports", "id").globalAttributes("tenant_id");
      }
    }
    const sent: Record<string, unknown>[] = [];
    const fetch: typeof globalThis.fetch = (_input, init) => {
      sent.push(JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown>);
      return Promise.resolve(Response.json({ processExecutionId: "e-1" }));
    };
    const client = new Client({ serviceUrl: "http://xdb", workerUrl: "http://w:1", fetch });
    await client.startProcess(PerTenant, "export-1", undefined, { globalAttributePkValue: "export-1", initialGlobalAttributes: { tenant_id: "acme" } });
    // The service reads the key from the row's values and weighs it by the type's limits:
    // a client filling in either would pin what an operator's override should change.
    const config = sent[0]?.processStartConfig as Record<string, unknown>;
    assert.deepEqual(["fairnessKey" in config, "fairnessWeight" in config], [false, false]);
    assert.deepEqual((config.globalAttributeConfig as Record<string, unknown>).initialWrite, [{ column: "tenant_id", value: "acme" }]);
    assert.equal(contractProblems(SERVICE_PATHS.start, sent[0]), "");
  });
});
