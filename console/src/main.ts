// The console's entry point: the navigation, the hash router and the token prompt.
import { forgetToken, onTokenNeeded, token } from "./api.js";
import { h, replace } from "./dom.js";
import { queryToSelection } from "./query.js";
import { batchView } from "./views/batch.js";
import { batchesView } from "./views/batches.js";
import { dashboardView } from "./views/dashboard.js";
import { definitionView, definitionsView } from "./views/definitions.js";
import { deploymentsView } from "./views/deployments.js";
import { askToken } from "./views/dialog.js";
import { executionView } from "./views/execution.js";
import { executionsView } from "./views/executions.js";
import { flowLimitsView } from "./views/flow-limits.js";
import { parseRoute, type Route } from "./views/routes.js";
import { scheduleView } from "./views/schedule.js";
import { schedulesView } from "./views/schedules.js";

let leave: (() => void) | undefined;

/** The navigation entry of a page that has none of its own. */
const NAV_PAGE: Partial<Record<Route["page"], Route["page"]>> = {
  definition: "definitions",
  execution: "executions",
  batch: "batches",
  schedule: "schedules",
};

function route(): void {
  const root = document.getElementById("app");
  if (!root) return;
  leave?.();
  const current = parseRoute(location.hash);
  for (const link of document.querySelectorAll<HTMLAnchorElement>("nav a[data-page]")) {
    const page = NAV_PAGE[current.page] ?? current.page;
    link.classList.toggle("active", link.dataset.page === page);
  }
  if (current.page === "execution") leave = executionView(root, current.processId, current.processExecutionId);
  else if (current.page === "dashboard") leave = dashboardView(root);
  else if (current.page === "definitions") leave = definitionsView(root);
  else if (current.page === "deployments") leave = deploymentsView(root);
  else if (current.page === "definition") leave = definitionView(root, current.processType, current.revision);
  else if (current.page === "batches") leave = batchesView(root);
  else if (current.page === "batch") leave = batchView(root, current.batchId);
  else if (current.page === "schedules") leave = schedulesView(root);
  else if (current.page === "schedule") leave = scheduleView(root, current.scheduleId);
  else if (current.page === "flow-limits") leave = flowLimitsView(root);
  else leave = executionsView(root, queryToSelection(current.query));
}

function start(): void {
  onTokenNeeded(askToken);
  const forget = h(
    "button",
    {
      type: "button",
      class: "link",
      "data-testid": "forget-token",
      onclick: () => {
        forgetToken();
        forget.hidden = true;
      },
    },
    "Forget token",
  );
  forget.hidden = !token();
  window.addEventListener("storage", () => (forget.hidden = !token()));
  const header = document.getElementById("header");
  if (header) {
    replace(
      header,
      h("a", { class: "brand", href: "#/executions" }, "XDB"),
      h(
        "nav",
        {},
        h("a", { href: "#/executions", "data-page": "executions" }, "Executions"),
        h("a", { href: "#/definitions", "data-page": "definitions" }, "Definitions"),
        h("a", { href: "#/deployments", "data-page": "deployments" }, "Deployments"),
        h("a", { href: "#/batches", "data-page": "batches" }, "Batches"),
        h("a", { href: "#/schedules", "data-page": "schedules" }, "Schedules"),
        h("a", { href: "#/flow-limits", "data-page": "flow-limits" }, "Flow limits"),
        h("a", { href: "#/dashboard", "data-page": "dashboard" }, "Dashboard"),
      ),
      forget,
    );
  }
  window.addEventListener("hashchange", () => {
    forget.hidden = !token();
    route();
  });
  route();
}

start();
