import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { statusCountRequest } from "../../src/query.js";

describe("statusCountRequest", () => {
  it("counts what the list shows, per status, whatever status the list is filtered by", () => {
    assert.deepEqual(statusCountRequest({}), { groupBy: { field: "status" } });
    assert.deepEqual(
      statusCountRequest({ status: "FAILED", processType: "Order", processId: "o-1", startTimeMinMs: 5, startTimeMaxMs: 9 }),
      {
        processType: "Order",
        where: {
          and: [
            { field: "processId", op: "=", value: "o-1" },
            { field: "startTime", op: ">=", value: 5 },
            { field: "startTime", op: "<", value: 9 },
          ],
        },
        groupBy: { field: "status" },
      },
    );
  });
});
