// src/api.ts
var SERVICE = "/api/v1/xdb/service/process-execution/";
var CONSOLE = "/api/v1/xdb/console/process-execution/";
var TOKEN_KEY = "xdb.console.token";
var ApiError = class extends Error {
  constructor(status, subType, message) {
    super(message);
    this.status = status;
    this.subType = subType;
  }
};
var askForToken;
var pendingPrompt;
function onTokenNeeded(prompt) {
  askForToken = prompt;
}
function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}
function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}
async function newToken(message) {
  if (!askForToken) throw new ApiError(401, "UNAUTHORIZED", message);
  pendingPrompt ??= askForToken(message).finally(() => {
    pendingPrompt = void 0;
  });
  sessionStorage.setItem(TOKEN_KEY, await pendingPrompt);
}
async function post(path, body) {
  for (; ; ) {
    const headers = { "content-type": "application/json" };
    const current = token();
    if (current) headers.authorization = `Bearer ${current}`;
    const response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    const text = await response.text();
    let json = void 0;
    try {
      json = text ? JSON.parse(text) : {};
    } catch {
      json = void 0;
    }
    const error = json ?? {};
    if (response.status === 401) {
      if (token() !== current) continue;
      await newToken(current ? "The token was not accepted. Enter another one." : "This XDB service requires a token.");
      continue;
    }
    if (response.status === 403 && error.subType === "FORBIDDEN") {
      throw new ApiError(403, "FORBIDDEN", `this token lacks the role this needs: ${error.message ?? ""}`);
    }
    if (!response.ok) {
      throw new ApiError(response.status, error.subType ?? "", error.message ?? (text || response.statusText));
    }
    return json;
  }
}
async function getText(path) {
  const current = token();
  const response = await fetch(path, current ? { headers: { authorization: `Bearer ${current}` } } : {});
  return response.ok ? response.text() : void 0;
}
var api = {
  list: (filter, pageSize, nextPageToken) => post(`${SERVICE}list`, { filter, pageSize, ...nextPageToken ? { nextPageToken } : {} }),
  describe: (processId, processExecutionId) => post(`${SERVICE}describe`, { processId, ...processExecutionId ? { processExecutionId } : {} }),
  history: (processId, processExecutionId, pageSize, afterEventId) => post(`${SERVICE}history`, {
    processId,
    processExecutionId,
    pageSize,
    ...afterEventId !== void 0 ? { afterEventId } : {}
  }),
  states: (processId, processExecutionId) => post(`${SERVICE}states`, { processId, processExecutionId }),
  attributes: (processId, processExecutionId) => post(`${CONSOLE}attributes`, { processId, processExecutionId }),
  stop: (processId, stopType, reason) => post(`${SERVICE}stop`, { processId, stopType, ...reason ? { reason } : {} }),
  retryNow: (request) => post(`${SERVICE}retry-now`, request),
  giveUp: (request) => post(`${SERVICE}give-up`, request),
  pause: (request) => post(`${SERVICE}pause`, request),
  resume: (request) => post(`${SERVICE}resume`, request),
  publish: (processId, queueName, payload, dedupId) => post(`${SERVICE}publish-to-local-queue`, {
    processId,
    messages: [{ queueName, ...payload ? { payload } : {}, ...dedupId ? { dedupId } : {} }]
  })
};

// src/dom.ts
function h(tag, attrs = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (typeof value === "function") {
      element.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (value === true) {
      element.setAttribute(key, "");
    } else if (value !== false && value !== null && value !== void 0) {
      element.setAttribute(key, String(value));
    }
  }
  append(element, children);
  return element;
}
function append(parent, children) {
  for (const child of children.flat()) {
    if (child === null || child === void 0 || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}
function replace(parent, ...children) {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, children);
}
function facts(rows) {
  return h("dl", { class: "facts" }, rows.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]).flat());
}
function table(head, rows, empty, testId) {
  if (rows.length === 0) return h("p", { class: "empty", "data-testid": testId }, empty);
  return h(
    "table",
    { "data-testid": testId },
    h("thead", {}, h("tr", {}, head.map((label) => h("th", {}, label)))),
    h("tbody", {}, rows)
  );
}

