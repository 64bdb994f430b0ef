import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { groupsToTree, hasColumnCondition, opsOf, textToTree, treeToGroups, treeToText, type Groups } from "../../src/filter.js";
import { executionsHref, queryToSelection, selectionRequest, selectionToQuery, type Selection } from "../../src/query.js";
import { parseRoute } from "../../src/views/routes.js";

describe("filter text form", () => {
  it("reads the text `xdb list --where` takes into the service's tree", () => {
    assert.deepEqual(textToTree("execution.status = 'running' and amount >= 100"), {
      and: [
        { field: "status", op: "=", value: "RUNNING" },
        { column: "amount", op: ">=", value: 100 },
      ],
    });
    assert.deepEqual(textToTree("a = 1 or (b is null and c in ('x', 'it''s')) or not d like 'ab%'"), {
      or: [
        { column: "a", op: "=", value: 1 },
        { and: [{ column: "b", op: "IS NULL" }, { column: "c", op: "IN", values: ["x", "it's"] }] },
        { not: { column: "d", op: "PREFIX", value: "ab" } },
      ],
    });
    assert.deepEqual(textToTree("form->>'email' is not null"), { column: "form", path: ["email"], op: "IS NOT NULL" });
    assert.deepEqual(textToTree("execution.paused = true"), { field: "paused", op: "=", value: true });
    assert.deepEqual(textToTree("x <> -2.5"), { column: "x", op: "!=", value: -2.5 });
    assert.equal(textToTree("  "), undefined);
  });

  it("reads LIKE patterns as prefix, suffix or contains", () => {
    assert.deepEqual(textToTree("a like 'b%'"), { column: "a", op: "PREFIX", value: "b" });
    assert.deepEqual(textToTree("a like '%@example.com'"), { column: "a", op: "SUFFIX", value: "@example.com" });
    assert.deepEqual(textToTree("a like '%mid%'"), { column: "a", op: "CONTAINS", value: "mid" });
  });

  it("says what it cannot take", () => {
    assert.throws(() => textToTree("execution.color = 'red'"), /no such field/);
    assert.throws(() => textToTree("a = "), /value is missing/);
    assert.throws(() => textToTree("a like 'b'"), /'abc%', '%abc' and '%abc%'/);
    assert.throws(() => textToTree("a like 'b%c%'"), /'abc%', '%abc' and '%abc%'/);
    assert.throws(() => textToTree("a = 'open"), /not closed/);
    assert.throws(() => textToTree("a = 1 b"), /expected an operator|unexpected/);
    assert.throws(() => textToTree("(a = 1"), /expected '\)'/);
  });

  it("writes a tree as text that reads back as the same tree", () => {
    for (const text of [
      "execution.status = 'RUNNING' and amount >= 100",
      "a = 1 or (b in ('x', 'it''s') and c is null)",
      "not (execution.processId like 'order-%') and form->'a'->>'b' = 'z'",
      "(a = 1 or b = 2) and c != true",
      "email like '%@example.com' and note like '%urgent%'",
    ]) {
      const tree = textToTree(text);
      assert.equal(treeToText(tree), text);
      assert.deepEqual(textToTree(treeToText(tree)), tree);
    }
    assert.equal(treeToText({ field: "startTime", op: ">=", value: 5 }), "execution.startTime >= 5");
  });
});

