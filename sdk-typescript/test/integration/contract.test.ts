// The contract cannot drift: every request the SDK's client sends and every answer the
// service gives it, and every call XDB makes to the SDK's worker and every answer the
// worker gives, is validated against the OpenAPI document the running service serves
// (`/api/v1/xdb/openapi.json`), schema by schema (ajv, JSON Schema 2020-12).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";

import { Ajv2020 } from "ajv/dist/2020.js";

import {
  Client, Command, CommandRequest, CommandResults, CommunicationSchema, FLOW_LIMITS_PATHS, OPENAPI_PATH, Persistence,
  PersistenceSchema, SERVICE_PATHS, StateDecision, StateSchema, WorkerService, isApiError, rpc,
  type AsyncState, type Process, type WorkerContext, type protocol,
} from "@xdb/sdk";

import { UserSignupProcess, processId, startUserSignup, verifyByRpc } from "../../samples/user-signup.js";
import { DIALECTS, TestEnv, eventually } from "./harness.js";
import { StuckProcess, unstick } from "./stuck.js";

/** One HTTP exchange, as seen by the client or by the worker. */
interface Exchange {
  readonly path: string;
  readonly request: unknown;
  readonly status: number;
  readonly response: unknown;
}

interface OpenApiDocument {
  paths: Record<string, { post?: Operation }>;
  components: { schemas: Record<string, unknown> };
}
interface Operation {
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>;
}

/** Counts through local attributes: fails its first execute once, to show a 500 answer too. */
class CountState implements AsyncState {
  private failedOnce = false;
  waitUntil() {
    return CommandRequest.allOf(Command.localQueue("bump"));
  }
  execute(_ctx: WorkerContext, _input: void, results: CommandResults, persistence: Persistence) {
    if (!this.failedOnce) {
      this.failedOnce = true;
      throw new Error("the first execute fails");
    }
    const count = (persistence.getLocalAttribute<number>("count") ?? 0) + results.messagesFromQueue("bump").length;
    persistence.setLocalAttribute("count", count);
    return count >= 12 ? StateDecision.gracefulCompleteProcess(count) : StateDecision.singleNextState(CountState);
  }
}

class CounterProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new CountState());
  }
  persistenceSchema() {
    return PersistenceSchema.none().localAttributes("count");
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("bump");
  }
  readonly rpcs = {
    peek: rpc((_ctx, _input: void, p) => p.getLocalAttribute<number>("count")),
    add: rpc((_ctx, n: number, p, c) => {
      p.setLocalAttribute("count", (p.getLocalAttribute<number>("count") ?? 0) + n);
      c.publishToLocalQueue("bump", { n }, { dedupId: `add-${n}` });
      return "added";
    }),
  };
}

/** The table of `ScoredProcess`: `score` is an integer column no index serves. */
const SCORES_TABLE = "contract_scores";

/** Completes at once: the execution's row holds its score. */
class ScoredState implements AsyncState {
  execute(_ctx: WorkerContext, _input: void, _results: CommandResults, persistence: Persistence) {
    return StateDecision.gracefulCompleteProcess(persistence.getGlobalAttribute<number>("score"));
  }
}

class ScoredProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new ScoredState());
  }
  persistenceSchema() {
    return PersistenceSchema.withTable(SCORES_TABLE, "id").globalAttributes("score");
  }
}

/** Waits for a message on `go`; records the executions whose `waitUntil` ran. */
class HeldState implements AsyncState {
  static readonly stateId = "Held";
  constructor(private readonly ran: Set<string>) {}
  waitUntil(ctx: WorkerContext) {
    this.ran.add(ctx.processId);
    return CommandRequest.allOf(Command.localQueue("go"));
  }
  execute() {
    return StateDecision.gracefulCompleteProcess("released");
  }
}

/** A type of a test's own (its limit holds no other test's starts) whose state waits. */
class HeldProcess implements Process {
  readonly ran = new Set<string>();
  constructor(readonly processType: string) {}
  stateSchema() {
    return StateSchema.withStartingState(new HeldState(this.ran));
  }
  communicationSchema() {
    return CommunicationSchema.localQueues("go");
  }
}

/** `HeldProcess` whose definition declares the priority of its starts: 2. */
class PrioritizedProcess extends HeldProcess {
  readonly flowLimits = { priority: 2 };
}

/** The table of `KeyedProcess`: its rows' integer `customer_id` keys the running limit. */
const EXPORTS_TABLE = "contract_exports";

/** `HeldProcess` with a row in `contract_exports`, whose `customer_id` keys its limit. */
class KeyedProcess extends HeldProcess {
  persistenceSchema() {
    return PersistenceSchema.withTable(EXPORTS_TABLE, "id").globalAttributes("customer_id");
  }
}

/** The table of `TenantProcess`: its rows' `tenant_id` is its starts' fairness key. */
const TENANT_EXPORTS_TABLE = "contract_tenant_exports";

/**
 * `HeldProcess` with a row in `contract_tenant_exports`, whose definition keys its starts
 * by the `tenant_id` they write and weighs them 3.
 */
class TenantProcess extends HeldProcess {
  readonly flowLimits = { fairnessKeyAttribute: "tenant_id", fairnessWeight: 3 };
  persistenceSchema() {
    return PersistenceSchema.withTable(TENANT_EXPORTS_TABLE, "id").globalAttributes("tenant_id");
  }
}