// src/metrics.ts
var LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
var LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
function parsePrometheus(text) {
  const samples = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const labels = {};
    for (const label of (match[2] ?? "").matchAll(LABEL)) {
      labels[label[1]] = label[2].replace(/\\n/g, "\n").replace(/\\(.)/g, "$1");
    }
    const value = match[3] === "+Inf" ? Infinity : match[3] === "-Inf" ? -Infinity : Number(match[3]);
    if (!Number.isNaN(value)) samples.push({ name: match[1], labels, value });
  }
  return samples;
}
function total(samples, name, where = () => true) {
  const matching = samples.filter((s) => s.name === name && where(s.labels));
  return matching.length === 0 ? void 0 : matching.reduce((sum, s) => sum + s.value, 0);
}
function rate(before, after, seconds) {
  if (before === void 0 || after === void 0 || seconds <= 0) return void 0;
  const increase = after >= before ? after - before : after;
  return increase / seconds;
}
function quantile(samples, name, q) {
  const buckets = /* @__PURE__ */ new Map();
  for (const s of samples) {
    if (s.name !== `${name}_bucket` || s.labels.le === void 0) continue;
    const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  const sorted = [...buckets.entries()].sort((a, b) => a[0] - b[0]);
  const count = sorted.at(-1)?.[1] ?? 0;
  if (count === 0) return void 0;
  const rank = q * count;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [le, cumulative] of sorted) {
    if (cumulative >= rank) {
      if (le === Infinity) return lowerBound;
      const inBucket = cumulative - lowerCount;
      return inBucket === 0 ? le : lowerBound + (le - lowerBound) * (rank - lowerCount) / inBucket;
    }
    lowerBound = le;
    lowerCount = cumulative;
  }
  return lowerBound;
}
function fixed(n, digits = 1, unit = "") {
  return n === void 0 ? "—" : `${n.toFixed(digits)}${unit}`;
}
var serverError = (labels) => (labels.status ?? "").startsWith("5");
function figures(now, before) {
  const seconds = before ? (now.atMs - before.atMs) / 1e3 : 0;
  const apiRate = (name, where) => before ? rate(total(before.api, name, where), total(now.api, name, where), seconds) : void 0;
  const list = [
    {
      label: "API requests/s",
      value: fixed(apiRate("xdb_api_requests_total")),
      source: "api",
      help: "xdb_api_requests_total, rate since the last refresh"
    },
    {
      label: "API server errors",
      value: fixed(total(now.api, "xdb_api_requests_total", serverError) ?? 0, 0),
      source: "api",
      help: "xdb_api_requests_total with a 5xx status, since the service started"
    }
  ];
  const a = now.async;
  if (!a) return list;
  const b = before?.async;
  const asyncRate = (name, where) => b ? rate(total(b, name, where), total(a, name, where), seconds) : void 0;
  const lateness = quantile(a, "xdb_async_timer_lateness_seconds", 0.99);
  const latenessCount = total(a, "xdb_async_timer_lateness_seconds_count");
  const latenessSum = total(a, "xdb_async_timer_lateness_seconds_sum");
  list.push(
    {
      label: "Tasks completed/s",
      value: fixed(asyncRate("xdb_async_tasks_completed_total", (l) => l.outcome === "ok")),
      source: "async",
      help: "xdb_async_tasks_completed_total{outcome=ok}, rate since the last refresh"
    },
    {
      label: "Worker call failures",
      value: fixed(total(a, "xdb_async_worker_call_errors_total") ?? 0, 0),
      source: "async",
      help: "xdb_async_worker_call_errors_total, since the service started"
    },
    {
      label: "Backlog (due tasks)",
      value: fixed(total(a, "xdb_async_queue_backlog"), 0),
      source: "async",
      help: "xdb_async_queue_backlog: due tasks no instance holds"
    },
    {
      label: "Timer lateness p99",
      value: lateness === void 0 ? "—" : `${(lateness * 1e3).toFixed(0)} ms`,
      source: "async",
      help: "xdb_async_timer_lateness_seconds: how long after its due time a timer was claimed"
    },
    {
      label: "Timer lateness mean",
      value: latenessCount && latenessSum !== void 0 ? `${(latenessSum / latenessCount * 1e3).toFixed(0)} ms` : "—",
      source: "async",
      help: "xdb_async_timer_lateness_seconds sum / count"
    },
    {
      label: "Parked tasks",
      value: fixed(total(a, "xdb_async_parked_tasks"), 0),
      source: "async",
      help: "xdb_async_parked_tasks: tasks waiting for an operator's retry-now"
    },
    {
      label: "Paused executions",
      value: fixed(total(a, "xdb_async_paused_executions"), 0),
      source: "async",
      help: "xdb_async_paused_executions"
    },
    {
      label: "States past attempt threshold",
      value: fixed(total(a, "xdb_async_states_past_attempts"), 0),
      source: "async",
      help: "xdb_async_states_past_attempts: state calls that keep failing"
    }
  );
  return list;
}

