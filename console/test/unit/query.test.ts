import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { explainUnavailable, statusCountRequest } from "../../src/query.js";

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

  it("asks the plan of the very count shown with explain, and only then", () => {
    const filter = { status: "FAILED" as const, processType: "SignupProcess" };
    const table = { tableName: "user", primaryKeyColumn: "user_id" };
    const counted = statusCountRequest(filter, "status = 'waiting'", table);
    assert.equal("explain" in counted, false);
    assert.deepEqual(statusCountRequest(filter, "status = 'waiting'", table, true), { ...counted, explain: true });
    assert.deepEqual(counted, {
      processType: "SignupProcess",
      where: { column: "status", op: "=", value: "waiting" },
      businessTable: table,
      groupBy: { field: "status" },
    });
    // A Where text that does not parse: no request (the view shows why).
    assert.throws(() => statusCountRequest({}, "status = ", undefined, true));
  });
});

describe("explainUnavailable", () => {
  it("explains the list only for an applied Where filter", () => {
    assert.equal(explainUnavailable("list", "amount > 1", " amount > 1 "), undefined);
    assert.match(explainUnavailable("list", "", "") ?? "", /needs a Where filter/);
    assert.match(explainUnavailable("list", "", "amount > 1") ?? "", /needs a Where filter/);
    assert.match(explainUnavailable("list", "amount > 2", "amount > 1") ?? "", /^Apply this filter first: .* the list shown/);
  });

  it("explains the counts of what is applied, with or without a Where filter", () => {
    assert.equal(explainUnavailable("count", "amount > 1", "amount > 1"), undefined);
    assert.equal(explainUnavailable("count", "  ", ""), undefined);
    assert.match(explainUnavailable("count", "", "amount > 1") ?? "", /^Apply this filter first: .* the counts shown/);
    assert.match(explainUnavailable("count", "amount > 2", "amount > 1") ?? "", /^Apply this filter first/);
  });
});
