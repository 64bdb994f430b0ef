// One execution: its status, the business row it drives beside its local attributes,
// its state executions (attempts, failures, next attempt, what each waits for), its
// history a page at a time, and the operator's actions. An execution its type's
// running-execution limit holds shows as PENDING, with what it waits for, instead of paused.
import { api, definitionOrNothing } from "../api.js";
import { facts, h, replace, table } from "../dom.js";
import { formatFairness, formatPayload, formatPriority, formatRelative, formatTime, formatValue, statusClass } from "../format.js";
import { eventStateExecution, summarizeEvent } from "../history.js";
import { pendingText, phaseNote, shownStatus } from "../flow-limits.js";
import type {
  AttributesResponse, DefinitionDescribeResponse, DescribeResponse, HistoryResponse, StateInfo, StatesResponse,
} from "../types.js";
import { actionButtons } from "./actions.js";
import { notify } from "./dialog.js";
import { definitionHref } from "./routes.js";

const HISTORY_PAGE = 20;

/** The fairness key its start named, with its weight: claims share each priority between
 * keys, each key served in turn and taking up to its weight of tasks a turn. Nothing when
 * the start named none. */
function fairnessFact(d: DescribeResponse): [string, HTMLElement][] {
  const text = formatFairness(d.fairnessKey, d.fairnessWeight);
  return text === undefined ? [] : [["Fairness key", h("span", { "data-testid": "execution-fairness-key" }, text)]];
}
const REFRESH_MS = 3000;

