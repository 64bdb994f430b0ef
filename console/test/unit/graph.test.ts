import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { formatLoading, formatRecovery, formatRetryPolicy } from "../../src/format.js";
import { countStates, deriveEdges, END, layoutGraph, START, stateIdOf, transitionsOf } from "../../src/graph.js";
import type { HistoryEvent, ProcessDefinition, StateInfo, StatesResponse } from "../../src/types.js";
import { definitionHref, parseRoute } from "../../src/views/routes.js";

let eventId = 0;
function event(eventType: string, details: Record<string, unknown>): HistoryEvent {
  eventId += 1;
  return { eventId, eventTimestampMs: 1_700_000_000_000 + eventId, eventType, details };
}
const started = (start?: string) => event("PROCESS_STARTED", { processType: "Order", ...(start ? { startStateId: start } : {}) });
const executed = (stateExecutionId: string, decision: Record<string, unknown>) =>
  event("EXECUTE_COMPLETED", { stateExecutionId, decision });
const next = (...ids: string[]) => ({ nextStates: ids.map((stateId) => ({ stateId })) });
const close = { threadCloseDecision: { closeType: "GRACEFUL_COMPLETE_PROCESS" } };

/** An order: reserve, then ship and notify in parallel; ship waits, then completes. */
const ORDER: HistoryEvent[] = [
  started("Reserve"),
  event("WAIT_UNTIL_COMPLETED", { stateExecutionId: "Reserve-1", commandRequest: {} }),
  executed("Reserve-1", next("Ship", "Notify")),
  executed("Notify-1", { threadCloseDecision: { closeType: "DEAD_END" } }),
  event("LOCAL_QUEUE_MESSAGES_CONSUMED", { stateExecutionId: "Ship-1", queueName: "shipped" }),
  executed("Ship-1", close),
  event("PROCESS_CLOSED", { status: "COMPLETED" }),
];

const DEFINITION: ProcessDefinition = {
  processType: "Order",
  states: [
    { id: "Reserve", hasWaitUntil: false },
    { id: "Ship", hasWaitUntil: true },
    { id: "Notify", hasWaitUntil: false },
    {
      id: "Refund",
      hasWaitUntil: false,
      config: { stateFailureRecoveryOptions: { policy: "PROCEED_TO_CONFIGURED_STATE", stateFailureProceedStateId: "Ship" } },
    },
  ],
  startStates: ["Reserve"],
};

function state(stateId: string, status: StateInfo["status"], call?: StateInfo["pendingCall"]): StateInfo {
  return { stateId, stateExecutionId: `${stateId}-1`, status, startedTimestampMs: 0, ...(call ? { pendingCall: call } : {}) };
}
function running(...states: StateInfo[]): StatesResponse {
  return { processExecutionId: "e", status: "RUNNING", states };
}

