// The web console's flow limits in headless Chromium against the real xdb-server on
// PostgreSQL: the limits a registered definition declares (calls a second and at once, and
// the type's running executions per key, keyed by a global attribute, its priority, and its
// fairness key attribute and weight), listed per type and state; an override of both set
// through the page's form after the service refused a rate of 0, a state the type lacks, a
// concurrency of 0, running executions of 0 for the type, a concurrency key attribute that
// is no column name, a fairness weight of 0 and a fairness key attribute that is no column
// name (each 400 shown on its field, changing nothing; the running-executions,
// key-attribute, priority and fairness fields are off for a state, and the form refuses the
// concurrency key attribute without a max); the type's running limit keyed by another
// attribute, fair by a third with its weight, in one request (an override replaces the
// declared limits whole: the declared priority with them); no limit for the whole type;
// the audit history; and the override cleared, so the declared limit applies again.
// Each step is checked on the page and through the API. Writes docs/console/flow-limits.png.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { Client } from "@xdb/sdk";
import type { Browser, Page } from "playwright-core";

import { REPO_ROOT, TestDatabase, XdbServer, eventually, launchBrowser } from "./harness.js";
import { TICK_DEFINITION } from "./processes.js";

const SOON = 30_000;
const SCREENSHOTS = join(REPO_ROOT, "docs", "console");
/** The type's declared limits, as the page reads them. */
const DECLARED = "20 calls/s, 4 running per customer_id, priority 2, fair by tenant_id, fairness weight 2";
/** The type's override: running executions keyed by one attribute, fairness by another. */
const KEYED = "2 running per tenant_id, fair by region, fairness weight 3";

