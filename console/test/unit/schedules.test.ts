import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { changedFields, declaredByText, deleteRefusal, errorField, lastFiringText, nextFireText, scheduleChangeLines, scheduleRequest, scheduleState, specText } from "../../src/schedules.js";
import type { ScheduleChange, ScheduleInfo } from "../../src/types.js";
import { parseRoute, scheduleHref } from "../../src/views/routes.js";

const values = (given: Record<string, string>) => (name: string) => given[name] ?? "";

function info(paused: boolean, nextFireTimestampMs?: number): ScheduleInfo {
  return {
    scheduleId: "nightly",
    spec: { cron: { expression: "0 3 * * *" } },
    start: { processType: "Report" },
    overlapPolicy: "SKIP",
    catchupWindowSeconds: 60,
    paused,
    nextFireTimestampMs,
    createdTimestampMs: 0,
    updatedTimestampMs: 0,
  };
}

describe("schedules", () => {
  it("reads a spec as text: cron in its zone (UTC when none), or an interval and its jitter", () => {
    assert.equal(specText({ cron: { expression: "0 3 * * *", timeZone: "Europe/Paris" } }), "cron 0 3 * * * (Europe/Paris)");
    assert.equal(specText({ cron: { expression: "*/5 * * * * *" } }), "cron */5 * * * * * (UTC)");
    assert.equal(specText({ interval: { everySeconds: 2 } }), "every 2 s");
    assert.equal(specText({ interval: { everySeconds: 3600, jitterSeconds: 30 } }), "every 1h 0m, up to 30 s later");
    assert.equal(specText({}), "—");
  });

  it("says a paused schedule has no next firing, and names the latest firing", () => {
    assert.equal(scheduleState(info(false)), "active");
    assert.equal(scheduleState(info(true, 1_795_878_000_000)), "paused");
    assert.equal(nextFireText(info(false, 1_795_878_000_000)), "2026-11-28 15:00:00");
    assert.equal(nextFireText(info(true, 1_795_878_000_000)), "— (paused)");
    assert.equal(nextFireText(info(false)), "— (no more)");
    assert.equal(lastFiringText([]), "none yet");
    assert.equal(lastFiringText(undefined), "none yet");
    assert.equal(
      lastFiringText([
        { nominalTimestampMs: 1_795_878_000_000, processId: "nightly-2026-11-28T15:00:00Z", trigger: "MANUAL", outcome: "STARTED" },
        { nominalTimestampMs: 0, processId: "nightly-1970-01-01T00:00:00Z", trigger: "SPEC", outcome: "SKIPPED" },
      ]),
      "STARTED (MANUAL, 2026-11-28 15:00:00)",
    );
  });

  it("names the type whose code owns a declared schedule, and offers no delete for it", () => {
    assert.equal(declaredByText(info(false)), undefined);
    assert.equal(declaredByText({ ...info(false), declaredBy: null }), undefined);
    assert.equal(declaredByText({ ...info(false), declaredBy: "Report" }), "declared by Report (its code owns it)");
    assert.equal(deleteRefusal(info(false)), undefined);
    assert.equal(deleteRefusal({ ...info(false), declaredBy: null }), undefined);
    assert.equal(
      deleteRefusal({ ...info(true), declaredBy: "Report" }),
      "The definition of Report declares this schedule: registering it without the schedule deletes it.",
    );
  });

  it("names the fields an update changed, with their values before and after", () => {
    const before = info(false);
    assert.deepEqual(changedFields(before, { ...before, updatedTimestampMs: 5, nextFireTimestampMs: 9, reason: "x" }), []);
    // Key order and absent-or-null fields are not changes; an empty note is none.
    assert.deepEqual(changedFields({ ...before, note: null, start: { workerUrl: "", processType: "Report" } }, { ...before, note: "" }), []);
    assert.deepEqual(
      changedFields(before, {
        ...before,
        spec: { interval: { everySeconds: 5 } },
        overlapPolicy: "ALLOW_ALL",
        catchupWindowSeconds: 30,
        paused: true,
        note: "ticks",
      }),
      ["spec: cron 0 3 * * * (UTC) → every 5 s", "overlapPolicy: SKIP → ALLOW_ALL", "catchupWindowSeconds: 1m 0s → 30 s", "paused: false → true", "note: — → ticks"],
    );
    assert.deepEqual(
      changedFields(
        { ...before, start: { processType: "Report", workerUrl: "http://a", startStateInput: { encoding: "json", data: "1" } } },
        { ...before, start: { processType: "Report", workerUrl: "http://b", startStateId: "Build", startStateInput: { encoding: "json", data: "2" } } },
      ),
      ["start.workerUrl: http://a → http://b", "start.startStateId: — → Build", "start.startStateInput changed"],
    );
  });

  it("reads a change of the history as lines: an update's fields, then its detail", () => {
    const change: ScheduleChange = { changeId: 1, scheduleId: "nightly", action: "UPDATED", changedBy: "ops", changedTimestampMs: 0 };
    assert.deepEqual(scheduleChangeLines({ ...change, before: info(false), after: { ...info(false), note: "n" } }), ["note: — → n"]);
    assert.deepEqual(scheduleChangeLines({ ...change, before: info(false), after: info(false) }), ["no field changed"]);
    assert.deepEqual(scheduleChangeLines({ ...change, action: "TRIGGERED", detail: "process id nightly-2026-11-28T15:00:00Z" }), ["process id nightly-2026-11-28T15:00:00Z"]);
    // A pause's schedule before and after differ in its paused flag: the action says so.
    assert.deepEqual(scheduleChangeLines({ ...change, action: "PAUSED", before: info(false), after: info(true), reason: "maintenance" }), []);
    assert.deepEqual(scheduleChangeLines({ ...change, action: "CREATED", after: info(false) }), []);
  });

  it("checks the create form before sending it, naming the field", () => {
    assert.deepEqual(scheduleRequest(values({})), { error: "The schedule id is missing.", field: "scheduleId" });
    assert.deepEqual(scheduleRequest(values({ scheduleId: "s" })), { error: "The process type is missing.", field: "processType" });
    const typed = { scheduleId: "s", processType: "Report" };
    assert.equal((scheduleRequest(values({ ...typed, kind: "cron" })) as { field: string }).field, "cronExpression");
    for (const every of ["", "0", "1.5", "-2", "often"]) {
      const checked = scheduleRequest(values({ ...typed, kind: "interval", everySeconds: every }));
      assert.equal("error" in checked && checked.field, "everySeconds", every);
    }
    assert.equal((scheduleRequest(values({ ...typed, kind: "interval", everySeconds: "5", jitterSeconds: "x" })) as { field: string }).field, "jitterSeconds");
    assert.equal((scheduleRequest(values({ ...typed, cronExpression: "0 3 * * *", catchupWindowSeconds: "1h" })) as { field: string }).field, "catchupWindowSeconds");
  });

  it("sends only what the form was given: the service fills in the rest", () => {
    assert.deepEqual(scheduleRequest(values({ scheduleId: " nightly ", processType: "Report", kind: "cron", cronExpression: "0 3 * * *" })), {
      request: { scheduleId: "nightly", spec: { cron: { expression: "0 3 * * *" } }, start: { processType: "Report" } },
    });
    assert.deepEqual(
      scheduleRequest(
        values({
          scheduleId: "tick",
          processType: "Poll",
          workerUrl: "http://w:8080",
          startStateId: "First",
          kind: "interval",
          everySeconds: "60",
          jitterSeconds: "10",
          cronExpression: "ignored",
          overlapPolicy: "ALLOW_ALL",
          catchupWindowSeconds: "0",
        }),
      ),
      {
        request: {
          scheduleId: "tick",
          spec: { interval: { everySeconds: 60, jitterSeconds: 10 } },
          start: { processType: "Poll", workerUrl: "http://w:8080", startStateId: "First" },
          overlapPolicy: "ALLOW_ALL",
          catchupWindowSeconds: 0,
        },
      },
    );
    const zoned = scheduleRequest(values({ scheduleId: "p", processType: "R", cronExpression: "0 3 * * *", timeZone: "Europe/Paris", overlapPolicy: "SKIP" }));
    assert.deepEqual("request" in zoned && zoned.request.spec, { cron: { expression: "0 3 * * *", timeZone: "Europe/Paris" } });
  });

  it("finds the form field a refusal names", () => {
    assert.equal(errorField("spec.cron.expression: '61 * * * *' is not a cron expression"), "cronExpression");
    assert.equal(errorField("spec.cron.timeZone: 'Mars/Olympus' is not an IANA time zone"), "timeZone");
    assert.equal(errorField("spec.interval.jitterSeconds: must be less than everySeconds"), "jitterSeconds");
    assert.equal(errorField("start.workerUrl: required, as process type 'X' is not registered"), "workerUrl");
    assert.equal(errorField("start.processType: the worker at http://w registered no process type 'X'"), "processType");
    assert.equal(errorField("a schedule with id nightly exists", "SCHEDULE_ALREADY_EXISTS"), "scheduleId");
    assert.equal(errorField("the database is unreachable"), undefined);
  });

  it("routes to the list and to a schedule by its id", () => {
    assert.deepEqual(parseRoute("#/schedules"), { page: "schedules" });
    assert.equal(scheduleHref("nightly/eu"), "#/schedule/nightly%2Feu");
    assert.deepEqual(parseRoute(scheduleHref("nightly/eu")), { page: "schedule", scheduleId: "nightly/eu" });
  });
});
