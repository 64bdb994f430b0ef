// The batch calls against a fake fetch: their requests (checked against the repository's
// OpenAPI document too), and how their answers and refusals are read.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { BATCH_PATHS, Client, encode, isApiError, localQueueMessage, type BatchInfo, type FilterNode } from "@xdb/sdk";

import { contractProblems } from "./contract.js";

interface Sent { path: string; body: Record<string, unknown> }

const STARTED = { operation: "PUBLISH_TO_LOCAL_QUEUE", processType: "Order", messages: [{ queueName: "events" }] };
const BATCH = {
  batchId: "b-1",
  operation: "PUBLISH_TO_LOCAL_QUEUE",
  status: "RUNNING",
  request: STARTED,
  ratePerSecond: 50,
  expected: 10,
  matched: 4,
  done: 2,
  skipped: 1,
  failed: 1,
  createdTimestampMs: 1_700_000_000_000,
  future: "ignored",
};
const DESCRIBED = {
  batch: BATCH,
  notDone: [
    { processExecutionId: "e-3", outcome: "FAILED", reason: "boom" },
    { processExecutionId: "e-2", outcome: "SKIPPED", reason: "closed" },
  ],
};

/** A fetch answering as the service would, recording what was sent. */
function fakeService(): { client: Client; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    const path = new URL(input instanceof Request ? input.url : input.toString()).pathname;
    const body = JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown>;
    sent.push({ path, body });
    if (path === BATCH_PATHS.start) return Promise.resolve(Response.json({ batchId: "b-1", expected: 10 }));
    if (path === BATCH_PATHS.list) return Promise.resolve(Response.json({ batches: [BATCH], nextPageToken: "n" }));
    if (path === BATCH_PATHS.cancel) {
      const cancelled = { ...BATCH, status: "CANCELLED", error: "cancelled by ops: enough", closedTimestampMs: 1_700_000_000_500 };
      return Promise.resolve(Response.json({ batch: cancelled }));
    }
    if (body.batchId === "nope") return Promise.resolve(Response.json({ subType: "BATCH_NOT_FOUND", message: "no nope" }, { status: 404 }));
    return Promise.resolve(Response.json(DESCRIBED));
  };
  return { client: new Client({ serviceUrl: "http://xdb", fetch }), sent };
}

