// The executions list: filters, counts per status, paging and auto-refresh. Paused and
// parked executions are marked, so what needs an operator stands out, and those backing
// off show their next attempt, when, and the last error. Each shows its start's priority,
// marked when not the default 3. An execution its type's
// running-execution limit holds shows as PENDING (it starts by itself). Explain shows the database's plan
// for the list's Where filter: whether an index serves it, and which to create if none does;
// Explain beside the counts per status shows the same for the count's statement.
import { api, ApiError, definitionOrNothing } from "../api.js";
import { hasColumnCondition, textToTree } from "../filter.js";
import { h, replace, table } from "../dom.js";
import { formatPriority, formatRelative, formatTime, parseUtcInput, shorten, statusClass } from "../format.js";
import { shownStatus } from "../flow-limits.js";
import { executionsHref, explainUnavailable, selectionRequest, selectionToQuery, statusCountRequest, type Explained, type Selection } from "../query.js";
import { STATUSES, type BackingOff, type BusinessTableRef, type ExecutionSummary, type ListFilter, type ProcessStatus, type QueryPlan } from "../types.js";
import { notify } from "./dialog.js";
import { startBatch } from "./batch.js";
import { queryBuilder } from "./querybuilder.js";
import { executionHref } from "./routes.js";

const PAGE_SIZE = 25;
const REFRESH_MS = 5000;

/** Kept across visits of the page; the selection itself is in the URL. */
const state = {
  filter: {} as ListFilter,
  where: "",
  table: undefined as BusinessTableRef | undefined,
  /** The selection (as its URL query) the pages below belong to. */
  query: "",
  /** Tokens of the pages before the current one; the current page's token last. */
  pages: [] as (string | undefined)[],
  autoRefresh: true,
};