describe("web console flow limits", () => {
  let db: TestDatabase;
  let server: XdbServer;
  let browser: Browser;
  let page: Page;
  let client: Client;

  const row = (stateId: string) => page.locator(`[data-testid=flow-limit-row][data-process-type=TickProcess][data-state-id="${stateId}"]`);
  const cell = async (stateId: string, name: string) => row(stateId).getByTestId(`flow-limit-${name}`).textContent();
  /** Fills the form's `fields` (by name) and sends it. */
  const submit = async (fields: Record<string, string>) => {
    for (const [name, value] of Object.entries(fields)) {
      const field = page.getByTestId(`flow-limit-${name}`);
      if ((await field.evaluate((e) => e.tagName)) === "SELECT") await field.selectOption(value);
      else await field.fill(value);
    }
    await page.getByTestId("flow-limit-submit").click();
  };
  const limitOf = async (stateId?: string) => (await client.listFlowLimits("TickProcess")).limits.find((e) => (e.stateId ?? undefined) === stateId);

  before(async () => {
    db = await TestDatabase.create();
    server = await XdbServer.start(db);
    client = new Client({ serviceUrl: server.url });
    const definition = {
      ...TICK_DEFINITION,
      flowLimits: {
        maxCallsPerSecond: 20,
        maxRunningExecutions: 4,
        concurrencyKeyAttribute: "customer_id",
        priority: 2,
        fairnessKeyAttribute: "tenant_id",
        fairnessWeight: 2,
      },
      states: TICK_DEFINITION.states.map((s) => ({ ...s, flowLimits: { maxCallsPerSecond: 0.5, maxConcurrentCalls: 4 } })),
    };
    const deployment = { name: "tick-worker", version: "1.0.0", workerUrl: "http://127.0.0.1:9/tick" };
    const registered = await fetch(`${server.url}/api/v1/xdb/service/definitions/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ deployment, definitions: [definition] }),
    });
    assert.equal(registered.status, 200, await registered.clone().text());
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    page.setDefaultTimeout(SOON);
    mkdirSync(SCREENSHOTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    await db?.drop();
  });

  it("lists declared limits, refuses bad overrides on their field, sets and clears one, and shows the history", async () => {
    await page.goto(`${server.url}/ui/#/flow-limits`);
    await page.locator("nav a.active", { hasText: "Flow limits" }).waitFor();
    await row("TickState").waitFor();
    assert.equal(await cell("", "declared"), DECLARED);
    assert.equal(await cell("", "effective"), DECLARED);
    assert.equal(await cell("TickState", "declared"), "0.5 calls/s, 4 at once");
    assert.equal(await cell("TickState", "override"), "—");
    assert.equal(await cell("TickState", "effective"), "0.5 calls/s, 4 at once");

    // "Change" on the state's row fills the form with its type and state.
    await row("TickState").getByTestId("flow-limit-edit").click();
    assert.equal(await page.getByTestId("flow-limit-processType").inputValue(), "TickProcess");
    assert.equal(await page.getByTestId("flow-limit-stateId").inputValue(), "TickState");
    // Running executions are a type's limit: their fields are off for a state.
    assert.equal(await page.getByTestId("flow-limit-maxRunningExecutions").isDisabled(), true);
    assert.equal(await page.getByTestId("flow-limit-concurrencyKeyAttribute").isDisabled(), true);
    assert.equal(await page.getByTestId("flow-limit-priority").isDisabled(), true);
    assert.equal(await page.getByTestId("flow-limit-fairnessKeyAttribute").isDisabled(), true);
    assert.equal(await page.getByTestId("flow-limit-fairnessWeight").isDisabled(), true);
    // A rate of 0: the service's 400, on the rate's field; nothing changed.
    await submit({ action: "limits", maxCallsPerSecond: "0", reason: "mail API throttles" });
    await page.getByTestId("flow-limit-error").filter({ hasText: "The service refused the change: " }).filter({ hasText: "maxCallsPerSecond" }).waitFor();
    assert.equal(await page.getByTestId("flow-limit-maxCallsPerSecond").getAttribute("aria-invalid"), "");
    assert.equal((await limitOf("TickState"))?.override ?? undefined, undefined);
    // A state the type does not have: the 400 on the state's field.
    await submit({ stateId: "NoSuchState", maxCallsPerSecond: "5" });
    await page.getByTestId("flow-limit-error").filter({ hasText: "stateId" }).waitFor();
    assert.equal(await page.getByTestId("flow-limit-stateId").getAttribute("aria-invalid"), "");
    assert.equal(await page.getByTestId("flow-limit-maxCallsPerSecond").getAttribute("aria-invalid"), null);
    // A concurrency of 0: the 400 names override.maxConcurrentCalls, on its field.
    await submit({ stateId: "TickState", maxConcurrentCalls: "0" });
    await page.getByTestId("flow-limit-error").filter({ hasText: "override.maxConcurrentCalls" }).waitFor();
    assert.equal(await page.getByTestId("flow-limit-maxConcurrentCalls").getAttribute("aria-invalid"), "");
    assert.equal(await page.getByTestId("flow-limit-stateId").getAttribute("aria-invalid"), null);
    assert.equal((await limitOf("TickState"))?.override ?? undefined, undefined);
    // Running executions of 0 for the type: the 400 names override.maxRunningExecutions, on its field.
    await submit({ stateId: "", maxConcurrentCalls: "", maxRunningExecutions: "0" });
    await page.getByTestId("flow-limit-error").filter({ hasText: "override.maxRunningExecutions" }).waitFor();
    assert.equal(await page.getByTestId("flow-limit-maxRunningExecutions").getAttribute("aria-invalid"), "");
    assert.equal((await limitOf(undefined))?.override ?? undefined, undefined);
    assert.equal(await page.getByTestId("flow-limit-concurrencyKeyAttribute").isDisabled(), false);
    assert.equal(await page.getByTestId("flow-limit-fairnessKeyAttribute").isDisabled(), false);
    assert.equal(await page.getByTestId("flow-limit-fairnessWeight").isDisabled(), false);
    // The attribute without a max: the form refuses it before sending, on the max's field.
    await submit({ maxRunningExecutions: "", concurrencyKeyAttribute: "tenant_id" });
    await page.getByTestId("flow-limit-error").filter({ hasText: "keys the running-executions limit" }).waitFor();
    assert.doesNotMatch((await page.getByTestId("flow-limit-error").textContent()) ?? "", /service refused/);
    assert.equal(await page.getByTestId("flow-limit-maxRunningExecutions").getAttribute("aria-invalid"), "");
    // An attribute that is no column name: the 400 names override.concurrencyKeyAttribute, on its field.
    await submit({ maxRunningExecutions: "2", concurrencyKeyAttribute: "tenant id" });
    await page.getByTestId("flow-limit-error").filter({ hasText: "override.concurrencyKeyAttribute" }).waitFor();
    assert.equal(await page.getByTestId("flow-limit-concurrencyKeyAttribute").getAttribute("aria-invalid"), "");
    assert.equal(await page.getByTestId("flow-limit-maxRunningExecutions").getAttribute("aria-invalid"), null);
    assert.equal((await limitOf(undefined))?.override ?? undefined, undefined);
    // A fairness weight of 0: the 400 names override.fairnessWeight, on its field.
    await submit({ concurrencyKeyAttribute: "tenant_id", fairnessWeight: "0" });
    await page.getByTestId("flow-limit-error").filter({ hasText: "override.fairnessWeight" }).waitFor();
    assert.equal(await page.getByTestId("flow-limit-fairnessWeight").getAttribute("aria-invalid"), "");
    assert.equal(await page.getByTestId("flow-limit-concurrencyKeyAttribute").getAttribute("aria-invalid"), null);
    // A fairness key attribute that is no column name: the 400 names override.fairnessKeyAttribute, on its field.
    await submit({ fairnessWeight: "3", fairnessKeyAttribute: "region id" });
    await page.getByTestId("flow-limit-error").filter({ hasText: "override.fairnessKeyAttribute" }).waitFor();
    assert.equal(await page.getByTestId("flow-limit-fairnessKeyAttribute").getAttribute("aria-invalid"), "");
    assert.equal(await page.getByTestId("flow-limit-fairnessWeight").getAttribute("aria-invalid"), null);
    assert.equal((await limitOf(undefined))?.override ?? undefined, undefined);

    // The type's running limit keyed by another attribute, and its starts fair by a third
    // with a weight, in one request: shown by their names. The override leaves the
    // priority out: the type's starts are at 3 while it is set.
    await submit({ maxCallsPerSecond: "", fairnessKeyAttribute: "region", reason: "one export per tenant, regions in turn" });
    await page.getByTestId("flow-limit-done").filter({ hasText: `TickProcess (all states): ${KEYED} in force.` }).waitFor();
    await eventually("the type's row to show the keyed override", SOON, async () => (await cell("", "override")) === KEYED);
    assert.equal(await cell("", "effective"), KEYED);
    assert.equal(await cell("", "declared"), DECLARED);
    assert.deepEqual((await limitOf(undefined))?.effective, {
      maxRunningExecutions: 2,
      concurrencyKeyAttribute: "tenant_id",
      fairnessKeyAttribute: "region",
      fairnessWeight: 3,
    });

    // A good override of both: the page and the service agree. The type's fields are
    // emptied first: a state's override has none of them.
    await submit({
      maxRunningExecutions: "",
      concurrencyKeyAttribute: "",
      fairnessKeyAttribute: "",
      fairnessWeight: "",
      stateId: "TickState",
      maxCallsPerSecond: "5",
      maxConcurrentCalls: "3",
      reason: "mail API throttles",
    });
    await page.getByTestId("flow-limit-done").filter({ hasText: "TickProcess TickState: 5 calls/s, 3 at once in force." }).waitFor();
    assert.equal(await page.getByTestId("flow-limit-error").isHidden(), true);
    assert.equal(await page.getByTestId("flow-limit-maxConcurrentCalls").getAttribute("aria-invalid"), null);
    await eventually("the row to show the override", SOON, async () => (await cell("TickState", "override")) === "5 calls/s, 3 at once");
    assert.equal(await cell("TickState", "effective"), "5 calls/s, 3 at once");
    assert.equal(await cell("TickState", "declared"), "0.5 calls/s, 4 at once");
    assert.deepEqual((await limitOf("TickState"))?.effective, { maxCallsPerSecond: 5, maxConcurrentCalls: 3 });

    // No limit for the whole type, whatever it declares.
    await submit({ stateId: "", action: "unlimited", reason: "backlog after the outage" });
    await eventually("the type's row to show no limit", SOON, async () => (await cell("", "effective")) === "unlimited");
    assert.equal(await cell("", "declared"), DECLARED);
    assert.deepEqual((await limitOf(undefined))?.override, {});

    // The history: the three changes by the operator, newest first, with their reasons.
    const changes = page.getByTestId("flow-limit-change");
    await eventually("the history to show the three overrides", SOON, async () => (await changes.filter({ hasText: "OPERATOR" }).count()) === 3);
    assert.match((await changes.nth(0).textContent()) ?? "", /backlog after the outage/);
    assert.equal(await changes.nth(0).getByTestId("flow-limit-change-text").textContent(), `${KEYED} → unlimited`);
    assert.match((await changes.nth(1).textContent()) ?? "", /mail API throttles/);
    assert.equal(await changes.nth(1).getByTestId("flow-limit-change-text").textContent(), "— → 5 calls/s, 3 at once");
    assert.match((await changes.nth(2).textContent()) ?? "", /one export per tenant, regions in turn/);
    assert.equal(await changes.nth(2).getByTestId("flow-limit-change-text").textContent(), `— → ${KEYED}`);
    assert.equal(await changes.filter({ hasText: "DEFINITION" }).count(), 2);
    await changes.filter({ hasText: "DEFINITION" }).getByTestId("flow-limit-change-text").filter({ hasText: `— → ${DECLARED}` }).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "flow-limits.png"), fullPage: true });

    // Cleared: the declared limit applies again.
    await submit({ stateId: "TickState", action: "clear", reason: "" });
    await eventually("the state's row to lose its override", SOON, async () => (await cell("TickState", "override")) === "—");
    assert.equal(await cell("TickState", "effective"), "0.5 calls/s, 4 at once");
    assert.equal((await limitOf("TickState"))?.override ?? undefined, undefined);
  });
});
