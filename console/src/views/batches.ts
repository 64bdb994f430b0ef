// The batches: newest first, with their status, operation, progress and requested rate,
// each linking to its page.
import { api } from "../api.js";
import { h, replace, table } from "../dom.js";
import { formatTime, statusClass } from "../format.js";
import { progress } from "./batch.js";
import { batchHref } from "./routes.js";

const REFRESH_MS = 3000;

export function batchesView(root: HTMLElement): () => void {
  const results = h("div");
  let stopped = false;

  async function load(): Promise<void> {
    try {
      const listed = await api.batchList({ pageSize: 100 });
      if (stopped) return;
      replace(
        results,
        table(
          ["Batch", "Status", "Operation", "Progress", "Done / skipped / failed", "Rate (per second)", "Created (UTC)"],
          listed.batches.map((b) =>
            h(
              "tr",
              { "data-testid": "batch-row", "data-batch-id": b.batchId },
              h("td", {}, h("a", { href: batchHref(b.batchId), class: "mono small" }, b.batchId)),
              h("td", {}, h("span", { class: statusClass(b.status) }, b.status)),
              h("td", {}, b.operation),
              h("td", {}, progress(b)),
              h("td", {}, `${b.done} / ${b.skipped} / ${b.failed}`),
              h("td", { "data-testid": "batch-row-rate" }, String(b.ratePerSecond)),
              h("td", {}, formatTime(b.createdTimestampMs)),
            ),
          ),
          "No batches yet: start one from the executions list (“Act on all matching…”).",
          "batches-table",
        ),
      );
    } catch (error) {
      if (!stopped) replace(results, h("p", { class: "error", role: "alert" }, `Could not list batches: ${String(error)}`));
    }
  }

  replace(root, h("h1", {}, "Batches"), results);
  void load();
  const timer = setInterval(() => void load(), REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