/** The list showing the selection the URL query `query` names. */
export function executionsView(root: HTMLElement, selection: Selection): () => void {
  state.filter = selection.filter;
  state.where = selection.where;
  state.table = selection.table;
  const query = selectionToQuery(selection);
  if (query !== state.query) state.pages = [];
  state.query = query;
  const counts = h("div", { class: "counts", "data-testid": "status-counts" });
  const results = h("div", { class: "results" });
  const pager = h("div", { class: "pager" });
  /** The plan an Explain (of the list or of its counts) read, or why it could not; empty until then. */
  const explained = h("div", {});
  let timer: ReturnType<typeof setInterval> | undefined;
  let stopped = false;

  const field = (name: string, value: string | null | undefined, placeholder: string, type = "text") =>
    h("input", { name, type, value: value ?? "", placeholder, "data-testid": `filter-${name}` });
  const status = h(
    "select",
    { name: "status", "data-testid": "filter-status" },
    h("option", { value: "" }, "any status"),
    STATUSES.map((s) => h("option", { value: s, selected: state.filter.status === s }, s)),
  );
  const processType = field("processType", state.filter.processType, "process type");
  const processId = field("processId", state.filter.processId, "process id");
  const from = field("from", isoInput(state.filter.startTimeMinMs), "started from (UTC)", "datetime-local");
  const to = field("to", isoInput(state.filter.startTimeMaxMs), "started before (UTC)", "datetime-local");
  const refresh = h("input", { type: "checkbox", checked: state.autoRefresh, "data-testid": "auto-refresh" });
  const builder = queryBuilder(state.where, state.table, () => processType.value.trim());

  const apply = async () => {
    const filter: ListFilter = {
      ...(status.value ? { status: status.value as ProcessStatus } : {}),
      ...(processType.value.trim() ? { processType: processType.value.trim() } : {}),
      ...(processId.value.trim() ? { processId: processId.value.trim() } : {}),
      ...optionalNumber("startTimeMinMs", parseUtcInput(from.value)),
      ...optionalNumber("startTimeMaxMs", parseUtcInput(to.value)),
    };
    let table = builder.table();
    if (!table && filter.processType) {
      try {
        if (hasColumnCondition(textToTree(builder.text()))) table = await businessTableOf(filter.processType);
      } catch {
        // a filter that does not parse: the list says so
      }
    }
    // The route shows the new selection; the same one again (no hashchange) just reloads.
    const before = location.hash;
    location.hash = executionsHref({ filter, where: builder.text(), ...(table ? { table } : {}) });
    if (location.hash === before) {
      state.pages = [];
      void load();
    }
  };
  /** The plan of the list or of the counts shown: the same requests `load()` sends, with `explain`. */
  const explain = async (what: Explained) => {
    const unavailable = explainUnavailable(what, builder.text(), state.where);
    if (unavailable) {
      replace(explained, h("p", { class: "small", role: "status", "data-testid": "query-plan-unavailable" }, unavailable));
      return;
    }
    const failed = `Could not explain ${EXPLAINED[what].name}`;
    try {
      const { plan } =
        what === "list"
          ? await api.list(state.filter, PAGE_SIZE, undefined, selectionRequest({ filter: {}, where: state.where }).where, state.table, true)
          : await api.count(statusCountRequest(state.filter, state.where, state.table, true));
      builder.showError("");
      if (stopped) return;
      replace(explained, plan ? queryPlanPanel(plan, what) : h("p", { class: "error", role: "alert" }, `${failed}: the service answered no plan.`));
    } catch (error) {
      if (!stopped) showFailure(error, failed, explained);
    }
  };
  const selected = (): Selection => ({ filter: state.filter, where: state.where, ...(state.table ? { table: state.table } : {}) });
  const form = h(
    "div",
    { class: "filters" },
    status,
    processType,
    processId,
    h("label", {}, "from ", from),
    h("label", {}, "to ", to),
    h("button", { type: "button", class: "primary", "data-testid": "apply-filter", onclick: () => void apply() }, "Apply"),
    h(
      "button",
      { type: "button", "data-testid": "explain-filter", title: "the database's plan for the Where filter: whether an index serves it", onclick: () => void explain("list") },
      "Explain",
    ),
    h("label", { class: "refresh" }, refresh, " auto-refresh"),
    h(
      "button",
      { type: "button", "data-testid": "batch-start", title: "act on every execution this filter selects", onclick: () => void startBatch(selected()) },
      "Act on all matching…",
    ),
  );
  form.addEventListener("keydown", (event) => {
    if (event.key === "Enter") void apply();
  });
  builder.element.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && event.ctrlKey) void apply();
  });
  refresh.addEventListener("change", () => {
    state.autoRefresh = refresh.checked;
    schedule();
  });

  async function load(): Promise<void> {
    try {
      const token = state.pages.at(-1);
      // The simple filter goes as `filter`, the builder's tree as `where`.
      const { where } = selectionRequest({ filter: {}, where: state.where });
      const [page, countsByStatus] = await Promise.all([
        api.list(state.filter, PAGE_SIZE, token, where, state.table),
        countStatuses(state.filter, state.where, state.table),
      ]);
      builder.showError("");
      const parked = await parkedOf(page.executions);
      if (stopped) return;
      replace(counts, countsByStatus.map(([s, count]) => countChip(s, String(count))));
      replace(results, executionsTable(page.executions, parked));
      replace(
        pager,
        h("button", { type: "button", disabled: state.pages.length === 0, onclick: () => page_(-1) }, "← Newer"),
        h("span", {}, `page ${state.pages.length + 1}`),
        h(
          "button",
          {
            type: "button",
            disabled: !page.nextPageToken,
            "data-testid": "next-page",
            onclick: () => page_(1, page.nextPageToken ?? undefined),
          },
          "Older →",
        ),
      );
    } catch (error) {
      if (!stopped) showFailure(error, "Could not list executions", results);
    }
  }

  /** `error` of a call over the selection: the service's 400 or a filter text that does not
   * parse next to the editor, and the whole of it in `into` as `what: ...`. */
  function showFailure(error: unknown, what: string, into: HTMLElement): void {
    if (error instanceof ApiError && error.status === 400) builder.showError(error.message);
    else if (error instanceof Error && !(error instanceof ApiError)) builder.showError(`The filter text: ${error.message}`);
    replace(into, h("p", { class: "error", role: "alert" }, `${what}: ${error instanceof Error ? error.message : String(error)}`));
  }

  function page_(direction: 1 | -1, token?: string): void {
    if (direction === 1) state.pages.push(token);
    else state.pages.pop();
    void load();
  }

  function countChip(s: ProcessStatus, text: string): HTMLElement {
    return h(
      "button",
      {
        type: "button",
        class: `chip ${statusClass(s)}${state.filter.status === s ? " selected" : ""}`,
        "data-testid": `count-${s}`,
        onclick: () => {
          status.value = state.filter.status === s ? "" : s;
          void apply();
        },
      },
      `${s} `,
      h("strong", {}, text),
    );
  }

  function schedule(): void {
    if (timer) clearInterval(timer);
    timer = state.autoRefresh ? setInterval(() => void load(), REFRESH_MS) : undefined;
  }

  const countsRow = h(
    "div",
    { class: "counts-row" },
    counts,
    h(
      "button",
      { type: "button", "data-testid": "explain-count", title: "the database's plan for the counts per status: whether an index serves them", onclick: () => void explain("count") },
      "Explain",
    ),
  );
  replace(root, h("h1", {}, "Executions"), form, builder.element, countsRow, explained, results, pager);
  void load().catch((error: unknown) => notify(String(error), "error"));
  schedule();
  return () => {
    stopped = true;
    if (timer) clearInterval(timer);
  };
}

