// The web console's schedules in headless Chromium against the real xdb-server on
// PostgreSQL and a worker built with the TypeScript SDK: a schedule created through the
// page's form (an empty form, a bad cron expression and a taken id refused first, each
// saying why), listed with its next fire time and latest firing beside one created through
// the API; its page with the next fire times and the firings as they start; then updated
// through the API, paused, triggered while paused, resumed and deleted from its page, each
// checked on the page and through the API, and each in the page's history with who, why,
// the fields the update changed and the process id the trigger started, the deleted
// schedule's page still showing it; a long history read a page at a time with More.
// Writes docs/console/schedules.png and docs/console/schedule.png.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { Client, WorkerService } from "@xdb/sdk";
import type { Browser, Page } from "playwright-core";

import { REPO_ROOT, TestDatabase, TestWorker, XdbServer, eventually, launchBrowser } from "./harness.js";
import { TICK_DEFINITION, TickProcess } from "./processes.js";

const SOON = 30_000;
const SCREENSHOTS = join(REPO_ROOT, "docs", "console");

describe("web console schedules", () => {
  let db: TestDatabase;
  let server: XdbServer;
  let worker: TestWorker;
  let browser: Browser;
  let page: Page;
  let client: Client;

  const row = (scheduleId: string) => page.locator(`[data-testid=schedule-row][data-schedule-id="${scheduleId}"]`);
  const firing = (trigger: string, outcome: string) => page.locator(`[data-testid=schedule-firing][data-trigger=${trigger}][data-outcome=${outcome}]`);
  /** The history's rows, newest first; `action`'s only, when given. */
  const changes = (action?: string) => page.locator(action ? `[data-testid=schedule-change][data-action=${action}]` : "[data-testid=schedule-change]");
  const actions = () => changes().evaluateAll((rows) => rows.map((row) => row.getAttribute("data-action")));
  /** Fills the create form's `fields` (by name) and sends it. */
  const submit = async (fields: Record<string, string>) => {
    for (const [name, value] of Object.entries(fields)) {
      const field = page.getByTestId(`schedule-${name}`);
      if ((await field.evaluate((e) => e.tagName)) === "SELECT") await field.selectOption(value);
      else await field.fill(value);
    }
    await page.getByTestId("schedule-create-submit").click();
  };
  /** Answers the open dialog: its reason, then its confirm button. */
  const confirm = async (reason?: string) => {
    await page.getByTestId("dialog").waitFor();
    if (reason !== undefined) await page.getByTestId("field-reason").fill(reason);
    await page.getByTestId("confirm").click();
    await page.getByTestId("dialog").waitFor({ state: "detached" });
  };
  /** Waits for the schedule's page to show it `state`; a timeout names the page's error notices. */
  const stateIs = async (state: "active" | "paused") => {
    try {
      await page.locator("[data-testid=schedule-state]", { hasText: state }).waitFor();
    } catch (error) {
      const notices = await page.getByTestId("notice-error").allTextContents().catch(() => []);
      throw new Error(`the page never showed the schedule ${state} (error notices: ${notices.join(" | ") || "none"}): ${String(error)}`);
    }
  };
  const quiet = () => eventually("the notices to go", SOON, async () => (await page.getByTestId("notice-ok").count()) === 0);

  before(async () => {
    db = await TestDatabase.create();
    server = await XdbServer.start(db);
    worker = await TestWorker.start(new WorkerService({ onError: () => undefined }).register(new TickProcess()).nodeHandler());
    client = new Client({ serviceUrl: server.url, workerUrl: worker.url });
    // Registered, so a schedule's template takes the deployment's worker URL and the
    // state's config (it skips waitUntil) from the definition.
    const registered = await fetch(`${server.url}/api/v1/xdb/service/definitions/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ deployment: { name: "tick-worker", version: "1.0.0", workerUrl: worker.url }, definitions: [TICK_DEFINITION] }),
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
    await worker?.stop();
    await db?.drop();
  });

  it("creates a schedule through the form after saying what is wrong, and lists it with its next fire time and latest firing", async () => {
    await client.createSchedule({
      scheduleId: "nightly-report",
      spec: { cron: { expression: "0 3 * * *", timeZone: "Europe/Paris" } },
      start: { processType: "TickProcess", startStateId: "TickState" },
      paused: true,
      note: "created through the API",
    });
    await page.goto(`${server.url}/ui/#/schedules`);
    await row("nightly-report").waitFor();
    await page.locator("nav a.active", { hasText: "Schedules" }).waitFor();
    await page.getByTestId("schedule-create").locator("summary").click();
    // The registered process types are offered.
    await page.locator("#schedule-process-types option[value=TickProcess]").waitFor({ state: "attached" });

    // Nothing typed: refused in the page.
    await page.getByTestId("schedule-create-submit").click();
    await page.getByTestId("schedule-create-error").filter({ hasText: "The schedule id is missing." }).waitFor();
    // A cron expression the service cannot read: its 400, naming the field.
    await submit({
      scheduleId: "nightly-report",
      processType: "TickProcess",
      startStateId: "TickState",
      kind: "cron",
      cronExpression: "61 * * * *",
      timeZone: "UTC",
    });
    await page.getByTestId("schedule-create-error").filter({ hasText: "The service refused the schedule: " }).filter({ hasText: "spec.cron.expression" }).waitFor();
    assert.equal(await page.getByTestId("schedule-cronExpression").getAttribute("aria-invalid"), "");
    // A good spec, but the id is taken.
    await submit({ cronExpression: "0 3 * * *" });
    await page.getByTestId("schedule-create-error").filter({ hasText: "a schedule with id nightly-report exists" }).waitFor();
    assert.equal(await page.getByTestId("schedule-scheduleId").getAttribute("aria-invalid"), "");
    assert.equal(await page.getByTestId("schedule-cronExpression").getAttribute("aria-invalid"), null);
    // Another id, every 2 seconds: its page opens.
    await submit({ scheduleId: "tick", kind: "interval", everySeconds: "2", overlapPolicy: "ALLOW_ALL", catchupWindowSeconds: "30" });
    await stateIs("active");
    assert.equal(new URL(page.url()).hash, "#/schedule/tick");
    // Its history begins with its creation, by the caller (no tokens here: anonymous).
    await changes("CREATED").getByTestId("change-by").filter({ hasText: "anonymous" }).waitFor();
    assert.equal(await page.getByTestId("schedule-spec").textContent(), "every 2 s");
    assert.equal(await page.getByTestId("schedule-overlap").textContent(), "ALLOW_ALL");

    const created = await client.describeSchedule("tick");
    assert.deepEqual(created.schedule.spec, { interval: { everySeconds: 2 } });
    assert.equal(created.schedule.overlapPolicy, "ALLOW_ALL");
    assert.equal(created.schedule.catchupWindowSeconds, 30);
    assert.equal(created.schedule.start.startStateId, "TickState");
    // No worker URL in the form: the current deployment's.
    assert.equal(created.schedule.start.workerUrl, worker.url);

    await page.goto(`${server.url}/ui/#/schedules`);
    const tick = row("tick");
    await tick.getByTestId("schedule-row-state").filter({ hasText: "active" }).waitFor();
    assert.equal(await tick.getByTestId("schedule-row-spec").textContent(), "every 2 s");
    assert.match((await tick.getByTestId("schedule-row-next").textContent()) ?? "", /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    // The list refreshes itself: the latest firing shows once one has started.
    await tick.getByTestId("schedule-row-last").filter({ hasText: /^STARTED \(SPEC, / }).waitFor();
    const nightly = row("nightly-report");
    assert.equal(await nightly.getByTestId("schedule-row-spec").textContent(), "cron 0 3 * * * (Europe/Paris)");
    assert.equal(await nightly.getByTestId("schedule-row-state").textContent(), "paused");
    assert.equal(await nightly.getByTestId("schedule-row-next").textContent(), "— (paused)");
    assert.equal(await nightly.getByTestId("schedule-row-last").textContent(), "none yet");
    // The screenshot shows the form too.
    await page.getByTestId("schedule-create").locator("summary").click();
    await page.screenshot({ path: join(SCREENSHOTS, "schedules.png") });
  });

  it("shows a schedule's fire times and firings, and pauses, triggers, resumes and deletes it, each in its history", async () => {
    // Updated through the API (the console does not edit a schedule): a note, and a longer
    // catch-up window.
    const before = (await client.describeSchedule("tick")).schedule;
    await client.updateSchedule({
      scheduleId: "tick",
      spec: before.spec,
      start: before.start,
      overlapPolicy: before.overlapPolicy,
      catchupWindowSeconds: 60,
      note: "ticks every 2 s",
    });
    await page.goto(`${server.url}/ui/#/schedules`);
    await row("tick").getByRole("link", { name: "tick", exact: true }).click();
    await stateIs("active");
    assert.equal(await page.getByTestId("schedule-fire-time").count(), 10);
    assert.equal(await page.getByTestId("schedule-process-type").textContent(), "TickProcess");
    // The page follows the firings as they start, each linking to its execution.
    await firing("SPEC", "STARTED").first().waitFor();
    const started = (await firing("SPEC", "STARTED").first().getAttribute("data-process-id")) ?? "";
    assert.match(started, /^tick-\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
    assert.match((await firing("SPEC", "STARTED").first().getByRole("link").getAttribute("href")) ?? "", /^#\/execution\/tick-/);
    await eventually(`${started} to complete`, SOON, async () => (await client.describe(started)).status === "COMPLETED");
    // The history names the fields the update changed, with their values before and after.
    await changes("UPDATED").waitFor();
    assert.deepEqual(await actions(), ["UPDATED", "CREATED"]);
    assert.deepEqual(await changes("UPDATED").getByTestId("schedule-change-line").allTextContents(), [
      "catchupWindowSeconds: 30 s → 1m 0s",
      "note: — → ticks every 2 s",
    ]);

    // Pause: the page says so at once, and the service agrees.
    await page.getByTestId("schedule-pause").click();
    await confirm("maintenance");
    await stateIs("paused");
    await page.getByTestId("schedule-reason").filter({ hasText: "maintenance" }).waitFor();
    assert.equal(await page.getByTestId("schedule-next").textContent(), "— (paused)");
    await page.getByTestId("schedule-resume").waitFor();
    const paused = await client.describeSchedule("tick");
    assert.equal(paused.schedule.paused, true);
    assert.equal(paused.schedule.reason, "maintenance");
    // The history shows the pause on top, with its reason.
    await changes("PAUSED").getByTestId("change-reason").filter({ hasText: "maintenance" }).waitFor();
    assert.deepEqual(await actions(), ["PAUSED", "UPDATED", "CREATED"]);
    assert.equal(await changes("PAUSED").getByTestId("change-by").textContent(), "anonymous");

    // Trigger while paused: one firing now, which starts like the others.
    await page.getByTestId("schedule-trigger").click();
    await confirm();
    const notice = page.getByTestId("notice-ok").filter({ hasText: /^Fired tick-/ });
    await notice.waitFor();
    // The notice's text ends with its close button's ×.
    const fired = /^Fired (tick-[\d:.T-]+Z)/.exec((await notice.textContent()) ?? "")?.[1] ?? "";
    assert.notEqual(fired, "");
    await page.locator(`[data-testid=schedule-firing][data-trigger=MANUAL][data-outcome=STARTED][data-process-id="${fired}"]`).waitFor();
    await eventually(`${fired} to complete`, SOON, async () => (await client.describe(fired)).status === "COMPLETED");
    const manual = (await client.describeSchedule("tick")).recentFirings?.find((f) => f.trigger === "MANUAL");
    assert.equal(manual?.processId, fired);
    assert.equal(manual?.outcome, "STARTED");
    // Still paused: the trigger does not resume it.
    assert.equal(await page.getByTestId("schedule-state").textContent(), "paused");
    // The history names the process id the trigger started.
    await changes("TRIGGERED").getByTestId("schedule-change-line").filter({ hasText: `process id ${fired}` }).waitFor();
    assert.deepEqual(await actions(), ["TRIGGERED", "PAUSED", "UPDATED", "CREATED"]);
    await quiet();
    await page.screenshot({ path: join(SCREENSHOTS, "schedule.png"), fullPage: true });

    await page.getByTestId("schedule-resume").click();
    await confirm("");
    await stateIs("active");
    await page.getByTestId("schedule-pause").waitFor();
    assert.equal((await client.describeSchedule("tick")).schedule.paused, false);
    // Resumed without a reason: none in the history.
    await changes("RESUMED").waitFor();
    assert.deepEqual(await actions(), ["RESUMED", "TRIGGERED", "PAUSED", "UPDATED", "CREATED"]);
    assert.equal(await changes("RESUMED").getByTestId("change-reason").textContent(), "");

    // Delete asks first: cancelled, nothing happens.
    await page.getByTestId("schedule-delete").click();
    await page.getByTestId("dialog").filter({ hasText: "Delete schedule tick?" }).waitFor();
    await page.getByTestId("cancel").click();
    await page.getByTestId("dialog").waitFor({ state: "detached" });
    assert.equal((await client.describeSchedule("tick")).schedule.scheduleId, "tick");
    await page.getByTestId("schedule-delete").click();
    await confirm("done with it");
    await page.getByTestId("schedules-table").waitFor();
    assert.equal(new URL(page.url()).hash, "#/schedules");
    await row("nightly-report").waitFor();
    assert.equal(await row("tick").count(), 0);
    await assert.rejects(client.describeSchedule("tick"), /SCHEDULE_NOT_FOUND/);
    // The executions it started stay.
    assert.equal((await client.describe(fired)).status, "COMPLETED");

    // Its history stays too: its page says it is gone, and shows who deleted it and why.
    await page.goto(`${server.url}/ui/#/schedule/tick`);
    await page.getByTestId("schedule").getByRole("alert").waitFor();
    await changes("DELETED").getByTestId("change-reason").filter({ hasText: "done with it" }).waitFor();
    const all = ["DELETED", "RESUMED", "TRIGGERED", "PAUSED", "UPDATED", "CREATED"];
    assert.deepEqual(await actions(), all);
    assert.deepEqual(await changes().getByTestId("change-reason").allTextContents(), ["done with it", "", "", "maintenance", "", ""]);
    assert.deepEqual(new Set(await changes().getByTestId("change-by").allTextContents()), new Set(["anonymous"]));
    assert.equal(await page.getByTestId("schedule-history-more").count(), 0);
    // As the API has it.
    const history = await client.scheduleHistory({ scheduleId: "tick" });
    assert.deepEqual(history.changes.map((c) => c.action), all);
    assert.equal(history.changes.find((c) => c.action === "TRIGGERED")?.detail, `process id ${fired}`);
  });

  it("reads a long history a page at a time, with More", async () => {
    // 21 updates of the paused schedule's note, after its creation: 22 changes, 20 a page.
    const { schedule } = await client.describeSchedule("nightly-report");
    for (let n = 1; n <= 21; n++) {
      await client.updateSchedule({ scheduleId: "nightly-report", spec: schedule.spec, start: schedule.start, note: `note ${n}` });
    }
    await page.goto(`${server.url}/ui/#/schedule/nightly-report`);
    await stateIs("paused");
    const more = page.getByTestId("schedule-history-more");
    await more.waitFor();
    assert.equal(await changes().count(), 20);
    assert.deepEqual(await changes().first().getByTestId("schedule-change-line").allTextContents(), ["note: note 20 → note 21"]);
    await more.click();
    await more.waitFor({ state: "detached" });
    assert.equal(await changes().count(), 22);
    assert.deepEqual(await changes().nth(20).getByTestId("schedule-change-line").allTextContents(), ["note: created through the API → note 1"]);
    assert.equal(await changes().last().getAttribute("data-action"), "CREATED");
    // The page reads the history again on its own, keeping the older page read: an
    // operator's resume elsewhere shows on top.
    await client.resumeSchedule("nightly-report", "elsewhere");
    await changes("RESUMED").getByTestId("change-reason").filter({ hasText: "elsewhere" }).waitFor();
    assert.equal(await changes().count(), 23);
    assert.equal(await changes().first().getAttribute("data-action"), "RESUMED");
  });
});
