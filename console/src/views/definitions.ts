// Registered process definitions: the list of process types their worker deployments
// registered, and one process type's page: its definition, its revisions and its state
// graph — the transitions its latest executions' histories show, with live counts of
// the state executions of its running executions in each state.
import { api, ApiError } from "../api.js";
import { facts, h, replace, s, table } from "../dom.js";
import { formatLoading, formatRecovery, formatRetryPolicy, formatTime } from "../format.js";
import {
  countStates, deriveEdges, emptyCount, layoutGraph,
  type Box, type Layout, type StateCount,
} from "../graph.js";
import type {
  DefinitionDescribeResponse, DefinitionRevision, ExecutionSummary, HistoryEvent, ProcessDefinition, StatesResponse,
} from "../types.js";
import { notify } from "./dialog.js";
import { executionsHref } from "../query.js";
import { definitionHref } from "./routes.js";

const REFRESH_MS = 5000;
/** The sample the graph is drawn from: histories of the latest executions, and the
 * states of the latest running ones. */
export const HISTORY_SAMPLE = 50;
export const RUNNING_SAMPLE = 100;
/** Transition events read per history (one page). */
const HISTORY_EVENTS = 1000;
/** Calls in flight at once while sampling. */
const CONCURRENCY = 6;

export function definitionsView(root: HTMLElement): () => void {
  const results = h("div", { class: "results" });
  let stopped = false;

  async function load(): Promise<void> {
    try {
      const { definitions } = await api.definitions();
      if (stopped) return;
      replace(
        results,
        table(
          ["Process type", "Revision", "Deployment", "Version", "Worker URL", "Registered (UTC)"],
          definitions.map((d) =>
            h(
              "tr",
              { "data-testid": "definition-row", "data-process-type": d.processType },
              h("td", {}, h("a", { href: definitionHref(d.processType) }, d.processType)),
              h("td", {}, String(d.revision)),
              h("td", {}, d.deployment.name),
              h("td", {}, d.deployment.version),
              h("td", { class: "mono small" }, d.deployment.workerUrl),
              h("td", {}, formatTime(d.registeredAtMs)),
            ),
          ),
          "No process type is registered. A worker deployment registers its process types with " +
            "definitions/register (role deploy).",
          "definitions-table",
        ),
      );
    } catch (error) {
      if (!stopped) replace(results, h("p", { class: "error", role: "alert" }, `Could not list the definitions: ${String(error)}`));
    }
  }

  replace(
    root,
    h("h1", {}, "Definitions"),
    h("p", { class: "small" }, "The process types worker deployments registered, each at its current revision."),
    results,
  );
  void load().catch((error: unknown) => notify(String(error), "error"));
  const timer = setInterval(() => void load(), REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

export function definitionView(root: HTMLElement, processType: string, revision?: number): () => void {
  const summary = h("section", { class: "summary" });
  const graphSection = h("section", { class: "panel wide", "data-testid": "state-graph-panel" });
  const definitionSection = h("div");
  const revisionsSection = h("section", { class: "panel wide" });
  /** Histories of closed executions do not change: read once. */
  const closedHistories = new Map<string, HistoryEvent[]>();
  let autoRefresh = true;
  let timer: ReturnType<typeof setInterval> | undefined;
  let stopped = false;
  let shownHash: string | undefined;

  async function load(): Promise<void> {
    let described: DefinitionDescribeResponse;
    try {
      described = await api.definition(processType, revision);
    } catch (error) {
      if (stopped) return;
      const text =
        error instanceof ApiError && error.status === 404
          ? `${processType} is not registered${revision === undefined ? "" : ` at revision ${revision}`}.`
          : `Could not load ${processType}: ${String(error)}`;
      replace(summary, h("h1", {}, processType), h("p", { class: "error", role: "alert", "data-testid": "definition-error" }, text));
      return;
    }
    let sample: Sample;
    try {
      sample = await sampleExecutions(processType, closedHistories);
    } catch (error) {
      if (!stopped) replace(graphSection, h("h2", {}, "State graph"), h("p", { class: "error", role: "alert" }, `Could not read the executions: ${String(error)}`));
      return;
    }
    if (stopped) return;
    renderSummary(described);
    if (shownHash !== described.revision.contentHash) {
      shownHash = described.revision.contentHash;
      replace(definitionSection, definitionPanels(described.definition));
      renderRevisions(described);
    }
    renderGraph(described.definition, sample);
  }

  function renderSummary(d: DefinitionDescribeResponse): void {
    const r = d.revision;
    const current = d.revisions[0]?.revision;
    replace(
      summary,
      h(
        "h1",
        {},
        r.processType,
        h("span", { class: "badge badge-revision", "data-testid": "definition-revision" }, `revision ${r.revision}`),
        current !== undefined && current !== r.revision && h("a", { href: definitionHref(r.processType), class: "small" }, `current is ${current}`),
      ),
      facts([
        ["Deployment", `${r.deployment.name} ${r.deployment.version}`],
        ["Worker URL", h("span", { class: "mono" }, r.deployment.workerUrl)],
        ["Registered (UTC)", formatTime(r.registeredAtMs)],
        ["Content hash", h("span", { class: "mono small" }, r.contentHash)],
        ["Start states", (d.definition.startStates ?? []).length > 0 ? (d.definition.startStates ?? []).join(", ") : "any state"],
      ]),
      h(
        "a",
        { href: executionsHref({ filter: { processType: r.processType }, where: "" }), "data-testid": "executions-of-type" },
        `Executions of ${r.processType} →`,
      ),
    );
  }

  function renderGraph(definition: ProcessDefinition, sample: Sample): void {
    const edges = deriveEdges(sample.histories, definition);
    const layout = layoutGraph(
      definition.states.map((st) => st.id),
      definition.startStates ?? [],
      edges,
    );
    const counts = countStates(sample.states, Date.now());
    const refresh = h("input", { type: "checkbox", checked: autoRefresh, "data-testid": "auto-refresh" });
    refresh.addEventListener("change", () => {
      autoRefresh = refresh.checked;
      schedule();
    });
    replace(
      graphSection,
      h("h2", {}, "State graph"),
      h("div", { class: "graph" }, drawGraph(layout, counts)),
      h(
        "p",
        { class: "small", "data-testid": "graph-sample" },
        `Arrows: the transitions in the histories of the latest ${sample.historiesRead} executions of this type`,
        sample.moreExecutions ? ` (of more; at most ${HISTORY_SAMPLE} are read)` : "",
        `, numbered by how often each was taken; dashed: a declared failure recovery. Counts: the state executions of `,
        sample.moreRunning ? `the latest ${sample.statesRead} running executions (of more; at most ${RUNNING_SAMPLE} are read)` : `the ${sample.statesRead} running executions`,
        "; parked and backing off (waiting for a retry) are counted among the running.",
      ),
      h("label", { class: "refresh" }, refresh, " auto-refresh"),
    );
  }

  function renderRevisions(d: DefinitionDescribeResponse): void {
    replace(
      revisionsSection,
      h("h2", {}, "Revisions"),
      table(
        ["Revision", "Deployment", "Version", "Worker URL", "Registered (UTC)", "Content hash"],
        d.revisions.map((r) => revisionRow(r, r.revision === d.revision.revision)),
        "No revisions.",
        "revisions-table",
      ),
    );
  }

  function schedule(): void {
    if (timer) clearInterval(timer);
    timer = autoRefresh ? setInterval(() => void load(), REFRESH_MS) : undefined;
  }

  replace(
    root,
    h("p", {}, h("a", { href: "#/definitions" }, "← Definitions")),
    summary,
    graphSection,
    definitionSection,
    revisionsSection,
  );
  void load().catch((error: unknown) => notify(String(error), "error"));
  schedule();
  return () => {
    stopped = true;
    if (timer) clearInterval(timer);
  };
}

interface Sample {
  histories: HistoryEvent[][];
  historiesRead: number;
  moreExecutions: boolean;
  states: StatesResponse[];
  statesRead: number;
  moreRunning: boolean;
}

/** Reads the histories (their start and execute events) of the latest executions of
 * `processType` and the states of its latest running ones; histories of closed
 * executions come from `closed` once read. */
async function sampleExecutions(processType: string, closed: Map<string, HistoryEvent[]>): Promise<Sample> {
  const [recent, running] = await Promise.all([
    api.list({ processType }, HISTORY_SAMPLE),
    api.list({ processType, status: "RUNNING" }, RUNNING_SAMPLE),
  ]);
  const histories = await mapLimited(recent.executions, CONCURRENCY, async (e: ExecutionSummary) => {
    const known = closed.get(e.processExecutionId);
    if (known) return known;
    const page = await api
      .history(e.processId, e.processExecutionId, HISTORY_EVENTS, undefined, ["PROCESS_STARTED", "EXECUTE_COMPLETED"])
      .catch(() => undefined);
    if (page && e.status !== "RUNNING") closed.set(e.processExecutionId, page.events);
    return page?.events;
  });
  const states = await mapLimited(running.executions, CONCURRENCY, (e: ExecutionSummary) =>
    api.states(e.processId, e.processExecutionId).catch(() => undefined),
  );
  const read = <T>(items: (T | undefined)[]) => items.filter((item): item is T => item !== undefined);
  return {
    histories: read(histories),
    historiesRead: read(histories).length,
    moreExecutions: Boolean(recent.nextPageToken),
    states: read(states),
    statesRead: read(states).length,
    moreRunning: Boolean(running.nextPageToken),
  };
}

/** `work` over `items`, at most `limit` at a time, results in order. */
async function mapLimited<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function revisionRow(r: DefinitionRevision, shown: boolean): HTMLTableRowElement {
  return h(
    "tr",
    { "data-testid": "revision-row", class: shown ? "key" : "" },
    h("td", {}, h("a", { href: definitionHref(r.processType, r.revision) }, String(r.revision))),
    h("td", {}, r.deployment.name),
    h("td", {}, r.deployment.version),
    h("td", { class: "mono small" }, r.deployment.workerUrl),
    h("td", {}, formatTime(r.registeredAtMs)),
    h("td", { class: "mono small" }, r.contentHash.slice(0, 12)),
  );
}

/** The definition's states, queues, RPCs and attributes. */
function definitionPanels(d: ProcessDefinition): HTMLElement[] {
  const starts = new Set(d.startStates ?? []);
  const states = h(
    "section",
    { class: "panel wide" },
    h("h2", {}, "States"),
    table(
      ["State", "waitUntil", "Start", "waitUntil retries", "execute retries", "Timeouts", "On failure", "Loads"],
      d.states.map((st) => {
        const c = st.config;
        const timeouts = [
          c?.waitUntilApiTimeoutSeconds ? `waitUntil ${c.waitUntilApiTimeoutSeconds} s` : "",
          c?.executeApiTimeoutSeconds ? `execute ${c.executeApiTimeoutSeconds} s` : "",
        ].filter(Boolean);
        return h(
          "tr",
          { "data-testid": "definition-state", "data-state-id": st.id },
          h("td", {}, st.id),
          h("td", { "data-testid": "state-wait-until" }, st.hasWaitUntil ? "yes" : "no"),
          h("td", {}, starts.size === 0 || starts.has(st.id) ? "yes" : "no"),
          h("td", { class: "small" }, st.hasWaitUntil ? formatRetryPolicy(c?.waitUntilApiRetryPolicy) : "—"),
          h("td", { class: "small", "data-testid": "state-execute-retry" }, formatRetryPolicy(c?.executeApiRetryPolicy)),
          h("td", { class: "small" }, timeouts.length > 0 ? timeouts.join(", ") : "default"),
          h("td", { class: "small" }, formatRecovery(c)),
          h(
            "td",
            { class: "small" },
            formatLoading(c?.globalAttributeLoading?.columns, c?.globalAttributeLoading?.lockType),
            c?.localAttributeLoading?.keys?.length ? h("div", {}, `local: ${formatLoading(c.localAttributeLoading.keys, c.localAttributeLoading.lockType)}`) : null,
          ),
        );
      }),
      "No states.",
      "definition-states",
    ),
  );
  const queues = h(
    "section",
    { class: "panel", "data-testid": "definition-queues" },
    h("h2", {}, "Local queues"),
    (d.localQueues ?? []).length > 0
      ? h("ul", { class: "plain" }, (d.localQueues ?? []).map((q) => h("li", { class: "mono" }, q)))
      : h("p", { class: "empty" }, "None: a publish to this type is refused."),
  );
  const rpcs = h(
    "section",
    { class: "panel" },
    h("h2", {}, "RPCs"),
    table(
      ["RPC", "Loads (lock)", "Local attributes (lock)"],
      (d.rpcs ?? []).map((r) =>
        h(
          "tr",
          { "data-testid": "definition-rpc", "data-rpc": r.name },
          h("td", { class: "mono" }, r.name),
          h("td", { class: "small" }, formatLoading(r.globalAttributeLoading?.columns, r.globalAttributeLoading?.lockType)),
          h("td", { class: "small" }, formatLoading(r.localAttributeLoading?.keys, r.localAttributeLoading?.lockType)),
        ),
      ),
      "No RPCs.",
      "definition-rpcs",
    ),
  );
  const global = d.globalAttributes;
  const attributes = h(
    "section",
    { class: "panel", "data-testid": "definition-table" },
    h("h2", {}, global ? `Table: ${global.tableName}` : "Business table"),
    global
      ? table(
          ["Column", "Type"],
          [
            h("tr", { class: "key" }, h("th", { scope: "row" }, global.primaryKeyColumn), h("td", {}, "primary key")),
            ...(global.columns ?? []).map((c) => h("tr", {}, h("th", { scope: "row" }, c.name), h("td", {}, c.type ?? "ANY"))),
          ],
          "",
        )
      : h("p", { class: "empty" }, "No global-attribute table."),
  );
  const locals = h(
    "section",
    { class: "panel" },
    h("h2", {}, "Local attributes"),
    table(
      ["Key", "Type"],
      (d.localAttributes ?? []).map((a) => h("tr", {}, h("th", { scope: "row" }, a.name), h("td", {}, a.type ?? "ANY"))),
      "None.",
    ),
  );
  return [states, h("div", { class: "side-by-side" }, queues, rpcs), h("div", { class: "side-by-side" }, attributes, locals)];
}

const MAX_LABEL = 24;

/** The graph as SVG: a box per state with its live counts, an arrow per transition. */
export function drawGraph(layout: Layout, counts: Map<string, StateCount>): SVGSVGElement {
  const marker = (id: string, cls: string) =>
    s(
      "marker",
      { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
      s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: cls }),
    );
  const arrows = layout.arrows.map((a) =>
    s(
      "g",
      { class: `arrow arrow-${a.kind}`, "data-testid": "graph-arrow", "data-from": a.from, "data-to": a.to, "data-count": a.count },
      s("title", {}, a.kind === "recovery" ? `${a.from} → ${a.to}: failure recovery` : `${a.from} → ${a.to}: ${a.count} times`),
      s("path", { d: a.path, "marker-end": `url(#${a.kind === "recovery" ? "head-recovery" : "head"})` }),
      a.kind === "seen" && s("text", { x: a.labelX, y: a.labelY - 4, "text-anchor": "middle", class: "arrow-label" }, `${a.count}`),
    ),
  );
  const boxes = layout.boxes.map((b) => drawBox(b, counts.get(b.id) ?? emptyCount()));
  return s(
    "svg",
    {
      class: "state-graph",
      "data-testid": "state-graph",
      width: layout.width,
      height: layout.height,
      viewBox: `0 0 ${layout.width} ${layout.height}`,
      role: "img",
      "aria-label": "State graph",
    },
    s("defs", {}, marker("head", "head"), marker("head-recovery", "head head-recovery")),
    arrows,
    boxes,
  );
}

function drawBox(b: Box, count: StateCount): SVGGElement {
  if (b.kind !== "state") {
    const r = b.width / 2;
    return s(
      "g",
      { class: `terminal terminal-${b.kind}`, "data-testid": `graph-${b.kind}` },
      s("title", {}, b.kind === "start" ? "start" : "end: the thread closed (complete, fail or dead end)"),
      s("circle", { cx: b.x + r, cy: b.y + r, r }),
      b.kind === "end" && s("circle", { cx: b.x + r, cy: b.y + r, r: r - 5, class: "inner" }),
    );
  }
  const label = b.id.length > MAX_LABEL ? `${b.id.slice(0, MAX_LABEL - 1)}…` : b.id;
  const live = count.running + count.waiting;
  const marks: SVGElement[] = [];
  let markX = b.x + 10;
  for (const [kind, value, text] of [
    ["parked", count.parked, "parked"],
    ["backing-off", count.backingOff, "backing off"],
  ] as const) {
    if (value === 0) continue;
    marks.push(s("text", { x: markX, y: b.y + 58, class: `mark mark-${kind}`, "data-testid": "graph-count", "data-kind": kind }, `${value} ${text}`));
    markX += 86;
  }
  return s(
    "g",
    {
      class: `node${b.declared ? "" : " undeclared"}${live > 0 ? " live" : ""}${count.parked > 0 ? " has-parked" : ""}`,
      "data-testid": "graph-state",
      "data-state-id": b.id,
    },
    s("title", {}, b.declared ? b.id : `${b.id} (not in this revision of the definition)`),
    s("rect", { x: b.x, y: b.y, width: b.width, height: b.height, rx: 6 }),
    s("text", { x: b.x + 10, y: b.y + 20, class: "node-label" }, label),
    live === 0
      ? s("text", { x: b.x + 10, y: b.y + 40, class: "count idle" }, "idle")
      : s(
          "text",
          { x: b.x + 10, y: b.y + 40, class: "count" },
          count.running > 0 && s("tspan", { "data-testid": "graph-count", "data-kind": "running" }, `${count.running} running`),
          count.running > 0 && count.waiting > 0 && " · ",
          count.waiting > 0 && s("tspan", { "data-testid": "graph-count", "data-kind": "waiting" }, `${count.waiting} waiting`),
        ),
    marks,
  );
}