describe("query builder model", () => {
  it("turns AND groups joined by OR into a tree and back", () => {
    const groups: Groups = [
      [
        { kind: "field", name: "status", op: "=", value: "failed" },
        { kind: "column", name: "amount", op: ">=", value: "100" },
      ],
      [{ kind: "field", name: "processId", op: "PREFIX", value: "order-" }],
      [{ kind: "column", name: "plan", op: "IN", value: "pro, team" }],
    ];
    const tree = groupsToTree(groups);
    assert.deepEqual(tree, {
      or: [
        { and: [{ field: "status", op: "=", value: "FAILED" }, { column: "amount", op: ">=", value: 100 }] },
        { and: [{ field: "processId", op: "PREFIX", value: "order-" }] },
        { and: [{ column: "plan", op: "IN", values: ["pro", "team"] }] },
      ],
    });
    assert.equal(treeToText(tree), "(execution.status = 'FAILED' and amount >= 100) or execution.processId like 'order-%' or plan in ('pro', 'team')");
    assert.deepEqual(treeToGroups(tree), [
      [
        { kind: "field", name: "status", op: "=", value: "FAILED" },
        { kind: "column", name: "amount", op: ">=", value: "100" },
      ],
      [{ kind: "field", name: "processId", op: "PREFIX", value: "order-" }],
      [{ kind: "column", name: "plan", op: "IN", value: "pro, team" }],
    ]);
    assert.equal(groupsToTree([[]]), undefined);
  });

  it("reads start times as UTC and leaves trees it cannot draw as text", () => {
    assert.deepEqual(groupsToTree([[{ kind: "field", name: "startTime", op: ">=", value: "2026-01-31T12:00" }]]), {
      and: [{ field: "startTime", op: ">=", value: Date.UTC(2026, 0, 31, 12) }],
    });
    assert.deepEqual(groupsToTree([[{ kind: "field", name: "paused", op: "IS NOT NULL", value: "x" }]]), {
      and: [{ field: "paused", op: "IS NOT NULL" }],
    });
    assert.equal(treeToGroups(textToTree("not a = 1")), undefined);
    assert.equal(treeToGroups(textToTree("(a = 1 or b = 1) and c = 1")), undefined);
    assert.deepEqual(treeToGroups(undefined), [[]]);
  });

  it("builds the execution's situation conditions as the service takes them", () => {
    const groups: Groups = [
      [
        { kind: "field", name: "backingOff", op: "=", value: "true" },
        { kind: "field", name: "parked", op: "!=", value: "TRUE" },
        { kind: "field", name: "waitingOnTimer", op: "=", value: "false" },
      ],
      [
        { kind: "field", name: "waitingOnQueue", op: "IN", value: "verify, shipped" },
        { kind: "field", name: "deploymentName", op: "=", value: "shop-worker" },
        { kind: "field", name: "deploymentVersion", op: "IS NULL", value: "" },
      ],
    ];
    const tree = groupsToTree(groups);
    assert.deepEqual(tree, {
      or: [
        {
          and: [
            { field: "backingOff", op: "=", value: true },
            { field: "parked", op: "!=", value: true },
            { field: "waitingOnTimer", op: "=", value: false },
          ],
        },
        {
          and: [
            { field: "waitingOnQueue", op: "IN", values: ["verify", "shipped"] },
            { field: "deploymentName", op: "=", value: "shop-worker" },
            { field: "deploymentVersion", op: "IS NULL" },
          ],
        },
      ],
    });
    const text =
      "(execution.backingOff = true and execution.parked != true and execution.waitingOnTimer = false) or " +
      "(execution.waitingOnQueue in ('verify', 'shipped') and execution.deploymentName = 'shop-worker' and execution.deploymentVersion is null)";
    assert.equal(treeToText(tree), text);
    assert.deepEqual(textToTree(text), tree);
    assert.deepEqual(treeToGroups(tree)?.[0]?.[0], { kind: "field", name: "backingOff", op: "=", value: "true" });
  });

  it("builds priority conditions with numbers, as the service takes them", () => {
    const groups: Groups = [
      [{ kind: "field", name: "priority", op: "<", value: " 3 " }],
      [{ kind: "field", name: "priority", op: "IN", value: "1, 5" }],
    ];
    const tree = groupsToTree(groups);
    assert.deepEqual(tree, {
      or: [{ and: [{ field: "priority", op: "<", value: 3 }] }, { and: [{ field: "priority", op: "IN", values: [1, 5] }] }],
    });
    const text = "execution.priority < 3 or execution.priority in (1, 5)";
    assert.equal(treeToText(tree), text);
    assert.deepEqual(textToTree(text), { or: [{ field: "priority", op: "<", value: 3 }, { field: "priority", op: "IN", values: [1, 5] }] });
    assert.deepEqual(groupsToTree(treeToGroups(textToTree(text)) ?? []), tree);
    assert.deepEqual(treeToGroups(tree), [
      [{ kind: "field", name: "priority", op: "<", value: "3" }],
      [{ kind: "field", name: "priority", op: "IN", value: "1, 5" }],
    ]);
    assert.deepEqual(textToTree("execution.priority >= 2"), { field: "priority", op: ">=", value: 2 });
    // Not a number: sent as typed, for the service's 400 to name.
    assert.deepEqual(groupsToTree([[{ kind: "field", name: "priority", op: "=", value: "high" }]]), {
      and: [{ field: "priority", op: "=", value: "high" }],
    });
  });

  it("offers each field of the execution the operators the service takes on it", () => {
    assert.deepEqual(opsOf({ kind: "field", name: "priority" }), ["=", "!=", "<", "<=", ">", ">=", "IN"]);
    assert.deepEqual(opsOf({ kind: "field", name: "backingOff" }), ["=", "!="]);
    assert.deepEqual(opsOf({ kind: "field", name: "waitingOnQueue" }), ["=", "IN"]);
    assert.deepEqual(opsOf({ kind: "field", name: "deploymentVersion" }), ["=", "!=", "IN", "IS NULL", "IS NOT NULL"]);
    assert.equal(opsOf({ kind: "column", name: "amount" }).length, 12);
  });

  it("tells a filter that needs the business table", () => {
    assert.equal(hasColumnCondition(textToTree("execution.status = 'RUNNING'")), false);
    assert.equal(hasColumnCondition(textToTree("execution.paused = true or not (amount > 1)")), true);
    assert.equal(hasColumnCondition(undefined), false);
  });
});

describe("selection in the URL", () => {
  it("round-trips through the executions link", () => {
    const selection: Selection = {
      filter: { status: "FAILED", processType: "Order Process", processId: "o&1", startTimeMinMs: 5, startTimeMaxMs: 9 },
      where: "amount >= 100 and note = 'a=b&c'",
      table: { tableName: "orders", primaryKeyColumn: "order_id" },
    };
    const route = parseRoute(executionsHref(selection));
    assert.equal(route.page, "executions");
    assert.deepEqual(route.page === "executions" && queryToSelection(route.query), selection);
    assert.equal(executionsHref({ filter: {}, where: " " }), "#/executions");
    assert.deepEqual(queryToSelection(selectionToQuery({ filter: {}, where: "" })), { filter: {}, where: "" });
    assert.deepEqual(queryToSelection("status=BOGUS&from=x&type=T"), { filter: { processType: "T" }, where: "" });
  });

  it("selects with the simple filter and the where text together", () => {
    assert.deepEqual(selectionRequest({ filter: { status: "RUNNING", processType: "T" }, where: "amount > 1" }), {
      processType: "T",
      where: { and: [{ field: "status", op: "=", value: "RUNNING" }, { column: "amount", op: ">", value: 1 }] },
    });
    assert.deepEqual(selectionRequest({ filter: {}, where: "" }), {});
    assert.deepEqual(selectionRequest({ filter: {}, where: "", table: { tableName: "u", primaryKeyColumn: "id" } }), {
      businessTable: { tableName: "u", primaryKeyColumn: "id" },
    });
    assert.deepEqual(selectionRequest({ filter: {}, where: "a = 1" }), { where: { column: "a", op: "=", value: 1 } });
  });
});
