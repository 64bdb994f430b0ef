import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  formatDuration, formatFairness, formatPayload, formatPriority, formatRelative, formatTime, formatValue, parseUtcInput, shorten, statusClass,
} from "../../src/format.js";
import { executionHref, parseRoute } from "../../src/views/routes.js";

describe("format", () => {
  it("shortens an error to its first line, cut with an ellipsis", () => {
    assert.equal(shorten("the card provider is down"), "the card provider is down");
    assert.equal(shorten("a".repeat(100), 10), "aaaaaaaaa…");
    assert.equal(shorten("first line\n  at stack"), "first line …");
    assert.equal(shorten(""), "");
  });


  it("shows times in UTC and durations in their two largest units", () => {
    assert.equal(formatTime(Date.UTC(2026, 10, 26, 15, 4, 5)), "2026-11-26 15:04:05");
    assert.equal(formatTime(undefined), "—");
    assert.equal(formatDuration(850), "850 ms");
    assert.equal(formatDuration(12_400), "12 s");
    assert.equal(formatDuration(184_000), "3m 4s");
    assert.equal(formatDuration(3_600_000 * 2 + 300_000), "2h 5m");
    assert.equal(formatDuration(3_600_000 * 76), "3d 4h");
    assert.equal(formatRelative(10_000 + 3_598_000, 10_000), "in 59m 58s");
    assert.equal(formatRelative(7_000, 10_000), "3 s ago");
    assert.equal(formatRelative(10_200, 10_000), "now");
  });

  it("reads datetime inputs as UTC", () => {
    assert.equal(parseUtcInput("2026-11-26T15:04"), Date.UTC(2026, 10, 26, 15, 4));
    assert.equal(parseUtcInput("2026-11-26T15:04+01:00"), Date.UTC(2026, 10, 26, 14, 4));
    assert.equal(parseUtcInput(" "), undefined);
    assert.equal(parseUtcInput("yesterday"), undefined);
  });

  it("formats payloads, values, counts, statuses and event details", () => {
    assert.equal(formatPayload({ encoding: "json", data: '{"a":1}' }), '{\n  "a": 1\n}');
    assert.equal(formatPayload({ encoding: "json", data: "not json" }), "not json");
    assert.equal(formatPayload(null), "—");
    assert.equal(formatValue(null), "NULL");
    assert.equal(formatValue("verified"), "verified");
    assert.equal(formatValue({ email: "a@b.c" }), '{\n  "email": "a@b.c"\n}');
    assert.equal(statusClass("EXECUTE_RUNNING"), "status status-execute-running");
  });

  it("shows an execution's priority, 1 claimed first, and none as the default 3", () => {
    assert.equal(formatPriority(1), "1 (claimed first)");
    assert.equal(formatPriority(2), "2");
    assert.equal(formatPriority(3), "3 (default)");
    assert.equal(formatPriority(4), "4");
    assert.equal(formatPriority(5), "5 (claimed last)");
    assert.equal(formatPriority(undefined), "3 (default)");
    assert.equal(formatPriority(null), "3 (default)");
  });

  it("shows an execution's fairness key with its weight, and nothing without a key", () => {
    assert.equal(formatFairness("tenant-a", 5), "tenant-a (weight 5)");
    assert.equal(formatFairness("tenant-a", undefined), "tenant-a (weight 1)");
    assert.equal(formatFairness("tenant-a", null), "tenant-a (weight 1)");
    assert.equal(formatFairness(undefined, undefined), undefined);
    assert.equal(formatFairness(null, null), undefined);
  });

  it("routes by the location hash, with ids escaped", () => {
    assert.deepEqual(parseRoute(""), { page: "executions", query: "" });
    assert.deepEqual(parseRoute("#/dashboard"), { page: "dashboard" });
    const href = executionHref("user-signup/a b", "0b0e");
    assert.equal(href, "#/execution/user-signup%2Fa%20b/0b0e");
    assert.deepEqual(parseRoute(href), { page: "execution", processId: "user-signup/a b", processExecutionId: "0b0e" });
    assert.deepEqual(parseRoute("#/execution/p1"), { page: "execution", processId: "p1" });
    assert.deepEqual(parseRoute("#/execution/%E0%A4%A"), { page: "executions", query: "" });
  });
});
