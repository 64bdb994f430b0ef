import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  fairnessText, reorderingText, reprioritization, reprioritizationText, reprioritizeErrorField, reprioritizeFields,
  type CurrentOrder,
} from "../../src/reprioritize.js";

const values = (given: Record<string, string>) => (name: string) => given[name] ?? "";
const keyed: CurrentOrder = { priority: 1, fairnessKey: "tenant-acme", fairnessWeight: 3 };
const keyless: CurrentOrder = { priority: 3 };

describe("reprioritize", () => {
  it("starts an execution's form at its order, and a batch's at as it is", () => {
    const fields = reprioritizeFields(keyed);
    assert.deepEqual(
      fields.map((f) => [f.name, f.value ?? ""]),
      [["priority", "1"], ["fairnessKey", "tenant-acme"], ["fairnessWeight", "3"], ["removeKey", ""]],
    );
    assert.deepEqual(fields[0]?.options, ["1", "2", "3", "4", "5"]);
    assert.equal(fields[0]?.optionLabels?.["1"], "1 (claimed first)");
    assert.deepEqual(fields[3]?.disables, ["fairnessKey", "fairnessWeight"]);
    assert.match(fields[3]?.label ?? "", /Remove its fairness key tenant-acme/);
    // No key: nothing to remove, no weight to show; a service before priorities: 3.
    assert.deepEqual(
      reprioritizeFields({}).map((f) => [f.name, f.value ?? ""]),
      [["priority", "3"], ["fairnessKey", ""], ["fairnessWeight", ""]],
    );
    // A key answered without its weight has the default.
    assert.equal(reprioritizeFields({ priority: 2, fairnessKey: "k" })[2]?.value, "1");
    const batch = reprioritizeFields();
    assert.deepEqual(batch.map((f) => [f.name, f.value ?? ""]), [["priority", ""], ["fairnessKey", ""], ["fairnessWeight", ""], ["removeKey", ""]]);
    assert.deepEqual(batch[0]?.options, ["", "1", "2", "3", "4", "5"]);
    assert.equal(batch[0]?.optionLabels?.[""], "as it is");
  });

  it("sends only what differs from the execution's order", () => {
    const change = (given: Record<string, string>, current: CurrentOrder = keyed) => reprioritization(values(given), current);
    assert.deepEqual(change({ priority: "5", fairnessKey: "tenant-acme", fairnessWeight: "3" }), { change: { priority: 5 } });
    assert.deepEqual(change({ priority: "1", fairnessKey: "tenant-bee", fairnessWeight: "3" }), { change: { fairnessKey: "tenant-bee" } });
    assert.deepEqual(change({ priority: "1", fairnessKey: "tenant-acme", fairnessWeight: "7" }), { change: { fairnessWeight: 7 } });
    assert.deepEqual(change({ priority: "2", removeKey: "yes" }), { change: { priority: 2, fairnessKey: "" } });
    assert.deepEqual(change({ priority: "3", fairnessKey: "acme", fairnessWeight: "2" }, keyless), { change: { fairnessKey: "acme", fairnessWeight: 2 } });
    // A weight for an execution without a key is the service's to refuse (a 409).
    assert.deepEqual(change({ priority: "3", fairnessWeight: "2" }, keyless), { change: { fairnessWeight: 2 } });
    assert.deepEqual(change({ priority: "1", fairnessKey: "tenant-acme", fairnessWeight: "3" }), {
      message: "Nothing to change: pick another priority, fairness key or weight, or remove the key.",
    });
    // An emptied key is not a removal: the checkbox is.
    assert.deepEqual(change({ priority: "1", fairnessKey: " ", fairnessWeight: "3" }), {
      message: "A fairness key is not empty: tick “Remove its fairness key” to remove tenant-acme.",
      field: "fairnessKey",
    });
    assert.deepEqual(change({ priority: "1", fairnessKey: "tenant-acme", fairnessWeight: "1.5" }), {
      message: "The fairness weight 1.5 is not a whole number from 1 to 1,000.",
      field: "fairnessWeight",
    });
    // Ranges are the service's: its 400 names the field.
    assert.deepEqual(change({ priority: "1", fairnessKey: "tenant-acme", fairnessWeight: "0" }), { change: { fairnessWeight: 0 } });
  });

  it("puts a refusal on the field it names", () => {
    assert.equal(reprioritizeErrorField({ subType: "INVALID_REQUEST", message: "invalid request: reprioritize.fairnessWeight: must be 1 to 1000, not 0" }), "fairnessWeight");
    assert.equal(reprioritizeErrorField({ subType: "INVALID_REQUEST", message: "invalid request: reprioritize.priority: must be 1 (claimed first) to 5, not 9" }), "priority");
    assert.equal(reprioritizeErrorField({ subType: "INVALID_REQUEST", message: "invalid request: reprioritize.fairnessKey: is longer than 255 characters" }), "fairnessKey");
    assert.equal(reprioritizeErrorField({ subType: "INVALID_REQUEST", message: "invalid request: reprioritize: changes nothing" }), undefined);
    // The weight of an execution without a key, though the message names the key it lacks.
    assert.equal(
      reprioritizeErrorField({ subType: "CONTROL_NOT_APPLICABLE", message: "the execution has no fairness key to weigh: name reprioritize.fairnessKey too" }),
      "fairnessWeight",
    );
    assert.equal(reprioritizeErrorField({ subType: "PROCESS_NOT_RUNNING", message: "the process execution is not running" }), undefined);
  });

  it("reads claim orders and changes as text", () => {
    assert.equal(fairnessText({ fairnessKey: "acme", fairnessWeight: 2 }), "acme (weight 2)");
    assert.equal(fairnessText({}), "none");
    assert.equal(reorderingText({ priority: 5 }, { priority: 1, fairnessKey: "acme", fairnessWeight: 2 }), "priority 5 → 1 · fairness key none → acme (weight 2)");
    assert.equal(reprioritizationText({ priority: 1, fairnessKey: "acme", fairnessWeight: 2 }), "priority 1 · fairness key acme (weight 2)");
    assert.equal(reprioritizationText({ fairnessWeight: 5 }), "fairness weight 5");
    assert.equal(reprioritizationText({ priority: 4, fairnessKey: "" }), "priority 4 · no fairness key");
  });
});
