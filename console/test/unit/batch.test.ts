import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { argumentsError, batchRequest, rateError } from "../../src/views/batch.js";

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
});