for (const dialect of DIALECTS) {
  describe(`the served OpenAPI document validates the SDK's traffic on ${dialect}`, () => {
    let env: TestEnv;
    let document: OpenApiDocument;
    const clientSide: Exchange[] = [];
    const workerSide: Exchange[] = [];
    let workerUrl: string;
    let service: WorkerService;
    let closeWorker: () => Promise<void>;

    before(async () => {
      env = await TestEnv.start(dialect, "contract");
      document = (await (await fetch(`${env.server.url}${OPENAPI_PATH}`)).json()) as OpenApiDocument;
      service = new WorkerService({ onError: () => undefined }).register(
        new UserSignupProcess(() => undefined, { seconds: 1 }),
        new CounterProcess(),
        new StuckProcess(),
      );
      const server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on("data", (c: Buffer) => chunks.push(c));
        req.on("end", () => {
          const body = Buffer.concat(chunks);
          void service.handle({ method: req.method ?? "POST", path: req.url ?? "/", headers: req.headers, body }).then((answer) => {
            workerSide.push({ path: req.url ?? "/", request: parse(body.toString()), status: answer.status, response: parse(answer.body) });
            res.writeHead(answer.status, answer.headers).end(answer.body);
          });
        });
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      workerUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      closeWorker = () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
    });
    after(async () => {
      await env?.stop();
      await closeWorker?.();
    });

    it("validates every exchange of the sign-up, a local-attribute counter, the operator's controls and the errors", async () => {
      const recording: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        const text = await response.clone().text();
        const url = new URL(input instanceof Request ? input.url : String(input));
        clientSide.push({ path: url.pathname, request: parse(typeof init?.body === "string" ? init.body : ""), status: response.status, response: parse(text) });
        return response;
      };
      const client = new Client({ serviceUrl: env.server.url, workerUrl, fetch: recording });

      // Sign-up: start, the timer, RPC, wait, describe, list, history.
      await startUserSignup(client, "ann", { email: "ann@example.com", name: "Ann" });
      assert.equal(await verifyByRpc(client, "ann", "email"), "done");
      assert.equal((await client.waitForCompletion(processId("ann"), { timeoutMs: 20_000 })).status, "COMPLETED");
      await client.describe(processId("ann"));
      await client.list({ filter: { processType: "UserSignupProcess" }, pageSize: 10 });
      await client.history(processId("ann"));

      // Local attributes both ways, publishing with a dedup id, a failed attempt (500).
      await client.startProcess(CounterProcess, "counter", undefined, { initialLocalAttributes: { count: 0 }, timeoutSeconds: 600 });
      assert.equal(await client.invokeRpc(CounterProcess, "counter", "peek"), 0);
      await client.publishToLocalQueue("counter", "bump");
      assert.equal(await client.invokeRpc(CounterProcess, "counter", "add", 10), "added");
      const counted = await client.waitForCompletion<number>("counter", { timeoutMs: 20_000 });
      assert.equal(counted.output, 12);

      // Stop, and the errors: not found (404), not running (409).
      await startUserSignup(client, "bob", { email: "bob@example.com" });
      await client.stop(processId("bob"), { stopType: "FAIL", reason: "contract test" });
      await assert.rejects(client.describe("nobody"), (e: unknown) => isApiError(e, "PROCESS_NOT_FOUND"));
      await assert.rejects(verifyByRpc(client, "bob", "email"), (e: unknown) => isApiError(e, "PROCESS_NOT_RUNNING"));

      // The operator's calls on a stuck process: states, pause, resume, retry-now, give-up.
      await client.startProcess(StuckProcess, "stuck");
      await unstick(client, "stuck");
      // Reprioritize (its effects are the operator test's): a change, the key removed, a
      // weight on the execution then without a key (409), and the history recording them.
      await client.startProcess(StuckProcess, "reprioritized");
      await client.reprioritize("reprioritized", { priority: 2, fairnessKey: "contract", fairnessWeight: 2, reason: "contract test" });
      await client.reprioritize("reprioritized", { fairnessKey: "" });
      await assert.rejects(
        client.reprioritize("reprioritized", { fairnessWeight: 3 }),
        (e: unknown) => isApiError(e, "CONTROL_NOT_APPLICABLE"),
      );
      assert.equal((await client.history("reprioritized", { eventTypes: ["REPRIORITIZED"] })).events.length, 2);
      await client.stop("reprioritized");

      // Registered definitions, last: the sign-up's starts above stay unchecked by them.
      const deployment = { name: "contract", version: "1", workerUrl };
      const registered = await service.registerDefinitions(client, deployment);
      assert.equal(registered.registered.length, 3);
      await client.listDefinitions();
      await client.describeDefinition(UserSignupProcess);
      await assert.rejects(client.describeDefinition("NoSuchProcess"), (e: unknown) => isApiError(e, "DEFINITION_NOT_FOUND"));
      await client.listDeployments();
      await client.setCurrentDeployment("contract", "1");
      await client.moveExecutions(UserSignupProcess, deployment, { from: deployment, processIds: [processId("bob")] });
      // Reset (its effects are the service's suite's): a process that does not exist.
      await assert.rejects(client.reset("nobody", "SubmitState"), (e: unknown) => isApiError(e, "PROCESS_NOT_FOUND"));
      // Counts (the filters' effects are the service's suite's): per status, and over the
      // registered table's columns.
      const byStatus = await client.count({ processType: "UserSignupProcess", groupBy: { field: "status" } });
      assert.ok(byStatus.count >= 1 && (byStatus.groups ?? []).length >= 1);
      await client.count({
        processType: "UserSignupProcess",
        where: { or: [{ column: "user_id", op: "PREFIX", value: "b" }, { field: "status", op: "=", value: "RUNNING" }] },
      });

      // Batches (their effects are the service's suite's): one selecting no execution (a
      // type nothing runs), read back and cancelled; and a batch id no batch has.
      const batch = await client.startBatch({
        operation: "PAUSE",
        processType: "NothingRunsHere",
        where: { field: "status", op: "=", value: "RUNNING" },
        ratePerSecond: 10,
        reason: "contract test",
        identity: "tests",
      });
      assert.equal(batch.expected, 0);
      assert.equal((await client.describeBatch(batch.batchId)).batch.operation, "PAUSE");
      assert.ok((await client.listBatches({ pageSize: 1000 })).batches.some((b) => b.batchId === batch.batchId));
      await client.cancelBatch(batch.batchId, { reason: "contract test", identity: "tests" });
      await assert.rejects(client.describeBatch(randomUUID()), (e: unknown) => isApiError(e, "BATCH_NOT_FOUND"));

      const scheduleId = `contract-${randomUUID()}`;
      const start = { processType: "ContractProcess", workerUrl: "http://127.0.0.1:1" };
      const created = await client.createSchedule({
        scheduleId,
        spec: { cron: { expression: "0 3 * * *", timeZone: "Europe/Paris" } },
        start,
        overlapPolicy: "BUFFER_ONE",
        paused: true,
      });
      assert.equal(created.nextFireTimestampsMs.length, 10);
      await client.updateSchedule({ scheduleId, spec: { interval: { everySeconds: 3600, jitterSeconds: 5 } }, start });
      await client.resumeSchedule(scheduleId);
      await client.pauseSchedule(scheduleId, "contract test");
      // Paused already: changes nothing, neither the reason nor the history.
      assert.equal((await client.pauseSchedule(scheduleId)).schedule.reason, "contract test");
      const now = Date.now();
      await client.backfillSchedule({ scheduleId, startTimestampMs: now - 7_200_000, endTimestampMs: now - 3_600_000 });
      const fired = await client.triggerSchedule(scheduleId);
      assert.ok(fired.processId.startsWith(scheduleId));
      assert.ok((await client.listSchedules({ pageSize: 1000 })).schedules.some((s) => s.scheduleId === scheduleId));
      assert.equal((await client.describeSchedule(scheduleId)).schedule.paused, true);
      await client.deleteSchedule(scheduleId, "contract test");
      await assert.rejects(client.describeSchedule(scheduleId), (e: unknown) => isApiError(e, "SCHEDULE_NOT_FOUND"));
      // Its history outlives it: every change above, newest first, by `anonymous` (the
      // server takes no token), with the schedule before and after and why.
      const history = await client.scheduleHistory({ scheduleId });
      assert.deepEqual(history.changes.map((c) => c.action), [
        "DELETED", "TRIGGERED", "BACKFILLED", "PAUSED", "RESUMED", "UPDATED", "CREATED",
      ]);
      assert.deepEqual(new Set(history.changes.map((c) => c.changedBy)), new Set(["anonymous"]));
      assert.deepEqual(new Set(history.changes.map((c) => c.scheduleId)), new Set([scheduleId]));
      const [deleted, triggered, , pause] = history.changes;
      const [creation, updated] = [...history.changes].reverse();
      assert.deepEqual([deleted?.reason, deleted?.before?.scheduleId, deleted?.after ?? null], ["contract test", scheduleId, null]);
      assert.ok(triggered?.detail?.includes(fired.processId), triggered?.detail ?? "no detail");
      assert.equal(pause?.reason, "contract test");
      assert.deepEqual([updated?.before?.spec.interval ?? null, updated?.after?.spec.interval], [null, { everySeconds: 3600, jitterSeconds: 5 }]);
      assert.deepEqual([creation?.before ?? null, creation?.after?.paused], [null, true]);
      assert.equal(history.nextPageToken ?? undefined, undefined);
      const firstPage = await client.scheduleHistory({ scheduleId, pageSize: 3 });
      assert.deepEqual(firstPage.changes.map((c) => c.changeId), history.changes.slice(0, 3).map((c) => c.changeId));
      assert.ok(firstPage.nextPageToken, "more changes on the next page");

      // Flow limits: an override (a rate and a concurrency) on a type nothing registers
      // (allowed), read back, cleared; refusals naming the field (a rate of 0, a
      // concurrency of 0 or over 100,000, a state the registered type lacks) that change
      // nothing; and the history, newest first.
      const limited = `ContractLimited${randomUUID().slice(0, 8)}`;
      const both = { maxCallsPerSecond: 2.5, maxConcurrentCalls: 3 };
      const set = await client.setFlowLimits(limited, both, { stateId: "Charge", reason: "contract test" });
      assert.deepEqual([set.stateId, set.override, set.effective], ["Charge", both, both]);
      assert.equal((await client.setFlowLimits(limited, {})).effective.maxCallsPerSecond ?? undefined, undefined);
      await assert.rejects(
        client.setFlowLimits(limited, { maxCallsPerSecond: 0 }),
        (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.message.includes("maxCallsPerSecond"),
      );
      for (const maxConcurrentCalls of [0, 100_001]) {
        await assert.rejects(
          client.setFlowLimits(limited, { maxConcurrentCalls }, { stateId: "Charge" }),
          (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.message.includes("override.maxConcurrentCalls"),
          `a concurrency of ${maxConcurrentCalls}`,
        );
      }
      await assert.rejects(
        client.setFlowLimits("UserSignupProcess", { maxCallsPerSecond: 1 }, { stateId: "NoSuchState" }),
        (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.message.includes("stateId"),
      );
      const cleared = await client.setFlowLimits(limited, null, { reason: "contract test" });
      assert.equal(cleared.override ?? undefined, undefined);
      const listed = await client.listFlowLimits(limited);
      const charge = listed.limits.find((e) => e.stateId === "Charge");
      assert.deepEqual(charge?.effective, both, "the refusals changed nothing");
      const whole = listed.limits.find((e) => !e.stateId);
      assert.equal(whole?.override ?? undefined, undefined, "the type's override is cleared");
      const changes = await client.flowLimitHistory({ processType: limited, pageSize: 2 });
      assert.deepEqual(changes.changes.map((c) => [c.source, c.stateId ?? null, c.after ?? null]), [
        ["OPERATOR", null, null],
        ["OPERATOR", null, {}],
      ]);
      assert.ok(changes.nextPageToken, "a third change on the next page");
      const rest = await client.flowLimitHistory({ processType: limited, nextPageToken: changes.nextPageToken });
      assert.deepEqual(rest.changes.map((c) => [c.stateId, c.reason]), [["Charge", "contract test"]]);

      const problems = [
        ...clientSide.flatMap((e) => check(document, "client -> service", e)),
        ...workerSide.flatMap((e) => check(document, "XDB -> worker", e)),
      ];
      assert.deepEqual(problems, []);
      const servicePaths = new Set(clientSide.map((e) => e.path));
      for (const path of Object.keys(document.paths).filter((p) => p.includes("/service/"))) {
        assert.ok(servicePaths.has(path), `the client exercised ${path}`);
      }
      const workerPaths = new Set(workerSide.map((e) => e.path));
      for (const path of Object.keys(document.paths).filter((p) => p.includes("/worker/"))) {
        assert.ok(workerPaths.has(path), `XDB called the worker at ${path}`);
      }
      assert.ok(workerSide.some((e) => e.status === 500), "a failed attempt was answered");
    });

    it("holds a start over its key's maxRunningExecutions PENDING until a running one closes", async () => {
      const exchanges: Exchange[] = [];
      const recording: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        const url = new URL(input instanceof Request ? input.url : String(input));
        exchanges.push({ path: url.pathname, request: parse(typeof init?.body === "string" ? init.body : ""), status: response.status, response: parse(await response.clone().text()) });
        return response;
      };
      const run = randomUUID().slice(0, 8);
      const held = new HeldProcess(`HeldContract${run}`);
      const heldWorker = await env.worker(new WorkerService({ onError: () => undefined }).register(held).nodeHandler());
      const client = new Client({ serviceUrl: env.server.url, workerUrl: heldWorker.url, fetch: recording });
      const key = `customer-${run}`;
      const type = held.processType;

      const entry = await client.setFlowLimits(type, { maxRunningExecutions: 1 }, { reason: "contract test" });
      assert.deepEqual(entry.effective, { maxRunningExecutions: 1 });
      for (const [override, options] of [
        [{ maxRunningExecutions: 1 }, { stateId: "Held" }],
        [{ maxRunningExecutions: 0 }, {}],
      ] as const) {
        await assert.rejects(
          client.setFlowLimits(type, override, options),
          (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.message.includes("override.maxRunningExecutions"),
          JSON.stringify([override, options]),
        );
      }
      await assert.rejects(
        client.startProcess(held, `held-${run}-bad-key`, undefined, { concurrencyKey: "" }),
        (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.message.includes("processStartConfig.concurrencyKey"),
      );

      const started: string[] = [];
      const start = async (name: string, concurrencyKey?: string): Promise<string> => {
        const pid = `held-${run}-${name}`;
        await client.startProcess(held, pid, undefined, concurrencyKey === undefined ? {} : { concurrencyKey });
        started.push(pid);
        return pid;
      };
      const pausedOf = async (pid: string) => (await client.describe(pid)).paused ?? undefined;
      // A service instance reads the limits at most once a second: start on a key of their
      // own until a start waits, so that the limit is in force for what follows.
      let probes = 0;
      await eventually("the limit to hold a start", 30_000, async () => (await pausedOf(await start(`probe-${probes++}`, `probe-${run}`))) !== undefined);

      // Another key has a slot of its own; the second start of it waits for it.
      const first = await start("first", key);
      const second = await start("second", key);
      assert.equal(await pausedOf(first), undefined);
      const hold = await pausedOf(second);
      assert.deepEqual([hold?.pendingOnKey, hold?.identity], [key, "maxRunningExecutions"]);
      assert.ok(hold?.reason?.startsWith("PENDING: waiting for a running slot"), hold?.reason ?? "no reason");
      const listed = await client.list({ filter: { processType: type }, pageSize: 1000 });
      const summary = (pid: string) => listed.executions.find((e) => e.processId === pid);
      assert.deepEqual([summary(first)?.pending, summary(first)?.paused], [false, false]);
      assert.deepEqual([summary(second)?.pending, summary(second)?.paused, summary(second)?.status], [true, true, "RUNNING"]);
      await assert.rejects(client.resume(second), (e: unknown) => isApiError(e, "CONTROL_NOT_APPLICABLE") && e.message.includes("PENDING"));
      // Starts without a key share one, named "" where they wait.
      await start("unkeyed-1");
      assert.equal((await pausedOf(await start("unkeyed-2")))?.pendingOnKey, "");

      await eventually("the first to run its state", 30_000, () => held.ran.has(first));
      await client.stop(first, { reason: "contract test" });
      await eventually("the second to take the freed slot", 30_000, async () => (await pausedOf(second)) === undefined);
      const after = await client.list({ filter: { processId: second } });
      assert.equal(after.executions[0]?.pending, false);
      await eventually("the second to run its state", 30_000, () => held.ran.has(second));
      const resumed = await client.history(second, { eventTypes: ["RESUMED"] });
      assert.deepEqual(resumed.events.map((e) => (e.details as { identity?: string }).identity), ["maxRunningExecutions"]);

      for (const pid of started.filter((p) => p !== first)) await client.stop(pid, { reason: "contract test" });
      await client.setFlowLimits(type, null, { reason: "contract test" });
      assert.deepEqual(exchanges.flatMap((e) => check(document, "client -> service", e)), []);
    });

    it("counts a start under the value it writes for the limit's concurrencyKeyAttribute", async () => {
      const exchanges: Exchange[] = [];
      const recording: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        const url = new URL(input instanceof Request ? input.url : String(input));
        exchanges.push({ path: url.pathname, request: parse(typeof init?.body === "string" ? init.body : ""), status: response.status, response: parse(await response.clone().text()) });
        return response;
      };
      await env.db.execute(
        dialect === "postgres"
          ? `CREATE TABLE IF NOT EXISTS ${EXPORTS_TABLE} (id TEXT PRIMARY KEY, customer_id INTEGER)`
          : `CREATE TABLE IF NOT EXISTS ${EXPORTS_TABLE} (id VARCHAR(255) NOT NULL PRIMARY KEY, customer_id INT) ENGINE = InnoDB`,
      );
      const run = randomUUID().slice(0, 8);
      const keyed = new KeyedProcess(`KeyedContract${run}`);
      const keyedWorker = await env.worker(new WorkerService({ onError: () => undefined }).register(keyed).nodeHandler());
      const client = new Client({ serviceUrl: env.server.url, workerUrl: keyedWorker.url, fetch: recording });
      const type = keyed.processType;
      const limits = { maxRunningExecutions: 1, concurrencyKeyAttribute: "customer_id" };

      // The attribute alone, not an identifier, or on a state: refused on its field, nothing set.
      for (const [override, options] of [
        [{ concurrencyKeyAttribute: "customer_id" }, {}],
        [{ maxRunningExecutions: 1, concurrencyKeyAttribute: "customer id" }, {}],
        [{ concurrencyKeyAttribute: "customer_id" }, { stateId: "Held" }],
      ] as const) {
        await assert.rejects(
          client.setFlowLimits(type, override, options),
          (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.message.includes("override.concurrencyKeyAttribute"),
          JSON.stringify([override, options]),
        );
      }
      assert.deepEqual((await client.listFlowLimits(type)).limits, []);
      const entry = await client.setFlowLimits(type, limits, { reason: "contract test" });
      assert.deepEqual(entry.effective, limits);

      const started: string[] = [];
      const pidOf = (name: string) => `keyed-${run}-${name}`;
      const start = async (name: string, customerId?: number, concurrencyKey?: string): Promise<string> => {
        const pid = pidOf(name);
        await client.startProcess(keyed, pid, undefined, {
          globalAttributePkValue: pid,
          ...(customerId === undefined ? {} : { initialGlobalAttributes: { customer_id: customerId } }),
          ...(concurrencyKey === undefined ? {} : { concurrencyKey }),
        });
        started.push(pid);
        return pid;
      };
      const pausedOf = async (pid: string) => (await client.describe(pid)).paused ?? undefined;

      // Two starts writing customer 42: the second waits on the key "42", the value's text.
      const first = await start("first", 42);
      const second = await start("second", 42);
      assert.equal(await pausedOf(first), undefined);
      const hold = await pausedOf(second);
      assert.deepEqual([hold?.pendingOnKey, hold?.identity], ["42", "maxRunningExecutions"]);
      const listed = await client.list({ filter: { processType: type }, pageSize: 1000 });
      const summary = (pid: string) => listed.executions.find((e) => e.processId === pid);
      assert.deepEqual([summary(first)?.pending, summary(second)?.pending], [false, true]);
      assert.equal(Number((await env.db.row(EXPORTS_TABLE, "id", second))?.customer_id), 42);
      // Another customer has a slot of its own; a named key wins over the attribute.
      assert.equal(await pausedOf(await start("other", 43)), undefined);
      assert.equal(await pausedOf(await start("named", 42, `named-${run}`)), undefined);

      // No key and no value for customer_id: refused naming the key, nothing written.
      await assert.rejects(
        start("unkeyed"),
        (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.message.includes("processStartConfig.concurrencyKey") && e.message.includes("customer_id"),
      );
      await assert.rejects(client.describe(pidOf("unkeyed")), (e: unknown) => isApiError(e, "PROCESS_NOT_FOUND"));
      assert.equal(await env.db.row(EXPORTS_TABLE, "id", pidOf("unkeyed")), undefined);

      await eventually("the first to run its state", 30_000, () => keyed.ran.has(first));
      await client.stop(first, { reason: "contract test" });
      await eventually("the second to take customer 42's freed slot", 30_000, async () => (await pausedOf(second)) === undefined);
      await eventually("the second to run its state", 30_000, () => keyed.ran.has(second));

      for (const pid of started.filter((p) => p !== first)) await client.stop(pid, { reason: "contract test" });
      await client.setFlowLimits(type, null, { reason: "contract test" });
      assert.ok(exchanges.some((e) => e.status === 400 && e.path === SERVICE_PATHS.start), "the refused start was exchanged");
      assert.deepEqual(exchanges.flatMap((e) => check(document, "client -> service", e)), []);
    });

    it("starts with a priority (its own, else its type's, declared or overridden), describes, lists, filters and counts by it, and refuses one out of range", async () => {
      const exchanges: Exchange[] = [];
      const recording: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        const url = new URL(input instanceof Request ? input.url : String(input));
        exchanges.push({ path: url.pathname, request: parse(typeof init?.body === "string" ? init.body : ""), status: response.status, response: parse(await response.clone().text()) });
        return response;
      };
      const run = randomUUID().slice(0, 8);
      const held = new HeldProcess(`PriorityContract${run}`);
      const heldWorker = await env.worker(new WorkerService({ onError: () => undefined }).register(held).nodeHandler());
      const client = new Client({ serviceUrl: env.server.url, workerUrl: heldWorker.url, fetch: recording });
      const pidOf = (name: string) => `priority-${run}-${name}`;

      await client.startProcess(held, pidOf("first"), undefined, { priority: 2 });
      await client.startProcess(held, pidOf("default"));
      assert.equal((await client.describe(pidOf("first"))).priority, 2);
      assert.equal((await client.describe(pidOf("default"))).priority, 3);
      await assert.rejects(
        client.startProcess(held, pidOf("out-of-range"), undefined, { priority: 9 }),
        (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.status === 400 && e.message.includes("processStartConfig.priority"),
      );
      await assert.rejects(client.describe(pidOf("out-of-range")), (e: unknown) => isApiError(e, "PROCESS_NOT_FOUND"));

      // Each listed execution answers its priority; a filter on it finds only the one started with it.
      const listed = await client.list({ filter: { processType: held.processType }, pageSize: 1000 });
      const priorities = new Map(listed.executions.map((e) => [e.processId, e.priority]));
      assert.deepEqual(priorities, new Map([[pidOf("first"), 2], [pidOf("default"), 3]]));
      const second: protocol.FilterNode = { field: "priority", op: "=", value: 2 };
      const found = await client.list({ filter: { processType: held.processType }, where: second });
      assert.deepEqual(found.executions.map((e) => [e.processId, e.priority]), [[pidOf("first"), 2]]);
      // Grouped by priority, the groups' values are the numbers themselves.
      const counted = await client.count({ processType: held.processType, groupBy: { field: "priority" } });
      assert.equal(counted.count, 2);
      assert.deepEqual(
        (counted.groups ?? []).map((g) => [g.value, g.count]).sort(([a], [b]) => Number(a) - Number(b)),
        [[2, 1], [3, 1]],
      );
      // A priority that does not exist is refused on the filter's value, by list and count alike.
      const nine: protocol.FilterNode = { field: "priority", op: "=", value: 9 };
      const onValue = (e: unknown) =>
        isApiError(e, "INVALID_REQUEST") && e.status === 400 && e.message.includes("where.value") && e.message.includes("priority 9");
      await assert.rejects(client.list({ filter: { processType: held.processType }, where: nine }), onValue);
      await assert.rejects(client.count({ processType: held.processType, where: nine }), onValue);

      for (const name of ["first", "default"]) await client.stop(pidOf(name), { reason: "contract test" });

      // A type's priority: its definition declares 2, which its starts that name none take
      // (a start's own wins); an operator's override, 1, shows in the answer and the
      // history and applies to the next start; on a state or out of range it is refused
      // on its field, and changes nothing.
      const typed = new PrioritizedProcess(`PriorityTyped${run}`);
      const typedService = new WorkerService({ onError: () => undefined }).register(typed);
      const typedWorker = await env.worker(typedService.nodeHandler());
      await typedService.registerDefinitions(client, { name: "contract-priority", version: run, workerUrl: typedWorker.url });
      const declared = await client.listFlowLimits(typed.processType);
      assert.deepEqual(
        declared.limits.map((e) => [e.stateId ?? null, e.declared, e.override ?? null, e.effective]),
        [[null, { priority: 2 }, null, { priority: 2 }]],
      );
      const typedPids: string[] = [];
      const startTyped = async (name: string, priority?: number): Promise<number | undefined> => {
        const pid = `typed-${run}-${name}`;
        await client.startProcess(typed, pid, undefined, { workerUrl: typedWorker.url, ...(priority === undefined ? {} : { priority }) });
        typedPids.push(pid);
        return (await client.describe(pid)).priority;
      };
      // The registering instance applies the declared priority at once.
      assert.equal(await startTyped("declared"), 2, "a start naming none has the type's");
      assert.equal(await startTyped("own", 4), 4, "a start's own wins");
      const entry = await client.setFlowLimits(typed.processType, { priority: 1 }, { reason: "launch day" });
      assert.deepEqual([entry.declared, entry.override, entry.effective.priority], [{ priority: 2 }, { priority: 1 }, 1]);
      assert.equal(await startTyped("overridden"), 1);
      assert.equal(await startTyped("own-after", 4), 4);
      for (const [override, options] of [
        [{ priority: 1 }, { stateId: "Held" }],
        [{ priority: 0 }, {}],
        [{ priority: 6 }, {}],
      ] as const) {
        await assert.rejects(
          client.setFlowLimits(typed.processType, override, options),
          (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.status === 400 && e.message.includes("override.priority"),
          JSON.stringify([override, options]),
        );
      }
      const history = await client.flowLimitHistory({ processType: typed.processType });
      assert.deepEqual(
        history.changes.map((c) => [c.source, c.stateId ?? null, c.before ?? null, c.after ?? null]),
        [["OPERATOR", null, null, { priority: 1 }], ["DEFINITION", null, null, { priority: 2 }]],
        "the refusals are not among the changes",
      );
      assert.equal(history.changes[0]?.reason, "launch day");
      for (const pid of typedPids) await client.stop(pid, { reason: "contract test" });
      await client.setFlowLimits(typed.processType, null, { reason: "contract test" });

      // The document's bounds refuse the out-of-range requests as the service does (a
      // start's priority, an override's); their answers are the documented 400.
      const refused = (e: Exchange) => e.status === 400 && e.path === SERVICE_PATHS.start;
      const [bad, ...more] = exchanges.filter(refused);
      assert.ok(bad && more.length === 0, "the refused start was exchanged once");
      const problems = check(document, "client -> service", bad);
      assert.equal(problems.length, 1, problems.join("\n"));
      assert.match(problems[0] ?? "", /: request .*processStartConfig\/priority/);
      const refusedSet = (e: Exchange) => e.status === 400 && e.path === FLOW_LIMITS_PATHS.set;
      const setProblems = exchanges.filter(refusedSet).map((e) => check(document, "client -> service", e));
      assert.deepEqual(setProblems.map((p) => p.length), [0, 1, 1], "on a state: a valid request; out of range: not");
      for (const [problem] of setProblems.slice(1)) assert.match(problem ?? "", /: request .*override\/priority/);
      // The refused filters are valid requests by the document (a filter's value is any
      // JSON), refused by the service with its documented 400. Every other exchange validates.
      assert.deepEqual(
        exchanges.filter((e) => e.status === 400 && !refused(e) && !refusedSet(e)).map((e) => e.path),
        [SERVICE_PATHS.list, SERVICE_PATHS.count],
      );
      assert.deepEqual(
        exchanges.filter((e) => !refused(e) && !refusedSet(e)).flatMap((e) => check(document, "client -> service", e)),
        [],
      );
    });

    it("starts with a fairness key and weight, describes them, and refuses a weight out of range or without a key", async () => {
      const exchanges: Exchange[] = [];
      const recording: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        const url = new URL(input instanceof Request ? input.url : String(input));
        exchanges.push({ path: url.pathname, request: parse(typeof init?.body === "string" ? init.body : ""), status: response.status, response: parse(await response.clone().text()) });
        return response;
      };
      const run = randomUUID().slice(0, 8);
      const held = new HeldProcess(`FairnessContract${run}`);
      const heldWorker = await env.worker(new WorkerService({ onError: () => undefined }).register(held).nodeHandler());
      const client = new Client({ serviceUrl: env.server.url, workerUrl: heldWorker.url, fetch: recording });
      const pidOf = (name: string) => `fairness-${run}-${name}`;
      const fairnessOf = async (name: string) => {
        const described = await client.describe(pidOf(name));
        return [described.fairnessKey, described.fairnessWeight];
      };
      const tenant = `tenant-${run}`;

      await client.startProcess(held, pidOf("weighed"), undefined, { fairnessKey: tenant, fairnessWeight: 5 });
      await client.startProcess(held, pidOf("keyed"), undefined, { fairnessKey: tenant });
      await client.startProcess(held, pidOf("plain"));
      assert.deepEqual(await fairnessOf("weighed"), [tenant, 5]);
      assert.deepEqual(await fairnessOf("keyed"), [tenant, 1], "a key without a weight weighs 1");
      assert.deepEqual(await fairnessOf("plain"), [undefined, undefined]);

      const refusals: [string, { fairnessKey?: string; fairnessWeight?: number }, string][] = [
        ["weight-0", { fairnessKey: tenant, fairnessWeight: 0 }, "processStartConfig.fairnessWeight"],
        ["weight-1001", { fairnessKey: tenant, fairnessWeight: 1001 }, "processStartConfig.fairnessWeight"],
        ["weight-alone", { fairnessWeight: 5 }, "processStartConfig.fairnessWeight"],
        ["key-empty", { fairnessKey: "" }, "processStartConfig.fairnessKey"],
      ];
      for (const [name, options, field] of refusals) {
        await assert.rejects(
          client.startProcess(held, pidOf(name), undefined, options),
          (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.status === 400 && e.message.includes(field),
          name,
        );
        await assert.rejects(client.describe(pidOf(name)), (e: unknown) => isApiError(e, "PROCESS_NOT_FOUND"));
      }

      for (const name of ["weighed", "keyed", "plain"]) await client.stop(pidOf(name), { reason: "contract test" });
      // The document's bounds refuse the weights out of range as the service does; a weight
      // without a key and an empty key are valid by the document, refused by the service
      // alone. Their answers are the documented 400; every other exchange validates.
      const refused = (e: Exchange) => e.status === 400 && e.path === SERVICE_PATHS.start;
      const problems = exchanges.filter(refused).map((e) => check(document, "client -> service", e));
      assert.deepEqual(problems.map((p) => p.length), [1, 1, 0, 0], problems.flat().join("\n"));
      for (const [problem] of problems.slice(0, 2)) assert.match(problem ?? "", /: request .*processStartConfig\/fairnessWeight/);
      assert.deepEqual(exchanges.filter((e) => !refused(e)).flatMap((e) => check(document, "client -> service", e)), []);
    });

    it("keys a start by the value it writes for its type's fairnessKeyAttribute (declared or overridden), weighs it by the type's fairnessWeight, and refuses either on a state or out of range", async () => {
      const exchanges: Exchange[] = [];
      const recording: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        const url = new URL(input instanceof Request ? input.url : String(input));
        exchanges.push({ path: url.pathname, request: parse(typeof init?.body === "string" ? init.body : ""), status: response.status, response: parse(await response.clone().text()) });
        return response;
      };
      await env.db.execute(
        dialect === "postgres"
          ? `CREATE TABLE ${TENANT_EXPORTS_TABLE} (id TEXT PRIMARY KEY, tenant_id TEXT)`
          : `CREATE TABLE ${TENANT_EXPORTS_TABLE} (id VARCHAR(255) NOT NULL PRIMARY KEY, tenant_id VARCHAR(255)) ENGINE = InnoDB`,
      );
      const run = randomUUID().slice(0, 8);
      const tenants = new TenantProcess(`TenantContract${run}`);
      const tenantService = new WorkerService({ onError: () => undefined }).register(tenants);
      const tenantWorker = await env.worker(tenantService.nodeHandler());
      const client = new Client({ serviceUrl: env.server.url, workerUrl: tenantWorker.url, fetch: recording });
      await tenantService.registerDefinitions(client, { name: "contract-fairness", version: run, workerUrl: tenantWorker.url });
      const type = tenants.processType;
      const declared = { fairnessKeyAttribute: "tenant_id", fairnessWeight: 3 };
      assert.deepEqual(
        (await client.listFlowLimits(type)).limits.map((e) => [e.stateId ?? null, e.declared, e.override ?? null, e.effective]),
        [[null, declared, null, declared]],
      );

      const started: string[] = [];
      const pidOf = (name: string) => `tenant-${run}-${name}`;
      const tenant = `tenant-${run}`;
      const named = `named-${run}`;
      const start = async (name: string, tenantId?: string, own: { fairnessKey?: string; fairnessWeight?: number } = {}) => {
        const pid = pidOf(name);
        await client.startProcess(tenants, pid, undefined, {
          globalAttributePkValue: pid,
          ...(tenantId === undefined ? {} : { initialGlobalAttributes: { tenant_id: tenantId } }),
          ...own,
        });
        started.push(pid);
        const described = await client.describe(pid);
        return [described.fairnessKey, described.fairnessWeight];
      };
      // The registering instance applies the declared limits at once.
      assert.deepEqual(await start("written", tenant), [tenant, 3], "the written value is the key, weighed by the type");
      assert.equal((await env.db.row(TENANT_EXPORTS_TABLE, "id", pidOf("written")))?.tenant_id, tenant);
      assert.deepEqual(await start("named", tenant, { fairnessKey: named }), [named, 3], "a named key wins, weighed by the type");
      assert.deepEqual(await start("own", tenant, { fairnessKey: named, fairnessWeight: 7 }), [named, 7], "a named weight wins");
      assert.deepEqual(await start("unwritten"), [undefined, undefined], "a start writing no value has no key, and starts");
      // A written value that is no key is refused naming the key; a weight still needs a
      // named key. Nothing is written.
      for (const [name, tenantId, own, field] of [
        ["empty", "", {}, "processStartConfig.fairnessKey"],
        ["weight-alone", tenant, { fairnessWeight: 5 }, "processStartConfig.fairnessWeight"],
      ] as const) {
        await assert.rejects(
          start(name, tenantId, own),
          (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.status === 400 && e.message.includes(field),
          name,
        );
        await assert.rejects(client.describe(pidOf(name)), (e: unknown) => isApiError(e, "PROCESS_NOT_FOUND"));
        assert.equal(await env.db.row(TENANT_EXPORTS_TABLE, "id", pidOf(name)), undefined);
      }

      // An operator's override keys by the primary key instead; replacing the declared
      // limits whole, it leaves keyed starts weighing 1. The next start has both.
      const byExport = { fairnessKeyAttribute: "id" };
      const entry = await client.setFlowLimits(type, byExport, { reason: "fair per export" });
      assert.deepEqual([entry.declared, entry.override, entry.effective], [declared, byExport, byExport]);
      assert.deepEqual(await start("overridden", tenant), [pidOf("overridden"), 1]);
      for (const [override, options, field] of [
        [{ fairnessKeyAttribute: "tenant_id" }, { stateId: "Held" }, "override.fairnessKeyAttribute"],
        [{ fairnessKeyAttribute: "tenant id" }, {}, "override.fairnessKeyAttribute"],
        [{ fairnessWeight: 2 }, { stateId: "Held" }, "override.fairnessWeight"],
        [{ fairnessWeight: 0 }, {}, "override.fairnessWeight"],
        [{ fairnessWeight: 1001 }, {}, "override.fairnessWeight"],
      ] as const) {
        await assert.rejects(
          client.setFlowLimits(type, override, options),
          (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.status === 400 && e.message.includes(field),
          JSON.stringify([override, options]),
        );
      }
      const history = await client.flowLimitHistory({ processType: type });
      assert.deepEqual(
        history.changes.map((c) => [c.source, c.stateId ?? null, c.before ?? null, c.after ?? null]),
        [["OPERATOR", null, null, byExport], ["DEFINITION", null, null, declared]],
        "the refusals are not among the changes",
      );

      for (const pid of started) await client.stop(pid, { reason: "contract test" });
      await client.setFlowLimits(type, null, { reason: "contract test" });
      // The document's bounds refuse the weights out of range as the service does; the
      // other refusals are valid requests, refused by the service alone. Their answers are
      // the documented 400; every other exchange validates.
      const refusedSet = (e: Exchange) => e.status === 400 && e.path === FLOW_LIMITS_PATHS.set;
      const setProblems = exchanges.filter(refusedSet).map((e) => check(document, "client -> service", e));
      assert.deepEqual(setProblems.map((p) => p.length), [0, 0, 0, 1, 1], setProblems.flat().join("\n"));
      for (const [problem] of setProblems.slice(3)) assert.match(problem ?? "", /: request .*override\/fairnessWeight/);
      assert.equal(exchanges.filter((e) => e.status === 400 && e.path === SERVICE_PATHS.start).length, 2);
      assert.deepEqual(exchanges.filter((e) => !refusedSet(e)).flatMap((e) => check(document, "client -> service", e)), []);
    });

    it("lists by a business column with `where`, and `explain` names the index the filter lacks", async () => {
      await env.db.execute(
        dialect === "postgres"
          ? `CREATE TABLE ${SCORES_TABLE} (id TEXT PRIMARY KEY, score INTEGER)`
          : `CREATE TABLE ${SCORES_TABLE} (id VARCHAR(255) NOT NULL PRIMARY KEY, score INT) ENGINE = InnoDB`,
      );
      const scoredWorker = await env.worker(new WorkerService({ onError: () => undefined }).register(new ScoredProcess()).nodeHandler());
      const lists: Exchange[] = [];
      const recording: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        const url = new URL(input instanceof Request ? input.url : String(input));
        if (url.pathname === SERVICE_PATHS.list) {
          const text = await response.clone().text();
          lists.push({ path: url.pathname, request: parse(typeof init?.body === "string" ? init.body : ""), status: response.status, response: parse(text) });
        }
        return response;
      };
      const client = new Client({ serviceUrl: env.server.url, workerUrl: scoredWorker.url, fetch: recording });
      const run = randomUUID().slice(0, 8);
      for (const score of [5, 50, 500]) {
        const pid = `scored-${run}-${score}`;
        await client.startProcess(ScoredProcess, pid, undefined, { globalAttributePkValue: pid, initialGlobalAttributes: { score } });
        assert.equal((await client.waitForCompletion(pid, { timeoutMs: 20_000 })).status, "COMPLETED");
      }

      // No registered definition declares the table: the request names it.
      const request: protocol.ProcessExecutionListRequest = {
        filter: { processType: "ScoredProcess" },
        where: { and: [{ column: "score", op: ">=", value: 50 }, { field: "processId", op: "PREFIX", value: `scored-${run}-` }] },
        businessTable: { tableName: SCORES_TABLE, primaryKeyColumn: "id" },
      };
      const listed = await client.list(request);
      assert.deepEqual(listed.executions.map((e) => e.processId), [`scored-${run}-500`, `scored-${run}-50`]);
      assert.equal(listed.plan ?? undefined, undefined);

      const explained = await client.list({ ...request, explain: true });
      assert.deepEqual(explained.executions, []);
      const plan: protocol.QueryPlan | null | undefined = explained.plan;
      assert.ok(plan, "a plan");
      // Quoted as the dialect quotes (`"` or a backtick), the index named.
      const q = (name: string): string => `["\`]${name}["\`]`;
      const index = new RegExp(`CREATE INDEX ${q(`${SCORES_TABLE}_score`)} ON ${q(SCORES_TABLE)} \\(${q("score")}\\)`);
      assert.ok(plan.advice.some((a) => index.test(a)), JSON.stringify(plan.advice));
      assert.ok(typeof plan.plan === "object" && plan.plan !== null, "the database's own plan");

      await assert.rejects(
        client.list({ filter: { processType: "ScoredProcess" }, explain: true }),
        (e: unknown) => isApiError(e, "INVALID_REQUEST") && e.status === 400 && e.message.includes("explain"),
      );

      assert.deepEqual(lists.map((e) => e.status), [200, 200, 400]);
      assert.deepEqual(lists.flatMap((e) => check(document, "client -> service", e)), []);
    });
  });
}

function parse(text: string): unknown {
  return text.length === 0 ? undefined : JSON.parse(text);
}

const validators = new WeakMap<OpenApiDocument, Ajv2020>();

/** What of `exchange` the document does not describe, or does not accept. */
function check(document: OpenApiDocument, side: string, exchange: Exchange): string[] {
  let ajv = validators.get(document);
  if (!ajv) {
    ajv = new Ajv2020({ strict: false, allErrors: true, formats: { int32: true, int64: true, double: true, float: true } });
    ajv.addSchema({ $id: "openapi.json", components: document.components });
    validators.set(document, ajv);
  }
  const where = `${side} ${exchange.path} (HTTP ${exchange.status})`;
  const operation = document.paths[exchange.path]?.post;
  if (!operation) return [`${where}: the path is not in the document`];
  const problems: string[] = [];
  const validate = (what: string, schema: unknown, value: unknown): void => {
    const rebased = JSON.parse(JSON.stringify(schema).replaceAll('"$ref":"#/', '"$ref":"openapi.json#/')) as object;
    const validator = ajv.compile(rebased);
    if (!validator(value)) {
      problems.push(`${where}: ${what} ${JSON.stringify(value)} does not validate: ${ajv.errorsText(validator.errors)}`);
    }
  };
  const requestSchema = operation.requestBody?.content?.["application/json"]?.schema;
  if (requestSchema) validate("request", requestSchema, exchange.request);
  const response = operation.responses[String(exchange.status)] ?? operation.responses.default;
  if (!response) return [...problems, `${where}: the status is not documented`];
  const responseSchema = response.content?.["application/json"]?.schema;
  if (responseSchema) {
    validate("response", responseSchema, exchange.response);
  } else if (exchange.response !== undefined && JSON.stringify(exchange.response) !== "{}") {
    // stop and publish answer `{}` while the document declares no body for their 200.
    problems.push(`${where}: an undocumented response body ${JSON.stringify(exchange.response)}`);
  }
  return problems;
}