// src/views/dashboard.ts
var REFRESH_MS = 5e3;
function dashboardView(root) {
  const cards = h("div", { class: "cards", "data-testid": "dashboard" });
  const note = h("p", { class: "small" });
  let before;
  let stopped = false;
  async function load() {
    const [apiText, asyncText] = await Promise.all([
      getText("/metrics").catch(() => void 0),
      getText("/ui/metrics/async").catch(() => void 0)
    ]);
    if (stopped) return;
    if (apiText === void 0) {
      replace(cards, h("p", { class: "error" }, "The API service's /metrics did not answer."));
      return;
    }
    const now = {
      atMs: Date.now(),
      api: parsePrometheus(apiText),
      ...asyncText !== void 0 ? { async: parsePrometheus(asyncText) } : {}
    };
    replace(
      cards,
      figures(now, before).map(
        (f) => h(
          "div",
          { class: `card source-${f.source}`, title: f.help },
          h("div", { class: "value" }, f.value),
          h("div", { class: "label" }, f.label),
          h("div", { class: "small" }, f.source === "api" ? "API service" : "async service")
        )
      )
    );
    replace(
      note,
      asyncText === void 0 ? "Only the API service's numbers: its /ui/metrics/async does not reach an async service (set api.console_async_metrics_url to the async service's /metrics URL)." : "Rates are over the time since the last refresh; counts since each service started."
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

// src/views/dialog.ts
function ask(title, message, fields, confirmLabel, options = {}) {
  const cancellable = options.cancellable ?? true;
  return new Promise((resolve) => {
    const inputs = /* @__PURE__ */ new Map();
    const rows = fields.map((field) => {
      let input;
      if (field.kind === "textarea") {
        input = h("textarea", { name: field.name, rows: 4, placeholder: field.placeholder }, field.value ?? "");
      } else if (field.kind === "select") {
        input = h(
          "select",
          { name: field.name },
          (field.options ?? []).map((option) => h("option", { value: option, selected: option === field.value }, option))
        );
      } else {
        input = h("input", {
          name: field.name,
          type: field.kind ?? "text",
          value: field.value ?? "",
          placeholder: field.placeholder,
          autocomplete: "off"
        });
      }
      input.setAttribute("data-testid", `field-${field.name}`);
      inputs.set(field.name, input);
      return h("label", {}, h("span", {}, field.label), input);
    });
    const dialog = h("dialog", { class: "modal", "data-testid": "dialog" });
    const finish = (confirmed) => {
      const values = new Map([...inputs].map(([name, input]) => [name, input.value]));
      dialog.close();
      dialog.remove();
      resolve(confirmed ? (name) => values.get(name) ?? "" : null);
    };
    dialog.append(
      h("h2", {}, title),
      h("p", {}, message),
      ...rows,
      h(
        "div",
        { class: "buttons" },
        cancellable && h("button", { type: "button", "data-testid": "cancel", onclick: () => finish(false) }, "Cancel"),
        h(
          "button",
          {
            type: "button",
            class: options.danger ? "danger" : "primary",
            "data-testid": "confirm",
            onclick: () => finish(true)
          },
          confirmLabel
        )
      )
    );
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      if (cancellable) finish(false);
    });
    dialog.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !(event.target instanceof HTMLTextAreaElement)) {
        event.preventDefault();
        finish(true);
      }
    });
    document.body.append(dialog);
    dialog.showModal();
    (rows.length > 0 ? inputs.values().next().value : void 0)?.focus();
  });
}
async function askToken(message) {
  for (; ; ) {
    const values = await ask(
      "Token required",
      `${message} It is kept for this browser tab only.`,
      [{ name: "token", label: "Bearer token", kind: "password" }],
      "Use token",
      { cancellable: false }
    );
    const token2 = values?.("token").trim();
    if (token2) return token2;
  }
}
function notify(text, kind = "ok") {
  const area = document.getElementById("notices");
  if (!area) return;
  const notice = h(
    "div",
    { class: `notice notice-${kind}`, role: kind === "error" ? "alert" : "status", "data-testid": `notice-${kind}` },
    text,
    h("button", { type: "button", class: "link", onclick: () => notice.remove() }, "×")
  );
  area.append(notice);
  if (kind === "ok") setTimeout(() => notice.remove(), 5e3);
}

