// The web console in headless Chromium against the real xdb-server on PostgreSQL and a
// worker built with the TypeScript SDK: the list (with each execution's priority, found by
// it through the query builder too) and its query builder (and Explain's
// index advice, for the list and for its counts per status), the execution page with its history and business row, the actions
// (publish, retry now, pause/resume, stop, reprioritize with the service's refusals on
// their fields), a batch over a filter, the dashboard and its
// charts, a type's running-execution limit and priority set on the flow-limits page (the
// priority in force, in the history and on the type's starts) and the start it
// holds shown PENDING until a running one of its key is terminated,
// the registered definitions with a process type's state graph and the dialogs that offer
// its queues and RPCs, the deployments (a second deployment registered, executions moved to
// it, the first made current again), the token prompt, and the setting that turns the
// console off.
// Writes the screenshots of docs/operations.md to docs/console/.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import { Client, WorkerService, buildStartRequest, definitionOf } from "@xdb/sdk";
import type { Browser, Page } from "playwright-core";

import { REPO_ROOT, TestDatabase, TestWorker, XdbServer, eventually, launchBrowser } from "./harness.js";
import { ChargeProcess, ExportProcess, ORDER_DEFINITION, OrderProcess, SignupProcess } from "./processes.js";

const SOON = 30_000;
const TOKEN = "console-e2e-token-0123456789";
const SCREENSHOTS = join(REPO_ROOT, "docs", "console");

