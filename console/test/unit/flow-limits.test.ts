import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  changeText, errorField, flowLimitsRequest, limitsText, pendingText, phaseNote, scopeText, shownStatus,
} from "../../src/flow-limits.js";
import { parseRoute } from "../../src/views/routes.js";

const values = (given: Record<string, string>) => (name: string) => given[name] ?? "";

describe("flow limits", () => {
  it("reads limits as text: a rate, a concurrency, both, unlimited, or none", () => {
    assert.equal(limitsText({ maxCallsPerSecond: 2.5 }), "2.5 calls/s");
    assert.equal(limitsText({ maxConcurrentCalls: 8 }), "8 at once");
    assert.equal(limitsText({ maxCallsPerSecond: 0.5, maxConcurrentCalls: 4 }), "0.5 calls/s, 4 at once");
    assert.equal(limitsText({ maxCallsPerSecond: null, maxConcurrentCalls: null }), "unlimited");
    assert.equal(limitsText({ maxCallsPerSecond: null }), "unlimited");
    assert.equal(limitsText({}), "unlimited");
    assert.equal(limitsText(null), "—");
    assert.equal(limitsText(undefined), "—");
    assert.equal(scopeText(undefined), "(all states)");
    assert.equal(scopeText("Charge"), "Charge");
    const change = { changeId: 1, processType: "Order", source: "OPERATOR" as const, changedBy: "ops", changedTimestampMs: 0 };
    assert.equal(changeText({ ...change, after: { maxCallsPerSecond: 0.5 } }), "— → 0.5 calls/s");
    assert.equal(changeText({ ...change, before: { maxCallsPerSecond: 10 } }), "10 calls/s → —");
    assert.equal(
      changeText({ ...change, before: { maxCallsPerSecond: 10 }, after: { maxCallsPerSecond: 10, maxConcurrentCalls: 3 } }),
      "10 calls/s → 10 calls/s, 3 at once",
    );
  });

  it("explains a call held back by a flow limit, and no other phase", () => {
    assert.match(phaseNote("FLOW_LIMITED") ?? "", /flow limit/);
    for (const phase of ["SCHEDULED", "RUNNING", "PARKED", "PAUSED", "RATE_LIMITED"]) assert.equal(phaseNote(phase), undefined, phase);
  });

  it("turns the form into limits, no limit, or a clearing, with the state and reason when given", () => {
    assert.deepEqual(flowLimitsRequest(values({ processType: " Order ", stateId: "Charge", action: "limits", maxCallsPerSecond: "0.5", reason: "slow API" })), {
      request: { processType: "Order", stateId: "Charge", reason: "slow API", override: { maxCallsPerSecond: 0.5 } },
    });
    assert.deepEqual(flowLimitsRequest(values({ processType: "Order", maxConcurrentCalls: " 8 " })), {
      request: { processType: "Order", override: { maxConcurrentCalls: 8 } },
    });
    assert.deepEqual(flowLimitsRequest(values({ processType: "Order", action: "limits", maxCallsPerSecond: "5", maxConcurrentCalls: "3" })), {
      request: { processType: "Order", override: { maxCallsPerSecond: 5, maxConcurrentCalls: 3 } },
    });
    assert.deepEqual(flowLimitsRequest(values({ processType: "Order", action: "unlimited", maxConcurrentCalls: "3" })), { request: { processType: "Order", override: {} } });
    assert.deepEqual(flowLimitsRequest(values({ processType: "Order", action: "unlimited" })), { request: { processType: "Order", override: {} } });
    assert.deepEqual(flowLimitsRequest(values({ processType: "Order", action: "clear", maxCallsPerSecond: "9" })), { request: { processType: "Order" } });
  });

  it("checks the form before sending it, naming the field, and leaves the limits' ranges to the service", () => {
    assert.deepEqual(flowLimitsRequest(values({ action: "limits", maxCallsPerSecond: "1" })), { error: "The process type is missing.", field: "processType" });
    const missing = flowLimitsRequest(values({ processType: "Order", action: "limits" }));
    assert.ok("error" in missing && missing.field === "maxCallsPerSecond");
    for (const atOnce of ["1.5", "many", "-2"]) {
      const wrong = flowLimitsRequest(values({ processType: "Order", maxCallsPerSecond: "5", maxConcurrentCalls: atOnce }));
      assert.ok("error" in wrong && wrong.field === "maxConcurrentCalls" && wrong.error.includes(atOnce), atOnce);
    }
    assert.deepEqual(flowLimitsRequest(values({ processType: "Order", maxConcurrentCalls: "0" })), { request: { processType: "Order", override: { maxConcurrentCalls: 0 } } });
    const words = flowLimitsRequest(values({ processType: "Order", maxCallsPerSecond: "fast" }));
    assert.ok("error" in words && words.field === "maxCallsPerSecond" && words.error.includes("fast"));
    // 0 is a number: the service refuses it with a 400 naming the field.
    assert.deepEqual(flowLimitsRequest(values({ processType: "Order", maxCallsPerSecond: "0" })), { request: { processType: "Order", override: { maxCallsPerSecond: 0 } } });
  });

  it("marks the field a 400 names", () => {
    assert.equal(errorField("override.maxCallsPerSecond: 0 is not more than 0"), "maxCallsPerSecond");
    assert.equal(errorField("override.maxConcurrentCalls: must be 1 to 100000, not 0"), "maxConcurrentCalls");
    assert.equal(errorField("stateId: Nope is not a state of Order"), "stateId");
    assert.equal(errorField("reason: more than 1024 characters"), "reason");
    assert.equal(errorField("processType: empty"), "processType");
    assert.equal(errorField("the database is down"), undefined);
  });

  it("reads and sets running executions per key, on a type only", () => {
    assert.equal(limitsText({ maxRunningExecutions: 2 }), "2 running per key");
    assert.equal(limitsText({ maxCallsPerSecond: 5, maxConcurrentCalls: 3, maxRunningExecutions: 1 }), "5 calls/s, 3 at once, 1 running per key");
    assert.equal(limitsText({ maxRunningExecutions: null }), "unlimited");
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", maxRunningExecutions: " 2 ", reason: "one per customer" })), {
      request: { processType: "Export", reason: "one per customer", override: { maxRunningExecutions: 2 } },
    });
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", maxConcurrentCalls: "8", maxRunningExecutions: "1" })), {
      request: { processType: "Export", override: { maxConcurrentCalls: 8, maxRunningExecutions: 1 } },
    });
    // A state has no running executions to limit: the form says so before sending.
    const onState = flowLimitsRequest(values({ processType: "Export", stateId: "Charge", maxRunningExecutions: "1" }));
    assert.ok("error" in onState && onState.field === "stateId" && /per process type/.test(onState.error), JSON.stringify(onState));
    for (const running of ["1.5", "some", "-1"]) {
      const wrong = flowLimitsRequest(values({ processType: "Export", maxRunningExecutions: running }));
      assert.ok("error" in wrong && wrong.field === "maxRunningExecutions" && wrong.error.includes(running), running);
    }
    // 0 is a number: the service's 400 names override.maxRunningExecutions, on its field.
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", maxRunningExecutions: "0" })), { request: { processType: "Export", override: { maxRunningExecutions: 0 } } });
    assert.equal(errorField("override.maxRunningExecutions: must be 1 to 100000, not 0"), "maxRunningExecutions");
    const missing = flowLimitsRequest(values({ processType: "Export" }));
    assert.ok("error" in missing && /running executions/.test(missing.error));
  });

  it("reads and sets the running limit's concurrency key attribute, with its max and on a type only", () => {
    assert.equal(limitsText({ maxRunningExecutions: 2, concurrencyKeyAttribute: "customer_id" }), "2 running per customer_id");
    assert.equal(limitsText({ maxConcurrentCalls: 8, maxRunningExecutions: 1, concurrencyKeyAttribute: null }), "8 at once, 1 running per key");
    assert.equal(
      changeText({ changeId: 1, processType: "Export", source: "OPERATOR", changedBy: "ops", changedTimestampMs: 1, after: { maxRunningExecutions: 3, concurrencyKeyAttribute: "tenant" } }),
      "— → 3 running per tenant",
    );
    assert.deepEqual(
      flowLimitsRequest(values({ processType: "Export", maxRunningExecutions: "2", concurrencyKeyAttribute: " customer_id ", reason: "per customer" })),
      { request: { processType: "Export", reason: "per customer", override: { maxRunningExecutions: 2, concurrencyKeyAttribute: "customer_id" } } },
    );
    // Alone it limits nothing: the form asks for the max it keys, before sending.
    const alone = flowLimitsRequest(values({ processType: "Export", concurrencyKeyAttribute: "customer_id" }));
    assert.ok("error" in alone && alone.field === "maxRunningExecutions" && alone.error.includes("customer_id"), JSON.stringify(alone));
    const withRate = flowLimitsRequest(values({ processType: "Export", maxCallsPerSecond: "5", concurrencyKeyAttribute: "customer_id" }));
    assert.ok("error" in withRate && withRate.field === "maxRunningExecutions", JSON.stringify(withRate));
    // A state has no running executions to key.
    const onState = flowLimitsRequest(values({ processType: "Export", stateId: "Charge", maxCallsPerSecond: "5", concurrencyKeyAttribute: "customer_id" }));
    assert.ok("error" in onState && onState.field === "stateId" && /per process type/.test(onState.error), JSON.stringify(onState));
    // Whether it names a column is the service's to say: sent, and its 400 lands on the field.
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", maxRunningExecutions: "1", concurrencyKeyAttribute: "customer id" })), {
      request: { processType: "Export", override: { maxRunningExecutions: 1, concurrencyKeyAttribute: "customer id" } },
    });
    assert.equal(errorField("override.concurrencyKeyAttribute: 'customer id' is not a valid SQL identifier"), "concurrencyKeyAttribute");
    assert.equal(
      errorField("override.concurrencyKeyAttribute: keys the running-executions limit: set maxRunningExecutions with it"),
      "concurrencyKeyAttribute",
    );
    // Not given: not sent.
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", maxRunningExecutions: "1", concurrencyKeyAttribute: "  " })), {
      request: { processType: "Export", override: { maxRunningExecutions: 1 } },
    });
  });

  it("reads and sets a type's priority, 1 to 5, alone or with limits, and not for a state", () => {
    assert.equal(limitsText({ priority: 1 }), "priority 1");
    assert.equal(limitsText({ maxRunningExecutions: 2, concurrencyKeyAttribute: "customer_id", priority: 2 }), "2 running per customer_id, priority 2");
    assert.equal(limitsText({ maxCallsPerSecond: 5, maxConcurrentCalls: 3, maxRunningExecutions: 1, priority: 5 }), "5 calls/s, 3 at once, 1 running per key, priority 5");
    assert.equal(limitsText({ maxCallsPerSecond: 20, priority: null }), "20 calls/s");
    assert.equal(limitsText({ priority: null }), "unlimited");
    // The history's summary of a change: from the declared limits to an override with a priority.
    const change = { changeId: 7, processType: "Export", source: "OPERATOR" as const, changedBy: "ops", changedTimestampMs: 1 };
    assert.equal(changeText({ ...change, after: { maxRunningExecutions: 1, priority: 1 } }), "— → 1 running per key, priority 1");
    assert.equal(changeText({ ...change, before: { priority: 2 }, after: { priority: 4 } }), "priority 2 → priority 4");
    assert.equal(changeText({ ...change, before: { maxCallsPerSecond: 10, priority: 1 }, after: { maxCallsPerSecond: 10 } }), "10 calls/s, priority 1 → 10 calls/s");

    // A priority alone is a change the form sends (it limits nothing); with limits, together.
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", action: "limits", priority: "1", reason: "launch day" })), {
      request: { processType: "Export", reason: "launch day", override: { priority: 1 } },
    });
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", maxRunningExecutions: "2", priority: " 5 " })), {
      request: { processType: "Export", override: { maxRunningExecutions: 2, priority: 5 } },
    });
    // Empty: not sent (the type's starts at 3 while the override is set).
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", maxConcurrentCalls: "4", priority: "" })), {
      request: { processType: "Export", override: { maxConcurrentCalls: 4 } },
    });
    // No limit, and a clearing, send no priority whatever the field holds.
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", action: "unlimited", priority: "1" })), { request: { processType: "Export", override: {} } });
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", action: "clear", priority: "1" })), { request: { processType: "Export" } });
    // A state has no priority: the form says so before sending, on the state's field.
    const onState = flowLimitsRequest(values({ processType: "Export", stateId: "Charge", priority: "2" }));
    assert.ok("error" in onState && onState.field === "stateId" && /process type's/.test(onState.error), JSON.stringify(onState));
    const withRate = flowLimitsRequest(values({ processType: "Export", stateId: "Charge", maxCallsPerSecond: "5", priority: "2" }));
    assert.ok("error" in withRate && withRate.field === "stateId", JSON.stringify(withRate));
    // Not a whole number: refused on its field; out of 1..5: the service's 400, on its field.
    for (const wrong of ["high", "1.5", "-1"]) {
      const refused = flowLimitsRequest(values({ processType: "Export", priority: wrong }));
      assert.ok("error" in refused && refused.field === "priority" && refused.error.includes(wrong), wrong);
    }
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", priority: "6" })), { request: { processType: "Export", override: { priority: 6 } } });
    assert.equal(errorField("override.priority: must be 1 (claimed first) to 5, not 6"), "priority");
    assert.equal(errorField("override.priority: is the priority of a process type's starts: set it on the type, not on a state"), "priority");
    // The form asks for something to set, a priority among them.
    const nothing = flowLimitsRequest(values({ processType: "Export", action: "limits" }));
    assert.ok("error" in nothing && /a priority/.test(nothing.error), JSON.stringify(nothing));
  });

  it("reads and sets a type's fairness key attribute and weight, alone or with limits, and not for a state", () => {
    // The CLI's words: `fair by tenant_id, fairness weight 2`, after the priority.
    assert.equal(limitsText({ fairnessKeyAttribute: "tenant_id" }), "fair by tenant_id");
    assert.equal(limitsText({ fairnessWeight: 2 }), "fairness weight 2");
    assert.equal(limitsText({ fairnessKeyAttribute: "tenant_id", fairnessWeight: 2 }), "fair by tenant_id, fairness weight 2");
    assert.equal(
      limitsText({ maxCallsPerSecond: 5, maxRunningExecutions: 1, concurrencyKeyAttribute: "customer_id", priority: 2, fairnessKeyAttribute: "tenant_id", fairnessWeight: 3 }),
      "5 calls/s, 1 running per customer_id, priority 2, fair by tenant_id, fairness weight 3",
    );
    assert.equal(limitsText({ maxConcurrentCalls: 4, fairnessKeyAttribute: null, fairnessWeight: null }), "4 at once");
    assert.equal(limitsText({ fairnessKeyAttribute: null, fairnessWeight: null }), "unlimited");
    const change = { changeId: 9, processType: "Export", source: "OPERATOR" as const, changedBy: "ops", changedTimestampMs: 1 };
    assert.equal(changeText({ ...change, before: { priority: 2 }, after: { priority: 2, fairnessKeyAttribute: "tenant_id" } }), "priority 2 → priority 2, fair by tenant_id");
    assert.equal(changeText({ ...change, before: { fairnessKeyAttribute: "tenant_id", fairnessWeight: 5 }, after: {} }), "fair by tenant_id, fairness weight 5 → unlimited");

    // Either alone is a change the form sends (neither needs the other, nor a limit); with
    // limits and a priority, together in the one request.
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", action: "limits", fairnessKeyAttribute: " tenant_id ", reason: "share by tenant" })), {
      request: { processType: "Export", reason: "share by tenant", override: { fairnessKeyAttribute: "tenant_id" } },
    });
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", fairnessWeight: " 4 " })), { request: { processType: "Export", override: { fairnessWeight: 4 } } });
    assert.deepEqual(
      flowLimitsRequest(values({ processType: "Export", maxRunningExecutions: "2", concurrencyKeyAttribute: "customer_id", priority: "1", fairnessKeyAttribute: "tenant_id", fairnessWeight: "2" })),
      {
        request: {
          processType: "Export",
          override: { maxRunningExecutions: 2, concurrencyKeyAttribute: "customer_id", priority: 1, fairnessKeyAttribute: "tenant_id", fairnessWeight: 2 },
        },
      },
    );
    // Empty: not sent.
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", maxConcurrentCalls: "4", fairnessKeyAttribute: "  ", fairnessWeight: "" })), {
      request: { processType: "Export", override: { maxConcurrentCalls: 4 } },
    });
    // No limit, and a clearing, send no fairness whatever the fields hold.
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", action: "unlimited", fairnessKeyAttribute: "tenant_id", fairnessWeight: "2" })), {
      request: { processType: "Export", override: {} },
    });
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", action: "clear", fairnessWeight: "2" })), { request: { processType: "Export" } });
    // A state has no fairness: the form says so before sending, on the state's field.
    const typeOnly: Record<string, string>[] = [{ fairnessKeyAttribute: "tenant_id" }, { fairnessWeight: "2" }, { maxCallsPerSecond: "5", fairnessWeight: "2" }];
    for (const fairness of typeOnly) {
      const onState = flowLimitsRequest(values({ processType: "Export", stateId: "Charge", ...fairness }));
      assert.ok("error" in onState && onState.field === "stateId" && /process type's/.test(onState.error), JSON.stringify(onState));
    }
    // A weight that is not a whole number: refused on its field; out of 1..1000: the
    // service's 400, on its field.
    for (const wrong of ["heavy", "1.5", "-1"]) {
      const refused = flowLimitsRequest(values({ processType: "Export", fairnessWeight: wrong }));
      assert.ok("error" in refused && refused.field === "fairnessWeight" && refused.error.includes(wrong), wrong);
    }
    for (const outOfRange of ["0", "1001"]) {
      assert.deepEqual(flowLimitsRequest(values({ processType: "Export", fairnessWeight: outOfRange })), {
        request: { processType: "Export", override: { fairnessWeight: Number(outOfRange) } },
      });
    }
    assert.equal(errorField("override.fairnessWeight: must be 1 to 1000, not 0"), "fairnessWeight");
    assert.equal(errorField("override.fairnessWeight: weighs a process type's starts: set it on the type, not on a state"), "fairnessWeight");
    // Whether the attribute names a column is the service's to say: sent, and its 400 lands on the field.
    assert.deepEqual(flowLimitsRequest(values({ processType: "Export", fairnessKeyAttribute: "tenant id" })), {
      request: { processType: "Export", override: { fairnessKeyAttribute: "tenant id" } },
    });
    assert.equal(errorField("override.fairnessKeyAttribute: 'tenant id' is not a valid SQL identifier"), "fairnessKeyAttribute");
    assert.equal(errorField("override.fairnessKeyAttribute: keys a process type's starts: set it on the type, not on a state"), "fairnessKeyAttribute");
    // The form asks for something to set, fairness among them.
    const nothing = flowLimitsRequest(values({ processType: "Export", action: "limits" }));
    assert.ok("error" in nothing && /fairness key attribute or weight/.test(nothing.error), JSON.stringify(nothing));
  });

  it("shows an execution its type's running limit holds as PENDING, waiting on its key", () => {
    assert.equal(shownStatus({ status: "RUNNING", pending: true }), "PENDING");
    assert.equal(shownStatus({ status: "RUNNING", pending: false }), "RUNNING");
    assert.equal(shownStatus({ status: "RUNNING" }), "RUNNING");
    assert.equal(shownStatus({ status: "COMPLETED" }), "COMPLETED");
    const since = { sinceTimestampMs: 1 };
    assert.equal(pendingText({ ...since, pendingOnKey: "acme", identity: "maxRunningExecutions" }), "waiting for a running slot of key acme");
    assert.equal(pendingText({ ...since, pendingOnKey: "" }), "waiting for a running slot (no concurrency key)");
    assert.equal(pendingText({ ...since, reason: "maintenance" }), undefined, "an operator's pause");
    assert.equal(pendingText({ ...since, pendingOnKey: null }), undefined);
    assert.equal(pendingText(undefined), undefined);
  });

  it("has a route", () => {
    assert.deepEqual(parseRoute("#/flow-limits"), { page: "flow-limits" });
  });
});
