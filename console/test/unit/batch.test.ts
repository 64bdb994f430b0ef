import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { argumentsError, argumentsProblem, batchRequest, rateError, startErrorField } from "../../src/views/batch.js";

const values = (given: Record<string, string>) => (name: string) => given[name] ?? "";

describe("batch start", () => {
  it("takes a whole rate of 1 to 10000 executions per second and says what is wrong with another", () => {
    for (const ok of ["1", "100", " 250 ", "10000"]) assert.equal(rateError(ok), undefined, ok);
    assert.match(rateError("") ?? "", /rate is missing.*1 to 10000/);
    for (const bad of ["0", "10001", "2.5", "-3", "fast"]) {
      assert.match(rateError(bad) ?? "", new RegExp(`rate ${bad} is not one the service takes.*1 to 10000`), bad);
    }
  });

  it("checks each operation's arguments before the request is sent", () => {
    assert.equal(argumentsError("PAUSE", values({ rate: "100" })), undefined);
    assert.match(argumentsError("PAUSE", values({ rate: "0" })) ?? "", /rate 0/);
    assert.match(argumentsError("PUBLISH_TO_LOCAL_QUEUE", values({ rate: "5" })) ?? "", /queue is missing/);
    assert.match(argumentsError("PUBLISH_TO_LOCAL_QUEUE", values({ rate: "5", queue: "q", payload: "{" })) ?? "", /payload is not JSON/);
    assert.match(argumentsError("RESET", values({ rate: "5" })) ?? "", /state to reset to is missing/);
    assert.match(argumentsError("MOVE_TO_DEPLOYMENT", values({ rate: "5", deployment: "shop" })) ?? "", /name@version/);
    assert.equal(argumentsError("MOVE_TO_DEPLOYMENT", values({ rate: "5", deployment: "shop@1.5.0" })), undefined);
    assert.match(argumentsError("REPRIORITIZE", values({ rate: "5" })) ?? "", /Nothing to change/);
    assert.equal(argumentsError("REPRIORITIZE", values({ rate: "5", priority: "1" })), undefined);
  });

  it("names the field each problem is about, so the dialog marks it", () => {
    assert.deepEqual(argumentsProblem("PAUSE", values({ rate: "0" }))?.field, "rate");
    assert.deepEqual(argumentsProblem("PUBLISH_TO_LOCAL_QUEUE", values({ rate: "5", queue: "q", payload: "{" }))?.field, "payload");
    assert.deepEqual(argumentsProblem("RESET", values({ rate: "5" }))?.field, "state");
    assert.deepEqual(argumentsProblem("REPRIORITIZE", values({ rate: "5", fairnessWeight: "two" })), {
      message: "The fairness weight two is not a whole number from 1 to 1,000.",
      field: "fairnessWeight",
    });
    // The service's refusals of a start, by the field they name.
    assert.equal(startErrorField("invalid request: reprioritize.fairnessWeight: must be 1 to 1000, not 0"), "fairnessWeight");
    assert.equal(startErrorField("invalid request: reprioritize.fairnessKey: is longer than 255 characters"), "fairnessKey");
    assert.equal(startErrorField("invalid request: ratePerSecond: 1 to 10000 (got 0)"), "rate");
    assert.equal(startErrorField("invalid request: reprioritize: changes nothing"), undefined);
  });

  it("sends the rate with the operation's arguments", () => {
    const selection = { filter: { processType: "OrderProcess" }, where: "execution.waitingOnQueue = 'shipped'" };
    assert.deepEqual(batchRequest(selection, "PUBLISH_TO_LOCAL_QUEUE", values({ rate: "7", queue: "shipped", payload: '{"by":"batch"}' }), "r1"), {
      processType: "OrderProcess",
      where: { field: "waitingOnQueue", op: "=", value: "shipped" },
      operation: "PUBLISH_TO_LOCAL_QUEUE",
      requestId: "r1",
      identity: "console",
      ratePerSecond: 7,
      messages: [{ queueName: "shipped", payload: { encoding: "json", data: '{"by":"batch"}' } }],
    });
    const moved = batchRequest(selection, "MOVE_TO_DEPLOYMENT", values({ deployment: "shop-worker@1.5.0", reason: "roll out" }), "r2");
    assert.equal(moved.ratePerSecond, 100);
    assert.equal(moved.reason, "roll out");
    assert.deepEqual(moved.moveTo, { name: "shop-worker", version: "1.5.0" });
    assert.deepEqual(batchRequest({ filter: {}, where: "" }, "RESET", values({ rate: "3", state: "ShipState" }), "r3").reset, { stateId: "ShipState" });
  });

  it("sends a reprioritization with what it changes, each field empty left as it is", () => {
    const request = (given: Record<string, string>) => batchRequest({ filter: {}, where: "" }, "REPRIORITIZE", values({ rate: "5", ...given }), "r4");
    assert.deepEqual(request({ priority: "1", fairnessKey: " acme ", fairnessWeight: "2", reason: "vip" }), {
      operation: "REPRIORITIZE",
      requestId: "r4",
      identity: "console",
      ratePerSecond: 5,
      reason: "vip",
      reprioritize: { priority: 1, fairnessKey: "acme", fairnessWeight: 2 },
    });
    assert.deepEqual(request({ fairnessWeight: "4" }).reprioritize, { fairnessWeight: 4 });
    // Removing the keys: the dialog turns the key and weight off, so they read empty.
    assert.deepEqual(request({ priority: "5", removeKey: "yes" }).reprioritize, { priority: 5, fairnessKey: "" });
    assert.throws(() => request({}), /Nothing to change/);
  });
});