export function executionView(root: HTMLElement, processId: string, processExecutionId?: string): () => void {
  const summary = h("section", { class: "summary" });
  const actions = h("div");
  const business = h("section", { class: "panel", "data-testid": "business-row" });
  const locals = h("section", { class: "panel", "data-testid": "local-attributes" });
  const statesSection = h("section", { class: "panel wide" });
  const historySection = h("section", { class: "panel wide" });
  /** `afterEventId` of each history page shown so far; the current page's last. */
  const historyPages: (number | undefined)[] = [undefined];
  let autoRefresh = true;
  let timer: ReturnType<typeof setInterval> | undefined;
  let stopped = false;
  let executionId = processExecutionId;
  /** The registered definition of the execution's type, read once (undefined: none). */
  let definition: Promise<DefinitionDescribeResponse | undefined> | undefined;

  async function load(): Promise<void> {
    try {
      const described = await api.describe(processId, executionId);
      executionId = described.processExecutionId;
      definition ??= definitionOrNothing(described.processType).catch(() => undefined);
      const [states, attributes, history, registered] = await Promise.all([
        api.states(processId, executionId),
        api.attributes(processId, executionId),
        api.history(processId, executionId, HISTORY_PAGE, historyPages.at(-1)),
        definition,
      ]);
      if (stopped) return;
      const now = Date.now();
      renderSummary(described, states, registered);
      replace(actions, actionButtons(described, states, registered, () => void load()));
      renderAttributes(attributes);
      replace(
        statesSection,
        h("h2", {}, "State executions"),
        table(
          ["State", "Status", "Call", "Next attempt", "Last failure", "Waiting for"],
          states.states.map((s) => stateRow(s, now)),
          "No state executions.",
          "states-table",
        ),
      );
      renderHistory(history);
    } catch (error) {
      if (!stopped) replace(summary, h("p", { class: "error", role: "alert" }, `Could not load ${processId}: ${String(error)}`));
    }
  }

  function renderSummary(d: DescribeResponse, states: StatesResponse, registered: DefinitionDescribeResponse | undefined): void {
    const refresh = h("input", { type: "checkbox", checked: autoRefresh, "data-testid": "auto-refresh" });
    refresh.addEventListener("change", () => {
      autoRefresh = refresh.checked;
      schedule();
    });
    const pending = pendingText(states.paused);
    const status = shownStatus({ status: d.status, pending: pending !== undefined });
    replace(
      summary,
      h(
        "h1",
        {},
        d.processId,
        " ",
        h("span", { class: statusClass(status), "data-testid": "execution-status" }, status),
        states.paused && !pending && h("span", { class: "badge badge-paused", "data-testid": "badge-paused" }, "paused"),
        (d.parkedTasks ?? 0) > 0 && h("span", { class: "badge badge-parked", "data-testid": "badge-parked" }, `${d.parkedTasks} parked`),
      ),
      facts([
        [
          "Process type",
          registered
            ? h("a", { href: definitionHref(d.processType), "data-testid": "process-type-link" }, d.processType)
            : [d.processType, h("span", { class: "small" }, " (not registered)")],
        ],
        ["Execution id", h("span", { class: "mono" }, d.processExecutionId)],
        ["Started (UTC)", formatTime(d.startTimestampMs)],
        ["Closed (UTC)", formatTime(d.closeTimestampMs)],
        ["Worker", h("span", { class: "mono" }, d.workerUrl)],
        ["Priority", h("span", { "data-testid": "execution-priority" }, formatPriority(d.priority))],
        ...fairnessFact(d),
        ["Running states", String(d.runningStateExecutions)],
        ...(states.paused && pending
          ? [["Pending", `${pending}, since ${formatTime(states.paused.sinceTimestampMs)}`] as [string, string]]
          : states.paused
            ? [["Paused", `since ${formatTime(states.paused.sinceTimestampMs)}${states.paused.reason ? ` — ${states.paused.reason}` : ""}`] as [string, string]]
            : []),
        ...backingOff(states, Date.now()),
        ...(d.failure ? [["Failure", `${d.failure.reason}${d.failure.details ? `: ${d.failure.details}` : ""}`] as [string, string]] : []),
        ...(d.result ? [["Result", h("pre", {}, formatPayload(d.result))]] as [string, HTMLElement][] : []),
      ]),
      pending &&
        h(
          "p",
          { class: "pending-notice", role: "status", "data-testid": "pending-notice" },
          h("strong", {}, "Pending: "),
          `${pending}. Its type's maxRunningExecutions holds it; it starts by itself, in start order, when a running execution of its key closes. Nothing of it has run yet.`,
        ),
      h("label", { class: "refresh" }, refresh, " auto-refresh"),
    );
  }

  function renderAttributes(a: AttributesResponse): void {
    const global = a.globalAttributes;
    replace(
      business,
      h("h2", {}, global ? `Business row: ${global.tableName}` : "Business row"),
      !global
        ? h("p", { class: "empty" }, "This process has no global-attribute table.")
        : !global.row
          ? h("p", { class: "empty" }, `No row in ${global.tableName} with ${global.primaryKey.column} = ${formatValue(global.primaryKey.value)}.`)
          : table(
              ["Column", "Value"],
              Object.entries(global.row).map(([column, value]) =>
                h(
                  "tr",
                  { class: column === global.primaryKey.column ? "key" : "" },
                  h("th", { scope: "row" }, column),
                  h("td", {}, h("pre", {}, formatValue(value))),
                ),
              ),
              "The row has no columns.",
              "business-row-table",
            ),
    );
    replace(
      locals,
      h("h2", {}, "Local attributes"),
      table(
        ["Key", "Value"],
        a.localAttributes.map((l) => h("tr", {}, h("th", { scope: "row" }, l.key), h("td", {}, h("pre", {}, formatPayload(l.value))))),
        "No local attributes.",
      ),
    );
  }

  function renderHistory(history: HistoryResponse): void {
    const page = historyPages.length;
    replace(
      historySection,
      h("h2", {}, "History"),
      table(
        ["#", "Time (UTC)", "State", "Event", "Summary"],
        history.events.map((e, i) =>
          h(
            "tr",
            { "data-testid": "history-event", "data-event-type": e.eventType },
            // Numbered within the execution, in eventId order (pages before this one are full).
            h("td", { title: `event id ${e.eventId}`, "data-testid": "history-number" }, String((page - 1) * HISTORY_PAGE + i + 1)),
            h("td", {}, formatTime(e.eventTimestampMs)),
            h("td", { class: "mono small", "data-testid": "history-state" }, eventStateExecution(e) ?? ""),
            h("td", {}, h("span", { class: `event event-${e.eventType.toLowerCase()}` }, e.eventType)),
            h(
              "td",
              { class: "details" },
              h(
                "details",
                {},
                h("summary", { "data-testid": "history-summary" }, summarizeEvent(e)),
                h("pre", { class: "small" }, JSON.stringify(e.details, null, 2)),
              ),
            ),
          ),
        ),
        "No events on this page.",
        "history-table",
      ),
      h(
        "div",
        { class: "pager" },
        h("button", { type: "button", disabled: page === 1, onclick: () => historyPage(-1) }, "← Earlier"),
        h("span", {}, `page ${page}`),
        h(
          "button",
          {
            type: "button",
            disabled: history.nextAfterEventId === null || history.nextAfterEventId === undefined,
            "data-testid": "history-next",
            onclick: () => historyPage(1, history.nextAfterEventId ?? undefined),
          },
          "Later →",
        ),
      ),
    );
  }

  function historyPage(direction: 1 | -1, after?: number): void {
    if (direction === 1) historyPages.push(after);
    else if (historyPages.length > 1) historyPages.pop();
    void load();
  }

  function schedule(): void {
    if (timer) clearInterval(timer);
    timer = autoRefresh ? setInterval(() => void load(), REFRESH_MS) : undefined;
  }

  replace(
    root,
    h("p", {}, h("a", { href: "#/executions" }, "← Executions")),
    summary,
    actions,
    h("div", { class: "side-by-side" }, business, locals),
    statesSection,
    historySection,
  );
  void load().catch((error: unknown) => notify(String(error), "error"));
  schedule();
  return () => {
    stopped = true;
    if (timer) clearInterval(timer);
  };
}

