import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { eventStateExecution, summarizeEvent } from "../../src/history.js";

const event = (eventType: string, details: Record<string, unknown>) => ({ eventType, details });

describe("history summaries", () => {
  it("says in one line what each event type did", () => {
    assert.equal(summarizeEvent(event("PROCESS_STARTED", { processType: "Signup", startStateId: "Verify" })), "started Signup at Verify");
    assert.equal(summarizeEvent(event("PROCESS_CLOSED", { status: "FAILED", failure: "boom" })), "closed FAILED: boom");
    assert.equal(
      summarizeEvent(
        event("WAIT_UNTIL_COMPLETED", {
          stateExecutionId: "Verify-1",
          commandRequest: { waitingType: "ANY_OF_COMPLETION", timerCommands: [{ delayInSeconds: 3600 }], localQueueCommands: [{ queueName: "verify" }] },
        }),
      ),
      "waits for any of completion: 1 timer, queue verify",
    );
    assert.equal(summarizeEvent(event("EXECUTE_COMPLETED", { decision: { nextStates: [{ stateId: "Ship" }, { stateId: "Bill" }] } })), "→ Ship, Bill");
    assert.equal(
      summarizeEvent(event("EXECUTE_COMPLETED", { decision: { threadCloseDecision: { closeType: "GRACEFUL_COMPLETE_PROCESS" } } })),
      "closes its thread: GRACEFUL_COMPLETE_PROCESS",
    );
    assert.equal(summarizeEvent(event("STATE_API_FAILED", { api: "EXECUTE", attempt: 2, error: "down" })), "EXECUTE attempt 2 failed: down");
    assert.match(summarizeEvent(event("STATE_FAILED", { api: "EXECUTE", attempt: 9, error: "x".repeat(300) })), /^EXECUTE attempt 9 failed: x+…$/);
    assert.equal(summarizeEvent(event("TIMER_FIRED", { timerIndex: 0 })), "timer 0 fired");
    assert.equal(summarizeEvent(event("LOCAL_QUEUE_MESSAGES_PUBLISHED", { messages: 2, duplicates: 1 })), "2 messages published, 1 duplicate(s) dropped");
    assert.equal(summarizeEvent(event("LOCAL_QUEUE_MESSAGES_CONSUMED", { queueName: "verify", messages: [{ sequenceId: 1 }] })), "1 message consumed from verify");
    assert.equal(summarizeEvent(event("RPC_COMPLETED", { rpcName: "expedite", appendedStates: ["Ship"], published: 1 })), "RPC expedite completed → Ship, 1 published");
    assert.equal(summarizeEvent(event("PAUSED", { reason: "incident", identity: "ann" })), "paused — incident (by ann)");
    assert.equal(summarizeEvent(event("RETRY_REQUESTED", {})), "retry now requested");
    assert.equal(
      summarizeEvent(event("TASK_PARKED", { taskType: "timer", reason: "DATABASE_REFUSED", refusals: 5, error: "deadlock" })),
      "timer parked (DATABASE_REFUSED) after 5 refusals: deadlock",
    );
    assert.equal(summarizeEvent(event("SOMETHING_NEW", { a: 1, b: "x", c: null })), "a: 1 · b: x");
  });

  it("says what a reprioritization changed of the claim order, and only that", () => {
    const reordered = (before: object, after: object, extra: object = {}) =>
      summarizeEvent(event("REPRIORITIZED", { before, after, stateExecutionIds: ["Verify-1"], ...extra }));
    assert.equal(
      reordered({ priority: 5 }, { priority: 1, fairnessKey: "acme", fairnessWeight: 2 }, { reason: "vip", identity: "console" }),
      "priority 5 → 1 · fairness key none → acme (weight 2) — vip (by console)",
    );
    assert.equal(reordered({ priority: 3, fairnessKey: "acme", fairnessWeight: 2 }, { priority: 3 }), "fairness key acme (weight 2) → none");
    assert.equal(
      reordered({ priority: 3, fairnessKey: "acme", fairnessWeight: 2 }, { priority: 3, fairnessKey: "acme", fairnessWeight: 9 }),
      "fairness key acme (weight 2 → 9)",
    );
    // A key answered without a weight has the default one.
    assert.equal(reordered({ priority: 2, fairnessKey: "a" }, { priority: 2, fairnessKey: "b", fairnessWeight: 1 }), "fairness key a (weight 1) → b (weight 1)");
    assert.equal(reordered({ priority: 4, fairnessKey: "a", fairnessWeight: 1 }, { priority: 4, fairnessKey: "a" }), "unchanged: priority 4, fairness key a (weight 1)");
    assert.equal(reordered({ priority: 2 }, { priority: 2 }), "unchanged: priority 2");
    assert.equal(eventStateExecution(event("REPRIORITIZED", { before: {}, after: {}, stateExecutionIds: ["Verify-1"] })), "Verify-1");
  });

  it("names the state execution an event belongs to", () => {
    assert.equal(eventStateExecution(event("TIMER_FIRED", { stateExecutionId: "Verify-1" })), "Verify-1");
    assert.equal(eventStateExecution(event("PAUSED", { stateExecutionIds: ["A-1", "B-2"] })), "A-1, B-2");
    assert.equal(eventStateExecution(event("PROCESS_STARTED", { processType: "T" })), undefined);
  });
});