// src/format.ts
function pad(n, width = 2) {
  return String(n).padStart(width, "0");
}
function formatTime(ms) {
  if (ms === null || ms === void 0) return "—";
  const d = new Date(ms);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
}
function formatDuration(ms) {
  const abs = Math.abs(ms);
  if (abs < 1e3) return `${Math.round(abs)} ms`;
  const s = Math.floor(abs / 1e3);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const hours = Math.floor(m / 60);
  if (hours < 24) return `${hours}h ${m % 60}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}
function formatRelative(at, now) {
  const delta = at - now;
  if (Math.abs(delta) < 1e3) return "now";
  return delta > 0 ? `in ${formatDuration(delta)}` : `${formatDuration(delta)} ago`;
}
function statusClass(status) {
  return `status status-${status.toLowerCase().replace(/_/g, "-")}`;
}
function formatPayload(payload) {
  if (!payload) return "—";
  if (payload.encoding === "json") {
    try {
      return JSON.stringify(JSON.parse(payload.data), null, 2);
    } catch {
      return payload.data;
    }
  }
  return `${payload.encoding}: ${payload.data}`;
}
function formatValue(value) {
  if (value === null || value === void 0) return "NULL";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}
function parseUtcInput(value) {
  const trimmed = value.trim();
  if (!trimmed) return void 0;
  const ms = Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(trimmed) ? trimmed : `${trimmed}Z`);
  return Number.isNaN(ms) ? void 0 : ms;
}
function formatCount(count, more) {
  return more ? `${count}+` : String(count);
}
function summarizeDetails(details) {
  const parts = [];
  for (const [key, value] of Object.entries(details)) {
    if (value === null || value === void 0) continue;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    parts.push(`${key}: ${text.length > 120 ? `${text.slice(0, 117)}...` : text}`);
  }
  return parts.join(" · ");
}

// src/views/actions.ts
function actionButtons(execution, states, done) {
  const processId = execution.processId;
  const processExecutionId = execution.processExecutionId;
  const run = async (what, action) => {
    try {
      await action();
      notify(`${what}: done`);
    } catch (error) {
      const text = error instanceof ApiError && error.subType === "CONTROL_NOT_APPLICABLE" ? `${what}: not applicable now — ${error.message}` : `${what} failed: ${error instanceof Error ? error.message : String(error)}`;
      notify(text, "error");
    }
    done();
  };
  const reasonField = { name: "reason", label: "Reason (recorded in the history)", placeholder: "optional" };
  const control = (label, testId, message, call, danger = false) => button(label, testId, danger, async () => {
    const values = await ask(`${label}?`, message, [reasonField], label, { danger });
    if (!values) return;
    await run(
      label,
      () => call({ processId, processExecutionId, ...values("reason").trim() ? { reason: values("reason").trim() } : {} })
    );
  });
  const queues = [
    ...new Set(states.states.flatMap((s) => s.waitingFor?.localQueues.map((q) => q.queueName) ?? []))
  ];
  const paused = Boolean(states.paused);
  return h(
    "div",
    { class: "actions", "data-testid": "actions" },
    button("Terminate", "action-terminate", true, () => stop("TERMINATE")),
    button("Fail", "action-fail", true, () => stop("FAIL")),
    control("Retry now", "action-retry-now", "Calls waiting for their retry backoff run now; parked tasks are released.", api.retryNow),
    control("Give up", "action-give-up", "Failing states go to their failure recovery without their remaining attempts.", api.giveUp, true),
    paused ? control("Resume", "action-resume", "What fell due while paused runs now.", api.resume) : control("Pause", "action-pause", "Nothing of this execution is called until it resumes.", api.pause),
    button("Publish message", "action-publish", false, async () => {
      const values = await ask(
        "Publish to a local queue",
        `A message for ${processId}; a state waiting on the queue receives it at once.`,
        [
          { name: "queue", label: "Queue", value: queues[0] ?? "", placeholder: "queue name" },
          { name: "payload", label: "Payload (JSON, optional)", kind: "textarea", placeholder: '{"source": "console"}' },
          { name: "dedupId", label: "Dedup id (optional)" }
        ],
        "Publish"
      );
      if (!values) return;
      const payload = values("payload").trim();
      if (payload) {
        try {
          JSON.parse(payload);
        } catch {
          notify("The payload is not JSON.", "error");
          return;
        }
      }
      await run(
        "Publish",
        () => api.publish(
          processId,
          values("queue").trim(),
          payload ? { encoding: "json", data: payload } : void 0,
          values("dedupId").trim() || void 0
        )
      );
    })
  );
  async function stop(stopType) {
    const label = stopType === "TERMINATE" ? "Terminate" : "Fail";
    const values = await ask(
      `${label} ${processId}?`,
      stopType === "TERMINATE" ? "The execution ends as TERMINATED; nothing more of it runs." : "The execution ends as FAILED; nothing more of it runs.",
      [reasonField],
      label,
      { danger: true }
    );
    if (!values) return;
    await run(label, () => api.stop(processId, stopType, values("reason").trim() || void 0));
  }
}
function button(label, testId, danger, onClick) {
  return h("button", { type: "button", class: danger ? "danger" : "", "data-testid": testId, onclick: () => void onClick() }, label);
}

// src/views/execution.ts
var HISTORY_PAGE = 20;
var REFRESH_MS2 = 3e3;
function executionView(root, processId, processExecutionId) {
  const summary = h("section", { class: "summary" });
  const actions = h("div");
  const business = h("section", { class: "panel", "data-testid": "business-row" });
  const locals = h("section", { class: "panel", "data-testid": "local-attributes" });
  const statesSection = h("section", { class: "panel wide" });
  const historySection = h("section", { class: "panel wide" });
  const historyPages = [void 0];
  let autoRefresh = true;
  let timer;
  let stopped = false;
  let executionId = processExecutionId;
  async function load() {
    try {
      const described = await api.describe(processId, executionId);
      executionId = described.processExecutionId;
      const [states, attributes, history] = await Promise.all([
        api.states(processId, executionId),
        api.attributes(processId, executionId),
        api.history(processId, executionId, HISTORY_PAGE, historyPages.at(-1))
      ]);
      if (stopped) return;
      const now = Date.now();
      renderSummary(described, states);
      replace(actions, described.status === "RUNNING" ? actionButtons(described, states, () => void load()) : null);
      renderAttributes(attributes);
      replace(
        statesSection,
        h("h2", {}, "State executions"),
        table(
          ["State", "Status", "Call", "Next attempt", "Last failure", "Waiting for"],
          states.states.map((s) => stateRow(s, now)),
          "No state executions.",
          "states-table"
        )
      );
      renderHistory(history);
    } catch (error) {
      if (!stopped) replace(summary, h("p", { class: "error", role: "alert" }, `Could not load ${processId}: ${String(error)}`));
    }
  }
  function renderSummary(d, states) {
    const refresh = h("input", { type: "checkbox", checked: autoRefresh, "data-testid": "auto-refresh" });
    refresh.addEventListener("change", () => {
      autoRefresh = refresh.checked;
      schedule();
    });
    replace(
      summary,
      h(
        "h1",
        {},
        d.processId,
        " ",
        h("span", { class: statusClass(d.status), "data-testid": "execution-status" }, d.status),
        states.paused && h("span", { class: "badge badge-paused", "data-testid": "badge-paused" }, "paused"),
        (d.parkedTasks ?? 0) > 0 && h("span", { class: "badge badge-parked", "data-testid": "badge-parked" }, `${d.parkedTasks} parked`)
      ),
      facts([
        ["Process type", d.processType],
        ["Execution id", h("span", { class: "mono" }, d.processExecutionId)],
        ["Started (UTC)", formatTime(d.startTimestampMs)],
        ["Closed (UTC)", formatTime(d.closeTimestampMs)],
        ["Worker", h("span", { class: "mono" }, d.workerUrl)],
        ["Running states", String(d.runningStateExecutions)],
        ...states.paused ? [["Paused", `since ${formatTime(states.paused.sinceTimestampMs)}${states.paused.reason ? ` — ${states.paused.reason}` : ""}`]] : [],
        ...d.failure ? [["Failure", `${d.failure.reason}${d.failure.details ? `: ${d.failure.details}` : ""}`]] : [],
        ...d.result ? [["Result", h("pre", {}, formatPayload(d.result))]] : []
      ]),
      h("label", { class: "refresh" }, refresh, " auto-refresh")
    );
  }
  function renderAttributes(a) {
    const global = a.globalAttributes;
    replace(
      business,
      h("h2", {}, global ? `Business row: ${global.tableName}` : "Business row"),
      !global ? h("p", { class: "empty" }, "This process has no global-attribute table.") : !global.row ? h("p", { class: "empty" }, `No row in ${global.tableName} with ${global.primaryKey.column} = ${formatValue(global.primaryKey.value)}.`) : table(
        ["Column", "Value"],
        Object.entries(global.row).map(
          ([column, value]) => h(
            "tr",
            { class: column === global.primaryKey.column ? "key" : "" },
            h("th", { scope: "row" }, column),
            h("td", {}, h("pre", {}, formatValue(value)))
          )
        ),
        "The row has no columns.",
        "business-row-table"
      )
    );
    replace(
      locals,
      h("h2", {}, "Local attributes"),
      table(
        ["Key", "Value"],
        a.localAttributes.map((l) => h("tr", {}, h("th", { scope: "row" }, l.key), h("td", {}, h("pre", {}, formatPayload(l.value))))),
        "No local attributes."
      )
    );
  }
  function renderHistory(history) {
    const page = historyPages.length;
    replace(
      historySection,
      h("h2", {}, "History"),
      table(
        ["#", "Time (UTC)", "Event", "Details"],
        history.events.map(
          (e) => h(
            "tr",
            { "data-testid": "history-event", "data-event-type": e.eventType },
            h("td", {}, String(e.eventId)),
            h("td", {}, formatTime(e.eventTimestampMs)),
            h("td", {}, h("span", { class: `event event-${e.eventType.toLowerCase()}` }, e.eventType)),
            h("td", { class: "details" }, summarizeDetails(e.details))
          )
        ),
        "No events on this page.",
        "history-table"
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
            disabled: history.nextAfterEventId === null || history.nextAfterEventId === void 0,
            "data-testid": "history-next",
            onclick: () => historyPage(1, history.nextAfterEventId ?? void 0)
          },
          "Later →"
        )
      )
    );
  }
  function historyPage(direction, after) {
    if (direction === 1) historyPages.push(after);
    else if (historyPages.length > 1) historyPages.pop();
    void load();
  }
  function schedule() {
    if (timer) clearInterval(timer);
    timer = autoRefresh ? setInterval(() => void load(), REFRESH_MS2) : void 0;
  }
  replace(
    root,
    h("p", {}, h("a", { href: "#/executions" }, "← Executions")),
    summary,
    actions,
    h("div", { class: "side-by-side" }, business, locals),
    statesSection,
    historySection
  );
  void load().catch((error) => notify(String(error), "error"));
  schedule();
  return () => {
    stopped = true;
    if (timer) clearInterval(timer);
  };
}
function stateRow(s, now) {
  const call = s.pendingCall;
  const waiting = s.waitingFor;
  const waits = [];
  for (const timer of waiting?.timers ?? []) {
    const due = timer.dueTimestampMs;
    waits.push(
      h(
        "div",
        { "data-testid": "wait-timer" },
        `timer ${timer.delayInSeconds} s`,
        due ? ` due ${formatTime(due)} (${formatRelative(due, now)})` : "",
        timer.status ? ` — ${timer.status}` : ""
      )
    );
  }
  for (const queue of waiting?.localQueues ?? []) {
    waits.push(
      h(
        "div",
        { "data-testid": "wait-queue" },
        `queue ${queue.queueName}: ${queue.queued} queued of ${queue.count}`,
        queue.status ? ` — ${queue.status}` : ""
      )
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
      call ? [
        `${call.api} attempt `,
        h("strong", { "data-testid": "state-attempt" }, String(call.attempt)),
        " ",
        h("span", { class: `phase phase-${call.phase.toLowerCase()}`, "data-testid": "state-phase" }, call.phase),
        call.parkedKind === "NON_RETRYABLE_WORKER_ERROR" ? h("div", { class: "small" }, "worker error, not retried") : null,
        call.parkedReason ? h("div", { class: "small" }, call.parkedReason) : null
      ] : "—"
    ),
    h("td", {}, call ? [formatTime(call.dueTimestampMs), h("div", { class: "small" }, formatRelative(call.dueTimestampMs, now))] : "—"),
    h(
      "td",
      { "data-testid": "state-last-failure" },
      s.lastFailure ? [`${s.lastFailure.api} attempt ${s.lastFailure.attempt}: `, h("span", { class: "error" }, s.lastFailure.error), h("div", { class: "small" }, formatTime(s.lastFailure.timestampMs))] : "—"
    ),
    h("td", {}, waiting ? [h("div", { class: "small" }, waiting.waitingType), ...waits] : "—")
  );
}

// src/types.ts
var STATUSES = ["RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "TERMINATED"];

// src/views/routes.ts
function executionHref(processId, processExecutionId) {
  const id = encodeURIComponent(processId);
  return processExecutionId ? `#/execution/${id}/${encodeURIComponent(processExecutionId)}` : `#/execution/${id}`;
}
function parseRoute(hash) {
  const parts = hash.replace(/^#\/?/, "").split("/");
  try {
    if (parts[0] === "dashboard") return { page: "dashboard" };
    if (parts[0] === "execution" && parts[1]) {
      const processId = decodeURIComponent(parts[1]);
      return parts[2] ? { page: "execution", processId, processExecutionId: decodeURIComponent(parts[2]) } : { page: "execution", processId };
    }
  } catch {
  }
  return { page: "executions" };
}

// src/views/executions.ts
var PAGE_SIZE = 25;
var COUNT_PAGE = 1e3;
var REFRESH_MS3 = 5e3;
var state = {
  filter: {},
  /** Tokens of the pages before the current one; the current page's token last. */
  pages: [],
  autoRefresh: true
};
function executionsView(root) {
  const counts = h("div", { class: "counts", "data-testid": "status-counts" });
  const results = h("div", { class: "results" });
  const pager = h("div", { class: "pager" });
  let timer;
  let stopped = false;
  const field = (name, value, placeholder, type = "text") => h("input", { name, type, value: value ?? "", placeholder, "data-testid": `filter-${name}` });
  const status = h(
    "select",
    { name: "status", "data-testid": "filter-status" },
    h("option", { value: "" }, "any status"),
    STATUSES.map((s) => h("option", { value: s, selected: state.filter.status === s }, s))
  );
  const processType = field("processType", state.filter.processType, "process type");
  const processId = field("processId", state.filter.processId, "process id");
  const from = field("from", isoInput(state.filter.startTimeMinMs), "started from (UTC)", "datetime-local");
  const to = field("to", isoInput(state.filter.startTimeMaxMs), "started before (UTC)", "datetime-local");
  const refresh = h("input", { type: "checkbox", checked: state.autoRefresh, "data-testid": "auto-refresh" });
  const apply = () => {
    state.filter = {
      ...status.value ? { status: status.value } : {},
      ...processType.value.trim() ? { processType: processType.value.trim() } : {},
      ...processId.value.trim() ? { processId: processId.value.trim() } : {},
      ...optionalNumber("startTimeMinMs", parseUtcInput(from.value)),
      ...optionalNumber("startTimeMaxMs", parseUtcInput(to.value))
    };
    state.pages = [];
    void load();
  };
  const form = h(
    "div",
    { class: "filters" },
    status,
    processType,
    processId,
    h("label", {}, "from ", from),
    h("label", {}, "to ", to),
    h("button", { type: "button", class: "primary", "data-testid": "apply-filter", onclick: apply }, "Apply"),
    h("label", { class: "refresh" }, refresh, " auto-refresh")
  );
  form.addEventListener("keydown", (event) => {
    if (event.key === "Enter") apply();
  });
  refresh.addEventListener("change", () => {
    state.autoRefresh = refresh.checked;
    schedule();
  });
  async function load() {
    try {
      const token2 = state.pages.at(-1);
      const [page, countsByStatus] = await Promise.all([
        api.list(state.filter, PAGE_SIZE, token2),
        countStatuses(state.filter)
      ]);
      const parked = await parkedOf(page.executions);
      if (stopped) return;
      replace(counts, countsByStatus.map(([s, count, more]) => countChip(s, formatCount(count, more))));
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
            onclick: () => page_(1, page.nextPageToken ?? void 0)
          },
          "Older →"
        )
      );
    } catch (error) {
      if (!stopped) replace(results, h("p", { class: "error", role: "alert" }, `Could not list executions: ${String(error)}`));
    }
  }
  function page_(direction, token2) {
    if (direction === 1) state.pages.push(token2);
    else state.pages.pop();
    void load();
  }
  function countChip(s, text) {
    return h(
      "button",
      {
        type: "button",
        class: `chip ${statusClass(s)}${state.filter.status === s ? " selected" : ""}`,
        "data-testid": `count-${s}`,
        onclick: () => {
          status.value = state.filter.status === s ? "" : s;
          apply();
        }
      },
      `${s} `,
      h("strong", {}, text)
    );
  }
  function schedule() {
    if (timer) clearInterval(timer);
    timer = state.autoRefresh ? setInterval(() => void load(), REFRESH_MS3) : void 0;
  }
  replace(root, h("h1", {}, "Executions"), form, counts, results, pager);
  void load().catch((error) => notify(String(error), "error"));
  schedule();
  return () => {
    stopped = true;
    if (timer) clearInterval(timer);
  };
}
function optionalNumber(key, value) {
  return value === void 0 ? {} : { [key]: value };
}
function isoInput(ms) {
  return ms === void 0 || ms === null ? void 0 : new Date(ms).toISOString().slice(0, 16);
}
async function countStatuses(filter) {
  return Promise.all(
    STATUSES.map(async (s) => {
      const page = await api.list({ ...filter, status: s }, COUNT_PAGE);
      return [s, page.executions.length, Boolean(page.nextPageToken)];
    })
  );
}
async function parkedOf(executions) {
  const running = executions.filter((e) => e.status === "RUNNING");
  const described = await Promise.all(
    running.map((e) => api.describe(e.processId, e.processExecutionId).catch(() => void 0))
  );
  const parked = /* @__PURE__ */ new Map();
  for (const d of described) if (d?.parkedTasks) parked.set(d.processExecutionId, d.parkedTasks);
  return parked;
}
function executionsTable(executions, parked) {
  const rows = executions.map((e) => {
    const parkedTasks = parked.get(e.processExecutionId);
    return h(
      "tr",
      {
        class: e.paused || parkedTasks ? "attention" : "",
        "data-testid": "execution-row",
        "data-process-id": e.processId
      },
      h("td", {}, h("a", { href: executionHref(e.processId, e.processExecutionId) }, e.processId)),
      h("td", {}, e.processType),
      h(
        "td",
        {},
        h("span", { class: statusClass(e.status) }, e.status),
        e.paused && h("span", { class: "badge badge-paused", "data-testid": "badge-paused" }, "paused"),
        parkedTasks && h("span", { class: "badge badge-parked", "data-testid": "badge-parked" }, `${parkedTasks} parked`)
      ),
      h("td", {}, formatTime(e.startTimestampMs)),
      h("td", {}, formatTime(e.closeTimestampMs)),
      h("td", { class: "mono small" }, e.processExecutionId)
    );
  });
  return table(
    ["Process id", "Type", "Status", "Started (UTC)", "Closed (UTC)", "Execution id"],
    rows,
    "No executions match.",
    "executions-table"
  );
}

// src/main.ts
var leave;
function route() {
  const root = document.getElementById("app");
  if (!root) return;
  leave?.();
  const current = parseRoute(location.hash);
  for (const link of document.querySelectorAll("nav a[data-page]")) {
    link.classList.toggle("active", link.dataset.page === current.page);
  }
  if (current.page === "execution") leave = executionView(root, current.processId, current.processExecutionId);
  else if (current.page === "dashboard") leave = dashboardView(root);
  else leave = executionsView(root);
}
function start() {
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
      }
    },
    "Forget token"
  );
  forget.hidden = !token();
  window.addEventListener("storage", () => forget.hidden = !token());
  const header = document.getElementById("header");
  if (header) {
    replace(
      header,
      h("a", { class: "brand", href: "#/executions" }, "XDB"),
      h(
        "nav",
        {},
        h("a", { href: "#/executions", "data-page": "executions" }, "Executions"),
        h("a", { href: "#/dashboard", "data-page": "dashboard" }, "Dashboard")
      ),
      forget
    );
  }
  window.addEventListener("hashchange", () => {
    forget.hidden = !token();
    route();
  });
  route();
}
start();
