// The web console's situation filters and batch dialogs in headless Chromium against the
// real xdb-server on PostgreSQL and workers built with the TypeScript SDK: the list's
// backing-off cell and a query-builder row on the execution's situation; a batch started
// at a rate of one per second (a bad rate refused first) and cancelled while it runs; then
// batches through the move-to-deployment, publish-to-local-queue, reset and reprioritize
// dialogs (the last with the service's refusal on its field, and an execution the change
// does not apply to skipped), each outcome checked on the page and through the API.
// Writes docs/console/batch-cancelled.png.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { Client, WorkerService } from "@xdb/sdk";
import type { Browser, Page } from "playwright-core";

import { REPO_ROOT, TestDatabase, TestWorker, XdbServer, eventually, launchBrowser } from "./harness.js";
import { ChargeProcess, ORDER_DEFINITION, OrderProcess, SignupProcess } from "./processes.js";

const SOON = 30_000;
const SCREENSHOTS = join(REPO_ROOT, "docs", "console");
const WAITING = ["wait-01", "wait-02", "wait-03", "wait-04", "wait-05", "wait-06", "wait-07", "wait-08", "wait-09", "wait-10", "wait-11", "wait-12"];
const ORDERS = ["order-a", "order-b", "order-c"];

describe("web console batches", () => {
  let db: TestDatabase;
  let server: XdbServer;
  let worker: TestWorker;
  let shop: TestWorker;
  let shopNext: TestWorker;
  let browser: Browser;
  let page: Page;
  let client: Client;

  const register = async (version: string, workerUrl: string) => {
    const registered = await fetch(`${server.url}/api/v1/xdb/service/definitions/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ deployment: { name: "shop-worker", version, workerUrl }, definitions: [ORDER_DEFINITION] }),
    });
    assert.equal(registered.status, 200, await registered.clone().text());
  };
  /** The batch the page shows (`#/batch/<id>`). */
  const shownBatchId = () => decodeURIComponent(new URL(page.url()).hash.replace(/^#\/batch\//, ""));
  /** Starts a batch from the list showing `query`: the operation, then `fill` the fields. */
  const startBatch = async (query: string, operation: string, expected: number, fill: () => Promise<void>) => {
    await page.goto(`${server.url}/ui/#/executions?${query}`);
    await eventually(`the list to show ${expected}`, SOON, async () => (await page.getByTestId("execution-row").count()) === expected);
    await page.getByTestId("batch-start").click();
    await page.getByTestId("field-operation").selectOption(operation);
    await page.getByTestId("confirm").click();
    await page.getByTestId("dialog").filter({ hasText: `${operation} ${expected} execution` }).waitFor();
    await fill();
    await page.getByTestId("confirm").click();
    await page.getByTestId("batch-status").waitFor();
    return shownBatchId();
  };
  const where = (text: string) => encodeURIComponent(text);

  before(async () => {
    db = await TestDatabase.create();
    server = await XdbServer.start(db);
    worker = await TestWorker.start(
      new WorkerService({ onError: () => undefined }).register(new SignupProcess()).register(new ChargeProcess()).nodeHandler(),
    );
    shop = await TestWorker.start(new WorkerService({ onError: () => undefined }).register(new OrderProcess()).nodeHandler());
    shopNext = await TestWorker.start(new WorkerService({ onError: () => undefined }).register(new OrderProcess()).nodeHandler());
    client = new Client({ serviceUrl: server.url, workerUrl: worker.url });
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    page.setDefaultTimeout(SOON);
    mkdirSync(SCREENSHOTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await worker?.stop();
    await shop?.stop();
    await shopNext?.stop();
    await db?.drop();
  });

  it("shows a call backing off in the list and finds it with a situation row of the query builder", async () => {
    await client.startProcess(ChargeProcess, "charge-zed", undefined, {
      globalAttributePkValue: "zed",
      initialGlobalAttributes: { form: { email: "zed@example.com" }, status: "waiting" },
    });
    await client.startProcess(SignupProcess, "signup-amy", undefined, {
      globalAttributePkValue: "amy",
      initialGlobalAttributes: { form: { email: "amy@example.com" }, status: "waiting" },
    });
    await page.goto(`${server.url}/ui/#/executions`);
    const charge = page.locator('[data-testid=execution-row][data-process-id="charge-zed"]');
    // The first attempt failed; the second waits an hour.
    await charge.getByTestId("backing-off-attempt").filter({ hasText: "attempt 2" }).waitFor();
    assert.match((await charge.getByTestId("backing-off-next").textContent()) ?? "", /^in (59m|1h)/);
    assert.match((await charge.getByTestId("backing-off-next").getAttribute("title")) ?? "", /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    const error = charge.getByTestId("backing-off-error");
    // The last error as the history records it.
    assert.equal(await error.textContent(), "worker answered HTTP 500: the card provider is down (attempt 1)");
    assert.equal(await error.getAttribute("title"), "worker answered HTTP 500: the card provider is down (attempt 1)");
    assert.equal(await charge.getAttribute("class"), "attention");
    const signup = page.locator('[data-testid=execution-row][data-process-id="signup-amy"]');
    assert.equal(await signup.getByTestId("backing-off").count(), 0);

    await page.getByTestId("where-add").click();
    const row = page.getByTestId("where-row").nth(0);
    await row.getByTestId("where-name").selectOption("backingOff");
    assert.deepEqual(await row.locator("[data-testid=where-op] option").allTextContents(), ["=", "!="]);
    assert.equal(await row.getByTestId("where-value").inputValue(), "true");
    assert.equal(await page.getByTestId("where-text").inputValue(), "execution.backingOff = true");
    await page.getByTestId("apply-filter").click();
    await eventually("charge-zed alone", SOON, async () => {
      const shown = page.getByTestId("execution-row");
      return (await shown.count()) === 1 && (await shown.getAttribute("data-process-id")) === "charge-zed";
    });
    assert.equal((await client.count({ where: { field: "backingOff", op: "=", value: true } })).count, 1);

    // Waiting on a queue, by its name: the sign-up waits on `verify`.
    await row.getByTestId("where-name").selectOption("waitingOnQueue");
    await row.getByTestId("where-value").fill("verify");
    assert.equal(await page.getByTestId("where-text").inputValue(), "execution.waitingOnQueue = 'verify'");
    await page.getByTestId("apply-filter").click();
    await eventually("signup-amy alone", SOON, async () => {
      const shown = page.getByTestId("execution-row");
      return (await shown.count()) === 1 && (await shown.getAttribute("data-process-id")) === "signup-amy";
    });
    await client.stop("charge-zed");
    await client.stop("signup-amy");
  });

  it("refuses a rate out of bounds, then cancels a batch running at one execution per second", async () => {
    for (const id of WAITING) {
      await client.startProcess(SignupProcess, id, undefined, {
        globalAttributePkValue: id,
        initialGlobalAttributes: { form: { email: `${id}@example.com` }, status: "waiting" },
      });
    }
    const query = `where=${where("execution.processId like 'wait-%' and execution.waitingOnTimer = true")}`;
    const batchId = await startBatch(query, "PAUSE", WAITING.length, async () => {
      await page.getByTestId("field-rate").fill("0");
      await page.getByTestId("confirm").click();
      await page.getByTestId("dialog-error").filter({ hasText: "The rate 0 is not one the service takes" }).filter({ hasText: "1 to 10000" }).waitFor();
      await page.getByTestId("field-rate").fill("1");
      await page.getByTestId("field-reason").fill("slowly");
    });
    await page.getByTestId("batch-rate").filter({ hasText: "1 per second at most" }).waitFor();
    await page.locator("[data-testid=batch-status]", { hasText: "RUNNING" }).waitFor();
    // It has paused one or two by the time it is cancelled.
    await eventually("the batch to pause its first execution", SOON, async () => Number(await page.getByTestId("batch-done").textContent()) >= 1);
    await page.getByTestId("batch-cancel").click();
    await page.getByTestId("field-reason").fill("wrong selection");
    await page.getByTestId("confirm").click();
    await page.locator("[data-testid=batch-status]", { hasText: "CANCELLED" }).waitFor();
    await page.getByTestId("batch-cancel").waitFor({ state: "detached" });

    const described = await client.describeBatch(batchId);
    assert.equal(described.batch.status, "CANCELLED");
    assert.equal(described.batch.ratePerSecond, 1);
    assert.equal(described.batch.request.ratePerSecond, 1);
    assert.match(described.batch.error ?? "", /wrong selection/);
    assert.ok(described.batch.matched < WAITING.length, `cancelled before the end: ${described.batch.matched} of ${WAITING.length}`);
    assert.ok(described.batch.done >= 1, `paused some before the cancel: ${described.batch.done}`);
    // What it did stays done: as many paused as the batch says it did.
    const paused = { and: [{ field: "processId" as const, op: "PREFIX" as const, value: "wait-" }, { field: "paused" as const, op: "=" as const, value: true }] };
    await eventually("the paused count to match the batch's", SOON, async () => {
      const done = (await client.describeBatch(batchId)).batch.done;
      return (await client.count({ where: paused })).count === done;
    });
    // The page stops following a batch once it is no longer running, and the driver
    // recounts after it sees the cancel: a call in flight may land after the page's
    // last look. A fresh look shows the final count.
    await eventually("the page to show the batch's final count", SOON, async () => {
      await page.reload();
      await page.locator("[data-testid=batch-status]", { hasText: "CANCELLED" }).waitFor();
      const done = (await client.describeBatch(batchId)).batch.done;
      return (await page.getByTestId("batch-done").textContent()) === String(done);
    });
    await eventually("the earlier notices to go", SOON, async () => (await page.getByTestId("notice-ok").count()) === 0);
    await page.screenshot({ path: join(SCREENSHOTS, "batch-cancelled.png") });

    await page.goto(`${server.url}/ui/#/batches`);
    const listed = page.locator(`[data-testid=batch-row][data-batch-id="${batchId}"]`);
    await listed.filter({ hasText: "CANCELLED" }).waitFor();
    assert.equal(await listed.getByTestId("batch-row-rate").textContent(), "1");
    for (const id of WAITING) await client.stop(id);
  });

  it("moves executions to another deployment, publishes to their queue and resets them, each through its dialog", async () => {
    await register("1.0.0", shop.url);
    const orders = new Client({ serviceUrl: server.url, workerUrl: shop.url });
    for (const id of ORDERS) {
      await orders.startProcess(OrderProcess, id, undefined, { globalAttributePkValue: id, initialGlobalAttributes: { form: { item: "lamp" } } });
    }
    const waitingOnShipped = { field: "waitingOnQueue" as const, op: "=" as const, value: "shipped" };
    await eventually("the orders to wait for their shipment", SOON, async () => (await client.count({ processType: "OrderProcess", where: waitingOnShipped })).count === 3);
    await register("2.0.0", shopNext.url);

    // Move: the executions still on 1.0.0, found by their deployment.
    const moveId = await startBatch(`type=OrderProcess&where=${where("execution.deploymentVersion = '1.0.0'")}`, "MOVE_TO_DEPLOYMENT", 3, async () => {
      assert.deepEqual(
        (await page.locator("[data-testid=suggestions-deployment] option").evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value))).sort(),
        ["shop-worker@1.0.0", "shop-worker@2.0.0"],
      );
      await page.getByTestId("field-deployment").fill("shop-worker@2.0.0");
      await page.getByTestId("field-rate").fill("50");
    });
    await page.locator("[data-testid=batch-status]", { hasText: "COMPLETED" }).waitFor();
    assert.equal(await page.getByTestId("batch-done").textContent(), "3");
    await page.getByTestId("batch-rate").filter({ hasText: "50 per second at most" }).waitFor();
    assert.equal((await client.describeBatch(moveId)).batch.done, 3);
    for (const id of ORDERS) assert.equal((await client.describe(id)).workerUrl, shopNext.url, id);
    assert.equal((await client.count({ processType: "OrderProcess", where: { field: "deploymentVersion", op: "=", value: "2.0.0" } })).count, 3);

    // Publish: two of the orders waiting on `shipped` get their shipment.
    const publishWhere = "execution.waitingOnQueue = 'shipped' and execution.processId in ('order-a', 'order-b')";
    const publishId = await startBatch(`type=OrderProcess&where=${where(publishWhere)}`, "PUBLISH_TO_LOCAL_QUEUE", 2, async () => {
      await page.getByTestId("field-queue").fill("shipped");
      await page.getByTestId("field-payload").fill("{");
      await page.getByTestId("confirm").click();
      await page.getByTestId("dialog-error").filter({ hasText: "The payload is not JSON" }).waitFor();
      await page.getByTestId("field-payload").fill('{"by": "batch"}');
      await page.getByTestId("field-reason").fill("shipped together");
    });
    await page.locator("[data-testid=batch-status]", { hasText: "COMPLETED" }).waitFor();
    assert.equal(await page.getByTestId("batch-done").textContent(), "2");
    assert.equal((await client.describeBatch(publishId)).batch.request.messages?.[0]?.queueName, "shipped");
    await eventually("order-a and order-b to complete", SOON, async () =>
      (await client.describe("order-a")).status === "COMPLETED" && (await client.describe("order-b")).status === "COMPLETED",
    );
    assert.equal((await client.describe("order-c")).status, "RUNNING");
    await page.goto(`${server.url}/ui/#/executions?status=COMPLETED&type=OrderProcess`);
    await eventually("the two shipped orders in the list", SOON, async () => (await page.getByTestId("execution-row").count()) === 2);

    // Reset: the completed orders start again at ShipState, waiting for another shipment.
    const closed = { a: (await client.describe("order-a")).processExecutionId, b: (await client.describe("order-b")).processExecutionId };
    const resetId = await startBatch("status=COMPLETED&type=OrderProcess", "RESET", 2, async () => {
      await page.getByTestId("field-state").fill("ShipState");
      await page.getByTestId("field-reason").fill("ship again");
    });
    await page.locator("[data-testid=batch-status]", { hasText: "COMPLETED" }).waitFor();
    assert.equal(await page.getByTestId("batch-done").textContent(), "2");
    assert.equal((await client.describeBatch(resetId)).batch.request.reset?.stateId, "ShipState");
    await eventually("the reset orders to wait for a shipment again", SOON, async () => (await client.count({ processType: "OrderProcess", where: waitingOnShipped })).count === 3);
    for (const [id, before] of [["order-a", closed.a], ["order-b", closed.b]] as const) {
      const reset = await client.describe(id);
      assert.equal(reset.status, "RUNNING", id);
      assert.notEqual(reset.processExecutionId, before, id);
    }
    await page.goto(`${server.url}/ui/#/executions?type=OrderProcess&where=${where("execution.waitingOnQueue = 'shipped'")}`);
    await eventually("the three orders waiting in the list", SOON, async () => (await page.getByTestId("execution-row").count()) === 3);
  });

  it("reprioritizes every matching execution through its dialog, the service's refusal on its field, skipping those a change does not apply to", async () => {
    const fair = ["fair-1", "fair-2", "fair-3"];
    for (const id of [...fair, "fair-4"]) {
      await client.startProcess(SignupProcess, id, undefined, {
        globalAttributePkValue: id,
        initialGlobalAttributes: { form: { email: `${id}@example.com` }, status: "waiting" },
      });
    }
    const described = async (id: string) => {
      const answer = await fetch(`${server.url}/api/v1/xdb/service/process-execution/describe`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ processId: id }),
      });
      assert.equal(answer.status, 200, await answer.clone().text());
      const d = (await answer.json()) as { priority?: number; fairnessKey?: string; fairnessWeight?: number };
      return [d.priority, d.fairnessKey ?? null, d.fairnessWeight ?? null];
    };

    // Priority 1 and a fairness key for three of them; a weight of 0 refused first by the
    // service, on the weight, the dialog open with what was typed.
    const firstWhere = "execution.processId in ('fair-1', 'fair-2', 'fair-3')";
    const keyedId = await startBatch(`where=${where(firstWhere)}`, "REPRIORITIZE", 3, async () => {
      assert.deepEqual(await page.locator("[data-testid=field-priority] option").allTextContents(), ["as it is", "1 (claimed first)", "2", "3 (default)", "4", "5 (claimed last)"]);
      await page.getByTestId("confirm").click();
      await page.getByTestId("dialog-error").filter({ hasText: "Nothing to change" }).waitFor();
      await page.getByTestId("field-priority").selectOption("1");
      await page.getByTestId("field-fairnessKey").fill("tenant-acme");
      await page.getByTestId("field-fairnessWeight").fill("0");
      await page.getByTestId("confirm").click();
      await page.getByTestId("dialog-error").filter({ hasText: "The batch did not start" }).filter({ hasText: "reprioritize.fairnessWeight" }).waitFor();
      assert.equal(await page.getByTestId("field-fairnessWeight").getAttribute("aria-invalid"), "");
      assert.equal(await page.getByTestId("field-fairnessKey").inputValue(), "tenant-acme");
      await page.getByTestId("field-fairnessWeight").fill("2");
      await page.getByTestId("field-reason").fill("acme first");
    });
    await page.locator("[data-testid=batch-status]", { hasText: "COMPLETED" }).waitFor();
    assert.equal(await page.getByTestId("batch-done").textContent(), "3");
    assert.equal(await page.getByTestId("batch-reprioritize").textContent(), "priority 1 · fairness key tenant-acme (weight 2)");
    assert.deepEqual((await client.describeBatch(keyedId)).batch.request.reprioritize, { priority: 1, fairnessKey: "tenant-acme", fairnessWeight: 2 });
    for (const id of fair) assert.deepEqual(await described(id), [1, "tenant-acme", 2], id);
    assert.deepEqual(await described("fair-4"), [3, null, null]);
    // The list finds them by their new priority; each page reads the change in its history.
    await page.goto(`${server.url}/ui/#/executions?where=${where("execution.processId like 'fair-%' and execution.priority = 1")}`);
    await eventually("the three reprioritized in the list", SOON, async () => (await page.getByTestId("execution-row").count()) === 3);
    await page.goto(`${server.url}/ui/#/execution/fair-2`);
    await page
      .locator("[data-testid=history-event][data-event-type=REPRIORITIZED] [data-testid=history-summary]")
      .filter({ hasText: /^priority 3 → 1 · fairness key none → tenant-acme \(weight 2\) — acme first \(by console\)$/ })
      .waitFor();

    // A weight alone weighs the key each has: fair-4 has none, and is skipped.
    const weightId = await startBatch(`where=${where("execution.processId like 'fair-%'")}`, "REPRIORITIZE", 4, async () => {
      await page.getByTestId("field-fairnessWeight").fill("4");
    });
    await page.locator("[data-testid=batch-status]", { hasText: "COMPLETED" }).waitFor();
    assert.equal(await page.getByTestId("batch-done").textContent(), "3");
    assert.equal(await page.getByTestId("batch-skipped").textContent(), "1");
    assert.equal(await page.getByTestId("batch-reprioritize").textContent(), "fairness weight 4");
    await page.getByTestId("batch-not-done").filter({ hasText: "no fairness key to weigh" }).waitFor();
    assert.equal((await client.describeBatch(weightId)).batch.skipped, 1);
    for (const id of fair) assert.deepEqual(await described(id), [1, "tenant-acme", 4], id);
    assert.deepEqual(await described("fair-4"), [3, null, null]);

    // Removing the keys: the checkbox turns the key and weight off.
    await startBatch(`where=${where("execution.processId like 'fair-%'")}`, "REPRIORITIZE", 4, async () => {
      await page.getByTestId("field-removeKey").check();
      assert.equal(await page.getByTestId("field-fairnessKey").isDisabled(), true);
      await page.getByTestId("field-priority").selectOption("5");
    });
    await page.locator("[data-testid=batch-status]", { hasText: "COMPLETED" }).waitFor();
    assert.equal(await page.getByTestId("batch-done").textContent(), "4");
    assert.equal(await page.getByTestId("batch-reprioritize").textContent(), "priority 5 · no fairness key");
    for (const id of [...fair, "fair-4"]) assert.deepEqual(await described(id), [5, null, null], id);
    for (const id of [...fair, "fair-4"]) await client.stop(id);
  });
});
