import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { currentForAll, deploymentLabel, moveMessage, movePlan } from "../../src/deployments.js";
import type { DeploymentSummary } from "../../src/types.js";
import { parseRoute } from "../../src/views/routes.js";

function summary(version: string, processTypes: string[], currentFor: string[], runningExecutions: number): DeploymentSummary {
  return {
    deployment: { name: "shop", version, workerUrl: `http://shop-${version}:8000` },
    processTypes,
    currentFor,
    runningExecutions,
    drained: currentFor.length === 0 && runningExecutions === 0,
  };
}

describe("deployments", () => {
  const v1 = summary("1", ["Order"], [], 2);
  const v2 = summary("2", ["Order", "Refund"], ["Order", "Refund"], 1);
  const v3 = summary("3", ["Refund"], [], 4);

  it("labels a deployment as name@version and knows when it is current for all its types", () => {
    assert.equal(deploymentLabel(v1.deployment), "shop@1");
    assert.equal(currentForAll(v2), true);
    assert.equal(currentForAll(v1), false);
    assert.equal(currentForAll({ ...v2, currentFor: ["Order"] }), false);
  });

  it("counts what a move would take from the other deployments of the type", () => {
    const toV2 = movePlan([v1, v2, v3], "Order", v2.deployment);
    assert.deepEqual(toV2.sources.map((d) => d.deployment.version), ["1"]);
    assert.deepEqual([toV2.running, toV2.exact], [2, true]);
    assert.match(moveMessage(toV2, "Order", v2.deployment), /^Moves 2 running executions of Order from shop@1 \(2\) to shop@2;/);

    // v2 runs Refund and Order: its count is a bound, not exact.
    const toV1 = movePlan([v1, v2, v3], "Order", v1.deployment);
    assert.deepEqual([toV1.running, toV1.exact], [1, false]);
    assert.match(moveMessage(toV1, "Order", v1.deployment), /^Moves up to 1 running execution of Order from shop@2 \(1\) to shop@1;.*every type/);

    const toV3 = movePlan([v1, summary("2", ["Refund"], ["Refund"], 0), v3], "Refund", v3.deployment);
    assert.deepEqual([toV3.sources, toV3.running], [[], 0]);
    assert.match(moveMessage(toV3, "Refund", v3.deployment), /^No other deployment of Refund runs executions now/);
  });

  it("routes #/deployments", () => {
    assert.deepEqual(parseRoute("#/deployments"), { page: "deployments" });
  });
});
