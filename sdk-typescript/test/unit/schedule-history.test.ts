// The schedules' audit history call against a fake fetch (its requests checked against the
// repository's OpenAPI document too), and its retries, as a read's, against a scripted
// HTTP server.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, isApiError, isRepeatable, protocol } from "@xdb/sdk";

import { contractProblems } from "./contract.js";
import { answer, drop, refusal, scriptedService } from "./scripted-service.js";

const { SCHEDULE_PATHS } = protocol;

interface Sent { path: string; body: Record<string, unknown> }

const SCHEDULE = {
  scheduleId: "nightly",
  spec: { cron: { expression: "0 3 * * *", timeZone: "Europe/Paris" } },
  start: { processType: "Order", workerUrl: "http://worker" },
  overlapPolicy: "SKIP",
  catchupWindowSeconds: 60,
  paused: false,
  createdTimestampMs: 1_700_000_000_000,
  updatedTimestampMs: 1_700_000_000_000,
};
const PAUSED = { ...SCHEDULE, paused: true, reason: "maintenance" };
const CHANGES = {
  changes: [
    {
      changeId: 9,
      scheduleId: "nightly",
      action: "TRIGGERED",
      before: PAUSED,
      after: PAUSED,
      detail: "process id nightly-1700000000000",
      changedBy: "anonymous",
      changedTimestampMs: 1_700_000_000_002,
      future: "ignored",
    },
    {
      changeId: 8,
      scheduleId: "nightly",
      action: "PAUSED",
      before: SCHEDULE,
      after: PAUSED,
      changedBy: "ops",
      reason: "maintenance",
      changedTimestampMs: 1_700_000_000_001,
    },
  ],
  nextPageToken: "n",
};

/** A fetch answering as the service would, recording what was sent. */
function fakeService(): { client: Client; sent: Sent[] } {
  const sent: Sent[] = [];
  const fetch: typeof globalThis.fetch = (input, init) => {
    const path = new URL(input instanceof Request ? input.url : input.toString()).pathname;
    const body = JSON.parse(typeof init?.body === "string" ? init.body : "{}") as Record<string, unknown>;
    sent.push({ path, body });
    return Promise.resolve(Response.json(CHANGES));
  };
  return { client: new Client({ serviceUrl: "http://xdb", fetch }), sent };
}

describe("the schedule history call", () => {
  it("sends its filters as the contract takes them and reads the changes", async () => {
    const { client, sent } = fakeService();
    const history = await client.scheduleHistory({ scheduleId: "nightly", pageSize: 2 });
    assert.equal(history.nextPageToken, "n");
    assert.deepEqual(history.changes.map((c) => [c.action, c.changedBy]), [["TRIGGERED", "anonymous"], ["PAUSED", "ops"]]);
    const [trigger, pause] = history.changes;
    assert.equal(trigger?.detail, "process id nightly-1700000000000");
    assert.deepEqual([pause?.before?.paused, pause?.after?.paused, pause?.reason], [false, true, "maintenance"]);
    await client.scheduleHistory({ nextPageToken: "n" });
    await client.scheduleHistory();
    assert.deepEqual(sent, [
      { path: SCHEDULE_PATHS.history, body: { scheduleId: "nightly", pageSize: 2 } },
      { path: SCHEDULE_PATHS.history, body: { nextPageToken: "n" } },
      { path: SCHEDULE_PATHS.history, body: {} },
    ]);
    for (const { path, body } of sent) assert.equal(contractProblems(path, body), "", JSON.stringify(body));
  });

  it("is sent again unchanged as a read, and never after a refusal", async () => {
    assert.ok(isRepeatable(SCHEDULE_PATHS.history, {}));
    const service = await scriptedService(drop, refusal(503, "DATABASE_UNAVAILABLE", "0"), answer(200, CHANGES));
    try {
      const client = new Client({ serviceUrl: service.url, maxRetryDelayMs: 20 });
      const history = await client.scheduleHistory({ scheduleId: "nightly" });
      assert.equal(history.changes.length, 2);
    } finally {
      await service.close();
    }
    assert.deepEqual(service.seen.map((s) => s.path), Array<string>(3).fill(SCHEDULE_PATHS.history));
    assert.equal(new Set(service.seen.map((s) => s.body)).size, 1, "a retry changed the body");
    assert.equal(service.json()[0]?.requestId, undefined);

    const bad = await scriptedService(answer(400, { subType: "INVALID_REQUEST", message: "pageSize: 1 to 1000, not 0" }));
    try {
      const client = new Client({ serviceUrl: bad.url, maxRetryDelayMs: 20 });
      await assert.rejects(
        client.scheduleHistory({ pageSize: 0 }),
        (e) => isApiError(e, "INVALID_REQUEST") && /pageSize/.test(e.message),
      );
    } finally {
      await bad.close();
    }
    assert.equal(bad.seen.length, 1, "a refusal is final");
  });
});