describe("web console", () => {
  let db: TestDatabase;
  let server: XdbServer;
  let worker: TestWorker;
  /** The deployment that registers its process type (a worker URL that registered some
   * types may start no other). */
  let shop: TestWorker;
  /** The shop's next version, at a URL of its own. */
  let shopNext: TestWorker | undefined;
  let browser: Browser;
  let page: Page;
  let client: Client;
  const others: XdbServer[] = [];

  before(async () => {
    db = await TestDatabase.create();
    server = await XdbServer.start(db);
    const handler = new WorkerService({ onError: () => undefined })
      .register(new SignupProcess())
      .register(new ChargeProcess())
      .register(new ExportProcess())
      .nodeHandler();
    worker = await TestWorker.start(handler);
    shop = await TestWorker.start(new WorkerService({ onError: () => undefined }).register(new OrderProcess()).nodeHandler());
    client = new Client({ serviceUrl: server.url, workerUrl: worker.url });
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    page.setDefaultTimeout(SOON);
    mkdirSync(SCREENSHOTS, { recursive: true });

    // At priority 1 (the others at the default, 3), which the list and its page show, and
    // with a fairness key and weight (the others name none), which its page shows.
    const ann = buildStartRequest(definitionOf(SignupProcess), "signup-ann", undefined, {
      workerUrl: worker.url,
      globalAttributePkValue: "ann",
      initialGlobalAttributes: { form: { email: "ann@example.com", plan: "pro" }, status: "waiting" },
      initialLocalAttributes: { note: "signed up from the pricing page" },
    });
    await client.start({
      ...ann,
      processStartConfig: { ...ann.processStartConfig, priority: 1, fairnessKey: "tenant-acme", fairnessWeight: 3 },
    });
    await client.startProcess(ChargeProcess, "charge-bob", undefined, {
      globalAttributePkValue: "bob",
      initialGlobalAttributes: { form: { email: "bob@example.com", amount: 42 }, status: "waiting" },
    });
    await client.startProcess(SignupProcess, "signup-cy", undefined, {
      globalAttributePkValue: "cy",
      initialGlobalAttributes: { form: { email: "cy@example.com" }, status: "waiting" },
    });
  });

  after(async () => {
    await browser?.close();
    for (const other of others) await other.stop();
    await server?.stop();
    await worker?.stop();
    await shop?.stop();
    await shopNext?.stop();
    await db?.drop();
  });

  it("lists the started executions, with counts and filters", async () => {
    await page.goto(`${server.url}/ui/#/executions`);
    for (const id of ["signup-ann", "charge-bob", "signup-cy"]) {
      await page.locator(`[data-testid=execution-row][data-process-id="${id}"]`).waitFor();
    }
    await page.locator("[data-testid=count-RUNNING]", { hasText: "RUNNING 3" }).waitFor();
    await page.getByTestId("filter-processType").fill("ChargeProcess");
    await page.getByTestId("apply-filter").click();
    await eventually("the filter to leave one row", SOON, async () => (await page.getByTestId("execution-row").count()) === 1);
    assert.equal(await page.getByTestId("execution-row").getAttribute("data-process-id"), "charge-bob");
    await page.getByTestId("filter-processType").fill("");
    await page.getByTestId("apply-filter").click();
    await eventually("all rows again", SOON, async () => (await page.getByTestId("execution-row").count()) === 3);

    // Each row's priority: signup-ann's 1 marked as raised, the default 3 plain.
    const priorityOf = (id: string) => page.locator(`[data-testid=execution-row][data-process-id="${id}"] [data-testid=execution-row-priority]`);
    assert.equal(await priorityOf("signup-ann").textContent(), "1");
    assert.equal(await priorityOf("signup-ann").getAttribute("class"), "priority priority-raised");
    assert.equal(await priorityOf("signup-ann").getAttribute("title"), "priority 1 (claimed first)");
    for (const id of ["charge-bob", "signup-cy"]) {
      assert.equal(await priorityOf(id).textContent(), "3");
      assert.equal(await priorityOf(id).getAttribute("class"), "priority");
    }
    // The query builder finds it by priority: picked from 1 to 5, sent as a number.
    await page.getByTestId("where-add").click();
    const condition = page.getByTestId("where-row").nth(0);
    await condition.getByTestId("where-name").selectOption("priority");
    assert.deepEqual(await condition.locator("[data-testid=where-op] option").allTextContents(), ["=", "!=", "<", "<=", ">", ">=", "IN"]);
    await condition.getByTestId("where-op").selectOption("<");
    await condition.getByTestId("where-value").selectOption("3");
    assert.equal(await page.getByTestId("where-text").inputValue(), "execution.priority < 3");
    await page.getByTestId("apply-filter").click();
    await eventually("the priority filter to leave signup-ann alone", SOON, async () => {
      const shown = page.getByTestId("execution-row");
      return (await shown.count()) === 1 && (await shown.getAttribute("data-process-id")) === "signup-ann";
    });
    await page.locator("[data-testid=count-RUNNING]", { hasText: "RUNNING 1" }).waitFor();
    assert.match(decodeURIComponent(page.url()), /where=execution\.priority\+<\+3/);
    await page.getByTestId("where-remove").click();
    assert.equal(await page.getByTestId("where-text").inputValue(), "");
    await page.getByTestId("apply-filter").click();
    await eventually("all rows again", SOON, async () => (await page.getByTestId("execution-row").count()) === 3);
    // The screenshot shows charge-bob backing off after its first failed attempt.
    await page.locator('[data-testid=execution-row][data-process-id="charge-bob"] [data-testid=backing-off-attempt]', { hasText: "attempt 2" }).waitFor();
    await page.screenshot({ path: join(SCREENSHOTS, "executions.png") });
  });

  it("builds a filter with the query builder, keeps it in the URL, explains its plan and shows the service's word on a bad one", async () => {
    // The list joins the business row whose key is the process id: two such sign-ups.
    for (const [id, status] of [["user-dee", "waiting"], ["user-eve", "verified"]] as const) {
      await client.startProcess(SignupProcess, id, undefined, {
        globalAttributePkValue: id,
        initialGlobalAttributes: { form: { email: `${id}@example.com` }, status },
      });
    }
    await page.goto(`${server.url}/ui/#/executions`);
    await page.locator('[data-testid=execution-row][data-process-id="user-eve"]').waitFor();
    await page.getByTestId("filter-processType").fill("SignupProcess");
    await page.getByTestId("where-add").click();
    const rows = page.getByTestId("where-row");
    await rows.nth(0).getByTestId("where-name").selectOption("processId");
    await rows.nth(0).getByTestId("where-op").selectOption("PREFIX");
    await rows.nth(0).getByTestId("where-value").fill("user-");
    await page.getByTestId("where-add").click();
    await rows.nth(1).getByTestId("where-kind").selectOption("column");
    await rows.nth(1).getByTestId("where-name").fill("status");
    await rows.nth(1).getByTestId("where-value").fill("waiting");
    assert.equal(await page.getByTestId("where-text").inputValue(), "execution.processId like 'user-%' and status = 'waiting'");
    await page.getByTestId("apply-filter").click();
    await eventually("the filter to leave user-dee alone", SOON, async () => {
      const shown = page.getByTestId("execution-row");
      return (await shown.count()) === 1 && (await shown.getAttribute("data-process-id")) === "user-dee";
    });
    await page.locator("[data-testid=count-RUNNING]", { hasText: "RUNNING 1" }).waitFor();
    assert.match(decodeURIComponent(page.url()), /type=SignupProcess&where=execution\.processId\+like\+'user-%'/);
    // SignupProcess has no registered definition: its table came from its latest execution.
    assert.equal(await page.getByTestId("where-table").inputValue(), "user");
    assert.equal(await page.getByTestId("where-key").inputValue(), "user_id");
    // The link shows the same view when opened afresh.
    const link = page.url();
    await page.goto(`${server.url}/ui/#/dashboard`);
    await page.goto(link);
    await eventually("the linked view to show user-dee alone", SOON, async () => (await page.getByTestId("execution-row").count()) === 1);
    assert.equal(await page.getByTestId("where-row").count(), 2);
    await page.screenshot({ path: join(SCREENSHOTS, "query.png") });

    // No index of `user` serves `status`: Explain says which to create, with the database's
    // plan folded below it; the list stays as it was.
    await page.getByTestId("explain-filter").click();
    const plan = page.getByTestId("query-plan");
    await plan.waitFor();
    const advice = await plan.getByTestId("plan-advice").allTextContents();
    // Quoted (the table is called `user`), the index named.
    assert.ok(advice.some((a) => /CREATE INDEX ["`]user_status["`] ON ["`]user["`] \(["`]status["`]\)/.test(a)), advice.join("\n"));
    assert.equal(await plan.getByTestId("plan-served").count(), 0);
    assert.equal(await plan.getByTestId("plan-json").getAttribute("open"), null);
    assert.match((await plan.locator("details pre").textContent()) ?? "", /"Plan"/);
    assert.equal(await page.getByTestId("execution-row").count(), 1);
    await page.screenshot({ path: join(SCREENSHOTS, "query-plan.png") });

    // The counts per status explain their own statement in the same panel: the same advice
    // (they count what the list shows), and the database's plan of a grouped count.
    await page.getByTestId("explain-count").click();
    const countPlan = page.locator("[data-testid=query-plan][data-explained=count]");
    await countPlan.waitFor();
    assert.equal(await page.locator("[data-testid=query-plan][data-explained=list]").count(), 0);
    assert.match((await countPlan.locator("strong").first().textContent()) ?? "", /^Plan of the counts per status$/);
    const countAdvice = await countPlan.getByTestId("plan-advice").allTextContents();
    assert.ok(countAdvice.some((a) => /CREATE INDEX ["`]user_status["`] ON ["`]user["`] \(["`]status["`]\)/.test(a)), countAdvice.join("\n"));
    assert.equal(await countPlan.getByTestId("plan-served").count(), 0);
    const countJson = (await countPlan.locator("details pre").textContent()) ?? "";
    assert.match(countJson, /"Plan"/);
    assert.match(countJson, /"Node Type": "Aggregate"/, "a count's plan groups its rows");
    assert.equal(await page.getByTestId("execution-row").count(), 1);
    await page.locator("[data-testid=count-RUNNING]", { hasText: "RUNNING 1" }).waitFor();
    // Edited but not applied: the plan would not be of the counts shown.
    await page.getByTestId("where-text").fill("status = 'verified'");
    await page.getByTestId("where-text").dispatchEvent("change");
    await page.getByTestId("explain-count").click();
    await page.getByTestId("query-plan-unavailable").filter({ hasText: "Apply this filter first" }).waitFor();
    assert.equal(await page.getByTestId("query-plan").count(), 0);

    // A column the business table lacks: the service's 400 next to the editor.
    await page.getByTestId("where-text").fill("no_such_column = 1");
    await page.getByTestId("where-text").dispatchEvent("change");
    await page.getByTestId("apply-filter").click();
    await page.getByTestId("where-error").filter({ hasText: "no_such_column" }).waitFor();
    await client.stop("user-dee");
    await client.stop("user-eve");
    await page.goto(`${server.url}/ui/#/executions`);
    await eventually("all rows again", SOON, async () => (await page.getByTestId("execution-row").count()) === 5);
    // Without a Where filter there is no plan to ask for: a word instead of a call.
    await page.getByTestId("explain-filter").click();
    await page.getByTestId("query-plan-unavailable").filter({ hasText: "needs a Where filter" }).waitFor();
    // The counts' statement has one anyway: XDB's own table grouped by status, no business
    // table to index.
    await page.getByTestId("explain-count").click();
    const ownPlan = page.locator("[data-testid=query-plan][data-explained=count]");
    await ownPlan.waitFor();
    assert.match((await ownPlan.locator("details pre").textContent()) ?? "", /"Node Type": "Aggregate"/);
    assert.equal(await ownPlan.getByTestId("plan-advice").filter({ hasText: "CREATE INDEX" }).count(), 0);
  });

  it("shows an execution's history, states and business row, and publishes to its queue", async () => {
    await page.locator('[data-testid=execution-row][data-process-id="signup-ann"] a').click();
    await page.locator("[data-testid=execution-status]", { hasText: "RUNNING" }).waitFor();
    const row = page.getByTestId("business-row-table");
    await row.locator("tr", { hasText: "ann@example.com" }).waitFor();
    await row.locator("tr", { hasText: "waiting" }).waitFor();
    await page.getByTestId("local-attributes").locator("tr", { hasText: "signed up from the pricing page" }).waitFor();
    await page.locator("[data-testid=history-event][data-event-type=PROCESS_STARTED]").waitFor();
    await page.locator("[data-testid=history-event][data-event-type=WAIT_UNTIL_COMPLETED]").waitFor();
    assert.equal(await page.getByTestId("execution-priority").textContent(), "1 (claimed first)");
    assert.match((await page.locator("dl.facts").textContent()) ?? "", /Priority1 \(claimed first\)/);
    assert.equal(await page.getByTestId("execution-fairness-key").textContent(), "tenant-acme (weight 3)");
    assert.match((await page.locator("dl.facts").textContent()) ?? "", /Fairness keytenant-acme \(weight 3\)/);
    // Numbered within the execution, with the state and a one-line summary.
    const started = page.locator("[data-testid=history-event][data-event-type=PROCESS_STARTED]");
    assert.equal(await started.getByTestId("history-number").textContent(), "1");
    assert.match((await started.getByTestId("history-summary").textContent()) ?? "", /^started SignupProcess/);
    const waited = page.locator("[data-testid=history-event][data-event-type=WAIT_UNTIL_COMPLETED]");
    assert.match((await waited.getByTestId("history-state").textContent()) ?? "", /VerifyState/);
    assert.match((await waited.getByTestId("history-summary").textContent()) ?? "", /1 timer, queue verify/);
    await page.getByTestId("wait-timer").filter({ hasText: "timer 3600 s" }).waitFor();
    await page.getByTestId("wait-queue").filter({ hasText: "queue verify: 0 queued of 1" }).waitFor();

    await page.getByTestId("action-publish").click();
    await page.getByTestId("field-queue").fill("verify");
    await page.getByTestId("field-payload").fill('{"source": "console"}');
    await page.getByTestId("confirm").click();
    await page.locator("[data-testid=execution-status]", { hasText: "COMPLETED" }).waitFor();
    await row.locator("tr", { hasText: "verified" }).waitFor();
    await row.locator("tr", { hasText: "console" }).waitFor();
    await page.locator("[data-testid=history-event][data-event-type=LOCAL_QUEUE_MESSAGES_PUBLISHED]").waitFor();
    await page.locator("[data-testid=history-event][data-event-type=PROCESS_CLOSED]").waitFor();
  });

  it("retries a failing call now, pauses and resumes it, then terminates it, each confirmed", async () => {
    await page.goto(`${server.url}/ui/#/execution/charge-bob`);
    const attempt = page.getByTestId("state-attempt");
    await attempt.filter({ hasText: /^2$/ }).waitFor();
    await page.getByTestId("state-last-failure").filter({ hasText: "the card provider is down (attempt 1)" }).waitFor();
    await page.getByTestId("backing-off").filter({ hasText: "attempt 2" }).filter({ hasText: "the card provider is down" }).waitFor();

    // Cancelled: nothing happens.
    await page.getByTestId("action-retry-now").click();
    await page.getByTestId("cancel").click();
    await page.getByTestId("dialog").waitFor({ state: "detached" });
    assert.equal(await attempt.textContent(), "2");

    await page.getByTestId("action-retry-now").click();
    await page.getByTestId("field-reason").fill("provider is back");
    await page.getByTestId("confirm").click();
    await attempt.filter({ hasText: /^3$/ }).waitFor();
    await page.getByTestId("state-last-failure").filter({ hasText: "(attempt 2)" }).waitFor();
    await page.locator("[data-testid=history-event][data-event-type=RETRY_REQUESTED]").waitFor();
    await page.getByTestId("business-row-table").locator("tr", { hasText: "bob@example.com" }).waitFor();
    // Its start named no fairness key: no such fact.
    assert.equal(await page.getByTestId("execution-fairness-key").count(), 0);
    await page.screenshot({ path: join(SCREENSHOTS, "execution.png"), fullPage: true });

    await page.getByTestId("action-pause").click();
    await page.getByTestId("confirm").click();
    await page.getByTestId("badge-paused").waitFor();
    await page.getByTestId("state-phase").filter({ hasText: "PAUSED" }).waitFor();
    await page.goto(`${server.url}/ui/#/executions`);
    await page.locator('[data-testid=execution-row][data-process-id="charge-bob"].attention [data-testid=badge-paused]').waitFor();
    await page.goto(`${server.url}/ui/#/execution/charge-bob`);
    await page.getByTestId("action-resume").click();
    await page.getByTestId("confirm").click();
    await page.getByTestId("action-pause").waitFor();

    await page.getByTestId("action-terminate").click();
    await page.getByTestId("field-reason").fill("customer cancelled");
    await page.getByTestId("confirm").click();
    await page.locator("[data-testid=execution-status]", { hasText: "TERMINATED" }).waitFor();
    await page.getByTestId("action-terminate").waitFor({ state: "detached" });
    assert.equal((await client.describe("charge-bob")).status, "TERMINATED");
    const terminated = (await client.describe("charge-bob")).processExecutionId;

    // A closed execution keeps one action: reset, which opens the new execution it starts.
    await page.getByTestId("action-reset").click();
    await page.getByTestId("field-reason").fill("provider fixed");
    await page.getByTestId("confirm").click();
    await page.locator("[data-testid=execution-status]", { hasText: "RUNNING" }).waitFor();
    await page.locator("[data-testid=history-event][data-event-type=PROCESS_RESET]").waitFor();
    const reopened = await client.describe("charge-bob");
    assert.equal(reopened.status, "RUNNING");
    assert.notEqual(reopened.processExecutionId, terminated);
    await client.stop("charge-bob");
  });

  it("reprioritizes a running execution from its page, shows the service's refusals on their fields, and reads the change in its history", async () => {
    const start = buildStartRequest(definitionOf(SignupProcess), "reprio-gus", undefined, {
      workerUrl: worker.url,
      globalAttributePkValue: "gus",
      initialGlobalAttributes: { form: { email: "gus@example.com" }, status: "waiting" },
    });
    await client.start({ ...start, processStartConfig: { ...start.processStartConfig, priority: 2, fairnessKey: "tenant-bee", fairnessWeight: 2 } });
    const service = async (path: string, body: object) => {
      const answer = await fetch(`${server.url}/api/v1/xdb/service/process-execution/${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      assert.equal(answer.status, 200, await answer.clone().text());
      return (await answer.json()) as Record<string, unknown>;
    };
    const reprioritized = async () =>
      ((await service("history", { processId: "reprio-gus", processExecutionId: (await client.describe("reprio-gus")).processExecutionId, pageSize: 100, eventTypes: ["REPRIORITIZED"] }))
        .events as { details: Record<string, unknown> }[]).map((e) => e.details);

    await page.goto(`${server.url}/ui/#/execution/reprio-gus`);
    await page.locator("[data-testid=execution-status]", { hasText: "RUNNING" }).waitFor();
    await page.getByTestId("execution-fairness-key").filter({ hasText: "tenant-bee (weight 2)" }).waitFor();
    // The dialog starts at the execution's order.
    await page.getByTestId("action-reprioritize").click();
    await page.getByTestId("dialog").filter({ hasText: "Reprioritize reprio-gus?" }).waitFor();
    assert.equal(await page.getByTestId("field-priority").inputValue(), "2");
    assert.deepEqual(await page.locator("[data-testid=field-priority] option").allTextContents(), ["1 (claimed first)", "2", "3 (default)", "4", "5 (claimed last)"]);
    assert.equal(await page.getByTestId("field-fairnessKey").inputValue(), "tenant-bee");
    assert.equal(await page.getByTestId("field-fairnessWeight").inputValue(), "2");
    assert.equal(await page.getByTestId("field-removeKey").isChecked(), false);

    // A weight out of range: the service's 400 on the weight, the dialog still open with
    // what was typed.
    await page.getByTestId("field-priority").selectOption("1");
    await page.getByTestId("field-fairnessKey").fill("tenant-acme");
    await page.getByTestId("field-fairnessWeight").fill("0");
    await page.getByTestId("confirm").click();
    await page.getByTestId("dialog-error").filter({ hasText: "The service refused it" }).filter({ hasText: "reprioritize.fairnessWeight" }).waitFor();
    assert.equal(await page.getByTestId("field-fairnessWeight").getAttribute("aria-invalid"), "");
    assert.equal(await page.getByTestId("field-fairnessKey").getAttribute("aria-invalid"), null);
    assert.equal(await page.getByTestId("field-fairnessKey").inputValue(), "tenant-acme");
    assert.equal((await client.describe("reprio-gus")).priority, 2, "nothing changed");

    await page.getByTestId("field-fairnessWeight").fill("5");
    await page.getByTestId("field-reason").fill("vip customer");
    await page.getByTestId("confirm").click();
    await page.getByTestId("dialog").waitFor({ state: "detached" });
    await page.getByTestId("notice-ok").filter({ hasText: "Reprioritize: done" }).waitFor();
    await page.getByTestId("execution-priority").filter({ hasText: /^1 \(claimed first\)$/ }).waitFor();
    await page.getByTestId("execution-fairness-key").filter({ hasText: /^tenant-acme \(weight 5\)$/ }).waitFor();
    const summaries = page.locator("[data-testid=history-event][data-event-type=REPRIORITIZED] [data-testid=history-summary]");
    await summaries.filter({ hasText: /^priority 2 → 1 · fairness key tenant-bee \(weight 2\) → tenant-acme \(weight 5\) — vip customer \(by console\)$/ }).waitFor();
    const described = await service("describe", { processId: "reprio-gus" });
    assert.deepEqual([described.priority, described.fairnessKey, described.fairnessWeight], [1, "tenant-acme", 5]);
    // One request, only what changed in it: the history's before and after.
    const [first] = await reprioritized();
    assert.deepEqual([first?.before, first?.after, first?.reason, first?.identity], [
      { priority: 2, fairnessKey: "tenant-bee", fairnessWeight: 2 },
      { priority: 1, fairnessKey: "tenant-acme", fairnessWeight: 5 },
      "vip customer",
      "console",
    ]);

    // Removing the key: the checkbox turns the key and weight off.
    await page.getByTestId("action-reprioritize").click();
    assert.equal(await page.getByTestId("field-fairnessKey").inputValue(), "tenant-acme");
    assert.equal(await page.getByTestId("field-fairnessWeight").inputValue(), "5");
    await page.getByTestId("field-removeKey").check();
    assert.equal(await page.getByTestId("field-fairnessKey").isDisabled(), true);
    assert.equal(await page.getByTestId("field-fairnessWeight").isDisabled(), true);
    await page.getByTestId("confirm").click();
    await page.getByTestId("dialog").waitFor({ state: "detached" });
    await page.getByTestId("execution-fairness-key").waitFor({ state: "detached" });
    await summaries.filter({ hasText: /^fairness key tenant-acme \(weight 5\) → none \(by console\)$/ }).waitFor();
    assert.deepEqual((await reprioritized())[1]?.after, { priority: 1 });

    // A weight for an execution without a key: the service's 409, on the weight. Nothing
    // to remove, so no checkbox.
    await page.getByTestId("action-reprioritize").click();
    assert.equal(await page.getByTestId("field-removeKey").count(), 0);
    assert.equal(await page.getByTestId("field-fairnessKey").inputValue(), "");
    assert.equal(await page.getByTestId("field-fairnessWeight").inputValue(), "");
    await page.getByTestId("field-fairnessWeight").fill("3");
    await page.getByTestId("confirm").click();
    await page.getByTestId("dialog-error").filter({ hasText: "Not applicable now" }).filter({ hasText: "no fairness key to weigh" }).waitFor();
    assert.equal(await page.getByTestId("field-fairnessWeight").getAttribute("aria-invalid"), "");

    // Closed meanwhile: the service says it is not running, on no field in particular.
    await client.stop("reprio-gus");
    await page.getByTestId("field-fairnessWeight").fill("");
    await page.getByTestId("field-priority").selectOption("4");
    await page.getByTestId("confirm").click();
    await page.getByTestId("dialog-error").filter({ hasText: "The service refused it" }).filter({ hasText: /not running/i }).waitFor();
    assert.equal(await page.locator("[data-testid=dialog] [aria-invalid]").count(), 0);
    await page.getByTestId("cancel").click();
    await page.locator("[data-testid=execution-status]", { hasText: "TERMINATED" }).waitFor();
    await page.getByTestId("action-reprioritize").waitFor({ state: "detached" });
    assert.equal((await reprioritized()).length, 2);
  });

  it("pauses every matching execution in a batch, confirmed after its count, and follows it to the end", async () => {
    await page.goto(`${server.url}/ui/#/executions?type=SignupProcess&where=${encodeURIComponent("execution.processId like 'signup-%'")}`);
    await eventually("the two sign-ups", SOON, async () => (await page.getByTestId("execution-row").count()) === 2);
    await page.getByTestId("batch-start").click();
    await page.getByTestId("field-operation").selectOption("PAUSE");
    await page.getByTestId("confirm").click();
    // The preview: what the same selection counts now (signup-ann completed, signup-cy runs).
    await page.getByTestId("dialog").filter({ hasText: "PAUSE 2 executions?" }).waitFor();
    await page.getByTestId("field-reason").fill("maintenance window");
    await page.getByTestId("confirm").click();
    await page.locator("[data-testid=batch-status]", { hasText: "COMPLETED" }).waitFor();
    assert.equal(await page.getByTestId("batch-expected").textContent(), "2");
    assert.equal(await page.getByTestId("batch-done").textContent(), "1");
    assert.equal(await page.getByTestId("batch-skipped").textContent(), "1");
    assert.equal(await page.getByTestId("batch-failed").textContent(), "0");
    assert.equal(await page.getByTestId("batch-where").textContent(), "execution.processId like 'signup-%'");
    assert.equal(await page.getByTestId("batch-not-done").count(), 1);
    assert.equal(await page.getByTestId("batch-cancel").count(), 0);
    await eventually("the earlier notices to go", SOON, async () => (await page.getByTestId("notice-ok").count()) === 0);
    await page.screenshot({ path: join(SCREENSHOTS, "batch.png") });
    const batchUrl = page.url();

    await page.goto(`${server.url}/ui/#/batches`);
    const row = page.getByTestId("batch-row").filter({ hasText: "PAUSE" });
    await row.filter({ hasText: "COMPLETED" }).filter({ hasText: "1 / 1 / 0" }).waitFor();
    await row.locator("a").click();
    assert.equal(page.url(), batchUrl);
    await page.goto(`${server.url}/ui/#/executions`);
    await page.locator('[data-testid=execution-row][data-process-id="signup-cy"] [data-testid=badge-paused]').waitFor();
  });

  it("shows both services' numbers on the dashboard", async () => {
    await page.goto(`${server.url}/ui/#/dashboard`);
    const dashboard = page.getByTestId("dashboard");
    await dashboard.locator(".card", { hasText: "API requests/s" }).waitFor();
    await dashboard.locator(".card", { hasText: "Backlog (due tasks)" }).waitFor();
    await dashboard.locator(".card", { hasText: "Timer lateness p99" }).waitFor();
    // The charts: a sample every few seconds, each series a line through its points.
    for (const series of ["throughput", "failures", "backlog", "lateness"]) {
      const line = page.locator(`[data-testid=chart][data-series=${series}] [data-testid=chart-line]`);
      await eventually(`the ${series} chart to have a line`, SOON, async () => Number(await line.getAttribute("data-points")) >= 2);
      assert.match((await line.getAttribute("d")) ?? "", /^M[\d.]+ [\d.]+ L[\d.]+ [\d.]+/);
    }
    assert.match((await page.getByTestId("dashboard-count-FAILED").getAttribute("href")) ?? "", /status=FAILED/);
    await page.getByTestId("dashboard-count-paused").filter({ hasText: "paused 1" }).click();
    await page.locator('[data-testid=execution-row][data-process-id="signup-cy"]').waitFor();
    assert.equal(await page.getByTestId("where-text").inputValue(), "execution.paused = true");
    assert.equal(await page.getByTestId("execution-row").count(), 1);
    // A reload keeps the samples (sessionStorage): the lines are drawn at once.
    await page.goto(`${server.url}/ui/#/dashboard`);
    await page.reload();
    await eventually("the kept samples", SOON, async () => Number(await page.locator("[data-testid=chart][data-series=backlog] [data-testid=chart-line]").getAttribute("data-points")) >= 3);
    await page.screenshot({ path: join(SCREENSHOTS, "charts.png") });
  });

  it("lists the registered process types and draws one's state graph with live counts", async () => {
    const registered = await fetch(`${server.url}/api/v1/xdb/service/definitions/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        deployment: { name: "shop-worker", version: "1.4.0", workerUrl: shop.url },
        definitions: [ORDER_DEFINITION],
      }),
    });
    assert.equal(registered.status, 200, await registered.clone().text());
    const orders = new Client({ serviceUrl: server.url, workerUrl: shop.url });
    for (const id of ["order-1", "order-2", "order-3"]) {
      await orders.startProcess(OrderProcess, id, undefined, {
        globalAttributePkValue: id,
        initialGlobalAttributes: { form: { item: "lamp" } },
      });
    }
    await client.publishToLocalQueue("order-1", "shipped", { by: "warehouse" });
    await eventually("order-1 to complete", SOON, async () => (await client.describe("order-1")).status === "COMPLETED");

    await page.goto(`${server.url}/ui/#/definitions`);
    const row = page.locator('[data-testid=definition-row][data-process-type="OrderProcess"]');
    await row.filter({ hasText: "shop-worker" }).filter({ hasText: "1.4.0" }).waitFor();
    await row.locator("a").click();
    await page.getByTestId("definition-revision").filter({ hasText: "revision 1" }).waitFor();
    const graph = page.getByTestId("state-graph");
    await graph.locator('[data-testid=graph-state][data-state-id="ReserveState"]').waitFor();
    const ship = graph.locator('[data-testid=graph-state][data-state-id="ShipState"]');
    // Three histories show the reservation deciding the shipping; one shipped order closed.
    await graph.locator('[data-testid=graph-arrow][data-from="ReserveState"][data-to="ShipState"][data-count="3"]').waitFor();
    await graph.locator('[data-testid=graph-arrow][data-from="ShipState"][data-to="(end)"][data-count="1"]').waitFor();
    // The two orders not shipped wait in ShipState.
    await ship.locator("[data-testid=graph-count][data-kind=waiting]", { hasText: "2 waiting" }).waitFor();
    assert.equal(await graph.locator('[data-testid=graph-state][data-state-id="ReserveState"] [data-testid=graph-count]').count(), 0);
    await page.getByTestId("graph-sample").filter({ hasText: "latest 3 executions" }).waitFor();
    const states = page.getByTestId("definition-states");
    assert.equal(await states.locator('[data-state-id="ShipState"] [data-testid=state-wait-until]').textContent(), "yes");
    assert.equal(await states.locator('[data-state-id="ReserveState"] [data-testid=state-wait-until]').textContent(), "no");
    await states.locator('[data-state-id="ReserveState"] [data-testid=state-execute-retry]', { hasText: "5 attempts" }).waitFor();
    await page.getByTestId("definition-rpcs").locator("tr", { hasText: "EXCLUSIVE_LOCK" }).waitFor();
    await page.getByTestId("revisions-table").locator("[data-testid=revision-row]", { hasText: "1.4.0" }).waitFor();
    // The earlier tests' notices go by themselves; the screenshot waits for that.
    await eventually("the earlier notices to go", SOON, async () => (await page.getByTestId("notice-ok").count()) === 0);
    await page.screenshot({ path: join(SCREENSHOTS, "state-graph.png") });

    await page.getByTestId("executions-of-type").click();
    assert.equal(await page.getByTestId("filter-processType").inputValue(), "OrderProcess");
    await eventually("the orders alone", SOON, async () => (await page.getByTestId("execution-row").count()) === 3);
  });

  it("offers the declared queues and RPCs in the dialogs, and any name for a type not registered", async () => {
    await page.goto(`${server.url}/ui/#/execution/order-2`);
    await page.getByTestId("process-type-link").filter({ hasText: "OrderProcess" }).waitFor();
    await page.getByTestId("action-publish").click();
    assert.equal(await page.getByTestId("field-queue").inputValue(), "shipped");
    assert.deepEqual(await page.locator("[data-testid=suggestions-queue] option").evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value)), ["shipped"]);
    await page.getByTestId("dialog").filter({ hasText: "OrderProcess revision 1 declares shipped" }).waitFor();
    await page.getByTestId("cancel").click();

    await page.getByTestId("action-rpc").click();
    assert.equal(await page.getByTestId("field-rpc").inputValue(), "expedite");
    assert.deepEqual(await page.locator("[data-testid=suggestions-rpc] option").evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value)), ["expedite"]);
    await page.getByTestId("field-input").fill('{"by": "console"}');
    await page.getByTestId("confirm").click();
    await page.getByTestId("notice-ok").filter({ hasText: "RPC expedite" }).filter({ hasText: "expedited" }).waitFor();
    // The message the RPC published lets the order ship.
    await page.locator("[data-testid=execution-status]", { hasText: "COMPLETED" }).waitFor();
    await page.locator("[data-testid=history-event][data-event-type=RPC_COMPLETED]").waitFor();

    // SignupProcess is not registered: the dialogs take any name.
    await page.goto(`${server.url}/ui/#/execution/signup-cy`);
    await page.locator("[data-testid=execution-status]", { hasText: "RUNNING" }).waitFor();
    assert.equal(await page.getByTestId("process-type-link").count(), 0);
    await page.getByTestId("action-rpc").click();
    await page.getByTestId("dialog").filter({ hasText: "SignupProcess is not registered" }).waitFor();
    assert.equal(await page.locator("[data-testid=suggestions-rpc]").count(), 0);
    assert.equal(await page.getByTestId("field-rpc").inputValue(), "");
    await page.getByTestId("cancel").click();

    await page.goto(`${server.url}/ui/#/definition/SignupProcess`);
    await page.getByTestId("definition-error").filter({ hasText: "SignupProcess is not registered" }).waitFor();
  });

  it("shows the deployments, moves executions to one and makes another current", async () => {
    shopNext = await TestWorker.start(new WorkerService({ onError: () => undefined }).register(new OrderProcess()).nodeHandler());
    const registered = await fetch(`${server.url}/api/v1/xdb/service/definitions/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        deployment: { name: "shop-worker", version: "1.5.0", workerUrl: shopNext.url },
        definitions: [ORDER_DEFINITION],
      }),
    });
    assert.equal(registered.status, 200, await registered.clone().text());

    await page.goto(`${server.url}/ui/#/deployments`);
    const older = page.locator('[data-testid=deployment][data-deployment="shop-worker@1.4.0"]');
    const newer = page.locator('[data-testid=deployment][data-deployment="shop-worker@1.5.0"]');
    // order-3 still waits for its shipment on 1.4.0; 1.5.0 takes the new starts.
    await newer.getByTestId("badge-current").waitFor();
    await newer.getByTestId("deployment-url").filter({ hasText: shopNext.url }).waitFor();
    await newer.getByTestId("deployment-current-for").filter({ hasText: "OrderProcess" }).waitFor();
    assert.equal(await newer.getByTestId("deployment-running").textContent(), "0");
    await older.getByTestId("deployment-current-for").filter({ hasText: "nothing" }).waitFor();
    assert.equal(await older.getByTestId("deployment-running").textContent(), "1");
    assert.equal(await older.getByTestId("badge-current").count(), 0);
    assert.equal(await older.getByTestId("badge-drained").count(), 0);
    assert.equal(await newer.getByTestId("make-current").isDisabled(), true);
    await eventually("the earlier notices to go", SOON, async () => (await page.getByTestId("notice-ok").count()) === 0);
    await page.screenshot({ path: join(SCREENSHOTS, "deployments.png") });

    // Move order-3 to 1.5.0: the dialog counts it first.
    await newer.locator('[data-testid=deployment-type-row][data-process-type="OrderProcess"] [data-testid=move-here]').click();
    await page.getByTestId("dialog").filter({ hasText: "Moves 1 running execution of OrderProcess from shop-worker@1.4.0 (1)" }).waitFor();
    await page.getByTestId("confirm").click();
    await page.getByTestId("notice-ok").filter({ hasText: "1 moved" }).waitFor();
    await older.getByTestId("badge-drained").waitFor();
    assert.equal(await newer.getByTestId("deployment-running").textContent(), "1");
    assert.equal((await client.describe("order-3")).workerUrl, shopNext.url);

    // Roll back: 1.4.0 current again, once confirmed.
    await older.getByTestId("make-current").click();
    await page.getByTestId("dialog").filter({ hasText: "Make shop-worker@1.4.0 current?" }).waitFor();
    await page.getByTestId("confirm").click();
    await page.getByTestId("notice-ok").filter({ hasText: "Make shop-worker@1.4.0 current" }).waitFor();
    await older.getByTestId("badge-current").waitFor();
    await older.getByTestId("deployment-current-for").filter({ hasText: "OrderProcess" }).waitFor();
    await newer.getByTestId("deployment-current-for").filter({ hasText: "nothing" }).waitFor();
    assert.equal(await older.getByTestId("make-current").isDisabled(), true);
  });

  it("sets a type's running limit and priority on the flow-limits page and shows the start it holds PENDING until a slot frees", async () => {
    await page.goto(`${server.url}/ui/#/flow-limits`);
    await page.locator("nav a.active", { hasText: "Flow limits" }).waitFor();
    await page.getByTestId("flow-limit-form").locator("summary").click();
    await page.getByTestId("flow-limit-processType").fill("ExportProcess");
    // A state has no running executions to limit, nor a priority: the fields are off while
    // State is set.
    const running = page.getByTestId("flow-limit-maxRunningExecutions");
    const priority = page.getByTestId("flow-limit-priority");
    await page.getByTestId("flow-limit-stateId").fill("ExportState");
    assert.equal(await running.isDisabled(), true);
    assert.equal(await priority.isDisabled(), true);
    await page.getByTestId("flow-limit-stateId").fill("");
    assert.equal(await running.isDisabled(), false);
    assert.equal(await priority.isDisabled(), false);
    // The select offers none (the default, 3) or 1 to 5.
    assert.deepEqual(await priority.locator("option").evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value)), ["", "1", "2", "3", "4", "5"]);
    await running.fill("1");
    await priority.selectOption("1");
    await page.getByTestId("flow-limit-reason").fill("one export per customer at a time, first");
    await page.getByTestId("flow-limit-submit").click();
    await page.getByTestId("flow-limit-done").filter({ hasText: "ExportProcess (all states): 1 running per key, priority 1 in force." }).waitFor();
    const typeRow = page.locator('[data-testid=flow-limit-row][data-process-type=ExportProcess][data-state-id=""]');
    await typeRow.getByTestId("flow-limit-override").filter({ hasText: /^1 running per key, priority 1$/ }).waitFor();
    assert.equal(await typeRow.getByTestId("flow-limit-effective").textContent(), "1 running per key, priority 1");
    assert.equal(await typeRow.getByTestId("flow-limit-declared").textContent(), "—");
    assert.deepEqual((await client.listFlowLimits("ExportProcess")).limits.map((e) => [e.stateId ?? null, e.effective]), [[null, { maxRunningExecutions: 1, priority: 1 }]]);
    // The history: the operator's change, with its reason, priority and all.
    const change = page.getByTestId("flow-limit-change").filter({ hasText: "ExportProcess" }).filter({ hasText: "one export per customer at a time, first" });
    await change.getByTestId("flow-limit-change-text").filter({ hasText: /^— → 1 running per key, priority 1$/ }).waitFor();
    assert.match((await change.textContent()) ?? "", /OPERATOR/);
    const [audited] = (await client.flowLimitHistory({ processType: "ExportProcess" })).changes;
    assert.deepEqual([audited?.source, audited?.after], ["OPERATOR", { maxRunningExecutions: 1, priority: 1 }]);

    // A service instance reads the limits at most once a second: start on a key of their
    // own until a start waits, so that the limit is in force for what follows.
    let probes = 0;
    await eventually("the limit to hold a start", SOON, async () => {
      const probe = `export-probe-${probes++}`;
      await client.startProcess(ExportProcess, probe, undefined, { concurrencyKey: "probe" });
      return (await client.describe(probe)).paused?.pendingOnKey === "probe";
    });
    await client.startProcess(ExportProcess, "export-acme-1", undefined, { concurrencyKey: "acme" });
    await client.startProcess(ExportProcess, "export-acme-2", undefined, { concurrencyKey: "acme" });

    // The list: the held start reads PENDING, not RUNNING and paused, and asks nothing of
    // an operator; the one holding the slot runs.
    await page.goto(`${server.url}/ui/#/executions?type=ExportProcess`);
    const listed = (id: string) => page.locator(`[data-testid=execution-row][data-process-id="${id}"]`);
    await listed("export-acme-2").getByTestId("execution-row-status").filter({ hasText: /^PENDING$/ }).waitFor();
    assert.equal(await listed("export-acme-2").getByTestId("badge-paused").count(), 0);
    assert.equal(await listed("export-acme-2").getByTestId("badge-parked").count(), 0);
    assert.equal(await listed("export-acme-2").getAttribute("class"), "");
    assert.equal(await listed("export-acme-1").getByTestId("execution-row-status").textContent(), "RUNNING");
    // Started naming no priority: at the type's, 1.
    for (const id of ["export-acme-1", "export-acme-2"]) {
      assert.equal(await listed(id).getByTestId("execution-row-priority").getAttribute("data-priority"), "1", id);
    }

    // Its page: what it waits for instead of the paused banner, and no resume.
    await listed("export-acme-2").locator("a").click();
    await page.locator("[data-testid=execution-status]", { hasText: /^PENDING$/ }).waitFor();
    await page.getByTestId("pending-notice").filter({ hasText: "waiting for a running slot of key acme" }).waitFor();
    assert.equal(await page.getByTestId("badge-paused").count(), 0);
    assert.equal(await page.getByTestId("action-resume").isDisabled(), true);
    assert.equal(await page.getByTestId("action-pause").count(), 0);
    assert.match((await page.locator("dl.facts").textContent()) ?? "", /Pending.*waiting for a running slot of key acme/);

    // Terminating the running one frees its slot: the held one starts by itself.
    await page.goto(`${server.url}/ui/#/execution/export-acme-1`);
    await page.locator("[data-testid=execution-status]", { hasText: /^RUNNING$/ }).waitFor();
    assert.equal(await page.getByTestId("pending-notice").count(), 0);
    await page.getByTestId("action-terminate").click();
    await page.getByTestId("confirm").click();
    await page.locator("[data-testid=execution-status]", { hasText: "TERMINATED" }).waitFor();
    await page.goto(`${server.url}/ui/#/execution/export-acme-2`);
    await page.locator("[data-testid=execution-status]", { hasText: /^RUNNING$/ }).waitFor();
    await page.getByTestId("pending-notice").waitFor({ state: "detached" });
    await page.getByTestId("action-pause").waitFor();
    await page.locator("[data-testid=history-event][data-event-type=RESUMED]").waitFor();
    assert.equal((await client.describe("export-acme-2")).paused ?? null, null);

    for (const id of ["export-acme-2", ...Array.from({ length: probes }, (_, n) => `export-probe-${n}`)]) await client.stop(id);
    await client.setFlowLimits("ExportProcess", null);
  });

  it("says the token lacks the role instead of asking for another one", async () => {
    const viewer = "console-viewer-token-0123456789";
    const guarded = await XdbServer.start(db, [
      `security.tokens=[{name="viewer", token="${viewer}", roles=["read"]}]`,
    ]);
    others.push(guarded);
    await client.startProcess(SignupProcess, "signup-dee", undefined, {
      globalAttributePkValue: "dee",
      initialGlobalAttributes: { form: { email: "dee@example.com" }, status: "waiting" },
    });
    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      tab.setDefaultTimeout(SOON);
      await tab.goto(`${guarded.url}/ui/#/execution/signup-dee`);
      await tab.getByTestId("dialog").filter({ hasText: "requires a token" }).waitFor();
      await tab.getByTestId("field-token").fill(viewer);
      await tab.getByTestId("confirm").click();
      await tab.locator("[data-testid=execution-status]", { hasText: "RUNNING" }).waitFor();
      await tab.getByTestId("action-pause").click();
      await tab.getByTestId("confirm").click();
      await tab.getByTestId("notice-error").filter({ hasText: "lacks the role" }).filter({ hasText: "operate" }).waitFor();
      assert.equal(await tab.getByTestId("dialog").count(), 0, "no token prompt");
      assert.equal((await client.describe("signup-dee")).paused ?? null, null, "nothing paused");
    } finally {
      await context.close();
    }
  });

  it("asks for the token when the service requires one", async () => {
    const guarded = await XdbServer.start(db, [`security.api_tokens=${JSON.stringify([TOKEN])}`]);
    others.push(guarded);
    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      tab.setDefaultTimeout(SOON);
      await tab.goto(`${guarded.url}/ui/#/executions`);
      await tab.getByTestId("dialog").filter({ hasText: "requires a token" }).waitFor();
      assert.equal(await tab.getByTestId("execution-row").count(), 0);
      await tab.getByTestId("field-token").fill("not-the-token");
      await tab.getByTestId("confirm").click();
      await tab.getByTestId("dialog").filter({ hasText: "not accepted" }).waitFor();
      await tab.getByTestId("field-token").fill(TOKEN);
      await tab.getByTestId("confirm").click();
      await tab.locator('[data-testid=execution-row][data-process-id="signup-cy"]').waitFor();
      await tab.getByTestId("dialog").waitFor({ state: "detached" });
    } finally {
      await context.close();
    }
  });

  it("is not served when turned off", async () => {
    const off = await XdbServer.start(db, ["api.console=false"]);
    others.push(off);
    for (const path of ["/ui", "/ui/", "/ui/app.js"]) {
      assert.equal((await fetch(`${off.url}${path}`)).status, 404, path);
    }
    assert.equal((await fetch(`${server.url}/ui/app.js`)).status, 200);
  });
});
