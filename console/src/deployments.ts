// What the Deployments view shows and asks, as pure functions of deployments/list's answer.
import type { DeploymentRef, DeploymentSummary } from "./types.js";

/** `name@version`, as the CLI writes a deployment. */
export function deploymentLabel(d: DeploymentRef): string {
  return `${d.name}@${d.version}`;
}

function same(a: DeploymentRef, b: DeploymentRef): boolean {
  return a.name === b.name && a.version === b.version;
}

/** Whether `d` is already the current deployment of every type it registered. */
export function currentForAll(d: DeploymentSummary): boolean {
  return d.processTypes.every((t) => d.currentFor.includes(t));
}

/** What "Move executions here" on `processType`'s row of `target` would move: the other
 * deployments of the type that run executions, and their running count. A deployment's
 * count covers every type it runs, so it is exact only when each source registered this
 * type alone (`exact`); otherwise it is an upper bound. */
export interface MovePlan {
  sources: DeploymentSummary[];
  running: number;
  exact: boolean;
}

export function movePlan(deployments: readonly DeploymentSummary[], processType: string, target: DeploymentRef): MovePlan {
  const sources = deployments.filter(
    (d) => !same(d.deployment, target) && d.processTypes.includes(processType) && d.runningExecutions > 0,
  );
  return {
    sources,
    running: sources.reduce((sum, d) => sum + d.runningExecutions, 0),
    exact: sources.every((d) => d.processTypes.length === 1),
  };
}

/** The confirmation's text for moving `plan` to `target`. */
export function moveMessage(plan: MovePlan, processType: string, target: DeploymentRef): string {
  if (plan.sources.length === 0) {
    return `No other deployment of ${processType} runs executions now; running executions of ${processType} found at the move go to ${deploymentLabel(target)}.`;
  }
  const count = `${plan.exact ? "" : "up to "}${plan.running} running execution${plan.running === 1 ? "" : "s"}`;
  const from = plan.sources.map((d) => `${deploymentLabel(d.deployment)} (${d.runningExecutions})`).join(", ");
  return (
    `Moves ${count} of ${processType} from ${from} to ${deploymentLabel(target)}; each runs its next worker call there ` +
    `(a call in flight finishes where it is).` +
    (plan.exact ? "" : " The counts cover every type those deployments run.")
  );
}