/** The summary's "Backing off" row: state calls waiting for a retry after a failure, with
 * their attempt and next attempt (the list does not carry these; `states` does). */
function backingOff(states: StatesResponse, now: number): [string, HTMLElement][] {
  const waiting = states.states.filter((s) => s.pendingCall && s.lastFailure && s.pendingCall.attempt > 1);
  if (waiting.length === 0) return [];
  return [
    [
      "Backing off",
      h(
        "div",
        { "data-testid": "backing-off" },
        waiting.map((s) =>
          h(
            "div",
            {},
            `${s.stateId} ${s.pendingCall?.api ?? ""}: attempt ${s.pendingCall?.attempt ?? "?"} `,
            s.pendingCall ? `due ${formatTime(s.pendingCall.dueTimestampMs)} (${formatRelative(s.pendingCall.dueTimestampMs, now)})` : "",
            s.lastFailure ? h("span", { class: "small" }, ` after: ${s.lastFailure.error}`) : null,
          ),
        ),
      ),
    ],
  ];
}

function stateRow(s: StateInfo, now: number): HTMLTableRowElement {
  const call = s.pendingCall;
  const waiting = s.waitingFor;
  const waits: (string | HTMLElement)[] = [];
  for (const timer of waiting?.timers ?? []) {
    const due = timer.dueTimestampMs;
    waits.push(
      h(
        "div",
        { "data-testid": "wait-timer" },
        `timer ${timer.delayInSeconds} s`,
        due ? ` due ${formatTime(due)} (${formatRelative(due, now)})` : "",
        timer.status ? ` — ${timer.status}` : "",
      ),
    );
  }
  for (const queue of waiting?.localQueues ?? []) {
    waits.push(
      h(
        "div",
        { "data-testid": "wait-queue" },
        `queue ${queue.queueName}: ${queue.queued} queued of ${queue.count}`,
        queue.status ? ` — ${queue.status}` : "",
      ),
    );
  }
  return h(
    "tr",
    { "data-testid": "state-row", "data-state-id": s.stateId, class: call?.phase === "PARKED" || call?.phase === "PAUSED" ? "attention" : "" },
    h("td", {}, s.stateId, h("div", { class: "mono small" }, s.stateExecutionId)),
    h("td", {}, h("span", { class: statusClass(s.status) }, s.status)),
    h(
      "td",
      {},
      call
        ? [
            `${call.api} attempt `,
            h("strong", { "data-testid": "state-attempt" }, String(call.attempt)),
            " ",
            h("span", { class: `phase phase-${call.phase.toLowerCase()}`, "data-testid": "state-phase" }, call.phase),
            call.parkedKind === "NON_RETRYABLE_WORKER_ERROR"
              ? h("div", { class: "small" }, "worker error, not retried")
              : null,
            call.parkedReason ? h("div", { class: "small" }, call.parkedReason) : null,
            phaseNote(call.phase) ? h("div", { class: "small", "data-testid": "state-phase-note" }, phaseNote(call.phase), " (", h("a", { href: "#/flow-limits" }, "flow limits"), ")") : null,
          ]
        : "—",
    ),
    h("td", {}, call ? [formatTime(call.dueTimestampMs), h("div", { class: "small" }, formatRelative(call.dueTimestampMs, now))] : "—"),
    h(
      "td",
      { "data-testid": "state-last-failure" },
      s.lastFailure
        ? [`${s.lastFailure.api} attempt ${s.lastFailure.attempt}: `, h("span", { class: "error" }, s.lastFailure.error), h("div", { class: "small" }, formatTime(s.lastFailure.timestampMs))]
        : "—",
    ),
    h("td", {}, waiting ? [h("div", { class: "small" }, waiting.waitingType), ...waits] : "—"),
  );
}