describe("state graph", () => {
  it("reads a state id from a state execution id", () => {
    assert.equal(stateIdOf("Ship-12"), "Ship");
    assert.equal(stateIdOf("check-out-3"), "check-out");
    assert.equal(stateIdOf("NoNumber"), "NoNumber");
  });

  it("finds the start, each decided next state, and each closed thread in a history", () => {
    assert.deepEqual(transitionsOf(ORDER), [
      { from: START, to: "Reserve" },
      { from: "Reserve", to: "Ship" },
      { from: "Reserve", to: "Notify" },
      { from: "Notify", to: END },
      { from: "Ship", to: END },
    ]);
    assert.deepEqual(transitionsOf([started(), executed("Loop-1", next("Loop")), event("EXECUTE_COMPLETED", {})]), [
      { from: "Loop", to: "Loop" },
    ]);
  });

  it("counts each transition over the histories and adds declared failure recoveries", () => {
    const again = [started("Reserve"), executed("Reserve-1", next("Ship")), executed("Ship-1", next("Ship")), executed("Ship-2", close)];
    const edges = deriveEdges([ORDER, again], DEFINITION);
    const byKey = Object.fromEntries(edges.map((e) => [`${e.from}>${e.to}:${e.kind}`, e.count]));
    assert.deepEqual(byKey, {
      [`${START}>Reserve:seen`]: 2,
      [`Notify>${END}:seen`]: 1,
      "Reserve>Notify:seen": 1,
      "Reserve>Ship:seen": 2,
      [`Ship>${END}:seen`]: 2,
      "Ship>Ship:seen": 1,
      "Refund>Ship:recovery": 0,
    });
    assert.deepEqual(deriveEdges([], undefined), []);
  });

  it("counts running and waiting state executions, marking parked and backing-off ones", () => {
    const now = 1_000_000;
    const counts = countStates(
      [
        running(
          state("Ship", "WAITING_COMMANDS"),
          state("Reserve", "EXECUTE_RUNNING", { api: "execute", attempt: 3, dueTimestampMs: now + 60_000, phase: "SCHEDULED" }),
          state("Done", "COMPLETED"),
        ),
        running(
          state("Ship", "WAITING_COMMANDS"),
          state("Reserve", "EXECUTE_RUNNING", { api: "execute", attempt: 1, dueTimestampMs: now - 5, phase: "SCHEDULED" }),
        ),
        running(state("Reserve", "WAIT_UNTIL_RUNNING", { api: "waitUntil", attempt: 2, dueTimestampMs: now - 5, phase: "PARKED" })),
        { processExecutionId: "closed", status: "COMPLETED", states: [state("Ship", "WAITING_COMMANDS")] },
      ],
      now,
    );
    assert.deepEqual(Object.fromEntries(counts), {
      Ship: { running: 0, waiting: 2, parked: 0, backingOff: 0 },
      Reserve: { running: 3, waiting: 0, parked: 1, backingOff: 1 },
    });
  });

  it("lays out columns by distance from the start, the end after the states that close", () => {
    const edges = deriveEdges([ORDER], DEFINITION);
    const layout = layoutGraph(["Reserve", "Ship", "Notify", "Refund"], ["Reserve"], edges);
    const box = (id: string) => {
      const found = layout.boxes.find((b) => b.id === id);
      assert.ok(found, id);
      return found;
    };
    assert.deepEqual(
      layout.boxes.map((b) => [b.id, b.layer]),
      [[START, 0], ["Reserve", 1], ["Ship", 2], ["Notify", 2], ["Refund", 3], [END, 3]],
    );
    assert.ok(box(START).x < box("Reserve").x && box("Reserve").x < box("Ship").x && box("Ship").x < box("Refund").x);
    assert.equal(box("Ship").x, box("Notify").x, "one column");
    assert.ok(box("Ship").y + box("Ship").height <= box("Notify").y, "no overlap within a column");
    for (const b of layout.boxes) {
      assert.ok(b.x >= 0 && b.y >= 0 && b.x + b.width <= layout.width && b.y + b.height <= layout.height, b.id);
    }
    assert.equal(layout.arrows.length, edges.length);
    // A forward arrow leaves the right side of its state and reaches the left side of the next.
    const forward = layout.arrows.find((a) => a.from === "Reserve" && a.to === "Ship");
    assert.ok(forward);
    const reserve = box("Reserve");
    const ship = box("Ship");
    assert.ok(forward.path.startsWith(`M ${reserve.x + reserve.width} ${reserve.y + reserve.height / 2} C`), forward.path);
    assert.ok(forward.path.endsWith(`, ${ship.x} ${ship.y + ship.height / 2}`), forward.path);
    // The recovery goes back a column: below the boxes.
    const back = layout.arrows.find((a) => a.kind === "recovery");
    assert.ok(back && back.labelY > Math.max(...layout.boxes.map((b) => b.y + b.height)));
  });

  it("arches an arrow that skips a column over the boxes", () => {
    const history = [started("A"), executed("A-1", next("B", "C")), executed("B-1", next("C")), executed("C-1", close)];
    const layout = layoutGraph(["A", "B", "C"], [], deriveEdges([history]));
    assert.deepEqual(
      layout.boxes.map((b) => [b.id, b.layer]),
      [[START, 0], ["A", 1], ["B", 2], ["C", 2], [END, 3]],
    );
    // A closes a thread too: its arrow to the end skips B and C's column.
    const skip = layoutGraph(["A", "B", "C"], [], deriveEdges([[...history, executed("A-2", close)]]));
    const over = skip.arrows.find((a) => a.from === "A" && a.to === END);
    const top = Math.min(...skip.boxes.filter((b) => b.kind === "state").map((b) => b.y));
    assert.ok(over && over.labelY < top, "above every box");
  });

  it("puts a self-loop on top of its state, and states reached from nowhere after the rest", () => {
    const layout = layoutGraph(["Loop", "Orphan"], [], deriveEdges([[started("Loop"), executed("Loop-1", next("Loop"))]]));
    assert.deepEqual(
      layout.boxes.map((b) => [b.id, b.layer]),
      [[START, 0], ["Loop", 1], ["Orphan", 2]],
    );
    const loop = layout.arrows.find((a) => a.from === "Loop" && a.to === "Loop");
    const box = layout.boxes[1];
    assert.ok(loop && box && loop.labelY < box.y && loop.labelY > 0);
    // A history naming a state the definition no longer has: drawn, marked undeclared.
    const old = layoutGraph(["A"], ["A"], deriveEdges([[started("A"), executed("A-1", next("Gone"))]]));
    assert.deepEqual(
      old.boxes.filter((b) => b.kind === "state").map((b) => [b.id, b.declared]),
      [["A", true], ["Gone", false]],
    );
    // Nothing seen yet: the declared states, the first in the first column.
    const quiet = layoutGraph(["A", "B"], [], []);
    assert.deepEqual(quiet.boxes.map((b) => [b.id, b.layer]), [["A", 0], ["B", 1]]);
    assert.equal(quiet.arrows.length, 0);
  });
});

