// Schedules a process declares (`Process.schedules`): how registration sends them, checked
// against the repository's OpenAPI document too. Pure, no IO.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  Client, CommandRequest, DEFINITIONS_PATHS, StateDecision, StateSchema, WorkerService, XdbSdkError, encode, exportDefinition,
  protocol, type AsyncState, type Process, type ScheduleDeclaration, type WorkerDeployment,
} from "@xdb/sdk";

import { contractProblems } from "./contract.js";

const { SCHEDULE_PATHS } = protocol;

class Tick implements AsyncState {
  execute() {
    return StateDecision.gracefulCompleteProcess("ticked");
  }
}
class Report implements AsyncState<string> {
  waitUntil() {
    return CommandRequest.empty();
  }
  execute() {
    return StateDecision.deadEnd();
  }
}

class Ticking implements Process {
  readonly processType = "Ticking";
  readonly schedules: readonly ScheduleDeclaration[] = [
    {
      scheduleId: "ticks",
      spec: { interval: { everySeconds: 60, jitterSeconds: 5 } },
      startStateId: "Tick",
      startStateInput: encode("input", "now"),
      overlapPolicy: "ALLOW_ALL",
      catchupWindowSeconds: 120,
      note: "declared in code",
    },
    {
      scheduleId: "nightly",
      spec: { cron: { expression: "0 3 * * *", timeZone: "Europe/Paris" } },
      startStateId: "Report",
      startStateConfig: { skipWaitUntil: true },
    },
    { scheduleId: "bare", spec: { cron: { expression: "*/5 * * * *" } } },
  ];
  stateSchema() {
    return StateSchema.withStartingState(new Tick(), new Report());
  }
}
class Bare implements Process {
  readonly processType = "bare";
  stateSchema() {
    return StateSchema.noStartingState(new Tick());
  }
}

const deployment: WorkerDeployment = { name: "ticks", version: "1", workerUrl: "http://worker:8000" };

describe("declared schedules", () => {
  it("go with the definition as declared", () => {
    const wire = exportDefinition(new Ticking());
    assert.deepEqual(wire.schedules, new Ticking().schedules);
    assert.deepEqual(wire.schedules?.[0], {
      scheduleId: "ticks",
      spec: { interval: { everySeconds: 60, jitterSeconds: 5 } },
      startStateId: "Tick",
      startStateInput: encode("input", "now"),
      overlapPolicy: "ALLOW_ALL",
      catchupWindowSeconds: 120,
      note: "declared in code",
    });
    assert.equal(contractProblems(DEFINITIONS_PATHS.register, { deployment, definitions: [wire], force: false }), "");
  });

  it("are absent when a process declares none, which registers as before", () => {
    assert.equal(
      JSON.stringify(exportDefinition(new Bare())),
      '{"processType":"bare","states":[{"id":"Tick","hasWaitUntil":false,"config":{"skipWaitUntil":true}}],' +
        '"startStates":[],"localQueues":[],"rpcs":[],"localAttributes":[],"versioningPolicy":"PINNED"}',
    );
    const emptied = { processType: "emptied", schedules: [], stateSchema: () => StateSchema.noStartingState(new Tick()) };
    assert.equal("schedules" in exportDefinition(emptied), false);
  });

  it("are sent by the worker's registration", async () => {
    const sent: unknown[] = [];
    const fetch: typeof globalThis.fetch = (_input, init) => {
      sent.push(JSON.parse(typeof init?.body === "string" ? init.body : "null"));
      return Promise.resolve(Response.json({ registered: [] }));
    };
    const client = new Client({ serviceUrl: "http://xdb", fetch });
    await new WorkerService().register(new Ticking(), new Bare()).registerDefinitions(client, deployment);
    const [body] = sent as { definitions: Record<string, unknown>[] }[];
    const [ticking, bare] = body?.definitions ?? [];
    assert.deepEqual(ticking, JSON.parse(JSON.stringify(exportDefinition(new Ticking()))));
    assert.equal(bare && "schedules" in bare, false);
  });

  it("show who declared them when described", async () => {
    const schedule = {
      scheduleId: "ticks",
      spec: { interval: { everySeconds: 60 } },
      start: { processType: "Ticking", workerUrl: "http://worker:8000" },
      overlapPolicy: "ALLOW_ALL",
      catchupWindowSeconds: 60,
      paused: false,
      createdTimestampMs: 1,
      updatedTimestampMs: 1,
      declaredBy: "Ticking",
    };
    const fetch: typeof globalThis.fetch = (input) => {
      assert.equal(new URL(input instanceof Request ? input.url : input.toString()).pathname, SCHEDULE_PATHS.describe);
      return Promise.resolve(Response.json({ schedule, nextFireTimestampsMs: [] }));
    };
    const described = await new Client({ serviceUrl: "http://xdb", fetch }).describeSchedule("ticks");
    assert.equal(described.schedule.declaredBy, "Ticking");
  });

  for (const [what, schedules, message] of [
    ["that are not a list", { scheduleId: "x" }, /wrong: schedules must be a list/],
    ["that are not declarations", ["x"], /wrong: schedules: "x" is not a schedule declaration/],
    [
      "declaring an id twice",
      [{ scheduleId: "x", spec: { interval: { everySeconds: 1 } } }, { scheduleId: "x", spec: { interval: { everySeconds: 2 } } }],
      /wrong: schedule id "x" is declared twice/,
    ],
    [
      "starting an unknown state",
      [{ scheduleId: "x", spec: { interval: { everySeconds: 1 } }, startStateId: "Nope" }],
      /wrong: schedule "x" starts state "Nope", which is not registered/,
    ],
  ] as const) {
    it(`schedules ${what} are refused at export`, () => {
      const wrong = {
        processType: "wrong",
        schedules: schedules as unknown as ScheduleDeclaration[],
        stateSchema: () => StateSchema.noStartingState(new Tick()),
      };
      assert.throws(() => exportDefinition(wrong), (e) => e instanceof XdbSdkError && e.kind === "NOT_ALLOWED" && message.test(e.message));
    });
  }
});