function optionalNumber(key: "startTimeMinMs" | "startTimeMaxMs", value: number | undefined): ListFilter {
  return value === undefined ? {} : { [key]: value };
}

function isoInput(ms: number | null | undefined): string | undefined {
  return ms === undefined || ms === null ? undefined : new Date(ms).toISOString().slice(0, 16);
}

/** Executions per status under `filter` (its own status aside), exact, from one count. */
async function countStatuses(filter: ListFilter, where: string, table?: BusinessTableRef): Promise<[ProcessStatus, number][]> {
  const counted = await api.count(statusCountRequest(filter, where, table));
  const byStatus = new Map((counted.groups ?? []).map((g) => [g.value, g.count]));
  return STATUSES.map((s) => [s, byStatus.get(s) ?? 0]);
}

/** The business table of `processType` when the service cannot know it (no registered
 * definition): the one its latest execution writes; undefined when registered or unknown. */
async function businessTableOf(processType: string): Promise<BusinessTableRef | undefined> {
  if (await definitionOrNothing(processType).catch(() => undefined)) return undefined;
  const latest = (await api.list({ processType }, 1)).executions[0];
  if (!latest) return undefined;
  const config = (await api.describe(latest.processId, latest.processExecutionId)).globalAttributeConfig;
  return config ? { tableName: config.tableName, primaryKeyColumn: config.primaryKey.column } : undefined;
}

/** How an explained statement is named: in messages, the panel's title, and what indexes serve. */
const EXPLAINED: Record<Explained, { name: string; title: string; served: string }> = {
  list: { name: "the filter", title: "Plan of this filter", served: "Indexes serve this filter." },
  count: { name: "the count", title: "Plan of the counts per status", served: "Indexes serve this count." },
};

/** What the database's plan of `what` says about the filter's indexes: each advice (or that
 * indexes serve it), the tables read in full, and the plan itself, folded. */
function queryPlanPanel(plan: QueryPlan, what: Explained): HTMLElement {
  return h(
    "div",
    { class: "panel query-plan", "data-testid": "query-plan", "data-explained": what },
    h("strong", {}, EXPLAINED[what].title),
    plan.advice.length > 0
      ? h("ul", { class: "plan-advice" }, plan.advice.map((advice) => h("li", { "data-testid": "plan-advice" }, advice)))
      : h("p", { class: "plan-served", "data-testid": "plan-served" }, EXPLAINED[what].served),
    plan.fullScans.length > 0 &&
      h(
        "p",
        { class: "small", "data-testid": "plan-full-scans" },
        "Read in full: ",
        plan.fullScans.flatMap((table, i) => [i > 0 && ", ", h("span", { class: "mono" }, table)]),
      ),
    h(
      "details",
      { "data-testid": "plan-json" },
      h("summary", { class: "small" }, "The database's plan (EXPLAIN)"),
      h("pre", {}, JSON.stringify(plan.plan, null, 2)),
    ),
  );
}

