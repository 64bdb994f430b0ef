// The dashboard: throughput, failures, backlog and timer lateness from the services'
// own Prometheus metrics. The API service's come from its /metrics; the async
// service's through /ui/metrics/async when the API service knows where they are
// (xdb-server always does; apart, `api.console_async_metrics_url`).
import { getText } from "../api.js";
import { h, replace } from "../dom.js";
import { figures, parsePrometheus, type Scrape } from "../metrics.js";

const REFRESH_MS = 5000;

export function dashboardView(root: HTMLElement): () => void {
  const cards = h("div", { class: "cards", "data-testid": "dashboard" });
  const note = h("p", { class: "small" });
  let before: Scrape | undefined;
  let stopped = false;

  async function load(): Promise<void> {
    const [apiText, asyncText] = await Promise.all([
      getText("/metrics").catch(() => undefined),
      getText("/ui/metrics/async").catch(() => undefined),
    ]);
    if (stopped) return;
    if (apiText === undefined) {
      replace(cards, h("p", { class: "error" }, "The API service's /metrics did not answer."));
      return;
    }
    const now: Scrape = {
      atMs: Date.now(),
      api: parsePrometheus(apiText),
      ...(asyncText !== undefined ? { async: parsePrometheus(asyncText) } : {}),
    };
    replace(
      cards,
      figures(now, before).map((f) =>
        h(
          "div",
          { class: `card source-${f.source}`, title: f.help },
          h("div", { class: "value" }, f.value),
          h("div", { class: "label" }, f.label),
          h("div", { class: "small" }, f.source === "api" ? "API service" : "async service"),
        ),
      ),
    );
    replace(
      note,
      asyncText === undefined
        ? "Only the API service's numbers: its /ui/metrics/async does not reach an async service " +
            "(set api.console_async_metrics_url to the async service's /metrics URL)."
        : "Rates are over the time since the last refresh; counts since each service started.",
    );
    before = now;
  }

  replace(root, h("h1", {}, "Dashboard"), cards, note);
  void load();
  const timer = setInterval(() => void load(), REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
