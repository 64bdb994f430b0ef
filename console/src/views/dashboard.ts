// The dashboard: throughput, failures, backlog and timer lateness over the last hour as
// charts, sampled from the services' own Prometheus metrics every few seconds while the
// page is open (kept in sessionStorage, so a reload keeps the hour); the executions per
// status, each linking to the list of them; and the latest figures. The API service's
// metrics come from its /metrics; the async service's through /ui/metrics/async when the
// API service knows where they are (xdb-server always does; apart,
// `api.console_async_metrics_url`).
import { api, getText } from "../api.js";
import { h, replace } from "../dom.js";
import { figures, parsePrometheus, type Scrape } from "../metrics.js";
import { executionsHref } from "../query.js";
import { SERIES, addPoint, pointFrom, readPoints, type Point } from "../series.js";
import { STATUSES } from "../types.js";
import { lineChart } from "./charts.js";

const SAMPLE_MS = 3000;
const STORAGE_KEY = "xdb.console.dashboard.samples";

/** Where a figure's executions are listed, for the figures that have such a list. */
const FIGURE_LINKS: Record<string, string> = {
  "Paused executions": executionsHref({ filter: {}, where: "execution.paused = true" }),
};

export function dashboardView(root: HTMLElement): () => void {
  const charts = h("div", { class: "cards charts", "data-testid": "charts" });
  const executions = h("div", { class: "counts", "data-testid": "dashboard-counts" });
  const cards = h("div", { class: "cards", "data-testid": "dashboard" });
  const note = h("p", { class: "small" });
  let points = readPoints(sessionStorage.getItem(STORAGE_KEY));
  let before: Scrape | undefined;
  let stopped = false;

  async function load(): Promise<void> {
    const [apiText, asyncText, counted, paused] = await Promise.all([
      getText("/metrics").catch(() => undefined),
      getText("/ui/metrics/async").catch(() => undefined),
      api.count({ groupBy: { field: "status" } }).catch(() => undefined),
      api.count({ where: { field: "paused", op: "=", value: true } }).catch(() => undefined),
    ]);
    if (stopped) return;
    renderCounts(counted?.groups ?? undefined, paused?.count);
    if (apiText === undefined) {
      replace(cards, h("p", { class: "error" }, "The API service's /metrics did not answer."));
      return;
    }
    const now: Scrape = {
      atMs: Date.now(),
      api: parsePrometheus(apiText),
      ...(asyncText !== undefined ? { async: parsePrometheus(asyncText) } : {}),
    };
    const point: Point = pointFrom(now, before);
    points = addPoint(points, point);
    try {
      sessionStorage.setItem(STORAGE_KEY, JSON.stringify(points));
    } catch {
      // storage full or off: the hour lives as long as the page
    }
    replace(charts, SERIES.map((series) => lineChart(points, series.key, series.label, series.unit, series.help, now.atMs)));
    replace(
      cards,
      figures(now, before).map((f) => {
        const href = FIGURE_LINKS[f.label];
        const content = [
          h("div", { class: "value" }, f.value),
          h("div", { class: "label" }, f.label),
          h("div", { class: "small" }, f.source === "api" ? "API service" : "async service"),
        ];
        return href
          ? h("a", { class: `card source-${f.source}`, title: f.help, href, "data-testid": "figure-link" }, content)
          : h("div", { class: `card source-${f.source}`, title: f.help }, content);
      }),
    );
    replace(
      note,
      asyncText === undefined
        ? "Only the API service's numbers: its /ui/metrics/async does not reach an async service " +
            "(set api.console_async_metrics_url to the async service's /metrics URL)."
        : `Charts: a sample every ${SAMPLE_MS / 1000} s while this page is open, the last hour kept for this tab. ` +
            "Figures: rates since the last sample; counts since each service started.",
    );
    before = now;
  }

  function renderCounts(groups: { value: unknown; count: number }[] | undefined, paused: number | undefined): void {
    if (!groups) {
      replace(executions);
      return;
    }
    const byStatus = new Map(groups.map((g) => [g.value, g.count]));
    replace(
      executions,
      STATUSES.map((status) =>
        h(
          "a",
          { class: `chip status-${status.toLowerCase()}`, href: executionsHref({ filter: { status }, where: "" }), "data-testid": `dashboard-count-${status}` },
          `${status} `,
          h("strong", {}, String(byStatus.get(status) ?? 0)),
        ),
      ),
      paused !== undefined &&
        h(
          "a",
          { class: "chip", href: executionsHref({ filter: {}, where: "execution.paused = true" }), "data-testid": "dashboard-count-paused" },
          "paused ",
          h("strong", {}, String(paused)),
        ),
    );
  }

  replace(root, h("h1", {}, "Dashboard"), executions, h("h2", {}, "Last hour"), charts, h("h2", {}, "Now"), cards, note);
  void load();
  const timer = setInterval(() => void load(), SAMPLE_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