/** Parked task counts of the running executions on the page, by execution id (a PENDING
 * one's first tasks wait for its slot, not for an operator: not counted). */
async function parkedOf(executions: ExecutionSummary[]): Promise<Map<string, number>> {
  const running = executions.filter((e) => e.status === "RUNNING" && !e.pending);
  const described = await Promise.all(
    running.map((e) => api.describe(e.processId, e.processExecutionId).catch(() => undefined)),
  );
  const parked = new Map<string, number>();
  for (const d of described) if (d?.parkedTasks) parked.set(d.processExecutionId, d.parkedTasks);
  return parked;
}

/** A call waiting out its retry's backoff: the attempt it waits to make, when (relative;
 * the time on hover) and the last error, short (the whole of it on hover and unfolded). */
function backingOffCell(b: BackingOff, now: number): HTMLElement {
  const error = b.lastError?.trim() ?? "";
  const short = shorten(error);
  return h(
    "div",
    { class: "backing-off", "data-testid": "backing-off" },
    h("span", { class: "badge badge-backing-off", "data-testid": "backing-off-attempt" }, `attempt ${b.attempt}`),
    " ",
    h("span", { class: "small", title: `${formatTime(b.nextAttemptTimestampMs)} UTC`, "data-testid": "backing-off-next" }, formatRelative(b.nextAttemptTimestampMs, now)),
    error &&
      (short === error
        ? h("div", { class: "small error-text", title: error, "data-testid": "backing-off-error" }, error)
        : h(
            "details",
            { class: "small error-text", "data-testid": "backing-off-error" },
            h("summary", { title: error }, short),
            h("pre", {}, error),
          )),
  );
}

/** An execution's priority, the number; one other than the default 3 marked, so that a
 * start raised (1, 2) or lowered (4, 5) stands out. What it means on hover. None (a service
 * before priorities) is the default. */
function priorityCell(priority: number | null | undefined): HTMLElement {
  const p = priority ?? 3;
  const kind = p < 3 ? " priority-raised" : p > 3 ? " priority-lowered" : "";
  return h("span", { class: `priority${kind}`, title: `priority ${formatPriority(p)}`, "data-testid": "execution-row-priority", "data-priority": p }, String(p));
}

function executionsTable(executions: ExecutionSummary[], parked: Map<string, number>): HTMLElement {
  const now = Date.now();
  const rows = executions.map((e) => {
    const parkedTasks = parked.get(e.processExecutionId);
    // PENDING: held by its type's maxRunningExecutions, not by an operator.
    const operatorPaused = e.paused && !e.pending;
    const status = shownStatus(e);
    return h(
      "tr",
      {
        class: operatorPaused || parkedTasks || e.backingOff ? "attention" : "",
        "data-testid": "execution-row",
        "data-process-id": e.processId,
      },
      h("td", {}, h("a", { href: executionHref(e.processId, e.processExecutionId) }, e.processId)),
      h("td", {}, e.processType),
      h(
        "td",
        {},
        h(
          "span",
          {
            class: statusClass(status),
            "data-testid": "execution-row-status",
            ...(e.pending ? { title: "waiting for a running slot of its concurrency key (its type's maxRunningExecutions): it starts by itself" } : {}),
          },
          status,
        ),
        operatorPaused && h("span", { class: "badge badge-paused", "data-testid": "badge-paused" }, "paused"),
        parkedTasks && h("span", { class: "badge badge-parked", "data-testid": "badge-parked" }, `${parkedTasks} parked`),
      ),
      h("td", {}, priorityCell(e.priority)),
      h("td", {}, e.backingOff ? backingOffCell(e.backingOff, now) : ""),
      h("td", {}, formatTime(e.startTimestampMs)),
      h("td", {}, formatTime(e.closeTimestampMs)),
      h("td", { class: "mono small" }, e.processExecutionId),
    );
  });
  return table(
    ["Process id", "Type", "Status", "Priority", "Backing off", "Started (UTC)", "Closed (UTC)", "Execution id"],
    rows,
    "No executions match.",
    "executions-table",
  );
}
