// One schedule, described every two seconds: its spec, start template and policies, the
// spec's next 10 fire times and its latest firings, each linking to the execution it
// started; and its audit history, newest first (who changed what, and why), read again
// after each of the page's own actions and every few seconds, older changes on demand. A
// deleted schedule's page still shows its history. Pause, resume, trigger now and delete
// each ask first; delete then returns to the list. A schedule a definition declares says
// so (its code owns it) and cannot be deleted here: registering the definition without it
// does that.
import { api } from "../api.js";
import { facts, h, replace, table } from "../dom.js";
import { formatDuration, formatPayload, formatRelative, formatTime, statusClass } from "../format.js";
import { OVERLAP_POLICIES, declaredByText, deleteRefusal, nextFireText, scheduleChangeLines, scheduleState, specText } from "../schedules.js";
import type { ScheduleChange, ScheduleDescribeResponse, ScheduleOverlapPolicy } from "../types.js";
import { changeHistory } from "./changes.js";
import { ask, notify } from "./dialog.js";
import { definitionHref, executionHref } from "./routes.js";

const POLL_MS = 2000;
/** How often the history is read again (besides after the page's own actions). */
const HISTORY_POLL_MS = 5000;
/** Changes in a page of the history. */
const HISTORY_SIZE = 20;