describe("definition formatting and routes", () => {
  it("states retry policies with their defaults", () => {
    assert.equal(formatRetryPolicy(undefined), "unlimited attempts, 1 s ×2 up to 1m 40s (default)");
    assert.equal(
      formatRetryPolicy({ initialIntervalSeconds: 3600, maximumIntervalSeconds: 3600, maximumAttempts: 0 }),
      "unlimited attempts, every 1h 0m",
    );
    assert.equal(
      formatRetryPolicy({ initialIntervalSeconds: 2, backoffCoefficient: 3, maximumIntervalSeconds: 60, maximumAttempts: 5, maximumAttemptsDurationSeconds: 600 }),
      "5 attempts, 2 s ×3 up to 1m 0s, within 10m 0s",
    );
    assert.equal(formatRecovery(undefined), "fail the process");
    assert.equal(formatRecovery(DEFINITION.states[3]?.config), "proceed to Ship");
    assert.equal(formatLoading(["form", "status"], "EXCLUSIVE_LOCK"), "form, status (EXCLUSIVE_LOCK)");
    assert.equal(formatLoading(undefined, "NO_LOCK"), "nothing");
  });

  it("routes to the definitions and to one process type at a revision", () => {
    assert.deepEqual(parseRoute("#/definitions"), { page: "definitions" });
    assert.deepEqual(parseRoute(definitionHref("Order Process")), { page: "definition", processType: "Order Process" });
    assert.deepEqual(parseRoute(definitionHref("Order", 3)), { page: "definition", processType: "Order", revision: 3 });
    assert.deepEqual(parseRoute("#/definition/Order/x"), { page: "definition", processType: "Order" });
    assert.deepEqual(parseRoute("#/definition/"), { page: "executions", query: "" });
  });
});