describe("batch calls", () => {
  it("starts a batch with its selection and the operation's arguments, and a request id", async () => {
    const { client, sent } = fakeService();
    const started = await client.startBatch({
      operation: "PUBLISH_TO_LOCAL_QUEUE",
      processType: "Order",
      where: { and: [{ field: "status", op: "=", value: "RUNNING" }, { column: "tier", op: "=", value: "gold" }] },
      businessTable: { tableName: "shop.orders", primaryKeyColumn: "order_id" },
      ratePerSecond: 50,
      reason: "nudge",
      identity: "ops",
      messages: [localQueueMessage("events", { n: 1 }, "nudge-1")],
      requestId: "nudge:2026-11-28",
    });
    assert.deepEqual(started, { batchId: "b-1", expected: 10 });
    await client.startBatch({ operation: "RESET", reset: { stateId: "Pay", stateInput: encode("input", 1) } });
    await client.startBatch({ operation: "MOVE_TO_DEPLOYMENT", processType: "Order", moveTo: { name: "shop", version: "2" } });
    assert.deepEqual(sent[0], {
      path: BATCH_PATHS.start,
      body: {
        operation: "PUBLISH_TO_LOCAL_QUEUE",
        processType: "Order",
        where: { and: [{ field: "status", op: "=", value: "RUNNING" }, { column: "tier", op: "=", value: "gold" }] },
        businessTable: { tableName: "shop.orders", primaryKeyColumn: "order_id" },
        ratePerSecond: 50,
        reason: "nudge",
        identity: "ops",
        messages: [{ queueName: "events", payload: { encoding: "json", data: '{"n":1}' }, dedupId: "nudge-1" }],
        requestId: "nudge:2026-11-28",
      },
    });
    const { requestId, ...reset } = sent[1]?.body ?? {};
    assert.match(String(requestId), /^[0-9a-f-]{36}$/);
    assert.deepEqual(reset, { operation: "RESET", reset: { stateId: "Pay", stateInput: { encoding: "json", data: "1" } } });
    assert.notEqual(sent[2]?.body.requestId, requestId, "each batch start has its own id");
    for (const { path, body } of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));
  });

  it("starts a REPRIORITIZE batch with its change, as the contract takes it", async () => {
    const { client, sent } = fakeService();
    const where: FilterNode = { and: [{ field: "status", op: "=", value: "RUNNING" }, { field: "priority", op: ">=", value: 3 }] };
    await client.startBatch({
      operation: "REPRIORITIZE",
      processType: "Order",
      where,
      reprioritize: { priority: 1, fairnessKey: "tenant-a", fairnessWeight: 4 },
      reason: "incident",
      requestId: "incident-7",
    });
    await client.startBatch({ operation: "REPRIORITIZE", reprioritize: { fairnessKey: "" } });
    assert.deepEqual(sent[0]?.body, {
      operation: "REPRIORITIZE",
      processType: "Order",
      where,
      reprioritize: { priority: 1, fairnessKey: "tenant-a", fairnessWeight: 4 },
      reason: "incident",
      requestId: "incident-7",
    });
    assert.deepEqual(sent[1]?.body.reprioritize, { fairnessKey: "" });
    for (const { path, body } of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));
  });

  it("lists, describes and cancels batches, and reads BATCH_NOT_FOUND", async () => {
    const { client, sent } = fakeService();
    const page = await client.listBatches({ status: "RUNNING", pageSize: 5, nextPageToken: "t" });
    assert.equal(page.nextPageToken, "n");
    const batch: BatchInfo | undefined = page.batches[0];
    assert.equal(batch?.operation, "PUBLISH_TO_LOCAL_QUEUE");
    assert.deepEqual([batch?.expected, batch?.matched, batch?.done, batch?.skipped, batch?.failed], [10, 4, 2, 1, 1]);
    assert.equal(batch?.request.messages?.[0]?.queueName, "events");
    const described = await client.describeBatch("b-1");
    assert.deepEqual(described.notDone?.map((i) => [i.processExecutionId, i.outcome]), [["e-3", "FAILED"], ["e-2", "SKIPPED"]]);
    const cancelled = await client.cancelBatch("b-1", { reason: "enough", identity: "ops" });
    assert.equal(cancelled.batch.status, "CANCELLED");
    assert.equal(cancelled.batch.closedTimestampMs, 1_700_000_000_500);
    assert.deepEqual(cancelled.notDone, []);
    await assert.rejects(client.describeBatch("nope"), (e: unknown) => isApiError(e, "BATCH_NOT_FOUND") && e.status === 404);
    await client.listBatches();
    assert.deepEqual(sent, [
      { path: BATCH_PATHS.list, body: { status: "RUNNING", pageSize: 5, nextPageToken: "t" } },
      { path: BATCH_PATHS.describe, body: { batchId: "b-1" } },
      { path: BATCH_PATHS.cancel, body: { batchId: "b-1", reason: "enough", identity: "ops" } },
      { path: BATCH_PATHS.describe, body: { batchId: "nope" } },
      { path: BATCH_PATHS.list, body: {} },
    ]);
    for (const { path, body } of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));
  });

  it("sends stop and publish for a given execution, as the contract takes them", async () => {
    const sent: Sent[] = [];
    const fetch: typeof globalThis.fetch = (input, init) => {
      const url = input instanceof Request ? input.url : input.toString();
      sent.push({ path: new URL(url).pathname, body: JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown> });
      return Promise.resolve(Response.json({}));
    };
    const client = new Client({ serviceUrl: "http://xdb", fetch });
    await client.stop("p", { stopType: "FAIL", processExecutionId: "e-1", requestId: "stop-1" });
    await client.publishMessages("p", [localQueueMessage("q"), localQueueMessage("q", 2, "d-2")], { processExecutionId: "e-1" });
    assert.deepEqual(sent[0]?.body, { processId: "p", stopType: "FAIL", processExecutionId: "e-1", requestId: "stop-1" });
    assert.deepEqual(sent[1]?.body.messages, [{ queueName: "q" }, { queueName: "q", payload: { encoding: "json", data: "2" }, dedupId: "d-2" }]);
    assert.equal(sent[1]?.body.processExecutionId, "e-1");
    for (const { path, body } of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));
  });
});