export function scheduleView(root: HTMLElement, scheduleId: string): () => void {
  const body = h("div", { "data-testid": "schedule" });
  const history = changeHistory<ScheduleChange>({
    read: (pageSize, nextPageToken) => api.scheduleHistory({ scheduleId, pageSize, ...(nextPageToken ? { nextPageToken } : {}) }),
    pageSize: HISTORY_SIZE,
    columns: [
      { label: "Action", cell: (c) => h("td", { "data-testid": "schedule-change-action" }, c.action) },
      {
        label: "Details",
        cell: (c) => h("td", { "data-testid": "schedule-change-details" }, scheduleChangeLines(c).map((line) => h("div", { "data-testid": "schedule-change-line" }, line))),
      },
    ],
    row: (c) => ({ "data-testid": "schedule-change", "data-action": c.action, "data-change-id": c.changeId }),
    empty: "No changes yet.",
    testId: "schedule-history",
  });
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Bumped by each answer shown, so an older poll's answer never overwrites a newer one. */
  let shown = 0;

  async function load(): Promise<void> {
    if (timer) clearTimeout(timer);
    const ticket = ++shown;
    try {
      const described = await api.scheduleDescribe(scheduleId);
      if (!stopped && ticket === shown) render(described);
    } catch (error) {
      if (!stopped && ticket === shown) replace(body, h("p", { class: "error", role: "alert" }, `Could not describe schedule ${scheduleId}: ${String(error)}`));
    }
    if (!stopped && ticket === shown) timer = setTimeout(() => void load(), POLL_MS);
  }

  function render({ schedule, nextFireTimestampsMs, recentFirings }: ScheduleDescribeResponse): void {
    const state = scheduleState(schedule);
    const start = schedule.start;
    const now = Date.now();
    const declaredBy = declaredByText(schedule);
    const refusal = deleteRefusal(schedule);
    replace(
      body,
      h("h1", {}, `Schedule ${schedule.scheduleId} `, h("span", { class: statusClass(state), "data-testid": "schedule-state" }, state)),
      declaredBy && h("p", { class: "small", "data-testid": "schedule-declared-by" }, declaredBy),
      h(
        "div",
        { class: "actions" },
        schedule.paused
          ? h("button", { type: "button", class: "primary", "data-testid": "schedule-resume", onclick: () => void control("resume") }, "Resume")
          : h("button", { type: "button", "data-testid": "schedule-pause", onclick: () => void control("pause") }, "Pause"),
        h("button", { type: "button", "data-testid": "schedule-trigger", onclick: () => void trigger(schedule.overlapPolicy) }, "Trigger now"),
        h("button", { type: "button", class: "danger", "data-testid": "schedule-delete", disabled: refusal !== undefined, title: refusal, onclick: () => void remove() }, "Delete"),
      ),
      h(
        "div",
        { class: "side-by-side" },
        h(
          "div",
          { class: "panel" },
          h("h2", {}, "Spec and policies"),
          facts([
            ["Spec", h("span", { class: "mono", "data-testid": "schedule-spec" }, specText(schedule.spec))],
            ["Next fire (UTC)", h("span", { "data-testid": "schedule-next" }, nextFireText(schedule))],
            ["Overlap policy", h("span", { "data-testid": "schedule-overlap" }, schedule.overlapPolicy)],
            ["Catch-up window", formatDuration(schedule.catchupWindowSeconds * 1000)],
            ...(schedule.note ? [["Note", schedule.note] as [string, string]] : []),
            ...(schedule.reason ? [[schedule.paused ? "Paused because" : "Resumed because", h("span", { "data-testid": "schedule-reason" }, schedule.reason)] as [string, HTMLElement]] : []),
            ["Created (UTC)", formatTime(schedule.createdTimestampMs)],
            ["Updated (UTC)", formatTime(schedule.updatedTimestampMs)],
          ]),
        ),
        h(
          "div",
          { class: "panel" },
          h("h2", {}, "Each firing starts"),
          facts([
            ["Process type", h("a", { href: definitionHref(start.processType), "data-testid": "schedule-process-type" }, start.processType)],
            ["Worker URL", h("span", { class: "mono" }, start.workerUrl || "—")],
            ["Start state", start.startStateId ?? "none"],
            ["Start state input", h("pre", {}, formatPayload(start.startStateInput))],
            ["Process id", h("span", { class: "mono" }, `${schedule.scheduleId}-<nominal time, UTC>`)],
          ]),
        ),
      ),
      h(
        "div",
        { class: "side-by-side" },
        h(
          "div",
          { class: "panel" },
          h("h2", {}, schedule.paused ? "Next fire times, once resumed (UTC)" : "Next fire times (UTC)"),
          nextFireTimestampsMs.length === 0
            ? h("p", { class: "empty" }, "The spec has no more fire times.")
            : h(
                "ol",
                { class: "fire-times", "data-testid": "schedule-fire-times" },
                nextFireTimestampsMs.map((ms) => h("li", { "data-testid": "schedule-fire-time" }, formatTime(ms), h("span", { class: "small" }, ` ${formatRelative(ms, now)}`))),
              ),
        ),
        h(
          "div",
          { class: "panel" },
          h("h2", {}, "Latest firings"),
          table(
            ["Nominal (UTC)", "By", "Outcome", "Process id", "Resolved (UTC)", "Reason"],
            (recentFirings ?? []).map((f) =>
              h(
                "tr",
                { "data-testid": "schedule-firing", "data-trigger": f.trigger, "data-outcome": f.outcome, "data-process-id": f.processId },
                h("td", {}, formatTime(f.nominalTimestampMs)),
                h("td", {}, f.trigger),
                h("td", {}, h("span", { class: statusClass(f.outcome) }, f.outcome)),
                h(
                  "td",
                  { class: "mono small" },
                  f.processExecutionId ? h("a", { href: executionHref(f.processId, f.processExecutionId) }, f.processId) : f.processId,
                ),
                h("td", {}, formatTime(f.resolvedTimestampMs)),
                h("td", {}, f.reason ?? ""),
              ),
            ),
            "No firings yet.",
            "schedule-firings",
          ),
        ),
      ),
    );
  }

  async function control(action: "pause" | "resume"): Promise<void> {
    const values = await ask(
      action === "pause" ? "Pause the schedule?" : "Resume the schedule?",
      action === "pause"
        ? "Nothing fires until it is resumed; executions already started run on."
        : `Firings missed while it was paused run if they are within its catch-up window; older ones are dropped.`,
      [{ name: "reason", label: "Reason (kept with the schedule)", placeholder: "optional" }],
      action === "pause" ? "Pause" : "Resume",
    );
    if (!values) return;
    const reason = values("reason").trim() || undefined;
    try {
      const changed = action === "pause" ? await api.schedulePause(scheduleId, reason) : await api.scheduleResume(scheduleId, reason);
      notify(`${action === "pause" ? "Paused" : "Resumed"} ${scheduleId}`);
      if (!stopped) {
        ++shown;
        render(changed);
      }
    } catch (error) {
      notify(`Could not ${action}: ${error instanceof Error ? error.message : String(error)}`, "error");
    }
    void load();
    void history.refresh();
  }

  async function trigger(own: ScheduleOverlapPolicy): Promise<void> {
    const values = await ask(
      "Fire the schedule now?",
      "One firing now, whatever the spec and the paused flag say. Its process id is the schedule id and this moment.",
      [{ name: "overlap", label: "Overlap policy (the schedule's unless changed)", kind: "select", options: [...OVERLAP_POLICIES], value: own }],
      "Trigger now",
    );
    if (!values) return;
    const overlap = values("overlap") as ScheduleOverlapPolicy;
    try {
      const fired = await api.scheduleTrigger(scheduleId, overlap === own ? undefined : overlap);
      notify(`Fired ${fired.processId}`);
    } catch (error) {
      notify(`Could not trigger: ${error instanceof Error ? error.message : String(error)}`, "error");
    }
    void load();
    void history.refresh();
  }

  async function remove(): Promise<void> {
    const values = await ask(
      `Delete schedule ${scheduleId}?`,
      "It fires no more and its firings' records go; the executions it started run on.",
      [{ name: "reason", label: "Reason (logged)", placeholder: "optional" }],
      "Delete",
      { danger: true },
    );
    if (!values) return;
    try {
      await api.scheduleDelete(scheduleId, values("reason").trim() || undefined);
      notify(`Deleted ${scheduleId}`);
      location.hash = "#/schedules";
    } catch (error) {
      notify(`Could not delete: ${error instanceof Error ? error.message : String(error)}`, "error");
      void load();
      void history.refresh();
    }
  }

  replace(
    root,
    h("p", {}, h("a", { href: "#/schedules" }, "← Schedules")),
    body,
    h("div", { class: "panel wide", "data-testid": "schedule-history-panel" }, h("h2", {}, "History"), history.element),
  );
  void load();
  void history.refresh();
  const historyTimer = setInterval(() => void history.refresh(), HISTORY_POLL_MS);
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    clearInterval(historyTimer);
  };
}
