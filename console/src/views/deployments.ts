// Worker deployments: each deployment that registered definitions, with its worker URL,
// its process types, the types it is current for, its running executions and whether it
// is drained. "Make current" rolls back to a deployment (deployments/set-current, role
// deploy); "Move executions here" on a type's row moves that type's running executions
// from every other deployment to this one (deployments/move, role operate). Both ask first.
import { api, ApiError } from "../api.js";
import { currentForAll, deploymentLabel, moveMessage, movePlan } from "../deployments.js";
import { facts, h, replace, table } from "../dom.js";
import type { DeploymentSummary } from "../types.js";
import { ask, notify } from "./dialog.js";
import { definitionHref } from "./routes.js";

const REFRESH_MS = 5000;

export function deploymentsView(root: HTMLElement): () => void {
  const results = h("div", { class: "results" });
  let stopped = false;

  async function load(): Promise<void> {
    try {
      const { deployments } = await api.deployments();
      if (stopped) return;
      replace(
        results,
        deployments.length === 0
          ? h("p", { class: "empty", "data-testid": "deployments-empty" }, "No deployment registered definitions yet (definitions/register, role deploy).")
          : deployments.map((d) => panel(d, deployments)),
      );
    } catch (error) {
      if (!stopped) replace(results, h("p", { class: "error", role: "alert" }, `Could not list the deployments: ${String(error)}`));
    }
  }

  async function run(what: string, action: () => Promise<string>): Promise<void> {
    try {
      notify(`${what}: ${await action()}`);
    } catch (error) {
      const text =
        error instanceof ApiError && error.subType === "DEFINITION_INCOMPATIBLE"
          ? `${what} refused: ${error.message}`
          : `${what} failed: ${error instanceof Error ? error.message : String(error)}`;
      notify(text, "error");
    }
    await load();
  }

  function panel(d: DeploymentSummary, all: readonly DeploymentSummary[]): HTMLElement {
    const label = deploymentLabel(d.deployment);
    const makeCurrent = h(
      "button",
      {
        type: "button",
        "data-testid": "make-current",
        disabled: currentForAll(d),
        title: currentForAll(d) ? "Already current for every type it registered" : undefined,
        onclick: () => void confirmMakeCurrent(),
      },
      "Make current",
    );
    async function confirmMakeCurrent(): Promise<void> {
      const values = await ask(
        `Make ${label} current?`,
        `Starts of ${d.processTypes.join(", ")} go to ${d.deployment.workerUrl}; its last definition of each type ` +
          "becomes a new revision. Running executions stay where they are (or move, for a MOVE_TO_CURRENT type).",
        [],
        "Make current",
      );
      if (!values) return;
      await run(`Make ${label} current`, async () => {
        const answer = await api.setCurrentDeployment(d.deployment);
        return `${answer.registered.filter((r) => r.changed).length} type(s) changed`;
      });
    }
    const rows = d.processTypes.map((type) => {
      const current = d.currentFor.includes(type);
      return h(
        "tr",
        { "data-testid": "deployment-type-row", "data-process-type": type },
        h("td", {}, h("a", { href: definitionHref(type) }, type)),
        h("td", { "data-testid": "type-current" }, current ? "current" : "—"),
        h(
          "td",
          {},
          h(
            "button",
            {
              type: "button",
              "data-testid": "move-here",
              onclick: () => void confirmMove(type),
            },
            "Move executions here",
          ),
        ),
      );
    });
    async function confirmMove(type: string): Promise<void> {
      const plan = movePlan(all, type, d.deployment);
      const values = await ask(`Move executions of ${type} to ${label}?`, moveMessage(plan, type, d.deployment), [], "Move", {
        danger: true,
      });
      if (!values) return;
      await run(`Move ${type} to ${label}`, async () => {
        const { moved } = await api.moveExecutions(type, d.deployment);
        return `${moved} moved`;
      });
    }
    return h(
      "section",
      { class: "panel wide", "data-testid": "deployment", "data-deployment": label },
      h(
        "h2",
        {},
        d.deployment.name,
        " ",
        h("span", { class: "mono" }, d.deployment.version),
        d.currentFor.length > 0 && h("span", { class: "badge badge-current", "data-testid": "badge-current" }, "current"),
        d.drained && h("span", { class: "badge badge-drained", "data-testid": "badge-drained" }, "drained"),
      ),
      facts([
        ["Worker URL", h("span", { class: "mono", "data-testid": "deployment-url" }, d.deployment.workerUrl)],
        ["Current for", h("span", { "data-testid": "deployment-current-for" }, d.currentFor.length > 0 ? d.currentFor.join(", ") : "nothing")],
        ["Running executions", h("span", { "data-testid": "deployment-running" }, String(d.runningExecutions))],
      ]),
      table(["Process type", "Current here", ""], rows, "No process type.", "deployment-types"),
      h("div", { class: "actions" }, makeCurrent),
    );
  }

  replace(
    root,
    h("h1", {}, "Deployments"),
    h(
      "p",
      { class: "small" },
      "Each worker deployment that registered definitions. Starts go to a type's current deployment; running executions " +
        "stay on theirs until they close (PINNED) or move. A deployment current for nothing and running nothing is drained: it can be shut down.",
    ),
    results,
  );
  void load().catch((error: unknown) => notify(String(error), "error"));
  const timer = setInterval(() => void load(), REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
