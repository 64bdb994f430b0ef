// src/api.ts
var SERVICE = "/api/v1/xdb/service/process-execution/";
var DEFINITIONS = "/api/v1/xdb/service/definitions/";
var DEPLOYMENTS = "/api/v1/xdb/service/deployments/";
var BATCH = "/api/v1/xdb/service/batch/";
var SCHEDULE = "/api/v1/xdb/service/schedule/";
var FLOW_LIMITS = "/api/v1/xdb/service/flow-limits/";
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
    let json2 = void 0;
    try {
      json2 = text ? JSON.parse(text) : {};
    } catch {
      json2 = void 0;
    }
    const error = json2 ?? {};
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
    return json2;
  }
}
async function getText(path) {
  const current = token();
  const response = await fetch(path, current ? { headers: { authorization: `Bearer ${current}` } } : {});
  return response.ok ? response.text() : void 0;
}
var api = {
  /** A page of executions; with `explain` (and `where`), the database's plan for it
   * (`plan`) instead, and no executions. */
  list: (filter, pageSize, nextPageToken, where, businessTable, explain = false) => post(`${SERVICE}list`, {
    filter,
    pageSize,
    ...nextPageToken ? { nextPageToken } : {},
    ...where ? { where } : {},
    ...businessTable ? { businessTable } : {},
    ...explain ? { explain } : {}
  }),
  count: (request) => post(`${SERVICE}count`, request),
  describe: (processId, processExecutionId) => post(`${SERVICE}describe`, { processId, ...processExecutionId ? { processExecutionId } : {} }),
  history: (processId, processExecutionId, pageSize, afterEventId, eventTypes) => post(`${SERVICE}history`, {
    processId,
    processExecutionId,
    pageSize,
    ...afterEventId !== void 0 ? { afterEventId } : {},
    ...eventTypes ? { eventTypes } : {}
  }),
  states: (processId, processExecutionId) => post(`${SERVICE}states`, { processId, processExecutionId }),
  attributes: (processId, processExecutionId) => post(`${CONSOLE}attributes`, { processId, processExecutionId }),
  stop: (processId, stopType, reason) => post(`${SERVICE}stop`, { processId, stopType, ...reason ? { reason } : {} }),
  retryNow: (request) => post(`${SERVICE}retry-now`, request),
  giveUp: (request) => post(`${SERVICE}give-up`, request),
  pause: (request) => post(`${SERVICE}pause`, request),
  resume: (request) => post(`${SERVICE}resume`, request),
  /** The control request with `reprioritize`, the change to make. */
  reprioritize: (request) => post(`${SERVICE}reprioritize`, request),
  reset: (request) => post(`${SERVICE}reset`, request),
  publish: (processId, queueName, payload, dedupId) => post(`${SERVICE}publish-to-local-queue`, {
    processId,
    messages: [{ queueName, ...payload ? { payload } : {}, ...dedupId ? { dedupId } : {} }]
  }),
  rpc: (processId, rpcName, input) => post(`${SERVICE}rpc`, { processId, rpcName, ...input ? { input } : {} }),
  batchStart: (request) => post(`${BATCH}start`, request),
  batchList: (request) => post(`${BATCH}list`, request),
  batchDescribe: (batchId) => post(`${BATCH}describe`, { batchId }),
  batchCancel: (batchId, reason) => post(`${BATCH}cancel`, { batchId, ...reason ? { reason } : {} }),
  scheduleCreate: (request) => post(`${SCHEDULE}create`, request),
  scheduleList: (request) => post(`${SCHEDULE}list`, request),
  scheduleDescribe: (scheduleId) => post(`${SCHEDULE}describe`, { scheduleId }),
  schedulePause: (scheduleId, reason) => post(`${SCHEDULE}pause`, { scheduleId, ...reason ? { reason } : {} }),
  scheduleResume: (scheduleId, reason) => post(`${SCHEDULE}resume`, { scheduleId, ...reason ? { reason } : {} }),
  scheduleTrigger: (scheduleId, overlapPolicy) => post(`${SCHEDULE}trigger`, { scheduleId, ...overlapPolicy ? { overlapPolicy } : {} }),
  scheduleDelete: (scheduleId, reason) => post(`${SCHEDULE}delete`, { scheduleId, ...reason ? { reason } : {} }),
  scheduleHistory: (request) => post(`${SCHEDULE}history`, request),
  flowLimitsSet: (request) => post(`${FLOW_LIMITS}set`, request),
  flowLimitsList: (processType) => post(`${FLOW_LIMITS}list`, processType ? { processType } : {}),
  flowLimitsHistory: (request) => post(`${FLOW_LIMITS}history`, request),
  definitions: () => post(`${DEFINITIONS}list`, {}),
  definition: (processType, revision) => post(`${DEFINITIONS}describe`, { processType, ...revision !== void 0 ? { revision } : {} }),
  deployments: () => post(`${DEPLOYMENTS}list`, {}),
  setCurrentDeployment: (deployment, force = false) => post(`${DEPLOYMENTS}set-current`, { deployment: { name: deployment.name, version: deployment.version }, force }),
  moveExecutions: (processType, to) => post(`${DEPLOYMENTS}move`, { processType, to: { name: to.name, version: to.version }, processIds: [] })
};
async function definitionOrNothing(processType) {
  try {
    return await api.definition(processType);
  } catch (error) {
    if (error instanceof ApiError && (error.status === 404 || error.status === 403 || error.status === 405)) return void 0;
    throw error;
  }
}

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
var SVG_NS = "http://www.w3.org/2000/svg";
function s(tag, attrs = {}, ...children) {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (typeof value === "function") element.addEventListener(key.slice(2).toLowerCase(), value);
    else if (value !== false && value !== null && value !== void 0) element.setAttribute(key, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

// src/filter.ts
var OPS = ["=", "!=", "<", "<=", ">", ">=", "IN", "IS NULL", "IS NOT NULL", "PREFIX", "SUFFIX", "CONTAINS"];
var FIELDS = [
  "status",
  "processType",
  "processId",
  "startTime",
  "closeTime",
  "paused",
  "currentStateId",
  "parked",
  "backingOff",
  "waitingOnTimer",
  "waitingOnQueue",
  "deploymentName",
  "deploymentVersion",
  "priority"
];
var BOOLEAN_FIELDS = ["paused", "parked", "backingOff", "waitingOnTimer"];
var PRIORITIES = ["1", "2", "3", "4", "5"];
var FIELD_OPS = {
  status: ["=", "!=", "IN"],
  processType: ["=", "!=", "IN", "PREFIX", "SUFFIX", "CONTAINS"],
  processId: ["=", "!=", "IN", "PREFIX", "SUFFIX", "CONTAINS"],
  startTime: ["=", "!=", "<", "<=", ">", ">="],
  closeTime: ["=", "!=", "<", "<=", ">", ">=", "IS NULL", "IS NOT NULL"],
  paused: ["=", "!="],
  currentStateId: ["=", "IN"],
  parked: ["=", "!="],
  backingOff: ["=", "!="],
  waitingOnTimer: ["=", "!="],
  waitingOnQueue: ["=", "IN"],
  deploymentName: ["=", "!=", "IN", "IS NULL", "IS NOT NULL"],
  deploymentVersion: ["=", "!=", "IN", "IS NULL", "IS NOT NULL"],
  priority: ["=", "!=", "<", "<=", ">", ">=", "IN"]
};
function opsOf(condition) {
  return condition.kind === "field" ? FIELD_OPS[condition.name] ?? OPS : OPS;
}
function typedValue(condition, text) {
  const t = text.trim();
  if (condition.kind === "field") {
    if (condition.name === "status") return t.toUpperCase();
    if (BOOLEAN_FIELDS.includes(condition.name)) return t.toLowerCase() === "true";
    if (condition.name === "startTime" || condition.name === "closeTime") {
      if (/^-?\d+$/.test(t)) return Number(t);
      const ms = Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(t) ? t : `${t}Z`);
      return Number.isNaN(ms) ? t : ms;
    }
    if (condition.name === "priority") return /^-?\d+$/.test(t) ? Number(t) : t;
    return t;
  }
  if (t === "true" || t === "false") return t === "true";
  if (/^-?\d+(\.\d+)?$/.test(t)) return Number(t);
  return t;
}
function conditionNode(c) {
  const subject = c.kind === "field" ? { field: c.name } : { column: c.name };
  if (c.op === "IS NULL" || c.op === "IS NOT NULL") return { ...subject, op: c.op };
  if (c.op === "IN") {
    const values = c.value.split(",").map((v) => v.trim()).filter((v) => v !== "").map((v) => typedValue(c, v));
    return { ...subject, op: c.op, values };
  }
  return { ...subject, op: c.op, value: typedValue(c, c.value) };
}
function groupsToTree(groups) {
  const ands = groups.filter((g) => g.length > 0).map((g) => ({ and: g.map(conditionNode) }));
  if (ands.length === 0) return void 0;
  return ands.length === 1 ? ands[0] : { or: ands };
}
function valueText(v) {
  if (typeof v === "string") return v;
  return JSON.stringify(v);
}
function treeToGroups(tree) {
  if (!tree) return [[]];
  const group = (node) => {
    if ("and" in node) {
      const out = [];
      for (const n of node.and) {
        const c2 = leaf(n);
        if (!c2) return void 0;
        out.push(c2);
      }
      return out;
    }
    const c = leaf(node);
    return c ? [c] : void 0;
  };
  const leaf = (node) => {
    if (!("op" in node)) return void 0;
    const kind = "field" in node ? "field" : "column";
    if ("column" in node && node.path && node.path.length > 0) return void 0;
    const name = "field" in node ? node.field : node.column;
    const value = node.op === "IN" ? (node.values ?? []).map(valueText).join(", ") : node.value == null ? "" : valueText(node.value);
    return { kind, name, op: node.op, value: kind === "field" && (name === "startTime" || name === "closeTime") && typeof node.value === "number" ? new Date(node.value).toISOString() : value };
  };
  if ("or" in tree) {
    const groups = [];
    for (const n of tree.or) {
      const g2 = group(n);
      if (!g2) return void 0;
      groups.push(g2);
    }
    return groups;
  }
  const g = group(tree);
  return g ? [g] : void 0;
}
function quote(v) {
  if (typeof v === "string") return `'${v.replace(/'/g, "''")}'`;
  return JSON.stringify(v);
}
function subjectText(node) {
  if ("field" in node) return `execution.${node.field}`;
  if ("column" in node) return [node.column, ...(node.path ?? []).map((k, i, all) => `${i === all.length - 1 ? "->>" : "->"}${quote(k)}`)].join("");
  return "";
}
function treeToText(tree) {
  if (!tree) return "";
  const inner = (node, parent) => {
    if ("and" in node) {
      if (node.and.length === 0) return "true";
      const text = node.and.map((n) => inner(n, "and")).join(" and ");
      return parent === "top" || parent === "and" || node.and.length === 1 ? text : `(${text})`;
    }
    if ("or" in node) {
      const text = node.or.map((n) => inner(n, "or")).join(" or ");
      return parent === "top" || parent === "or" || node.or.length === 1 ? text : `(${text})`;
    }
    if ("not" in node) return `not (${inner(node.not, "not")})`;
    const subject = subjectText(node);
    switch (node.op) {
      case "IS NULL":
      case "IS NOT NULL":
        return `${subject} ${node.op.toLowerCase()}`;
      case "IN":
        return `${subject} in (${(node.values ?? []).map(quote).join(", ")})`;
      case "PREFIX":
      case "SUFFIX":
      case "CONTAINS": {
        const text = typeof node.value === "string" ? node.value : JSON.stringify(node.value);
        const pattern = node.op === "PREFIX" ? `${text}%` : node.op === "SUFFIX" ? `%${text}` : `%${text}%`;
        return `${subject} like ${quote(pattern)}`;
      }
      default:
        return `${subject} ${node.op} ${quote(node.value)}`;
    }
  };
  return inner(tree, "top");
}
function likeOf(pattern) {
  const starts = pattern.startsWith("%");
  const ends = pattern.endsWith("%") && pattern.length > 1;
  const value = pattern.slice(starts ? 1 : 0, ends ? -1 : void 0);
  if (value === "" || /[%_]/.test(value)) return void 0;
  if (starts && ends) return { op: "CONTAINS", value };
  if (starts) return { op: "SUFFIX", value };
  if (ends) return { op: "PREFIX", value };
  return void 0;
}
function tokenize(text) {
  const tokens = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (/\s/.test(c)) {
      i++;
    } else if (c === "'") {
      let value = "";
      i++;
      for (; ; ) {
        if (i >= text.length) throw new Error("a quoted value is not closed");
        if (text[i] === "'") {
          if (text[i + 1] === "'") {
            value += "'";
            i += 2;
            continue;
          }
          i++;
          break;
        }
        value += text[i];
        i++;
      }
      tokens.push({ kind: "string", text: value });
    } else if (/[-\d]/.test(c) && /^-?\d/.test(text.slice(i))) {
      const m = /^-?\d+(\.\d+)?/.exec(text.slice(i));
      tokens.push({ kind: "number", text: m[0] });
      i += m[0].length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?/.exec(text.slice(i));
      tokens.push({ kind: "word", text: m[0] });
      i += m[0].length;
    } else {
      const m = /^(->>|->|<=|>=|!=|<>|=|<|>)/.exec(text.slice(i));
      if (m) {
        tokens.push({ kind: "op", text: m[0] === "<>" ? "!=" : m[0] });
        i += m[0].length;
      } else if ("(),".includes(c)) {
        tokens.push({ kind: "punct", text: c });
        i++;
      } else {
        throw new Error(`unexpected '${c}'`);
      }
    }
  }
  return tokens;
}
function textToTree(text) {
  const tokens = tokenize(text);
  if (tokens.length === 0) return void 0;
  let at = 0;
  const peek = () => tokens[at];
  const isWord = (w, t = peek()) => t?.kind === "word" && t.text.toLowerCase() === w;
  const expect = (text2) => {
    const t = tokens[at];
    if (!t || t.text !== text2) throw new Error(`expected '${text2}'${t ? ` before '${t.text}'` : " at the end"}`);
    at++;
  };
  const literal = () => {
    const t = tokens[at++];
    if (!t) throw new Error("a value is missing at the end");
    if (t.kind === "string") return t.text;
    if (t.kind === "number") return Number(t.text);
    if (isWord("true", t) || isWord("false", t)) return t.text.toLowerCase() === "true";
    throw new Error(`'${t.text}' is not a value (quoted text, a number, true or false)`);
  };
  const condition = () => {
    const t = tokens[at++];
    if (!t || t.kind !== "word") throw new Error(`expected a column or execution.<field>${t ? `, not '${t.text}'` : ""}`);
    let subject;
    if (t.text.includes(".")) {
      const [scope, name] = t.text.split(".");
      const field = FIELDS.find((f) => f.toLowerCase() === name.toLowerCase());
      if (scope.toLowerCase() !== "execution" || !field) throw new Error(`'${t.text}': no such field (execution.${FIELDS.join(", execution.")})`);
      subject = { field };
    } else {
      const path = [];
      while (peek()?.kind === "op" && (peek()?.text === "->" || peek()?.text === "->>")) {
        at++;
        const key = tokens[at++];
        if (!key || key.kind !== "string") throw new Error("a JSON path key is quoted text");
        path.push(key.text);
      }
      subject = path.length > 0 ? { column: t.text, path } : { column: t.text };
    }
    const upper = (v) => "field" in subject && subject.field === "status" && typeof v === "string" ? v.toUpperCase() : v;
    const negate = (n, yes) => yes ? { not: n } : n;
    const next = peek();
    if (isWord("is")) {
      at++;
      const not2 = isWord("not") ? (at++, true) : false;
      if (!isWord("null")) throw new Error("IS takes NULL or NOT NULL");
      at++;
      return { ...subject, op: not2 ? "IS NOT NULL" : "IS NULL" };
    }
    const not = isWord("not") ? (at++, true) : false;
    if (isWord("in")) {
      at++;
      expect("(");
      const values = [upper(literal())];
      while (peek()?.text === ",") {
        at++;
        values.push(upper(literal()));
      }
      expect(")");
      return negate({ ...subject, op: "IN", values }, not);
    }
    if (isWord("like")) {
      at++;
      const pattern = literal();
      const like = typeof pattern === "string" ? likeOf(pattern) : void 0;
      if (!like) {
        throw new Error(`LIKE ${quote(pattern)}: only 'abc%', '%abc' and '%abc%' are supported`);
      }
      return negate({ ...subject, op: like.op, value: like.value }, not);
    }
    if (not) throw new Error("NOT here takes IN or LIKE");
    if (next?.kind !== "op" || next.text.startsWith("-")) throw new Error(`expected an operator after '${t.text}'${next ? `, not '${next.text}'` : ""}`);
    at++;
    return { ...subject, op: next.text, value: upper(literal()) };
  };
  const unary = () => {
    if (isWord("not")) {
      at++;
      return { not: unary() };
    }
    if (peek()?.text === "(") {
      at++;
      const inner = or();
      expect(")");
      return inner;
    }
    return condition();
  };
  const and = () => {
    const items = [unary()];
    while (isWord("and")) {
      at++;
      items.push(unary());
    }
    return items.length === 1 ? items[0] : { and: items.flatMap((n) => "and" in n ? n.and : [n]) };
  };
  const or = () => {
    const items = [and()];
    while (isWord("or")) {
      at++;
      items.push(and());
    }
    return items.length === 1 ? items[0] : { or: items.flatMap((n) => "or" in n ? n.or : [n]) };
  };
  const tree = or();
  if (at < tokens.length) throw new Error(`unexpected '${tokens[at]?.text}' after the condition`);
  return tree;
}
function hasColumnCondition(tree) {
  if (!tree) return false;
  if ("and" in tree) return tree.and.some(hasColumnCondition);
  if ("or" in tree) return tree.or.some(hasColumnCondition);
  if ("not" in tree) return hasColumnCondition(tree.not);
  return "column" in tree;
}

// src/types.ts
var STATUSES = ["RUNNING", "COMPLETED", "FAILED", "TIMEOUT", "TERMINATED"];

// src/query.ts
function filterConditions(filter, withStatus) {
  const conditions = [];
  if (withStatus && filter.status) conditions.push({ field: "status", op: "=", value: filter.status });
  if (filter.processId) conditions.push({ field: "processId", op: "=", value: filter.processId });
  if (filter.startTimeMinMs != null) conditions.push({ field: "startTime", op: ">=", value: filter.startTimeMinMs });
  if (filter.startTimeMaxMs != null) conditions.push({ field: "startTime", op: "<", value: filter.startTimeMaxMs });
  return conditions;
}
function selectionRequest(selection, withStatus = true) {
  const conditions = filterConditions(selection.filter, withStatus);
  const where = textToTree(selection.where);
  if (where) conditions.push(where);
  return {
    ...selection.filter.processType ? { processType: selection.filter.processType } : {},
    ...conditions.length > 0 ? { where: conditions.length === 1 ? conditions[0] : { and: conditions } } : {},
    ...selection.table ? { businessTable: selection.table } : {}
  };
}
function statusCountRequest(filter, where = "", table2, explain = false) {
  return {
    ...selectionRequest({ filter, where, ...table2 ? { table: table2 } : {} }, false),
    groupBy: { field: "status" },
    ...explain ? { explain } : {}
  };
}
function explainUnavailable(what, text, applied) {
  const typed = text.trim();
  if (what === "list" && !typed) return "Explain needs a Where filter: without one the list reads XDB's own indexes only.";
  if (typed !== applied.trim()) return `Apply this filter first: Explain shows the plan of the ${what === "list" ? "list" : "counts"} shown.`;
  return void 0;
}
function selectionToQuery(selection) {
  const params = new URLSearchParams();
  const f = selection.filter;
  if (f.status) params.set("status", f.status);
  if (f.processType) params.set("type", f.processType);
  if (f.processId) params.set("id", f.processId);
  if (f.startTimeMinMs != null) params.set("from", String(f.startTimeMinMs));
  if (f.startTimeMaxMs != null) params.set("to", String(f.startTimeMaxMs));
  if (selection.where.trim()) params.set("where", selection.where.trim());
  if (selection.table) {
    params.set("table", selection.table.tableName);
    params.set("key", selection.table.primaryKeyColumn);
  }
  return params.toString();
}
function queryToSelection(query) {
  const params = new URLSearchParams(query.replace(/^\?/, ""));
  const filter = {};
  const status = params.get("status");
  if (status && STATUSES.includes(status)) filter.status = status;
  const type = params.get("type");
  if (type) filter.processType = type;
  const id = params.get("id");
  if (id) filter.processId = id;
  const from = params.get("from");
  if (from && /^\d+$/.test(from)) filter.startTimeMinMs = Number(from);
  const to = params.get("to");
  if (to && /^\d+$/.test(to)) filter.startTimeMaxMs = Number(to);
  const table2 = params.get("table");
  const key = params.get("key");
  return { filter, where: params.get("where") ?? "", ...table2 && key ? { table: { tableName: table2, primaryKeyColumn: key } } : {} };
}
function executionsHref(selection) {
  const query = selectionToQuery(selection);
  return query ? `#/executions?${query}` : "#/executions";
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
  const s2 = Math.floor(abs / 1e3);
  if (s2 < 60) return `${s2} s`;
  const m = Math.floor(s2 / 60);
  if (m < 60) return `${m}m ${s2 % 60}s`;
  const hours = Math.floor(m / 60);
  if (hours < 24) return `${hours}h ${m % 60}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}
function formatRelative(at, now) {
  const delta = at - now;
  if (Math.abs(delta) < 1e3) return "now";
  return delta > 0 ? `in ${formatDuration(delta)}` : `${formatDuration(delta)} ago`;
}
function shorten(text, max = 80) {
  const line = text.trim().split("\n", 1)[0] ?? "";
  const cut = line.length > max ? `${line.slice(0, max - 1).trimEnd()}…` : line;
  return cut.length < text.trim().length && !cut.endsWith("…") ? `${cut} …` : cut;
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
function formatRetryPolicy(policy) {
  const attempts = policy?.maximumAttempts ? `${policy.maximumAttempts} attempts` : "unlimited attempts";
  const initial = policy?.initialIntervalSeconds || 1;
  const coefficient = Math.max(1, policy?.backoffCoefficient ?? 2);
  const maximum = policy?.maximumIntervalSeconds ?? 100;
  const within = policy?.maximumAttemptsDurationSeconds ? `, within ${formatDuration(policy.maximumAttemptsDurationSeconds * 1e3)}` : "";
  const backoff = coefficient === 1 || initial >= maximum ? `every ${formatDuration(Math.min(initial, maximum) * 1e3)}` : `${formatDuration(initial * 1e3)} ×${coefficient} up to ${formatDuration(maximum * 1e3)}`;
  return `${attempts}, ${backoff}${within}${policy ? "" : " (default)"}`;
}
function formatRecovery(config) {
  const recovery = config?.stateFailureRecoveryOptions;
  if (recovery?.policy === "PROCEED_TO_CONFIGURED_STATE") {
    return recovery.stateFailureProceedStateId ? `proceed to ${recovery.stateFailureProceedStateId}` : "proceed (no state: fails)";
  }
  return "fail the process";
}
function formatLoading(names, lockType) {
  const what = names && names.length > 0 ? names.join(", ") : "nothing";
  return lockType && lockType !== "NO_LOCK" ? `${what} (${lockType})` : what;
}
function formatPriority(priority) {
  const p = priority ?? 3;
  const note = p === 1 ? "claimed first" : p === 3 ? "default" : p === 5 ? "claimed last" : void 0;
  return note ? `${p} (${note})` : String(p);
}
function formatFairness(key, weight) {
  if (key === null || key === void 0) return void 0;
  return `${key} (weight ${weight ?? 1})`;
}

// src/reprioritize.ts
var PRIORITIES2 = ["1", "2", "3", "4", "5"];
function fairnessText(order) {
  return formatFairness(order.fairnessKey, order.fairnessWeight) ?? "none";
}
function reprioritizeFields(current) {
  const key = current?.fairnessKey ?? void 0;
  const priority = current ? {
    name: "priority",
    label: "Priority (1 claimed first, 5 last)",
    kind: "select",
    value: String(current.priority ?? 3),
    options: PRIORITIES2,
    optionLabels: Object.fromEntries(PRIORITIES2.map((p) => [p, formatPriority(Number(p))]))
  } : {
    name: "priority",
    label: "Priority (1 claimed first, 5 last)",
    kind: "select",
    value: "",
    options: ["", ...PRIORITIES2],
    optionLabels: { "": "as it is", ...Object.fromEntries(PRIORITIES2.map((p) => [p, formatPriority(Number(p))])) }
  };
  return [
    priority,
    {
      name: "fairnessKey",
      label: current ? "Fairness key (at one priority, claims go key by key in turn)" : "Fairness key (empty: as it is)",
      value: key ?? "",
      placeholder: current ? "none" : "as it is"
    },
    {
      name: "fairnessWeight",
      label: current ? "Fairness weight (its key's calls a turn, 1 to 1,000)" : "Fairness weight (1 to 1,000; empty: as it is)",
      kind: "number",
      value: key !== void 0 ? String(current?.fairnessWeight ?? 1) : "",
      placeholder: current ? "1" : "as it is"
    },
    // Offered where there is a key to remove: an execution's own, or any of a batch's.
    ...current && key === void 0 ? [] : [
      {
        name: "removeKey",
        label: current ? `Remove its fairness key ${key ?? ""} (and weight)` : "Remove their fairness keys (and weights)",
        kind: "checkbox",
        disables: ["fairnessKey", "fairnessWeight"]
      }
    ]
  ];
}
function reprioritization(values, current) {
  const get = (name) => values(name).trim();
  const change = {};
  const priority = get("priority");
  if (priority) {
    if (!/^\d+$/.test(priority)) return { message: `The priority ${priority} is not a whole number from 1 (claimed first) to 5.`, field: "priority" };
    if (Number(priority) !== (current ? current.priority ?? 3 : void 0)) change.priority = Number(priority);
  }
  const had = current?.fairnessKey ?? void 0;
  if (get("removeKey") === "yes") {
    if (!current || had !== void 0) change.fairnessKey = "";
  } else {
    const key = get("fairnessKey");
    if (!key && had !== void 0) {
      return { message: `A fairness key is not empty: tick “Remove its fairness key” to remove ${had}.`, field: "fairnessKey" };
    }
    if (key && key !== had) change.fairnessKey = key;
    const weight = get("fairnessWeight");
    if (weight) {
      if (!/^\d+$/.test(weight)) return { message: `The fairness weight ${weight} is not a whole number from 1 to 1,000.`, field: "fairnessWeight" };
      const weighs = had !== void 0 ? current?.fairnessWeight ?? 1 : void 0;
      if (!current || Number(weight) !== weighs) change.fairnessWeight = Number(weight);
    }
  }
  if (change.priority === void 0 && change.fairnessKey === void 0 && change.fairnessWeight === void 0) {
    return {
      message: current ? "Nothing to change: pick another priority, fairness key or weight, or remove the key." : "Nothing to change: give a priority, a fairness key or weight, or remove the keys."
    };
  }
  return { change };
}
function reprioritizationText(change) {
  const parts = [];
  if (change.priority !== null && change.priority !== void 0) parts.push(`priority ${change.priority}`);
  const weight = change.fairnessWeight ?? void 0;
  if (change.fairnessKey === "") parts.push("no fairness key");
  else if (change.fairnessKey) parts.push(`fairness key ${change.fairnessKey}${weight !== void 0 ? ` (weight ${weight})` : ""}`);
  else if (weight !== void 0) parts.push(`fairness weight ${weight}`);
  return parts.join(" · ");
}
var FIELDS2 = [
  ["reprioritize.priority", "priority"],
  ["reprioritize.fairnessKey", "fairnessKey"],
  ["reprioritize.fairnessWeight", "fairnessWeight"]
];
function reprioritizeErrorField(error) {
  if (error.subType === "CONTROL_NOT_APPLICABLE") return "fairnessWeight";
  let best;
  for (const [path, field] of FIELDS2) {
    const at = error.message.indexOf(path);
    if (at >= 0 && (best === void 0 || at < best.at)) best = { at, field };
  }
  return best?.field;
}
function reorderingText(before, after) {
  const priority = (order) => order.priority ?? 3;
  const key = (order) => order.fairnessKey ?? void 0;
  const weight = (order) => order.fairnessWeight ?? 1;
  const changes = [];
  if (priority(before) !== priority(after)) changes.push(`priority ${priority(before)} → ${priority(after)}`);
  const [was, now] = [key(before), key(after)];
  if (was !== void 0 && was === now) {
    if (weight(before) !== weight(after)) changes.push(`fairness key ${now} (weight ${weight(before)} → ${weight(after)})`);
  } else if (was !== now) {
    changes.push(`fairness key ${fairnessText(before)} → ${fairnessText(after)}`);
  }
  if (changes.length > 0) return changes.join(" · ");
  return `unchanged: priority ${priority(after)}${now !== void 0 ? `, fairness key ${fairnessText(after)}` : ""}`;
}

// src/views/dialog.ts
var datalists = 0;
function ask(title, message, fields, confirmLabel, options = {}) {
  const cancellable = options.cancellable ?? true;
  return new Promise((resolve) => {
    const inputs = /* @__PURE__ */ new Map();
    const rows = fields.map((field) => {
      let suggestions;
      let input;
      if (field.kind === "textarea") {
        input = h("textarea", { name: field.name, rows: 4, placeholder: field.placeholder }, field.value ?? "");
      } else if (field.kind === "select") {
        input = h(
          "select",
          { name: field.name },
          (field.options ?? []).map(
            (option) => h("option", { value: option, selected: option === field.value }, field.optionLabels?.[option] ?? option)
          )
        );
      } else if (field.kind === "checkbox") {
        const box = h("input", { name: field.name, type: "checkbox", checked: field.value === "yes" });
        const turnOff = () => {
          for (const name of field.disables ?? []) {
            const other = inputs.get(name);
            if (other) other.disabled = box.checked;
          }
        };
        box.addEventListener("change", turnOff);
        queueMicrotask(turnOff);
        input = box;
      } else {
        const list2 = field.suggestions && field.suggestions.length > 0 ? `dialog-list-${++datalists}` : void 0;
        input = h("input", {
          name: field.name,
          type: field.kind ?? "text",
          value: field.value ?? "",
          placeholder: field.placeholder,
          autocomplete: "off",
          list: list2
        });
        if (list2) {
          suggestions = h(
            "datalist",
            { id: list2, "data-testid": `suggestions-${field.name}` },
            (field.suggestions ?? []).map((option) => h("option", { value: option }))
          );
        }
      }
      input.setAttribute("data-testid", `field-${field.name}`);
      inputs.set(field.name, input);
      return field.kind === "checkbox" ? h("label", { class: "check" }, input, h("span", {}, field.label)) : h("label", {}, h("span", {}, field.label), input, suggestions);
    });
    const dialog = h("dialog", { class: "modal", "data-testid": "dialog" });
    const problem = h("p", { class: "error", role: "alert", "data-testid": "dialog-error", hidden: true });
    const confirm = h(
      "button",
      { type: "button", class: options.danger ? "danger" : "primary", "data-testid": "confirm", onclick: () => void finish(true) },
      confirmLabel
    );
    const show = (wrong) => {
      const { message: text, field } = typeof wrong === "string" ? { message: wrong, field: void 0 } : wrong ?? { message: "" };
      problem.textContent = text;
      problem.hidden = !text;
      for (const [name, input] of inputs) input.toggleAttribute("aria-invalid", Boolean(text) && name === field);
      if (text && field) inputs.get(field)?.focus();
      return Boolean(text);
    };
    let sending = false;
    const finish = async (confirmed) => {
      if (sending) return;
      const values = new Map(
        [...inputs].map(([name, input]) => [
          name,
          input.disabled ? "" : input instanceof HTMLInputElement && input.type === "checkbox" ? input.checked ? "yes" : "" : input.value
        ])
      );
      const read = (name) => values.get(name) ?? "";
      if (confirmed && show(options.validate?.(read))) return;
      if (confirmed && options.submit) {
        sending = true;
        confirm.disabled = true;
        try {
          if (show(await options.submit(read))) return;
        } catch (error) {
          show(error instanceof Error ? error.message : String(error));
          return;
        } finally {
          sending = false;
          confirm.disabled = false;
        }
      }
      dialog.close();
      dialog.remove();
      resolve(confirmed ? read : null);
    };
    dialog.append(
      h("h2", {}, title),
      h("p", {}, message),
      ...rows,
      problem,
      h(
        "div",
        { class: "buttons" },
        cancellable && h("button", { type: "button", "data-testid": "cancel", onclick: () => void finish(false) }, "Cancel"),
        confirm
      )
    );
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      if (cancellable) void finish(false);
    });
    dialog.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !(event.target instanceof HTMLTextAreaElement)) {
        event.preventDefault();
        void finish(true);
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

// src/views/routes.ts
function executionHref(processId, processExecutionId) {
  const id = encodeURIComponent(processId);
  return processExecutionId ? `#/execution/${id}/${encodeURIComponent(processExecutionId)}` : `#/execution/${id}`;
}
function definitionHref(processType, revision) {
  const type = encodeURIComponent(processType);
  return revision === void 0 ? `#/definition/${type}` : `#/definition/${type}/${revision}`;
}
function batchHref(batchId) {
  return `#/batch/${encodeURIComponent(batchId)}`;
}
function scheduleHref(scheduleId) {
  return `#/schedule/${encodeURIComponent(scheduleId)}`;
}
function parseRoute(hash) {
  const path = hash.replace(/^#\/?/, "");
  const queryAt = path.indexOf("?");
  const query = queryAt >= 0 ? path.slice(queryAt + 1) : "";
  const parts = (queryAt >= 0 ? path.slice(0, queryAt) : path).split("/");
  try {
    if (parts[0] === "batches") return { page: "batches" };
    if (parts[0] === "batch" && parts[1]) return { page: "batch", batchId: decodeURIComponent(parts[1]) };
    if (parts[0] === "schedules") return { page: "schedules" };
    if (parts[0] === "schedule" && parts[1]) return { page: "schedule", scheduleId: decodeURIComponent(parts[1]) };
    if (parts[0] === "flow-limits") return { page: "flow-limits" };
    if (parts[0] === "dashboard") return { page: "dashboard" };
    if (parts[0] === "definitions") return { page: "definitions" };
    if (parts[0] === "deployments") return { page: "deployments" };
    if (parts[0] === "definition" && parts[1]) {
      const processType = decodeURIComponent(parts[1]);
      const revision = parts[2] && /^\d+$/.test(parts[2]) ? Number(parts[2]) : void 0;
      return revision === void 0 ? { page: "definition", processType } : { page: "definition", processType, revision };
    }
    if (parts[0] === "execution" && parts[1]) {
      const processId = decodeURIComponent(parts[1]);
      return parts[2] ? { page: "execution", processId, processExecutionId: decodeURIComponent(parts[2]) } : { page: "execution", processId };
    }
  } catch {
  }
  return { page: "executions", query };
}

// src/views/batch.ts
var OPERATIONS = [
  "PAUSE",
  "RESUME",
  "RETRY_NOW",
  "GIVE_UP",
  "TERMINATE",
  "FAIL",
  "PUBLISH_TO_LOCAL_QUEUE",
  "RESET",
  "MOVE_TO_DEPLOYMENT",
  "REPRIORITIZE"
];
var POLL_MS = 1e3;
var RATE = { default: 100, min: 1, max: 1e4 };
function rateError(text) {
  const t = text.trim();
  if (t === "") return `The rate is missing: a whole number of executions per second, ${RATE.min} to ${RATE.max}.`;
  if (!/^\d+$/.test(t) || Number(t) < RATE.min || Number(t) > RATE.max) {
    return `The rate ${t} is not one the service takes: a whole number of executions per second, ${RATE.min} to ${RATE.max}.`;
  }
  return void 0;
}
function argumentFields(operation, deployments) {
  const common = [
    { name: "rate", label: `Rate (executions per second, ${RATE.min} to ${RATE.max})`, kind: "number", value: String(RATE.default) },
    { name: "reason", label: "Reason (kept in the batch and the histories)", placeholder: "optional" }
  ];
  switch (operation) {
    case "PUBLISH_TO_LOCAL_QUEUE":
      return [
        { name: "queue", label: "Queue", placeholder: "queue name" },
        { name: "payload", label: "Payload (JSON, optional)", kind: "textarea", placeholder: '{"source": "console"}' },
        ...common
      ];
    case "RESET":
      return [
        { name: "state", label: "State to reset to", placeholder: "state id" },
        { name: "input", label: "State input (JSON, optional)", kind: "textarea" },
        ...common
      ];
    case "MOVE_TO_DEPLOYMENT":
      return [{ name: "deployment", label: "Deployment (name@version)", suggestions: deployments, value: deployments[0] ?? "" }, ...common];
    case "REPRIORITIZE":
      return [...reprioritizeFields(), ...common];
    default:
      return common;
  }
}
function argumentsProblem(operation, values) {
  const rate2 = rateError(values("rate"));
  if (rate2) return { message: rate2, field: "rate" };
  const notJson = (name, what) => {
    try {
      json(values(name));
      return void 0;
    } catch (error) {
      return { message: `${what} is not JSON: ${error instanceof Error ? error.message : String(error)}`, field: name };
    }
  };
  switch (operation) {
    case "PUBLISH_TO_LOCAL_QUEUE":
      return values("queue").trim() ? notJson("payload", "The payload") : { message: "The queue is missing.", field: "queue" };
    case "RESET":
      return values("state").trim() ? notJson("input", "The state input") : { message: "The state to reset to is missing.", field: "state" };
    case "MOVE_TO_DEPLOYMENT":
      return /^[^@]+@[^@]+$/.test(values("deployment").trim()) ? void 0 : { message: "The deployment is name@version.", field: "deployment" };
    case "REPRIORITIZE": {
      const checked = reprioritization(values);
      return "message" in checked ? checked : void 0;
    }
    default:
      return void 0;
  }
}
function startErrorField(message) {
  return /\bratePerSecond\b/.test(message) ? "rate" : reprioritizeErrorField({ message });
}
function json(text) {
  const data = text.trim();
  if (!data) return void 0;
  JSON.parse(data);
  return data;
}
function batchRequest(selection, operation, values, requestId) {
  const reason = values("reason").trim();
  const rate2 = values("rate").trim();
  const request = {
    ...selectionRequest(selection),
    operation,
    requestId,
    identity: "console",
    ratePerSecond: rate2 ? Number(rate2) : RATE.default,
    ...reason ? { reason } : {}
  };
  if (operation === "PUBLISH_TO_LOCAL_QUEUE") {
    const data = json(values("payload"));
    request.messages = [{ queueName: values("queue").trim(), ...data ? { payload: { encoding: "json", data } } : {} }];
  } else if (operation === "RESET") {
    const data = json(values("input"));
    request.reset = { stateId: values("state").trim(), ...data ? { stateInput: { encoding: "json", data } } : {} };
  } else if (operation === "MOVE_TO_DEPLOYMENT") {
    const [name, version] = values("deployment").trim().split("@");
    request.moveTo = { name: name ?? "", version: version ?? "" };
  } else if (operation === "REPRIORITIZE") {
    const checked = reprioritization(values);
    if ("message" in checked) throw new Error(checked.message);
    request.reprioritize = checked.change;
  }
  return request;
}
async function startBatch(selection) {
  let base;
  try {
    base = selectionRequest(selection);
  } catch (error) {
    notify(`The filter text: ${error instanceof Error ? error.message : String(error)}`, "error");
    return;
  }
  const chosen = await ask(
    "Act on every matching execution",
    "Choose what the batch does to each execution the list's filter selects.",
    [{ name: "operation", label: "Operation", kind: "select", options: OPERATIONS, value: "PAUSE" }],
    "Next"
  );
  if (!chosen) return;
  const operation = chosen("operation");
  let count;
  let deployments = [];
  try {
    count = (await api.count(base)).count;
    if (operation === "MOVE_TO_DEPLOYMENT") {
      deployments = (await api.deployments().catch(() => ({ deployments: [] }))).deployments.map((d) => `${d.deployment.name}@${d.deployment.version}`);
    }
  } catch (error) {
    notify(`Could not count the selection: ${error instanceof Error ? error.message : String(error)}`, "error");
    return;
  }
  const requestId = crypto.randomUUID();
  let started;
  const values = await ask(
    `${operation} ${count} execution${count === 1 ? "" : "s"}?`,
    `The filter selects ${count} execution${count === 1 ? "" : "s"} now; the batch handles those still matching when it reaches them, and skips those the operation does not apply to` + (operation === "REPRIORITIZE" ? " (a weight for one without a fairness key, unless the batch gives it one)." : "."),
    argumentFields(operation, deployments),
    `Start ${operation}`,
    {
      // Red for what cannot be taken back; another reprioritization undoes one.
      danger: operation !== "RESUME" && operation !== "RETRY_NOW" && operation !== "REPRIORITIZE",
      validate: (v) => argumentsProblem(operation, v),
      // A refused start wrote nothing (its requestId included): corrected, it is sent again.
      submit: async (v) => {
        try {
          started = await api.batchStart(batchRequest(selection, operation, v, requestId));
          return void 0;
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          return { message: `The batch did not start: ${message}`, field: startErrorField(message) };
        }
      }
    }
  );
  if (!values || !started) return;
  location.hash = batchHref(started.batchId);
}
function progress(batch) {
  return h(
    "span",
    { class: "batch-progress" },
    h("progress", { max: Math.max(batch.expected, batch.matched, 1), value: batch.matched, "data-testid": "batch-bar" }),
    ` ${batch.matched} of ${batch.expected}`
  );
}
function batchView(root, batchId) {
  const body = h("div", { "data-testid": "batch" });
  let stopped = false;
  let timer;
  async function load() {
    let described;
    try {
      described = await api.batchDescribe(batchId);
    } catch (error) {
      if (!stopped) replace(body, h("p", { class: "error", role: "alert" }, `Could not describe batch ${batchId}: ${String(error)}`));
      return;
    }
    if (stopped) return;
    render(described);
    if (described.batch.status === "RUNNING") timer = setTimeout(() => void load(), POLL_MS);
  }
  function render({ batch, notDone }) {
    const request = batch.request;
    replace(
      body,
      h("h1", {}, `Batch ${batch.operation} `, h("span", { class: statusClass(batch.status), "data-testid": "batch-status" }, batch.status)),
      progress(batch),
      facts([
        ["Batch id", h("span", { class: "mono" }, batch.batchId)],
        ["Done", h("strong", { "data-testid": "batch-done" }, String(batch.done))],
        ["Skipped", h("strong", { "data-testid": "batch-skipped" }, String(batch.skipped))],
        ["Failed", h("strong", { "data-testid": "batch-failed" }, String(batch.failed))],
        ["Expected", h("span", { "data-testid": "batch-expected" }, String(batch.expected))],
        ["Rate", h("span", { "data-testid": "batch-rate" }, `${batch.ratePerSecond} per second at most`)],
        ...request.reprioritize ? [["Change", h("span", { "data-testid": "batch-reprioritize" }, reprioritizationText(request.reprioritize))]] : [],
        ["Process type", request.processType ?? "any"],
        ["Where", h("code", { "data-testid": "batch-where" }, request.where ? treeToText(request.where) : "every execution")],
        ["Created (UTC)", formatTime(batch.createdTimestampMs)],
        ["Closed (UTC)", formatTime(batch.closedTimestampMs)],
        ...request.reason ? [["Reason", request.reason]] : [],
        ...batch.error ? [["Error", h("span", { class: "error" }, batch.error)]] : []
      ]),
      batch.status === "RUNNING" && h("button", { type: "button", class: "danger", "data-testid": "batch-cancel", onclick: () => void cancel() }, "Cancel batch"),
      h("h2", {}, "Skipped or failed"),
      table(
        ["Execution id", "Outcome", "Reason"],
        (notDone ?? []).map(
          (item) => h(
            "tr",
            { "data-testid": "batch-not-done" },
            h("td", { class: "mono small" }, item.processExecutionId),
            h("td", {}, item.outcome),
            h("td", {}, item.reason ?? "")
          )
        ),
        "None so far."
      )
    );
  }
  async function cancel() {
    const values = await ask("Cancel the batch?", "It stops after the execution in hand; what it did stays done.", [{ name: "reason", label: "Reason", placeholder: "optional" }], "Cancel batch", { danger: true });
    if (!values) return;
    try {
      await api.batchCancel(batchId, values("reason").trim() || void 0);
    } catch (error) {
      notify(`Could not cancel: ${error instanceof Error ? error.message : String(error)}`, "error");
    }
    if (timer) clearTimeout(timer);
    void load();
  }
  replace(root, h("p", {}, h("a", { href: "#/batches" }, "← Batches")), body);
  void load();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}

// src/views/batches.ts
var REFRESH_MS = 3e3;
function batchesView(root) {
  const results = h("div");
  let stopped = false;
  async function load() {
    try {
      const listed = await api.batchList({ pageSize: 100 });
      if (stopped) return;
      replace(
        results,
        table(
          ["Batch", "Status", "Operation", "Progress", "Done / skipped / failed", "Rate (per second)", "Created (UTC)"],
          listed.batches.map(
            (b) => h(
              "tr",
              { "data-testid": "batch-row", "data-batch-id": b.batchId },
              h("td", {}, h("a", { href: batchHref(b.batchId), class: "mono small" }, b.batchId)),
              h("td", {}, h("span", { class: statusClass(b.status) }, b.status)),
              h("td", {}, b.operation),
              h("td", {}, progress(b)),
              h("td", {}, `${b.done} / ${b.skipped} / ${b.failed}`),
              h("td", { "data-testid": "batch-row-rate" }, String(b.ratePerSecond)),
              h("td", {}, formatTime(b.createdTimestampMs))
            )
          ),
          "No batches yet: start one from the executions list (“Act on all matching…”).",
          "batches-table"
        )
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
  const matching = samples.filter((s2) => s2.name === name && where(s2.labels));
  return matching.length === 0 ? void 0 : matching.reduce((sum, s2) => sum + s2.value, 0);
}
function rate(before, after, seconds) {
  if (before === void 0 || after === void 0 || seconds <= 0) return void 0;
  const increase = after >= before ? after - before : after;
  return increase / seconds;
}
function quantile(samples, name, q) {
  const buckets = /* @__PURE__ */ new Map();
  for (const s2 of samples) {
    if (s2.name !== `${name}_bucket` || s2.labels.le === void 0) continue;
    const le = s2.labels.le === "+Inf" ? Infinity : Number(s2.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s2.value);
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
  const list2 = [
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
  if (!a) return list2;
  const b = before?.async;
  const asyncRate = (name, where) => b ? rate(total(b, name, where), total(a, name, where), seconds) : void 0;
  const lateness = quantile(a, "xdb_async_timer_lateness_seconds", 0.99);
  const latenessCount = total(a, "xdb_async_timer_lateness_seconds_count");
  const latenessSum = total(a, "xdb_async_timer_lateness_seconds_sum");
  list2.push(
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
      label: "Pending executions",
      value: fixed(total(a, "xdb_async_pending_executions"), 0),
      source: "async",
      help: "xdb_async_pending_executions: starts waiting for a running slot of their key (maxRunningExecutions)"
    },
    {
      label: "States past attempt threshold",
      value: fixed(total(a, "xdb_async_states_past_attempts"), 0),
      source: "async",
      help: "xdb_async_states_past_attempts: state calls that keep failing"
    }
  );
  return list2;
}

// src/series.ts
var WINDOW_MS = 60 * 60 * 1e3;
var SERIES = [
  { key: "throughput", label: "Throughput", unit: "/s", help: "xdb_async_tasks_completed_total{outcome=ok} per second (API requests per second without the async service's metrics)" },
  { key: "failures", label: "Failures", unit: "/s", help: "xdb_async_worker_call_errors_total and 5xx answers of xdb_api_requests_total, per second" },
  { key: "backlog", label: "Backlog", unit: " tasks", help: "xdb_async_queue_backlog: due tasks no instance holds" },
  { key: "lateness", label: "Timer lateness", unit: " ms", help: "mean of xdb_async_timer_lateness_seconds over each interval" }
];
var serverError2 = (labels) => (labels.status ?? "").startsWith("5");
function pointFrom(now, before) {
  const point = { atMs: now.atMs };
  const seconds = before ? (now.atMs - before.atMs) / 1e3 : 0;
  const a = now.async;
  const b = before?.async;
  const change = (x, y) => x === void 0 || y === void 0 ? void 0 : y >= x ? y - x : y;
  if (before) {
    const apiRate = rate(total(before.api, "xdb_api_requests_total"), total(now.api, "xdb_api_requests_total"), seconds);
    const apiErrors = rate(total(before.api, "xdb_api_requests_total", serverError2) ?? 0, total(now.api, "xdb_api_requests_total", serverError2) ?? 0, seconds);
    const ok = (l) => l.outcome === "ok";
    const tasks = a && b ? rate(total(b, "xdb_async_tasks_completed_total", ok) ?? 0, total(a, "xdb_async_tasks_completed_total", ok) ?? 0, seconds) : void 0;
    const workerErrors = a && b ? rate(total(b, "xdb_async_worker_call_errors_total") ?? 0, total(a, "xdb_async_worker_call_errors_total") ?? 0, seconds) : 0;
    const throughput = tasks ?? apiRate;
    if (throughput !== void 0) point.throughput = throughput;
    if (apiErrors !== void 0 && workerErrors !== void 0) point.failures = apiErrors + workerErrors;
    if (a && b) {
      const count = change(total(b, "xdb_async_timer_lateness_seconds_count"), total(a, "xdb_async_timer_lateness_seconds_count"));
      const sum = change(total(b, "xdb_async_timer_lateness_seconds_sum"), total(a, "xdb_async_timer_lateness_seconds_sum"));
      point.lateness = count && sum !== void 0 ? sum / count * 1e3 : 0;
    }
  }
  const backlog = a ? total(a, "xdb_async_queue_backlog") : void 0;
  if (backlog !== void 0) point.backlog = backlog;
  return point;
}
function addPoint(points, point, windowMs = WINDOW_MS) {
  return [...points.filter((p) => p.atMs > point.atMs - windowMs && p.atMs < point.atMs), point];
}
function readPoints(text) {
  if (!text) return [];
  try {
    const parsed = JSON.parse(text);
    if (!Array.isArray(parsed)) return [];
    return parsed.filter((p) => typeof p === "object" && p !== null && typeof p.atMs === "number");
  } catch {
    return [];
  }
}
function niceMax(value) {
  if (!(value > 0) || !Number.isFinite(value)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}
function span(points, endMs, windowMs = WINDOW_MS) {
  const oldest = points.reduce((min, p) => Math.min(min, p.atMs), endMs);
  return Math.max(Math.min(windowMs, endMs - oldest), 1e3);
}
function plot(points, series, endMs, width, height, spanMs = WINDOW_MS, pad2 = 0) {
  const start2 = endMs - spanMs;
  const values = points.filter((p) => p.atMs >= start2 && p.atMs <= endMs && typeof p[series] === "number" && Number.isFinite(p[series]));
  const max = niceMax(Math.max(0, ...values.map((p) => p[series])));
  const round = (n) => Math.round(n * 10) / 10;
  const inner = height - 2 * pad2;
  return {
    max,
    xy: values.map((p) => [round((p.atMs - start2) / spanMs * width), round(pad2 + inner - p[series] / max * inner)])
  };
}
function pathData(xy) {
  return xy.map(([x, y], i) => `${i === 0 ? "M" : "L"}${x} ${y}`).join(" ");
}

// src/views/charts.ts
var WIDTH = 320;
var HEIGHT = 90;
function figure(n) {
  return n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2);
}
function lineChart(points, series, label, unit, help, endMs) {
  const shown = span(points, endMs);
  const drawn = plot(points, series, endMs, WIDTH, HEIGHT, shown, 4);
  const latest = [...points].reverse().find((p) => typeof p[series] === "number")?.[series];
  return h(
    "div",
    { class: "card chart", title: help, "data-testid": "chart", "data-series": series },
    h("div", { class: "label" }, label, " ", h("strong", {}, latest === void 0 ? "—" : `${figure(latest)}${unit}`)),
    s(
      "svg",
      { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, preserveAspectRatio: "none", role: "img", "aria-label": `${label} over the last hour` },
      s("line", { x1: 0, y1: HEIGHT, x2: WIDTH, y2: HEIGHT, class: "axis" }),
      s("line", { x1: 0, y1: 0, x2: WIDTH, y2: 0, class: "grid" }),
      s("path", {
        d: pathData(drawn.xy),
        class: "chart-line",
        fill: "none",
        "vector-effect": "non-scaling-stroke",
        "data-testid": "chart-line",
        "data-points": drawn.xy.length
      }),
      drawn.xy.length === 1 && s("circle", { cx: drawn.xy[0]?.[0] ?? 0, cy: drawn.xy[0]?.[1] ?? 0, r: 2, class: "chart-dot" })
    ),
    h("div", { class: "small chart-scale" }, h("span", {}, `−${formatDuration(shown)}`), h("span", {}, `top ${figure(drawn.max)}${unit}`), h("span", {}, "now"))
  );
}

// src/views/dashboard.ts
var SAMPLE_MS = 3e3;
var STORAGE_KEY = "xdb.console.dashboard.samples";
var FIGURE_LINKS = {
  "Paused executions": executionsHref({ filter: {}, where: "execution.paused = true" })
};
function dashboardView(root) {
  const charts = h("div", { class: "cards charts", "data-testid": "charts" });
  const executions = h("div", { class: "counts", "data-testid": "dashboard-counts" });
  const cards = h("div", { class: "cards", "data-testid": "dashboard" });
  const note = h("p", { class: "small" });
  let points = readPoints(sessionStorage.getItem(STORAGE_KEY));
  let before;
  let stopped = false;
  async function load() {
    const [apiText, asyncText, counted, paused] = await Promise.all([
      getText("/metrics").catch(() => void 0),
      getText("/ui/metrics/async").catch(() => void 0),
      api.count({ groupBy: { field: "status" } }).catch(() => void 0),
      api.count({ where: { field: "paused", op: "=", value: true } }).catch(() => void 0)
    ]);
    if (stopped) return;
    renderCounts(counted?.groups ?? void 0, paused?.count);
    if (apiText === void 0) {
      replace(cards, h("p", { class: "error" }, "The API service's /metrics did not answer."));
      return;
    }
    const now = {
      atMs: Date.now(),
      api: parsePrometheus(apiText),
      ...asyncText !== void 0 ? { async: parsePrometheus(asyncText) } : {}
    };
    const point = pointFrom(now, before);
    points = addPoint(points, point);
    try {
      sessionStorage.setItem(STORAGE_KEY, JSON.stringify(points));
    } catch {
    }
    replace(charts, SERIES.map((series) => lineChart(points, series.key, series.label, series.unit, series.help, now.atMs)));
    replace(
      cards,
      figures(now, before).map((f) => {
        const href = FIGURE_LINKS[f.label];
        const content = [
          h("div", { class: "value" }, f.value),
          h("div", { class: "label" }, f.label),
          h("div", { class: "small" }, f.source === "api" ? "API service" : "async service")
        ];
        return href ? h("a", { class: `card source-${f.source}`, title: f.help, href, "data-testid": "figure-link" }, content) : h("div", { class: `card source-${f.source}`, title: f.help }, content);
      })
    );
    replace(
      note,
      asyncText === void 0 ? "Only the API service's numbers: its /ui/metrics/async does not reach an async service (set api.console_async_metrics_url to the async service's /metrics URL)." : `Charts: a sample every ${SAMPLE_MS / 1e3} s while this page is open, the last hour kept for this tab. Figures: rates since the last sample; counts since each service started.`
    );
    before = now;
  }
  function renderCounts(groups, paused) {
    if (!groups) {
      replace(executions);
      return;
    }
    const byStatus = new Map(groups.map((g) => [g.value, g.count]));
    replace(
      executions,
      STATUSES.map(
        (status) => h(
          "a",
          { class: `chip status-${status.toLowerCase()}`, href: executionsHref({ filter: { status }, where: "" }), "data-testid": `dashboard-count-${status}` },
          `${status} `,
          h("strong", {}, String(byStatus.get(status) ?? 0))
        )
      ),
      paused !== void 0 && h(
        "a",
        { class: "chip", href: executionsHref({ filter: {}, where: "execution.paused = true" }), "data-testid": "dashboard-count-paused" },
        "paused ",
        h("strong", {}, String(paused))
      )
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

// src/graph.ts
var START = "(start)";
var END = "(end)";
function stateIdOf(stateExecutionId) {
  return stateExecutionId.replace(/-\d+$/, "");
}
function transitionsOf(events) {
  const found = [];
  for (const event of events) {
    if (event.eventType === "PROCESS_STARTED") {
      const start2 = event.details.startStateId;
      if (typeof start2 === "string" && start2) found.push({ from: START, to: start2 });
    } else if (event.eventType === "EXECUTE_COMPLETED") {
      const id = event.details.stateExecutionId;
      const decision2 = event.details.decision;
      if (typeof id !== "string" || !decision2) continue;
      const from = stateIdOf(id);
      for (const next of decision2.nextStates ?? []) found.push({ from, to: next.stateId });
      if (decision2.threadCloseDecision) found.push({ from, to: END });
    }
  }
  return found;
}
function deriveEdges(histories, definition) {
  const seen = /* @__PURE__ */ new Map();
  for (const events of histories) {
    for (const { from, to } of transitionsOf(events)) {
      const key = JSON.stringify([from, to]);
      const edge = seen.get(key) ?? { from, to, kind: "seen", count: 0 };
      edge.count += 1;
      seen.set(key, edge);
    }
  }
  const edges = [...seen.values()].sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to));
  for (const state2 of definition?.states ?? []) {
    const recovery = state2.config?.stateFailureRecoveryOptions;
    const to = recovery?.stateFailureProceedStateId;
    if (recovery?.policy === "PROCEED_TO_CONFIGURED_STATE" && to) {
      edges.push({ from: state2.id, to, kind: "recovery", count: 0 });
    }
  }
  return edges;
}
function emptyCount() {
  return { running: 0, waiting: 0, parked: 0, backingOff: 0 };
}
function countStates(responses, now) {
  const counts = /* @__PURE__ */ new Map();
  for (const response of responses) {
    if (response.status !== "RUNNING") continue;
    for (const s2 of response.states) {
      const running = s2.status === "WAIT_UNTIL_RUNNING" || s2.status === "EXECUTE_RUNNING";
      if (!running && s2.status !== "WAITING_COMMANDS") continue;
      const count = counts.get(s2.stateId) ?? emptyCount();
      if (running) count.running += 1;
      else count.waiting += 1;
      const call = s2.pendingCall;
      if (call?.phase === "PARKED") count.parked += 1;
      else if (call?.phase === "SCHEDULED" && call.attempt > 1 && call.dueTimestampMs > now) count.backingOff += 1;
      counts.set(s2.stateId, count);
    }
  }
  return counts;
}
var BOX_WIDTH = 190;
var BOX_HEIGHT = 70;
var TERMINAL = 26;
var GAP_X = 90;
var GAP_Y = 30;
var MARGIN_TOP = 44;
var MARGIN_BOTTOM = 60;
var MARGIN_X = 16;
var ARCH_Y = 0;
function layoutGraph(states, startStates, edges) {
  const declared = new Set(states);
  const order = [...states];
  for (const e of edges) {
    for (const id of [e.from, e.to]) if (id !== START && id !== END && !order.includes(id)) order.push(id);
  }
  const hasStart = edges.some((e) => e.from === START) || startStates.length > 0;
  const hasEnd = edges.some((e) => e.to === END);
  const out = /* @__PURE__ */ new Map();
  for (const e of edges) out.set(e.from, [...out.get(e.from) ?? [], e.to]);
  const entry = [.../* @__PURE__ */ new Set([...startStates, ...edges.filter((e) => e.from === START).map((e) => e.to)])];
  if (entry.length === 0 && order[0] !== void 0) entry.push(order[0]);
  const layer = /* @__PURE__ */ new Map();
  const first = hasStart ? 1 : 0;
  const queue = [];
  for (const id of entry) {
    if (!layer.has(id)) {
      layer.set(id, first);
      queue.push(id);
    }
  }
  while (queue.length > 0) {
    const id = queue.shift();
    for (const next of out.get(id) ?? []) {
      if (next === END || next === START || layer.has(next)) continue;
      layer.set(next, (layer.get(id) ?? first) + 1);
      queue.push(next);
    }
  }
  const reached = [...layer.values()];
  const unreachedLayer = (reached.length > 0 ? Math.max(...reached) : first - 1) + 1;
  for (const id of order) if (!layer.has(id)) layer.set(id, unreachedLayer);
  const endLayer = 1 + Math.max(first - 1, ...edges.filter((e) => e.to === END).map((e) => layer.get(e.from) ?? first));
  const columns = [];
  const place = (box) => (columns[box.layer] ??= []).push({ ...box, x: 0, y: 0 });
  if (hasStart) place({ id: START, kind: "start", declared: true, layer: 0, width: TERMINAL, height: TERMINAL });
  for (const id of order) {
    place({ id, kind: "state", declared: declared.has(id), layer: layer.get(id) ?? first, width: BOX_WIDTH, height: BOX_HEIGHT });
  }
  if (hasEnd) place({ id: END, kind: "end", declared: true, layer: endLayer, width: TERMINAL, height: TERMINAL });
  const columnHeight = (column) => column.reduce((sum, b) => sum + b.height, 0) + GAP_Y * Math.max(0, column.length - 1);
  const tallest = Math.max(0, ...columns.map((c) => c ? columnHeight(c) : 0));
  let x = MARGIN_X;
  const boxes = [];
  for (const column of columns) {
    if (!column) continue;
    const width2 = Math.max(...column.map((b) => b.width));
    let y = MARGIN_TOP + (tallest - columnHeight(column)) / 2;
    for (const box of column) {
      box.x = x + (width2 - box.width) / 2;
      box.y = y;
      y += box.height + GAP_Y;
      boxes.push(box);
    }
    x += width2 + GAP_X;
  }
  const width = x - GAP_X + MARGIN_X + 40;
  const bottom = MARGIN_TOP + tallest;
  const byId = new Map(boxes.map((b) => [b.id, b]));
  const arrows = [];
  for (const edge of edges) {
    const from = byId.get(edge.from);
    const to = byId.get(edge.to);
    if (from && to) arrows.push({ ...edge, ...route(from, to, bottom) });
  }
  const goesBack = arrows.some((a) => (byId.get(a.to)?.layer ?? 0) < (byId.get(a.from)?.layer ?? 0));
  return { width: Math.max(width, 200), height: bottom + (goesBack ? MARGIN_BOTTOM : MARGIN_X), boxes, arrows };
}
function route(from, to, bottom) {
  let points;
  if (from === to) {
    const left = from.x + from.width * 0.3;
    const right = from.x + from.width * 0.7;
    points = [[left, from.y], [left, from.y - 40], [right, from.y - 40], [right, from.y]];
  } else if (to.layer > from.layer) {
    const start2 = [from.x + from.width, from.y + from.height / 2];
    const end = [to.x, to.y + to.height / 2];
    const bend = (end[0] - start2[0]) / 2;
    const over = to.layer - from.layer > 1 ? [ARCH_Y, ARCH_Y] : [start2[1], end[1]];
    points = [start2, [start2[0] + bend, over[0]], [end[0] - bend, over[1]], end];
  } else if (to.layer === from.layer) {
    const start2 = [from.x + from.width, from.y + from.height / 2];
    const end = [to.x + to.width, to.y + to.height / 2];
    points = [start2, [start2[0] + 45, start2[1]], [end[0] + 45, end[1]], end];
  } else {
    const start2 = [from.x + from.width / 2, from.y + from.height];
    const end = [to.x + to.width / 2, to.y + to.height];
    const below = bottom + 40;
    points = [start2, [start2[0], below], [end[0], below], end];
  }
  const [p0, p1, p2, p3] = points;
  const f = (n) => String(Math.round(n * 10) / 10);
  return {
    path: `M ${f(p0[0])} ${f(p0[1])} C ${f(p1[0])} ${f(p1[1])}, ${f(p2[0])} ${f(p2[1])}, ${f(p3[0])} ${f(p3[1])}`,
    // The curve's midpoint (t = 1/2).
    labelX: (p0[0] + 3 * p1[0] + 3 * p2[0] + p3[0]) / 8,
    labelY: (p0[1] + 3 * p1[1] + 3 * p2[1] + p3[1]) / 8
  };
}

// src/views/definitions.ts
var REFRESH_MS2 = 5e3;
var HISTORY_SAMPLE = 50;
var RUNNING_SAMPLE = 100;
var HISTORY_EVENTS = 1e3;
var CONCURRENCY = 6;
function definitionsView(root) {
  const results = h("div", { class: "results" });
  let stopped = false;
  async function load() {
    try {
      const { definitions } = await api.definitions();
      if (stopped) return;
      replace(
        results,
        table(
          ["Process type", "Revision", "Deployment", "Version", "Worker URL", "Registered (UTC)"],
          definitions.map(
            (d) => h(
              "tr",
              { "data-testid": "definition-row", "data-process-type": d.processType },
              h("td", {}, h("a", { href: definitionHref(d.processType) }, d.processType)),
              h("td", {}, String(d.revision)),
              h("td", {}, d.deployment.name),
              h("td", {}, d.deployment.version),
              h("td", { class: "mono small" }, d.deployment.workerUrl),
              h("td", {}, formatTime(d.registeredAtMs))
            )
          ),
          "No process type is registered. A worker deployment registers its process types with definitions/register (role deploy).",
          "definitions-table"
        )
      );
    } catch (error) {
      if (!stopped) replace(results, h("p", { class: "error", role: "alert" }, `Could not list the definitions: ${String(error)}`));
    }
  }
  replace(
    root,
    h("h1", {}, "Definitions"),
    h("p", { class: "small" }, "The process types worker deployments registered, each at its current revision."),
    results
  );
  void load().catch((error) => notify(String(error), "error"));
  const timer = setInterval(() => void load(), REFRESH_MS2);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
function definitionView(root, processType, revision) {
  const summary = h("section", { class: "summary" });
  const graphSection = h("section", { class: "panel wide", "data-testid": "state-graph-panel" });
  const definitionSection = h("div");
  const revisionsSection = h("section", { class: "panel wide" });
  const closedHistories = /* @__PURE__ */ new Map();
  let autoRefresh = true;
  let timer;
  let stopped = false;
  let shownHash;
  async function load() {
    let described;
    try {
      described = await api.definition(processType, revision);
    } catch (error) {
      if (stopped) return;
      const text = error instanceof ApiError && error.status === 404 ? `${processType} is not registered${revision === void 0 ? "" : ` at revision ${revision}`}.` : `Could not load ${processType}: ${String(error)}`;
      replace(summary, h("h1", {}, processType), h("p", { class: "error", role: "alert", "data-testid": "definition-error" }, text));
      return;
    }
    let sample;
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
  function renderSummary(d) {
    const r = d.revision;
    const current = d.revisions[0]?.revision;
    replace(
      summary,
      h(
        "h1",
        {},
        r.processType,
        h("span", { class: "badge badge-revision", "data-testid": "definition-revision" }, `revision ${r.revision}`),
        current !== void 0 && current !== r.revision && h("a", { href: definitionHref(r.processType), class: "small" }, `current is ${current}`)
      ),
      facts([
        ["Deployment", `${r.deployment.name} ${r.deployment.version}`],
        ["Worker URL", h("span", { class: "mono" }, r.deployment.workerUrl)],
        ["Registered (UTC)", formatTime(r.registeredAtMs)],
        ["Content hash", h("span", { class: "mono small" }, r.contentHash)],
        ["Start states", (d.definition.startStates ?? []).length > 0 ? (d.definition.startStates ?? []).join(", ") : "any state"]
      ]),
      h(
        "a",
        { href: executionsHref({ filter: { processType: r.processType }, where: "" }), "data-testid": "executions-of-type" },
        `Executions of ${r.processType} →`
      )
    );
  }
  function renderGraph(definition, sample) {
    const edges = deriveEdges(sample.histories, definition);
    const layout = layoutGraph(
      definition.states.map((st) => st.id),
      definition.startStates ?? [],
      edges
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
        "; parked and backing off (waiting for a retry) are counted among the running."
      ),
      h("label", { class: "refresh" }, refresh, " auto-refresh")
    );
  }
  function renderRevisions(d) {
    replace(
      revisionsSection,
      h("h2", {}, "Revisions"),
      table(
        ["Revision", "Deployment", "Version", "Worker URL", "Registered (UTC)", "Content hash"],
        d.revisions.map((r) => revisionRow(r, r.revision === d.revision.revision)),
        "No revisions.",
        "revisions-table"
      )
    );
  }
  function schedule() {
    if (timer) clearInterval(timer);
    timer = autoRefresh ? setInterval(() => void load(), REFRESH_MS2) : void 0;
  }
  replace(
    root,
    h("p", {}, h("a", { href: "#/definitions" }, "← Definitions")),
    summary,
    graphSection,
    definitionSection,
    revisionsSection
  );
  void load().catch((error) => notify(String(error), "error"));
  schedule();
  return () => {
    stopped = true;
    if (timer) clearInterval(timer);
  };
}
async function sampleExecutions(processType, closed) {
  const [recent, running] = await Promise.all([
    api.list({ processType }, HISTORY_SAMPLE),
    api.list({ processType, status: "RUNNING" }, RUNNING_SAMPLE)
  ]);
  const histories = await mapLimited(recent.executions, CONCURRENCY, async (e) => {
    const known = closed.get(e.processExecutionId);
    if (known) return known;
    const page = await api.history(e.processId, e.processExecutionId, HISTORY_EVENTS, void 0, ["PROCESS_STARTED", "EXECUTE_COMPLETED"]).catch(() => void 0);
    if (page && e.status !== "RUNNING") closed.set(e.processExecutionId, page.events);
    return page?.events;
  });
  const states = await mapLimited(
    running.executions,
    CONCURRENCY,
    (e) => api.states(e.processId, e.processExecutionId).catch(() => void 0)
  );
  const read = (items) => items.filter((item) => item !== void 0);
  return {
    histories: read(histories),
    historiesRead: read(histories).length,
    moreExecutions: Boolean(recent.nextPageToken),
    states: read(states),
    statesRead: read(states).length,
    moreRunning: Boolean(running.nextPageToken)
  };
}
async function mapLimited(items, limit, work) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
function revisionRow(r, shown) {
  return h(
    "tr",
    { "data-testid": "revision-row", class: shown ? "key" : "" },
    h("td", {}, h("a", { href: definitionHref(r.processType, r.revision) }, String(r.revision))),
    h("td", {}, r.deployment.name),
    h("td", {}, r.deployment.version),
    h("td", { class: "mono small" }, r.deployment.workerUrl),
    h("td", {}, formatTime(r.registeredAtMs)),
    h("td", { class: "mono small" }, r.contentHash.slice(0, 12))
  );
}
function definitionPanels(d) {
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
          c?.executeApiTimeoutSeconds ? `execute ${c.executeApiTimeoutSeconds} s` : ""
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
            c?.localAttributeLoading?.keys?.length ? h("div", {}, `local: ${formatLoading(c.localAttributeLoading.keys, c.localAttributeLoading.lockType)}`) : null
          )
        );
      }),
      "No states.",
      "definition-states"
    )
  );
  const queues = h(
    "section",
    { class: "panel", "data-testid": "definition-queues" },
    h("h2", {}, "Local queues"),
    (d.localQueues ?? []).length > 0 ? h("ul", { class: "plain" }, (d.localQueues ?? []).map((q) => h("li", { class: "mono" }, q))) : h("p", { class: "empty" }, "None: a publish to this type is refused.")
  );
  const rpcs = h(
    "section",
    { class: "panel" },
    h("h2", {}, "RPCs"),
    table(
      ["RPC", "Loads (lock)", "Local attributes (lock)"],
      (d.rpcs ?? []).map(
        (r) => h(
          "tr",
          { "data-testid": "definition-rpc", "data-rpc": r.name },
          h("td", { class: "mono" }, r.name),
          h("td", { class: "small" }, formatLoading(r.globalAttributeLoading?.columns, r.globalAttributeLoading?.lockType)),
          h("td", { class: "small" }, formatLoading(r.localAttributeLoading?.keys, r.localAttributeLoading?.lockType))
        )
      ),
      "No RPCs.",
      "definition-rpcs"
    )
  );
  const global = d.globalAttributes;
  const attributes = h(
    "section",
    { class: "panel", "data-testid": "definition-table" },
    h("h2", {}, global ? `Table: ${global.tableName}` : "Business table"),
    global ? table(
      ["Column", "Type"],
      [
        h("tr", { class: "key" }, h("th", { scope: "row" }, global.primaryKeyColumn), h("td", {}, "primary key")),
        ...(global.columns ?? []).map((c) => h("tr", {}, h("th", { scope: "row" }, c.name), h("td", {}, c.type ?? "ANY")))
      ],
      ""
    ) : h("p", { class: "empty" }, "No global-attribute table.")
  );
  const locals = h(
    "section",
    { class: "panel" },
    h("h2", {}, "Local attributes"),
    table(
      ["Key", "Type"],
      (d.localAttributes ?? []).map((a) => h("tr", {}, h("th", { scope: "row" }, a.name), h("td", {}, a.type ?? "ANY"))),
      "None."
    )
  );
  return [states, h("div", { class: "side-by-side" }, queues, rpcs), h("div", { class: "side-by-side" }, attributes, locals)];
}
var MAX_LABEL = 24;
function drawGraph(layout, counts) {
  const marker = (id, cls) => s(
    "marker",
    { id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
    s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: cls })
  );
  const arrows = layout.arrows.map(
    (a) => s(
      "g",
      { class: `arrow arrow-${a.kind}`, "data-testid": "graph-arrow", "data-from": a.from, "data-to": a.to, "data-count": a.count },
      s("title", {}, a.kind === "recovery" ? `${a.from} → ${a.to}: failure recovery` : `${a.from} → ${a.to}: ${a.count} times`),
      s("path", { d: a.path, "marker-end": `url(#${a.kind === "recovery" ? "head-recovery" : "head"})` }),
      a.kind === "seen" && s("text", { x: a.labelX, y: a.labelY - 4, "text-anchor": "middle", class: "arrow-label" }, `${a.count}`)
    )
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
      "aria-label": "State graph"
    },
    s("defs", {}, marker("head", "head"), marker("head-recovery", "head head-recovery")),
    arrows,
    boxes
  );
}
function drawBox(b, count) {
  if (b.kind !== "state") {
    const r = b.width / 2;
    return s(
      "g",
      { class: `terminal terminal-${b.kind}`, "data-testid": `graph-${b.kind}` },
      s("title", {}, b.kind === "start" ? "start" : "end: the thread closed (complete, fail or dead end)"),
      s("circle", { cx: b.x + r, cy: b.y + r, r }),
      b.kind === "end" && s("circle", { cx: b.x + r, cy: b.y + r, r: r - 5, class: "inner" })
    );
  }
  const label = b.id.length > MAX_LABEL ? `${b.id.slice(0, MAX_LABEL - 1)}…` : b.id;
  const live = count.running + count.waiting;
  const marks = [];
  let markX = b.x + 10;
  for (const [kind, value, text] of [
    ["parked", count.parked, "parked"],
    ["backing-off", count.backingOff, "backing off"]
  ]) {
    if (value === 0) continue;
    marks.push(s("text", { x: markX, y: b.y + 58, class: `mark mark-${kind}`, "data-testid": "graph-count", "data-kind": kind }, `${value} ${text}`));
    markX += 86;
  }
  return s(
    "g",
    {
      class: `node${b.declared ? "" : " undeclared"}${live > 0 ? " live" : ""}${count.parked > 0 ? " has-parked" : ""}`,
      "data-testid": "graph-state",
      "data-state-id": b.id
    },
    s("title", {}, b.declared ? b.id : `${b.id} (not in this revision of the definition)`),
    s("rect", { x: b.x, y: b.y, width: b.width, height: b.height, rx: 6 }),
    s("text", { x: b.x + 10, y: b.y + 20, class: "node-label" }, label),
    live === 0 ? s("text", { x: b.x + 10, y: b.y + 40, class: "count idle" }, "idle") : s(
      "text",
      { x: b.x + 10, y: b.y + 40, class: "count" },
      count.running > 0 && s("tspan", { "data-testid": "graph-count", "data-kind": "running" }, `${count.running} running`),
      count.running > 0 && count.waiting > 0 && " · ",
      count.waiting > 0 && s("tspan", { "data-testid": "graph-count", "data-kind": "waiting" }, `${count.waiting} waiting`)
    ),
    marks
  );
}

// src/deployments.ts
function deploymentLabel(d) {
  return `${d.name}@${d.version}`;
}
function same(a, b) {
  return a.name === b.name && a.version === b.version;
}
function currentForAll(d) {
  return d.processTypes.every((t) => d.currentFor.includes(t));
}
function movePlan(deployments, processType, target) {
  const sources = deployments.filter(
    (d) => !same(d.deployment, target) && d.processTypes.includes(processType) && d.runningExecutions > 0
  );
  return {
    sources,
    running: sources.reduce((sum, d) => sum + d.runningExecutions, 0),
    exact: sources.every((d) => d.processTypes.length === 1)
  };
}
function moveMessage(plan, processType, target) {
  if (plan.sources.length === 0) {
    return `No other deployment of ${processType} runs executions now; running executions of ${processType} found at the move go to ${deploymentLabel(target)}.`;
  }
  const count = `${plan.exact ? "" : "up to "}${plan.running} running execution${plan.running === 1 ? "" : "s"}`;
  const from = plan.sources.map((d) => `${deploymentLabel(d.deployment)} (${d.runningExecutions})`).join(", ");
  return `Moves ${count} of ${processType} from ${from} to ${deploymentLabel(target)}; each runs its next worker call there (a call in flight finishes where it is).` + (plan.exact ? "" : " The counts cover every type those deployments run.");
}

// src/views/deployments.ts
var REFRESH_MS3 = 5e3;
function deploymentsView(root) {
  const results = h("div", { class: "results" });
  let stopped = false;
  async function load() {
    try {
      const { deployments } = await api.deployments();
      if (stopped) return;
      replace(
        results,
        deployments.length === 0 ? h("p", { class: "empty", "data-testid": "deployments-empty" }, "No deployment registered definitions yet (definitions/register, role deploy).") : deployments.map((d) => panel(d, deployments))
      );
    } catch (error) {
      if (!stopped) replace(results, h("p", { class: "error", role: "alert" }, `Could not list the deployments: ${String(error)}`));
    }
  }
  async function run(what, action) {
    try {
      notify(`${what}: ${await action()}`);
    } catch (error) {
      const text = error instanceof ApiError && error.subType === "DEFINITION_INCOMPATIBLE" ? `${what} refused: ${error.message}` : `${what} failed: ${error instanceof Error ? error.message : String(error)}`;
      notify(text, "error");
    }
    await load();
  }
  function panel(d, all) {
    const label = deploymentLabel(d.deployment);
    const makeCurrent = h(
      "button",
      {
        type: "button",
        "data-testid": "make-current",
        disabled: currentForAll(d),
        title: currentForAll(d) ? "Already current for every type it registered" : void 0,
        onclick: () => void confirmMakeCurrent()
      },
      "Make current"
    );
    async function confirmMakeCurrent() {
      const values = await ask(
        `Make ${label} current?`,
        `Starts of ${d.processTypes.join(", ")} go to ${d.deployment.workerUrl}; its last definition of each type becomes a new revision. Running executions stay where they are (or move, for a MOVE_TO_CURRENT type).`,
        [],
        "Make current"
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
              onclick: () => void confirmMove(type)
            },
            "Move executions here"
          )
        )
      );
    });
    async function confirmMove(type) {
      const plan = movePlan(all, type, d.deployment);
      const values = await ask(`Move executions of ${type} to ${label}?`, moveMessage(plan, type, d.deployment), [], "Move", {
        danger: true
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
        d.drained && h("span", { class: "badge badge-drained", "data-testid": "badge-drained" }, "drained")
      ),
      facts([
        ["Worker URL", h("span", { class: "mono", "data-testid": "deployment-url" }, d.deployment.workerUrl)],
        ["Current for", h("span", { "data-testid": "deployment-current-for" }, d.currentFor.length > 0 ? d.currentFor.join(", ") : "nothing")],
        ["Running executions", h("span", { "data-testid": "deployment-running" }, String(d.runningExecutions))]
      ]),
      table(["Process type", "Current here", ""], rows, "No process type.", "deployment-types"),
      h("div", { class: "actions" }, makeCurrent)
    );
  }
  replace(
    root,
    h("h1", {}, "Deployments"),
    h(
      "p",
      { class: "small" },
      "Each worker deployment that registered definitions. Starts go to a type's current deployment; running executions stay on theirs until they close (PINNED) or move. A deployment current for nothing and running nothing is drained: it can be shut down."
    ),
    results
  );
  void load().catch((error) => notify(String(error), "error"));
  const timer = setInterval(() => void load(), REFRESH_MS3);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

// src/history.ts
var str = (v) => typeof v === "string" && v !== "" ? v : void 0;
var num = (v) => typeof v === "number" ? v : void 0;
var list = (v) => Array.isArray(v) ? v : [];
var obj = (v) => v && typeof v === "object" && !Array.isArray(v) ? v : {};
function clip(text, max = 140) {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
function why(d) {
  const reason = str(d.reason);
  const identity = str(d.identity);
  return `${reason ? ` — ${reason}` : ""}${identity ? ` (by ${identity})` : ""}`;
}
function claimOrder(v) {
  const o = obj(v);
  return { priority: num(o.priority), fairnessKey: str(o.fairnessKey), fairnessWeight: num(o.fairnessWeight) };
}
function decision(d) {
  const next = list(obj(d.decision).nextStates).map((m) => str(obj(m).stateId) ?? "?");
  const close = str(obj(obj(d.decision).threadCloseDecision).closeType);
  if (next.length > 0) return `→ ${next.join(", ")}`;
  if (close) return `closes its thread: ${close}`;
  return "decided";
}
function waits(d) {
  const request = obj(d.commandRequest);
  const timers = list(request.timerCommands).length;
  const queues = list(request.localQueueCommands).map((q) => str(obj(q).queueName) ?? "?");
  const parts = [...timers > 0 ? [`${timers} timer${timers === 1 ? "" : "s"}`] : [], ...queues.map((q) => `queue ${q}`)];
  const type = str(request.waitingType);
  return parts.length === 0 ? "waits for nothing" : `waits for ${type ? `${type.toLowerCase().replace(/_/g, " ")}: ` : ""}${parts.join(", ")}`;
}
function summarizeEvent(event) {
  const d = obj(event.details);
  switch (event.eventType) {
    case "PROCESS_STARTED":
      return `started ${str(d.processType) ?? ""}${str(d.startStateId) ? ` at ${str(d.startStateId)}` : ""}${str(d.resetFrom) ? ` (reset from ${str(d.resetFrom)})` : ""}`.trim();
    case "PROCESS_CLOSED":
      return `closed ${str(d.status) ?? ""}${str(d.failure) ? `: ${clip(str(d.failure) ?? "")}` : ""}`.trim();
    case "PROCESS_RESET":
      return `reset: ${list(d.closedStateExecutionIds).length} state execution(s) closed${why(d)}`;
    case "WAIT_UNTIL_COMPLETED":
      return waits(d);
    case "EXECUTE_COMPLETED":
      return decision(d);
    case "STATE_API_FAILED":
    case "STATE_FAILED": {
      const attempt = num(d.attempt);
      return clip(`${str(d.api) ?? "call"}${attempt !== void 0 ? ` attempt ${attempt}` : ""} failed: ${str(d.error) ?? "?"}`);
    }
    case "TIMER_FIRED":
      return `timer ${num(d.timerIndex) ?? "?"} fired`;
    case "LOCAL_QUEUE_MESSAGES_PUBLISHED": {
      const messages = num(d.messages) ?? 0;
      const duplicates = num(d.duplicates) ?? 0;
      return `${messages} message${messages === 1 ? "" : "s"} published${duplicates ? `, ${duplicates} duplicate(s) dropped` : ""}${str(d.rpcName) ? ` by RPC ${str(d.rpcName)}` : ""}`;
    }
    case "LOCAL_QUEUE_MESSAGES_CONSUMED": {
      const count = list(d.messages).length;
      return `${count} message${count === 1 ? "" : "s"} consumed${str(d.queueName) ? ` from ${str(d.queueName)}` : ""}`;
    }
    case "RPC_COMPLETED": {
      const appended = list(d.appendedStates).map(String);
      return `RPC ${str(d.rpcName) ?? "?"} completed${appended.length ? ` → ${appended.join(", ")}` : ""}${num(d.published) ? `, ${num(d.published)} published` : ""}`;
    }
    case "RETRY_REQUESTED":
      return `retry now requested${why(d)}`;
    case "GIVE_UP_REQUESTED":
      return `give up requested${why(d)}`;
    case "PAUSED":
      return `paused${why(d)}`;
    case "RESUMED":
      return `resumed${why(d)}`;
    case "REPRIORITIZED":
      return `${reorderingText(claimOrder(d.before), claimOrder(d.after))}${why(d)}`;
    case "TASK_PARKED":
      return clip(
        `${str(d.taskType) ?? "task"} parked${str(d.reason) ? ` (${str(d.reason)})` : ""}${num(d.refusals) ? ` after ${num(d.refusals)} refusals` : ""}${str(d.error) ? `: ${str(d.error)}` : ""}`
      );
    default:
      return clip(
        Object.entries(d).filter(([, v]) => v !== null && v !== void 0).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join(" · ")
      );
  }
}
function eventStateExecution(event) {
  const d = obj(event.details);
  const many = list(d.stateExecutionIds).filter((id) => typeof id === "string");
  return str(d.stateExecutionId) ?? (many.length > 0 ? many.join(", ") : void 0);
}

// src/flow-limits.ts
function limitsText(limits) {
  if (limits === null || limits === void 0) return "—";
  const rate2 = limits.maxCallsPerSecond;
  const atOnce = limits.maxConcurrentCalls;
  const running = limits.maxRunningExecutions;
  const keyedBy = limits.concurrencyKeyAttribute || "key";
  const priority = limits.priority;
  const fairBy = limits.fairnessKeyAttribute;
  const weight = limits.fairnessWeight;
  const parts = [
    rate2 === null || rate2 === void 0 ? void 0 : `${rate2} calls/s`,
    atOnce === null || atOnce === void 0 ? void 0 : `${atOnce} at once`,
    running === null || running === void 0 ? void 0 : `${running} running per ${keyedBy}`,
    priority === null || priority === void 0 ? void 0 : `priority ${priority}`,
    fairBy === null || fairBy === void 0 ? void 0 : `fair by ${fairBy}`,
    weight === null || weight === void 0 ? void 0 : `fairness weight ${weight}`
  ].filter((part) => part !== void 0);
  return parts.length === 0 ? "unlimited" : parts.join(", ");
}
function shownStatus(execution) {
  return execution.pending ? "PENDING" : execution.status;
}
function pendingText(pause) {
  const key = pause?.pendingOnKey;
  if (key === null || key === void 0) return void 0;
  return key === "" ? "waiting for a running slot (no concurrency key)" : `waiting for a running slot of key ${key}`;
}
function phaseNote(phase) {
  return phase === "FLOW_LIMITED" ? "held back by a flow limit until due; costs no attempt" : void 0;
}
function scopeText(stateId) {
  return stateId ? stateId : "(all states)";
}
function changeText(change) {
  return `${limitsText(change.before)} → ${limitsText(change.after)}`;
}
var ACTIONS = [
  ["limits", "limit calls a second, at once and/or running executions; set a priority or fairness"],
  ["unlimited", "no limit, priority 3, no fairness (whatever is declared)"],
  ["clear", "clear the override (declared limits apply)"]
];
function flowLimitsRequest(values) {
  const get = (name) => values(name).trim();
  const processType = get("processType");
  if (!processType) return { error: "The process type is missing.", field: "processType" };
  const stateId = get("stateId");
  const reason = get("reason");
  const request = { processType, ...stateId ? { stateId } : {}, ...reason ? { reason } : {} };
  const action = get("action") || "limits";
  if (action === "unlimited") return { request: { ...request, override: {} } };
  if (action === "clear") return { request };
  const rate2 = get("maxCallsPerSecond");
  const atOnce = get("maxConcurrentCalls");
  const running = get("maxRunningExecutions");
  const keyAttribute = get("concurrencyKeyAttribute");
  const priority = get("priority");
  const fairnessAttribute = get("fairnessKeyAttribute");
  const fairnessWeight = get("fairnessWeight");
  if (!rate2 && !atOnce && !running && !keyAttribute && !priority && !fairnessAttribute && !fairnessWeight) {
    return {
      error: "Give a number of calls a second, a number of calls at once, a number of running executions, a priority, a fairness key attribute or weight, or several.",
      field: "maxCallsPerSecond"
    };
  }
  if ((running || keyAttribute) && stateId) {
    return { error: "Running executions are limited per process type, not per state: leave State empty to set them.", field: "stateId" };
  }
  if (priority && stateId) {
    return { error: "A priority is a process type's (of its starts that name none), not a state's: leave State empty to set it.", field: "stateId" };
  }
  if ((fairnessAttribute || fairnessWeight) && stateId) {
    return {
      error: "Fairness is a process type's (of its starts that name no fairness key or weight), not a state's: leave State empty to set it.",
      field: "stateId"
    };
  }
  if (keyAttribute && !running) {
    return {
      error: `The concurrency key attribute ${keyAttribute} keys the running-executions limit: give Max running executions with it.`,
      field: "maxRunningExecutions"
    };
  }
  const override = {};
  if (rate2) {
    const value = Number(rate2);
    if (!Number.isFinite(value)) {
      return { error: `The rate ${rate2} is not a number of calls a second (fractions allowed: 0.5 is one every 2 s).`, field: "maxCallsPerSecond" };
    }
    override.maxCallsPerSecond = value;
  }
  if (atOnce) {
    if (!/^\d+$/.test(atOnce)) {
      return { error: `The concurrency ${atOnce} is not a whole number of calls at once.`, field: "maxConcurrentCalls" };
    }
    override.maxConcurrentCalls = Number(atOnce);
  }
  if (running) {
    if (!/^\d+$/.test(running)) {
      return { error: `The running-executions limit ${running} is not a whole number.`, field: "maxRunningExecutions" };
    }
    override.maxRunningExecutions = Number(running);
  }
  if (keyAttribute) override.concurrencyKeyAttribute = keyAttribute;
  if (priority) {
    if (!/^\d+$/.test(priority)) {
      return { error: `The priority ${priority} is not a whole number from 1 (claimed first) to 5.`, field: "priority" };
    }
    override.priority = Number(priority);
  }
  if (fairnessAttribute) override.fairnessKeyAttribute = fairnessAttribute;
  if (fairnessWeight) {
    if (!/^\d+$/.test(fairnessWeight)) {
      return { error: `The fairness weight ${fairnessWeight} is not a whole number from 1 to 1,000.`, field: "fairnessWeight" };
    }
    override.fairnessWeight = Number(fairnessWeight);
  }
  return { request: { ...request, override } };
}
var FIELDS3 = [
  ["override.maxCallsPerSecond", "maxCallsPerSecond"],
  ["maxCallsPerSecond", "maxCallsPerSecond"],
  ["override.maxConcurrentCalls", "maxConcurrentCalls"],
  ["maxConcurrentCalls", "maxConcurrentCalls"],
  ["override.maxRunningExecutions", "maxRunningExecutions"],
  ["maxRunningExecutions", "maxRunningExecutions"],
  ["override.concurrencyKeyAttribute", "concurrencyKeyAttribute"],
  ["concurrencyKeyAttribute", "concurrencyKeyAttribute"],
  ["override.priority", "priority"],
  ["priority", "priority"],
  ["override.fairnessKeyAttribute", "fairnessKeyAttribute"],
  ["fairnessKeyAttribute", "fairnessKeyAttribute"],
  ["override.fairnessWeight", "fairnessWeight"],
  ["fairnessWeight", "fairnessWeight"],
  ["stateId", "stateId"],
  ["processType", "processType"],
  ["reason", "reason"]
];
function errorField(message) {
  let best;
  for (const [path, field] of FIELDS3) {
    const at = message.indexOf(path);
    if (at >= 0 && (best === void 0 || at < best.at)) best = { at, field };
  }
  return best?.field;
}

// src/views/actions.ts
function actionButtons(execution, states, definition, done) {
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
  const waitedOn = [...new Set(states.states.flatMap((s2) => s2.waitingFor?.localQueues.map((q) => q.queueName) ?? []))];
  const declaredQueues = definition?.definition.localQueues ?? [];
  const queues = [.../* @__PURE__ */ new Set([...waitedOn, ...declaredQueues])];
  const rpcs = (definition?.definition.rpcs ?? []).map((r) => r.name);
  const declaredBy = definition ? `${execution.processType} revision ${definition.revision.revision} declares` : `${execution.processType} is not registered: any name goes`;
  const paused = Boolean(states.paused);
  const pending = states.paused?.pendingOnKey !== void 0 && states.paused.pendingOnKey !== null;
  const resetButton = button("Reset", "action-reset", true, async () => {
    const stateIds = [...new Set(states.states.map((s2) => s2.stateId))];
    const closed = execution.status !== "RUNNING";
    const values = await ask(
      `Reset ${processId} to a state?`,
      closed ? "A new execution of this process id starts at the state, linked to this one." : "Its open states are aborted (their calls, timers and waits cancelled) and the state starts.",
      [
        { name: "state", label: "State", value: stateIds[0] ?? "", placeholder: "state id" },
        { name: "input", label: "State input (JSON, optional)", kind: "textarea", placeholder: '{"amount": 10}' },
        {
          name: "skipWaitUntil",
          label: "Skip waitUntil (default: as the registered definition says)",
          kind: "select",
          value: "default",
          options: ["default", "yes", "no"]
        },
        reasonField
      ],
      "Reset",
      { danger: true }
    );
    if (!values) return;
    const input = values("input").trim();
    if (input) {
      try {
        JSON.parse(input);
      } catch {
        notify("The state input is not JSON.", "error");
        return;
      }
    }
    const skip = values("skipWaitUntil");
    const reason = values("reason").trim();
    await run("Reset", async () => {
      const answer = await api.reset({
        processId,
        processExecutionId,
        stateId: values("state").trim(),
        ...input ? { stateInput: { encoding: "json", data: input } } : {},
        ...skip === "default" ? {} : { stateConfig: { skipWaitUntil: skip === "yes" } },
        ...reason ? { reason } : {},
        identity: "console"
      });
      if (answer.newExecution) location.hash = executionHref(processId, answer.processExecutionId);
    });
  });
  if (execution.status !== "RUNNING") {
    return h("div", { class: "actions", "data-testid": "actions" }, resetButton);
  }
  return h(
    "div",
    { class: "actions", "data-testid": "actions" },
    button("Terminate", "action-terminate", true, () => stop("TERMINATE")),
    button("Fail", "action-fail", true, () => stop("FAIL")),
    control("Retry now", "action-retry-now", "Calls waiting for their retry backoff run now; parked tasks are released.", api.retryNow),
    control("Give up", "action-give-up", "Failing states go to their failure recovery without their remaining attempts.", api.giveUp, true),
    pending ? h(
      "button",
      {
        type: "button",
        disabled: true,
        "data-testid": "action-resume",
        title: "PENDING: it starts by itself when a running execution of its concurrency key closes; it cannot be resumed."
      },
      "Resume"
    ) : paused ? control("Resume", "action-resume", "What fell due while paused runs now.", api.resume) : control("Pause", "action-pause", "Nothing of this execution is called until it resumes.", api.pause),
    button("Reprioritize", "action-reprioritize", false, async () => {
      const current = { priority: execution.priority, fairnessKey: execution.fairnessKey, fairnessWeight: execution.fairnessWeight };
      const checked = (values2) => reprioritization(values2, current);
      const values = await ask(
        `Reprioritize ${processId}?`,
        "Its waiting calls, and those it makes later, are claimed in the new order: priority 1 first; at one priority, key by key in turn, each key taking up to its weight of calls a turn.",
        [...reprioritizeFields(current), reasonField],
        "Reprioritize",
        {
          validate: (v) => {
            const change = checked(v);
            return "message" in change ? change : void 0;
          },
          submit: async (v) => {
            const change = checked(v);
            if ("message" in change) return change;
            const reason = v("reason").trim();
            try {
              await api.reprioritize({ processId, processExecutionId, reprioritize: change.change, ...reason ? { reason } : {}, identity: "console" });
              return void 0;
            } catch (error) {
              if (!(error instanceof ApiError)) throw error;
              return {
                message: error.subType === "CONTROL_NOT_APPLICABLE" ? `Not applicable now — ${error.message}` : `The service refused it: ${error.message}`,
                field: reprioritizeErrorField(error)
              };
            }
          }
        }
      );
      if (!values) return;
      notify("Reprioritize: done");
      done();
    }),
    resetButton,
    button("Publish message", "action-publish", false, async () => {
      const values = await ask(
        "Publish to a local queue",
        `A message for ${processId}; a state waiting on the queue receives it at once. ` + (definition ? `${declaredBy} ${declaredQueues.length > 0 ? declaredQueues.join(", ") : "no queue"}.` : `${declaredBy}.`),
        [
          { name: "queue", label: "Queue", value: queues[0] ?? "", placeholder: "queue name", suggestions: queues },
          { name: "payload", label: "Payload (JSON, optional)", kind: "textarea", placeholder: '{"source": "console"}' },
          { name: "dedupId", label: "Dedup id (optional)" }
        ],
        "Publish"
      );
      if (!values) return;
      const payload = jsonPayload(values("payload"));
      if (payload === null) return;
      await run(
        "Publish",
        () => api.publish(processId, values("queue").trim(), payload, values("dedupId").trim() || void 0)
      );
    }),
    button("Call RPC", "action-rpc", false, async () => {
      const values = await ask(
        "Call an RPC",
        `Calls the worker once for ${processId}, in one transaction with what it writes. ` + (definition ? `${declaredBy} ${rpcs.length > 0 ? rpcs.join(", ") : "no RPC"}.` : `${declaredBy}.`),
        [
          { name: "rpc", label: "RPC", value: rpcs[0] ?? "", placeholder: "rpc name", suggestions: rpcs },
          { name: "input", label: "Input (JSON, optional)", kind: "textarea", placeholder: '{"source": "console"}' }
        ],
        "Call"
      );
      if (!values) return;
      const input = jsonPayload(values("input"));
      if (input === null) return;
      const rpcName = values("rpc").trim();
      try {
        const response = await api.rpc(processId, rpcName, input);
        notify(`RPC ${rpcName}: ${response.output ? formatPayload(response.output) : "done"}`);
      } catch (error) {
        notify(`RPC ${rpcName} failed: ${error instanceof Error ? error.message : String(error)}`, "error");
      }
      done();
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
function jsonPayload(text) {
  const data = text.trim();
  if (!data) return void 0;
  try {
    JSON.parse(data);
  } catch {
    notify("The payload is not JSON.", "error");
    return null;
  }
  return { encoding: "json", data };
}
function button(label, testId, danger, onClick) {
  return h("button", { type: "button", class: danger ? "danger" : "", "data-testid": testId, onclick: () => void onClick() }, label);
}

// src/views/execution.ts
var HISTORY_PAGE = 20;
function fairnessFact(d) {
  const text = formatFairness(d.fairnessKey, d.fairnessWeight);
  return text === void 0 ? [] : [["Fairness key", h("span", { "data-testid": "execution-fairness-key" }, text)]];
}
var REFRESH_MS4 = 3e3;
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
  let definition;
  async function load() {
    try {
      const described = await api.describe(processId, executionId);
      executionId = described.processExecutionId;
      definition ??= definitionOrNothing(described.processType).catch(() => void 0);
      const [states, attributes, history, registered] = await Promise.all([
        api.states(processId, executionId),
        api.attributes(processId, executionId),
        api.history(processId, executionId, HISTORY_PAGE, historyPages.at(-1)),
        definition
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
          states.states.map((s2) => stateRow(s2, now)),
          "No state executions.",
          "states-table"
        )
      );
      renderHistory(history);
    } catch (error) {
      if (!stopped) replace(summary, h("p", { class: "error", role: "alert" }, `Could not load ${processId}: ${String(error)}`));
    }
  }
  function renderSummary(d, states, registered) {
    const refresh = h("input", { type: "checkbox", checked: autoRefresh, "data-testid": "auto-refresh" });
    refresh.addEventListener("change", () => {
      autoRefresh = refresh.checked;
      schedule();
    });
    const pending = pendingText(states.paused);
    const status = shownStatus({ status: d.status, pending: pending !== void 0 });
    replace(
      summary,
      h(
        "h1",
        {},
        d.processId,
        " ",
        h("span", { class: statusClass(status), "data-testid": "execution-status" }, status),
        states.paused && !pending && h("span", { class: "badge badge-paused", "data-testid": "badge-paused" }, "paused"),
        (d.parkedTasks ?? 0) > 0 && h("span", { class: "badge badge-parked", "data-testid": "badge-parked" }, `${d.parkedTasks} parked`)
      ),
      facts([
        [
          "Process type",
          registered ? h("a", { href: definitionHref(d.processType), "data-testid": "process-type-link" }, d.processType) : [d.processType, h("span", { class: "small" }, " (not registered)")]
        ],
        ["Execution id", h("span", { class: "mono" }, d.processExecutionId)],
        ["Started (UTC)", formatTime(d.startTimestampMs)],
        ["Closed (UTC)", formatTime(d.closeTimestampMs)],
        ["Worker", h("span", { class: "mono" }, d.workerUrl)],
        ["Priority", h("span", { "data-testid": "execution-priority" }, formatPriority(d.priority))],
        ...fairnessFact(d),
        ["Running states", String(d.runningStateExecutions)],
        ...states.paused && pending ? [["Pending", `${pending}, since ${formatTime(states.paused.sinceTimestampMs)}`]] : states.paused ? [["Paused", `since ${formatTime(states.paused.sinceTimestampMs)}${states.paused.reason ? ` — ${states.paused.reason}` : ""}`]] : [],
        ...backingOff(states, Date.now()),
        ...d.failure ? [["Failure", `${d.failure.reason}${d.failure.details ? `: ${d.failure.details}` : ""}`]] : [],
        ...d.result ? [["Result", h("pre", {}, formatPayload(d.result))]] : []
      ]),
      pending && h(
        "p",
        { class: "pending-notice", role: "status", "data-testid": "pending-notice" },
        h("strong", {}, "Pending: "),
        `${pending}. Its type's maxRunningExecutions holds it; it starts by itself, in start order, when a running execution of its key closes. Nothing of it has run yet.`
      ),
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
        ["#", "Time (UTC)", "State", "Event", "Summary"],
        history.events.map(
          (e, i) => h(
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
                h("pre", { class: "small" }, JSON.stringify(e.details, null, 2))
              )
            )
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
    timer = autoRefresh ? setInterval(() => void load(), REFRESH_MS4) : void 0;
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
function backingOff(states, now) {
  const waiting = states.states.filter((s2) => s2.pendingCall && s2.lastFailure && s2.pendingCall.attempt > 1);
  if (waiting.length === 0) return [];
  return [
    [
      "Backing off",
      h(
        "div",
        { "data-testid": "backing-off" },
        waiting.map(
          (s2) => h(
            "div",
            {},
            `${s2.stateId} ${s2.pendingCall?.api ?? ""}: attempt ${s2.pendingCall?.attempt ?? "?"} `,
            s2.pendingCall ? `due ${formatTime(s2.pendingCall.dueTimestampMs)} (${formatRelative(s2.pendingCall.dueTimestampMs, now)})` : "",
            s2.lastFailure ? h("span", { class: "small" }, ` after: ${s2.lastFailure.error}`) : null
          )
        )
      )
    ]
  ];
}
function stateRow(s2, now) {
  const call = s2.pendingCall;
  const waiting = s2.waitingFor;
  const waits2 = [];
  for (const timer of waiting?.timers ?? []) {
    const due = timer.dueTimestampMs;
    waits2.push(
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
    waits2.push(
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
    { "data-testid": "state-row", "data-state-id": s2.stateId, class: call?.phase === "PARKED" || call?.phase === "PAUSED" ? "attention" : "" },
    h("td", {}, s2.stateId, h("div", { class: "mono small" }, s2.stateExecutionId)),
    h("td", {}, h("span", { class: statusClass(s2.status) }, s2.status)),
    h(
      "td",
      {},
      call ? [
        `${call.api} attempt `,
        h("strong", { "data-testid": "state-attempt" }, String(call.attempt)),
        " ",
        h("span", { class: `phase phase-${call.phase.toLowerCase()}`, "data-testid": "state-phase" }, call.phase),
        call.parkedKind === "NON_RETRYABLE_WORKER_ERROR" ? h("div", { class: "small" }, "worker error, not retried") : null,
        call.parkedReason ? h("div", { class: "small" }, call.parkedReason) : null,
        phaseNote(call.phase) ? h("div", { class: "small", "data-testid": "state-phase-note" }, phaseNote(call.phase), " (", h("a", { href: "#/flow-limits" }, "flow limits"), ")") : null
      ] : "—"
    ),
    h("td", {}, call ? [formatTime(call.dueTimestampMs), h("div", { class: "small" }, formatRelative(call.dueTimestampMs, now))] : "—"),
    h(
      "td",
      { "data-testid": "state-last-failure" },
      s2.lastFailure ? [`${s2.lastFailure.api} attempt ${s2.lastFailure.attempt}: `, h("span", { class: "error" }, s2.lastFailure.error), h("div", { class: "small" }, formatTime(s2.lastFailure.timestampMs))] : "—"
    ),
    h("td", {}, waiting ? [h("div", { class: "small" }, waiting.waitingType), ...waits2] : "—")
  );
}

// src/views/querybuilder.ts
var VALUE_HINTS = {
  status: "RUNNING",
  processType: "type",
  processId: "id or prefix",
  startTime: "2026-01-31T12:00",
  closeTime: "2026-01-31T12:00",
  paused: "true",
  currentStateId: "state id",
  waitingOnQueue: "queue name",
  deploymentName: "deployment name",
  deploymentVersion: "1.4.0"
};
var IN_HINTS = {
  priority: "1, 2"
};
var FIELD_TITLES = {
  parked: "a task is set aside until an operator acts (retry now or give up)",
  backingOff: "a state call failed and waits for its next attempt",
  waitingOnTimer: "a durable timer has not fired yet",
  waitingOnQueue: "a state waits for messages of this local queue",
  deploymentName: "the registered deployment it runs on (NULL: none registered its worker URL)",
  deploymentVersion: "the version of the registered deployment it runs on",
  priority: "its start's priority: 1 (its tasks claimed first) to 5 (last); 3 is the default"
};
var isBoolean = (c) => c.kind === "field" && BOOLEAN_FIELDS.includes(c.name);
var isOnePriority = (c) => c.kind === "field" && c.name === "priority" && c.op !== "IN";
function fitValue(c) {
  if (isBoolean(c) && c.value !== "true" && c.value !== "false") c.value = "true";
  if (isOnePriority(c)) {
    const first = c.value.split(",")[0]?.trim() ?? "";
    c.value = PRIORITIES.includes(first) ? first : PRIORITIES[0];
  }
}
function queryBuilder(initial, initialTable, processType) {
  const tableName = h("input", { "data-testid": "where-table", value: initialTable?.tableName ?? "", placeholder: "table", size: 12 });
  const keyColumn = h("input", { "data-testid": "where-key", value: initialTable?.primaryKeyColumn ?? "", placeholder: "key column", size: 10 });
  const error = h("p", { class: "error small", role: "alert", "data-testid": "where-error", hidden: true });
  const rows = h("div", { class: "where-groups" });
  const textArea = h("textarea", { rows: 2, class: "mono", "data-testid": "where-text", placeholder: "execution.status = 'RUNNING' and amount >= 100" }, initial);
  let groups = [[]];
  let drawable = true;
  const showError = (message) => {
    error.textContent = message;
    error.hidden = message === "";
  };
  const fromText = () => {
    try {
      const parsed = treeToGroups(textToTree(textArea.value));
      drawable = parsed !== void 0;
      groups = parsed ?? [[]];
      showError("");
    } catch (e) {
      drawable = false;
      showError(`The filter text: ${e instanceof Error ? e.message : String(e)}`);
    }
    draw();
  };
  const toText = () => {
    textArea.value = treeToText(groupsToTree(groups));
    showError("");
  };
  function conditionRow(group, c, index) {
    const changed = () => toText();
    const kind = h(
      "select",
      { "data-testid": "where-kind", "aria-label": "condition on" },
      h("option", { value: "field", selected: c.kind === "field" }, "execution"),
      h("option", { value: "column", selected: c.kind === "column", title: processType() ? "" : "needs a process type" }, "column")
    );
    const name = c.kind === "field" ? h("select", { "data-testid": "where-name", "aria-label": "field" }, FIELDS.map((f) => h("option", { value: f, selected: c.name === f, title: FIELD_TITLES[f] ?? "" }, f))) : h("input", { "data-testid": "where-name", "aria-label": "column", value: c.name, placeholder: "column" });
    const ops = opsOf(c).includes(c.op) ? opsOf(c) : [...opsOf(c), c.op];
    const op = h("select", { "data-testid": "where-op", "aria-label": "operator" }, ops.map((o) => h("option", { value: o, selected: c.op === o }, o)));
    const priorities = PRIORITIES.includes(c.value.trim()) ? PRIORITIES : [...PRIORITIES, c.value.trim()];
    const value = isBoolean(c) ? h("select", { "data-testid": "where-value", "aria-label": "value" }, ["true", "false"].map((v) => h("option", { value: v, selected: c.value === v }, v))) : isOnePriority(c) ? h("select", { "data-testid": "where-value", "aria-label": "value" }, priorities.map((v) => h("option", { value: v, selected: c.value.trim() === v }, /^[1-5]$/.test(v) ? formatPriority(Number(v)) : v))) : h("input", {
      "data-testid": "where-value",
      "aria-label": "value",
      value: c.value,
      placeholder: c.op === "IN" ? IN_HINTS[c.name] ?? "a, b, c" : VALUE_HINTS[c.name] ?? "value",
      hidden: c.op === "IS NULL" || c.op === "IS NOT NULL"
    });
    kind.addEventListener("change", () => {
      c.kind = kind.value;
      c.name = c.kind === "field" ? "status" : "";
      if (!opsOf(c).includes(c.op)) c.op = "=";
      toText();
      draw();
    });
    name.addEventListener("input", () => {
      c.name = name.value;
      changed();
    });
    name.addEventListener("change", () => {
      c.name = name.value;
      if (c.kind !== "field") return changed();
      if (!opsOf(c).includes(c.op)) c.op = opsOf(c)[0] ?? "=";
      fitValue(c);
      toText();
      draw();
    });
    op.addEventListener("change", () => {
      c.op = op.value;
      fitValue(c);
      toText();
      draw();
    });
    for (const event of ["input", "change"]) {
      value.addEventListener(event, () => {
        c.value = value.value;
        changed();
      });
    }
    const remove = h("button", { type: "button", class: "link", "data-testid": "where-remove", title: "remove this condition" }, "×");
    remove.addEventListener("click", () => {
      group.splice(index, 1);
      if (group.length === 0 && groups.length > 1) groups.splice(groups.indexOf(group), 1);
      toText();
      draw();
    });
    return h("div", { class: "where-row", "data-testid": "where-row" }, index > 0 && h("span", { class: "small" }, "and "), kind, name, op, value, remove);
  }
  function draw() {
    if (!drawable) {
      replace(rows, h("p", { class: "small" }, "This filter is edited as text."));
      return;
    }
    replace(
      rows,
      groups.map(
        (group, g) => h(
          "div",
          { class: "where-group", "data-testid": "where-group" },
          g > 0 && h("div", { class: "small" }, "or"),
          group.map((c, i) => conditionRow(group, c, i)),
          h(
            "button",
            {
              type: "button",
              class: "link",
              "data-testid": "where-add",
              onclick: () => {
                group.push({ kind: "field", name: "status", op: "=", value: "" });
                toText();
                draw();
              }
            },
            "+ condition"
          )
        )
      ),
      h(
        "button",
        {
          type: "button",
          class: "link",
          "data-testid": "where-add-group",
          onclick: () => {
            groups.push([{ kind: "field", name: "status", op: "=", value: "" }]);
            toText();
            draw();
          }
        },
        "+ or group"
      )
    );
  }
  textArea.addEventListener("change", fromText);
  fromText();
  return {
    element: h(
      "div",
      { class: "query-builder", "data-testid": "query-builder" },
      h("div", { class: "small" }, "Where"),
      rows,
      h("label", { class: "where-text" }, h("span", { class: "small" }, "as text "), textArea),
      h(
        "div",
        { class: "small", title: "needed for column conditions when the process type has no registered definition; found from its latest execution when left empty" },
        "business table ",
        tableName,
        " ",
        keyColumn
      ),
      error
    ),
    text: () => textArea.value.trim(),
    table: () => tableName.value.trim() && keyColumn.value.trim() ? { tableName: tableName.value.trim(), primaryKeyColumn: keyColumn.value.trim() } : void 0,
    showError
  };
}

// src/views/executions.ts
var PAGE_SIZE = 25;
var REFRESH_MS5 = 5e3;
var state = {
  filter: {},
  where: "",
  table: void 0,
  /** The selection (as its URL query) the pages below belong to. */
  query: "",
  /** Tokens of the pages before the current one; the current page's token last. */
  pages: [],
  autoRefresh: true
};
function executionsView(root, selection) {
  state.filter = selection.filter;
  state.where = selection.where;
  state.table = selection.table;
  const query = selectionToQuery(selection);
  if (query !== state.query) state.pages = [];
  state.query = query;
  const counts = h("div", { class: "counts", "data-testid": "status-counts" });
  const results = h("div", { class: "results" });
  const pager = h("div", { class: "pager" });
  const explained = h("div", {});
  let timer;
  let stopped = false;
  const field = (name, value, placeholder, type = "text") => h("input", { name, type, value: value ?? "", placeholder, "data-testid": `filter-${name}` });
  const status = h(
    "select",
    { name: "status", "data-testid": "filter-status" },
    h("option", { value: "" }, "any status"),
    STATUSES.map((s2) => h("option", { value: s2, selected: state.filter.status === s2 }, s2))
  );
  const processType = field("processType", state.filter.processType, "process type");
  const processId = field("processId", state.filter.processId, "process id");
  const from = field("from", isoInput(state.filter.startTimeMinMs), "started from (UTC)", "datetime-local");
  const to = field("to", isoInput(state.filter.startTimeMaxMs), "started before (UTC)", "datetime-local");
  const refresh = h("input", { type: "checkbox", checked: state.autoRefresh, "data-testid": "auto-refresh" });
  const builder = queryBuilder(state.where, state.table, () => processType.value.trim());
  const apply = async () => {
    const filter = {
      ...status.value ? { status: status.value } : {},
      ...processType.value.trim() ? { processType: processType.value.trim() } : {},
      ...processId.value.trim() ? { processId: processId.value.trim() } : {},
      ...optionalNumber("startTimeMinMs", parseUtcInput(from.value)),
      ...optionalNumber("startTimeMaxMs", parseUtcInput(to.value))
    };
    let table2 = builder.table();
    if (!table2 && filter.processType) {
      try {
        if (hasColumnCondition(textToTree(builder.text()))) table2 = await businessTableOf(filter.processType);
      } catch {
      }
    }
    const before = location.hash;
    location.hash = executionsHref({ filter, where: builder.text(), ...table2 ? { table: table2 } : {} });
    if (location.hash === before) {
      state.pages = [];
      void load();
    }
  };
  const explain = async (what) => {
    const unavailable = explainUnavailable(what, builder.text(), state.where);
    if (unavailable) {
      replace(explained, h("p", { class: "small", role: "status", "data-testid": "query-plan-unavailable" }, unavailable));
      return;
    }
    const failed = `Could not explain ${EXPLAINED[what].name}`;
    try {
      const { plan } = what === "list" ? await api.list(state.filter, PAGE_SIZE, void 0, selectionRequest({ filter: {}, where: state.where }).where, state.table, true) : await api.count(statusCountRequest(state.filter, state.where, state.table, true));
      builder.showError("");
      if (stopped) return;
      replace(explained, plan ? queryPlanPanel(plan, what) : h("p", { class: "error", role: "alert" }, `${failed}: the service answered no plan.`));
    } catch (error) {
      if (!stopped) showFailure(error, failed, explained);
    }
  };
  const selected = () => ({ filter: state.filter, where: state.where, ...state.table ? { table: state.table } : {} });
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
      "Explain"
    ),
    h("label", { class: "refresh" }, refresh, " auto-refresh"),
    h(
      "button",
      { type: "button", "data-testid": "batch-start", title: "act on every execution this filter selects", onclick: () => void startBatch(selected()) },
      "Act on all matching…"
    )
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
  async function load() {
    try {
      const token2 = state.pages.at(-1);
      const { where } = selectionRequest({ filter: {}, where: state.where });
      const [page, countsByStatus] = await Promise.all([
        api.list(state.filter, PAGE_SIZE, token2, where, state.table),
        countStatuses(state.filter, state.where, state.table)
      ]);
      builder.showError("");
      const parked = await parkedOf(page.executions);
      if (stopped) return;
      replace(counts, countsByStatus.map(([s2, count]) => countChip(s2, String(count))));
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
      if (!stopped) showFailure(error, "Could not list executions", results);
    }
  }
  function showFailure(error, what, into) {
    if (error instanceof ApiError && error.status === 400) builder.showError(error.message);
    else if (error instanceof Error && !(error instanceof ApiError)) builder.showError(`The filter text: ${error.message}`);
    replace(into, h("p", { class: "error", role: "alert" }, `${what}: ${error instanceof Error ? error.message : String(error)}`));
  }
  function page_(direction, token2) {
    if (direction === 1) state.pages.push(token2);
    else state.pages.pop();
    void load();
  }
  function countChip(s2, text) {
    return h(
      "button",
      {
        type: "button",
        class: `chip ${statusClass(s2)}${state.filter.status === s2 ? " selected" : ""}`,
        "data-testid": `count-${s2}`,
        onclick: () => {
          status.value = state.filter.status === s2 ? "" : s2;
          void apply();
        }
      },
      `${s2} `,
      h("strong", {}, text)
    );
  }
  function schedule() {
    if (timer) clearInterval(timer);
    timer = state.autoRefresh ? setInterval(() => void load(), REFRESH_MS5) : void 0;
  }
  const countsRow = h(
    "div",
    { class: "counts-row" },
    counts,
    h(
      "button",
      { type: "button", "data-testid": "explain-count", title: "the database's plan for the counts per status: whether an index serves them", onclick: () => void explain("count") },
      "Explain"
    )
  );
  replace(root, h("h1", {}, "Executions"), form, builder.element, countsRow, explained, results, pager);
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
async function countStatuses(filter, where, table2) {
  const counted = await api.count(statusCountRequest(filter, where, table2));
  const byStatus = new Map((counted.groups ?? []).map((g) => [g.value, g.count]));
  return STATUSES.map((s2) => [s2, byStatus.get(s2) ?? 0]);
}
async function businessTableOf(processType) {
  if (await definitionOrNothing(processType).catch(() => void 0)) return void 0;
  const latest = (await api.list({ processType }, 1)).executions[0];
  if (!latest) return void 0;
  const config = (await api.describe(latest.processId, latest.processExecutionId)).globalAttributeConfig;
  return config ? { tableName: config.tableName, primaryKeyColumn: config.primaryKey.column } : void 0;
}
var EXPLAINED = {
  list: { name: "the filter", title: "Plan of this filter", served: "Indexes serve this filter." },
  count: { name: "the count", title: "Plan of the counts per status", served: "Indexes serve this count." }
};
function queryPlanPanel(plan, what) {
  return h(
    "div",
    { class: "panel query-plan", "data-testid": "query-plan", "data-explained": what },
    h("strong", {}, EXPLAINED[what].title),
    plan.advice.length > 0 ? h("ul", { class: "plan-advice" }, plan.advice.map((advice) => h("li", { "data-testid": "plan-advice" }, advice))) : h("p", { class: "plan-served", "data-testid": "plan-served" }, EXPLAINED[what].served),
    plan.fullScans.length > 0 && h(
      "p",
      { class: "small", "data-testid": "plan-full-scans" },
      "Read in full: ",
      plan.fullScans.flatMap((table2, i) => [i > 0 && ", ", h("span", { class: "mono" }, table2)])
    ),
    h(
      "details",
      { "data-testid": "plan-json" },
      h("summary", { class: "small" }, "The database's plan (EXPLAIN)"),
      h("pre", {}, JSON.stringify(plan.plan, null, 2))
    )
  );
}
async function parkedOf(executions) {
  const running = executions.filter((e) => e.status === "RUNNING" && !e.pending);
  const described = await Promise.all(
    running.map((e) => api.describe(e.processId, e.processExecutionId).catch(() => void 0))
  );
  const parked = /* @__PURE__ */ new Map();
  for (const d of described) if (d?.parkedTasks) parked.set(d.processExecutionId, d.parkedTasks);
  return parked;
}
function backingOffCell(b, now) {
  const error = b.lastError?.trim() ?? "";
  const short = shorten(error);
  return h(
    "div",
    { class: "backing-off", "data-testid": "backing-off" },
    h("span", { class: "badge badge-backing-off", "data-testid": "backing-off-attempt" }, `attempt ${b.attempt}`),
    " ",
    h("span", { class: "small", title: `${formatTime(b.nextAttemptTimestampMs)} UTC`, "data-testid": "backing-off-next" }, formatRelative(b.nextAttemptTimestampMs, now)),
    error && (short === error ? h("div", { class: "small error-text", title: error, "data-testid": "backing-off-error" }, error) : h(
      "details",
      { class: "small error-text", "data-testid": "backing-off-error" },
      h("summary", { title: error }, short),
      h("pre", {}, error)
    ))
  );
}
function priorityCell(priority) {
  const p = priority ?? 3;
  const kind = p < 3 ? " priority-raised" : p > 3 ? " priority-lowered" : "";
  return h("span", { class: `priority${kind}`, title: `priority ${formatPriority(p)}`, "data-testid": "execution-row-priority", "data-priority": p }, String(p));
}
function executionsTable(executions, parked) {
  const now = Date.now();
  const rows = executions.map((e) => {
    const parkedTasks = parked.get(e.processExecutionId);
    const operatorPaused = e.paused && !e.pending;
    const status = shownStatus(e);
    return h(
      "tr",
      {
        class: operatorPaused || parkedTasks || e.backingOff ? "attention" : "",
        "data-testid": "execution-row",
        "data-process-id": e.processId
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
            ...e.pending ? { title: "waiting for a running slot of its concurrency key (its type's maxRunningExecutions): it starts by itself" } : {}
          },
          status
        ),
        operatorPaused && h("span", { class: "badge badge-paused", "data-testid": "badge-paused" }, "paused"),
        parkedTasks && h("span", { class: "badge badge-parked", "data-testid": "badge-parked" }, `${parkedTasks} parked`)
      ),
      h("td", {}, priorityCell(e.priority)),
      h("td", {}, e.backingOff ? backingOffCell(e.backingOff, now) : ""),
      h("td", {}, formatTime(e.startTimestampMs)),
      h("td", {}, formatTime(e.closeTimestampMs)),
      h("td", { class: "mono small" }, e.processExecutionId)
    );
  });
  return table(
    ["Process id", "Type", "Status", "Priority", "Backing off", "Started (UTC)", "Closed (UTC)", "Execution id"],
    rows,
    "No executions match.",
    "executions-table"
  );
}

// src/changes.ts
var newestFirst = (a, b) => b.changeId - a.changeId;
function withFirstPage(shown, page) {
  const token2 = page.nextPageToken ?? void 0;
  if (!shown) return { changes: [...page.changes].sort(newestFirst), ...token2 ? { nextPageToken: token2 } : {} };
  const known = new Set(shown.changes.map((c) => c.changeId));
  const fresh = page.changes.filter((c) => !known.has(c.changeId));
  if (fresh.length === 0) return shown;
  if (token2 && fresh.length === page.changes.length) return { changes: [...page.changes].sort(newestFirst), nextPageToken: token2 };
  return { ...shown, changes: [...fresh, ...shown.changes].sort(newestFirst) };
}
function withNextPage(shown, page) {
  const known = new Set(shown.changes.map((c) => c.changeId));
  const token2 = page.nextPageToken ?? void 0;
  return {
    changes: [...shown.changes, ...page.changes.filter((c) => !known.has(c.changeId))].sort(newestFirst),
    ...token2 ? { nextPageToken: token2 } : {}
  };
}

// src/views/changes.ts
function changeHistory(options) {
  const element = h("div");
  let shown;
  let problem;
  let reading = false;
  const describe = (error) => `Could not read the history: ${error instanceof Error ? error.message : String(error)}`;
  function render() {
    const token2 = shown?.nextPageToken;
    replace(
      element,
      problem && h("p", { class: "error", role: "alert" }, problem),
      shown && table(
        ["Changed (UTC)", ...options.columns.map((c) => c.label), "By", "Reason"],
        shown.changes.map(
          (change) => h(
            "tr",
            options.row(change),
            h("td", { class: "small", "data-testid": "change-time" }, formatTime(change.changedTimestampMs)),
            options.columns.map((c) => c.cell(change)),
            h("td", { "data-testid": "change-by" }, change.changedBy),
            h("td", { "data-testid": "change-reason" }, change.reason ?? "")
          )
        ),
        options.empty,
        options.testId
      ),
      shown && token2 && h(
        "div",
        { class: "pager" },
        h("button", { type: "button", disabled: reading, "data-testid": `${options.testId}-more`, onclick: () => void more(token2) }, "More"),
        h("span", { class: "small" }, `the latest ${shown.changes.length} changes`)
      )
    );
  }
  async function refresh() {
    try {
      shown = withFirstPage(shown, await options.read(options.pageSize));
      problem = void 0;
    } catch (error) {
      problem = describe(error);
    }
    render();
  }
  async function more(token2) {
    if (reading) return;
    reading = true;
    render();
    try {
      const page = await options.read(options.pageSize, token2);
      if (shown && shown.nextPageToken === token2) shown = withNextPage(shown, page);
      problem = void 0;
    } catch (error) {
      problem = describe(error);
    } finally {
      reading = false;
    }
    render();
  }
  return { element, refresh };
}

// src/views/flow-limits.ts
var REFRESH_MS6 = 5e3;
var HISTORY_SIZE = 50;
function flowLimitsView(root) {
  const limits = h("div");
  const history = changeHistory({
    read: (pageSize, nextPageToken) => api.flowLimitsHistory({ pageSize, ...nextPageToken ? { nextPageToken } : {} }),
    pageSize: HISTORY_SIZE,
    columns: [
      { label: "Process type", cell: (c) => h("td", {}, c.processType) },
      { label: "State", cell: (c) => h("td", { class: "mono small" }, scopeText(c.stateId)) },
      { label: "Source", cell: (c) => h("td", {}, c.source) },
      { label: "Change", cell: (c) => h("td", { "data-testid": "flow-limit-change-text" }, changeText(c)) }
    ],
    row: () => ({ "data-testid": "flow-limit-change" }),
    empty: "No changes yet.",
    testId: "flow-limit-history"
  });
  let stopped = false;
  async function load() {
    try {
      void history.refresh();
      const listed = await api.flowLimitsList();
      if (stopped) return;
      replace(
        limits,
        table(
          ["Process type", "State", "Declared", "Override", "Effective", "Updated (UTC)", ""],
          listed.limits.map(
            (e) => h(
              "tr",
              { "data-testid": "flow-limit-row", "data-process-type": e.processType, "data-state-id": e.stateId ?? "" },
              h("td", {}, h("a", { href: definitionHref(e.processType) }, e.processType)),
              h("td", { class: "mono small" }, scopeText(e.stateId)),
              h("td", { "data-testid": "flow-limit-declared" }, limitsText(e.declared)),
              h("td", { "data-testid": "flow-limit-override" }, limitsText(e.override)),
              h("td", { "data-testid": "flow-limit-effective" }, h("strong", {}, limitsText(e.effective))),
              h("td", { class: "small" }, formatTime(e.updatedTimestampMs)),
              h("td", {}, h("button", { type: "button", class: "link", "data-testid": "flow-limit-edit", onclick: () => form.edit(e.processType, e.stateId ?? "") }, "Change"))
            )
          ),
          "No limits yet: a definition may declare them, or set an override below.",
          "flow-limits-table"
        )
      );
    } catch (error) {
      if (!stopped) replace(limits, h("p", { class: "error", role: "alert" }, `Could not list flow limits: ${String(error)}`));
    }
  }
  const form = setForm(() => void load());
  replace(
    root,
    h("h1", {}, "Flow limits"),
    h(
      "p",
      { class: "small" },
      "How many worker calls a second, and how many at once, the async service makes for a process type (all its states together) or one state; and, for a type, how many of its executions run at once per concurrency key (a start's concurrencyKey, or the value it writes for the limit's concurrency key attribute, a column of its business row), the priority of its starts that name none (1 claimed first to 5; none: 3), and their fairness (the attribute whose value is the fairness key of a start that names none, waiting tasks of a priority being claimed key by key in turn, and how many tasks such a start's key takes a turn; none: no key, 1). An override wins while set, whole (what it leaves out is not in force); cleared, the declared limits apply again. A call held back shows as FLOW_LIMITED in an execution's states; a start held back, as a PENDING execution."
    ),
    limits,
    form.element,
    h("h2", {}, "History"),
    history.element
  );
  void load();
  const timer = setInterval(() => void load(), REFRESH_MS6);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
function setForm(changed) {
  const inputs = /* @__PURE__ */ new Map();
  const input = (name, placeholder = "", list2) => {
    const element2 = h("input", { name, placeholder, autocomplete: "off", list: list2, "data-testid": `flow-limit-${name}` });
    inputs.set(name, element2);
    return element2;
  };
  const row = (label, control, hint) => h("label", {}, h("span", {}, label), control, hint && h("span", { class: "small" }, hint));
  const types = h("datalist", { id: "flow-limit-process-types" });
  const action = h(
    "select",
    { name: "action", "data-testid": "flow-limit-action" },
    ACTIONS.map(([value, label]) => h("option", { value }, label))
  );
  inputs.set("action", action);
  const rateRow = row("Max calls a second", input("maxCallsPerSecond", "20"), "more than 0, at most 1,000,000; 0.5 is one call every 2 s; empty: no rate limit");
  const atOnceRow = row("Max concurrent calls", input("maxConcurrentCalls", "8"), "at most so many calls running at once, 1 to 100,000; empty: no such limit");
  const running = input("maxRunningExecutions", "2");
  const runningRow = row(
    "Max running executions",
    running,
    "per concurrency key, 1 to 100,000: a start over it waits PENDING until one of its key closes; a type's limit (State empty); empty: no such limit"
  );
  const keyAttribute = input("concurrencyKeyAttribute", "customer_id");
  const keyAttributeRow = row(
    "Concurrency key attribute",
    keyAttribute,
    "with Max running executions: a column of the type's business row; a start naming no concurrencyKey is counted under the value it writes for it (and refused if it writes none); empty: the start's concurrencyKey"
  );
  const priority = h(
    "select",
    { name: "priority", "data-testid": "flow-limit-priority" },
    h("option", { value: "" }, "none (3, the default)"),
    [1, 2, 3, 4, 5].map((p) => h("option", { value: String(p) }, formatPriority(p)))
  );
  inputs.set("priority", priority);
  const priorityRow = row(
    "Priority",
    priority,
    "1 claimed first; of the type's starts that name none (a start's own wins), within a second, not those already started; a type's (State empty); it limits nothing, and an override replaces the declared limits whole: give those to keep with it"
  );
  const fairnessAttribute = input("fairnessKeyAttribute", "tenant_id");
  const fairnessAttributeRow = row(
    "Fairness key attribute",
    fairnessAttribute,
    "a column of the type's business row; a start naming no fairnessKey is keyed by the value it writes for it (none written: no key), and waiting tasks of a priority are claimed key by key in turn; a type's (State empty); it limits nothing; empty: only a start's own fairnessKey"
  );
  fairnessAttributeRow.classList.add("starts-line");
  const fairnessWeight = input("fairnessWeight", "2");
  const fairnessWeightRow = row(
    "Fairness weight",
    fairnessWeight,
    "how many tasks a key takes in each turn, 1 to 1,000, for the type's keyed starts that name none (a start's own wins); a type's (State empty); empty: 1"
  );
  const limitRows = [rateRow, atOnceRow, runningRow, keyAttributeRow, priorityRow, fairnessAttributeRow, fairnessWeightRow];
  action.addEventListener("change", () => {
    for (const limitRow of limitRows) limitRow.hidden = action.value !== "limits";
  });
  const stateInput = input("stateId", "optional");
  const typeOnly = () => {
    running.disabled = stateInput.value.trim() !== "";
    for (const field of [keyAttribute, priority, fairnessAttribute, fairnessWeight]) field.disabled = running.disabled;
  };
  stateInput.addEventListener("input", typeOnly);
  const problem = h("p", { class: "error", role: "alert", "data-testid": "flow-limit-error", hidden: true });
  const done = h("p", { class: "small", role: "status", "data-testid": "flow-limit-done", hidden: true });
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "flow-limit-submit" }, "Apply");
  const show = (error, field) => {
    problem.textContent = error ?? "";
    problem.hidden = !error;
    for (const [name, element2] of inputs) element2.toggleAttribute("aria-invalid", name === field);
    if (field) inputs.get(field)?.focus();
  };
  const apply = async () => {
    done.hidden = true;
    const checked = flowLimitsRequest((name) => inputs.get(name)?.value ?? "");
    if ("error" in checked) {
      show(checked.error, checked.field);
      return;
    }
    submit.disabled = true;
    try {
      const entry = await api.flowLimitsSet(checked.request);
      show(void 0);
      done.textContent = `${entry.processType} ${scopeText(entry.stateId)}: ${limitsText(entry.effective)} in force.`;
      done.hidden = false;
      changed();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      show(`The service refused the change: ${message}`, errorField(message));
    } finally {
      submit.disabled = false;
    }
  };
  const element = h(
    "details",
    { class: "panel schedule-create", "data-testid": "flow-limit-form" },
    h("summary", {}, h("strong", {}, "Set or clear an override")),
    h(
      "form",
      {
        class: "schedule-form",
        onsubmit: (event) => {
          event.preventDefault();
          void apply();
        }
      },
      row("Process type", input("processType", "OrderProcess", "flow-limit-process-types")),
      row("State", stateInput, "empty: all the type's states together"),
      // Two columns: the change beside its reason, then the limits in pairs, the
      // running-executions limit beside the attribute that keys it, then the type's priority
      // (alone on its line), then the fairness key attribute beside the weight of the starts it keys.
      row("Change", action),
      row("Reason", input("reason", "optional"), "kept in the history"),
      rateRow,
      atOnceRow,
      runningRow,
      keyAttributeRow,
      priorityRow,
      fairnessAttributeRow,
      fairnessWeightRow,
      problem,
      done,
      h("div", { class: "buttons" }, submit),
      types
    )
  );
  void api.definitions().then(
    ({ definitions }) => replace(types, definitions.map((d) => h("option", { value: d.processType }))),
    () => void 0
  );
  const edit = (processType, stateId) => {
    const set = (name, value) => {
      const field = inputs.get(name);
      if (field) field.value = value;
    };
    set("processType", processType);
    set("stateId", stateId);
    typeOnly();
    element.open = true;
    inputs.get("maxCallsPerSecond")?.focus();
  };
  return { element, edit };
}

// src/schedules.ts
var OVERLAP_POLICIES = ["SKIP", "BUFFER_ONE", "ALLOW_ALL", "TERMINATE_PREVIOUS"];
function specText(spec) {
  if (spec.cron) return `cron ${spec.cron.expression} (${spec.cron.timeZone || "UTC"})`;
  if (spec.interval) {
    const every = `every ${formatDuration(spec.interval.everySeconds * 1e3)}`;
    return spec.interval.jitterSeconds ? `${every}, up to ${formatDuration(spec.interval.jitterSeconds * 1e3)} later` : every;
  }
  return "—";
}
function scheduleState(schedule) {
  return schedule.paused ? "paused" : "active";
}
function declaredByText(schedule) {
  return schedule.declaredBy ? `declared by ${schedule.declaredBy} (its code owns it)` : void 0;
}
function deleteRefusal(schedule) {
  return schedule.declaredBy ? `The definition of ${schedule.declaredBy} declares this schedule: registering it without the schedule deletes it.` : void 0;
}
function nextFireText(schedule) {
  if (schedule.paused) return "— (paused)";
  return schedule.nextFireTimestampMs === null || schedule.nextFireTimestampMs === void 0 ? "— (no more)" : formatTime(schedule.nextFireTimestampMs);
}
function lastFiringText(firings) {
  const last = firings?.[0];
  if (!last) return "none yet";
  return `${last.outcome} (${last.trigger}, ${formatTime(last.nominalTimestampMs)})`;
}
function canonical(value) {
  if (value === null || value === void 0) return "null";
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value).filter(([, v]) => v !== null && v !== void 0).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
var same2 = (a, b) => canonical(a) === canonical(b);
function valueText2(value) {
  if (value === null || value === void 0 || value === "") return "—";
  return typeof value === "string" ? value : canonical(value);
}
var START_FIELDS = ["processType", "workerUrl", "startStateId", "startStateInput", "startStateConfig", "processStartConfig"];
function changedFields(before, after) {
  const lines = [];
  if (!same2(before.spec, after.spec)) lines.push(`spec: ${specText(before.spec)} → ${specText(after.spec)}`);
  for (const field of START_FIELDS) {
    const [was, is] = [before.start[field] || void 0, after.start[field] || void 0];
    if (same2(was, is)) continue;
    const plain = (v) => v === null || v === void 0 || typeof v === "string";
    lines.push(plain(was) && plain(is) ? `start.${field}: ${valueText2(was)} → ${valueText2(is)}` : `start.${field} changed`);
  }
  if (before.overlapPolicy !== after.overlapPolicy) lines.push(`overlapPolicy: ${before.overlapPolicy} → ${after.overlapPolicy}`);
  if (before.catchupWindowSeconds !== after.catchupWindowSeconds) {
    lines.push(`catchupWindowSeconds: ${formatDuration(before.catchupWindowSeconds * 1e3)} → ${formatDuration(after.catchupWindowSeconds * 1e3)}`);
  }
  if (before.paused !== after.paused) lines.push(`paused: ${String(before.paused)} → ${String(after.paused)}`);
  if (!same2(before.note || void 0, after.note || void 0)) lines.push(`note: ${valueText2(before.note)} → ${valueText2(after.note)}`);
  return lines;
}
function scheduleChangeLines(change) {
  const lines = [];
  if (change.action === "UPDATED" && change.before && change.after) {
    const fields = changedFields(change.before, change.after);
    lines.push(...fields.length > 0 ? fields : ["no field changed"]);
  }
  if (change.detail) lines.push(change.detail);
  return lines;
}
var WHOLE = /^\d+$/;
function scheduleRequest(values) {
  const get = (name) => values(name).trim();
  const scheduleId = get("scheduleId");
  if (!scheduleId) return { error: "The schedule id is missing.", field: "scheduleId" };
  const processType = get("processType");
  if (!processType) return { error: "The process type is missing.", field: "processType" };
  let spec;
  if (get("kind") === "interval") {
    const every = get("everySeconds");
    if (!WHOLE.test(every) || Number(every) < 1) {
      return { error: `The interval ${every ? `${every} ` : ""}is not a whole number of seconds, 1 or more.`, field: "everySeconds" };
    }
    const jitter = get("jitterSeconds");
    if (jitter && !WHOLE.test(jitter)) return { error: `The jitter ${jitter} is not a whole number of seconds.`, field: "jitterSeconds" };
    spec = { interval: { everySeconds: Number(every), ...jitter && Number(jitter) > 0 ? { jitterSeconds: Number(jitter) } : {} } };
  } else {
    const expression = get("cronExpression");
    if (!expression) return { error: "The cron expression is missing: 5 fields (minute hour day month weekday), or 6 with seconds first.", field: "cronExpression" };
    const timeZone = get("timeZone");
    spec = { cron: { expression, ...timeZone ? { timeZone } : {} } };
  }
  const catchup = get("catchupWindowSeconds");
  if (catchup && !WHOLE.test(catchup)) return { error: `The catch-up window ${catchup} is not a whole number of seconds.`, field: "catchupWindowSeconds" };
  const workerUrl = get("workerUrl");
  const startStateId = get("startStateId");
  const overlap = get("overlapPolicy");
  const request = {
    scheduleId,
    spec,
    start: { processType, ...workerUrl ? { workerUrl } : {}, ...startStateId ? { startStateId } : {} },
    ...overlap ? { overlapPolicy: overlap } : {},
    ...catchup ? { catchupWindowSeconds: Number(catchup) } : {}
  };
  return { request };
}
var FIELDS4 = [
  ["spec.cron.expression", "cronExpression"],
  ["spec.cron.timeZone", "timeZone"],
  ["spec.interval.everySeconds", "everySeconds"],
  ["spec.interval.jitterSeconds", "jitterSeconds"],
  ["start.workerUrl", "workerUrl"],
  ["workerUrl", "workerUrl"],
  ["start.startStateId", "startStateId"],
  ["startStateId", "startStateId"],
  ["start.processType", "processType"],
  ["processType", "processType"],
  ["catchupWindowSeconds", "catchupWindowSeconds"],
  ["overlapPolicy", "overlapPolicy"],
  ["scheduleId", "scheduleId"]
];
function errorField2(message, subType = "") {
  if (subType === "SCHEDULE_ALREADY_EXISTS") return "scheduleId";
  let best;
  for (const [path, field] of FIELDS4) {
    const at = message.indexOf(path);
    if (at >= 0 && (best === void 0 || at < best.at)) best = { at, field };
  }
  return best?.field;
}

// src/views/schedule.ts
var POLL_MS2 = 2e3;
var HISTORY_POLL_MS = 5e3;
var HISTORY_SIZE2 = 20;
function scheduleView(root, scheduleId) {
  const body = h("div", { "data-testid": "schedule" });
  const history = changeHistory({
    read: (pageSize, nextPageToken) => api.scheduleHistory({ scheduleId, pageSize, ...nextPageToken ? { nextPageToken } : {} }),
    pageSize: HISTORY_SIZE2,
    columns: [
      { label: "Action", cell: (c) => h("td", { "data-testid": "schedule-change-action" }, c.action) },
      {
        label: "Details",
        cell: (c) => h("td", { "data-testid": "schedule-change-details" }, scheduleChangeLines(c).map((line) => h("div", { "data-testid": "schedule-change-line" }, line)))
      }
    ],
    row: (c) => ({ "data-testid": "schedule-change", "data-action": c.action, "data-change-id": c.changeId }),
    empty: "No changes yet.",
    testId: "schedule-history"
  });
  let stopped = false;
  let timer;
  let shown = 0;
  async function load() {
    if (timer) clearTimeout(timer);
    const ticket = ++shown;
    try {
      const described = await api.scheduleDescribe(scheduleId);
      if (!stopped && ticket === shown) render(described);
    } catch (error) {
      if (!stopped && ticket === shown) replace(body, h("p", { class: "error", role: "alert" }, `Could not describe schedule ${scheduleId}: ${String(error)}`));
    }
    if (!stopped && ticket === shown) timer = setTimeout(() => void load(), POLL_MS2);
  }
  function render({ schedule, nextFireTimestampsMs, recentFirings }) {
    const state2 = scheduleState(schedule);
    const start2 = schedule.start;
    const now = Date.now();
    const declaredBy = declaredByText(schedule);
    const refusal = deleteRefusal(schedule);
    replace(
      body,
      h("h1", {}, `Schedule ${schedule.scheduleId} `, h("span", { class: statusClass(state2), "data-testid": "schedule-state" }, state2)),
      declaredBy && h("p", { class: "small", "data-testid": "schedule-declared-by" }, declaredBy),
      h(
        "div",
        { class: "actions" },
        schedule.paused ? h("button", { type: "button", class: "primary", "data-testid": "schedule-resume", onclick: () => void control("resume") }, "Resume") : h("button", { type: "button", "data-testid": "schedule-pause", onclick: () => void control("pause") }, "Pause"),
        h("button", { type: "button", "data-testid": "schedule-trigger", onclick: () => void trigger(schedule.overlapPolicy) }, "Trigger now"),
        h("button", { type: "button", class: "danger", "data-testid": "schedule-delete", disabled: refusal !== void 0, title: refusal, onclick: () => void remove() }, "Delete")
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
            ["Catch-up window", formatDuration(schedule.catchupWindowSeconds * 1e3)],
            ...schedule.note ? [["Note", schedule.note]] : [],
            ...schedule.reason ? [[schedule.paused ? "Paused because" : "Resumed because", h("span", { "data-testid": "schedule-reason" }, schedule.reason)]] : [],
            ["Created (UTC)", formatTime(schedule.createdTimestampMs)],
            ["Updated (UTC)", formatTime(schedule.updatedTimestampMs)]
          ])
        ),
        h(
          "div",
          { class: "panel" },
          h("h2", {}, "Each firing starts"),
          facts([
            ["Process type", h("a", { href: definitionHref(start2.processType), "data-testid": "schedule-process-type" }, start2.processType)],
            ["Worker URL", h("span", { class: "mono" }, start2.workerUrl || "—")],
            ["Start state", start2.startStateId ?? "none"],
            ["Start state input", h("pre", {}, formatPayload(start2.startStateInput))],
            ["Process id", h("span", { class: "mono" }, `${schedule.scheduleId}-<nominal time, UTC>`)]
          ])
        )
      ),
      h(
        "div",
        { class: "side-by-side" },
        h(
          "div",
          { class: "panel" },
          h("h2", {}, schedule.paused ? "Next fire times, once resumed (UTC)" : "Next fire times (UTC)"),
          nextFireTimestampsMs.length === 0 ? h("p", { class: "empty" }, "The spec has no more fire times.") : h(
            "ol",
            { class: "fire-times", "data-testid": "schedule-fire-times" },
            nextFireTimestampsMs.map((ms) => h("li", { "data-testid": "schedule-fire-time" }, formatTime(ms), h("span", { class: "small" }, ` ${formatRelative(ms, now)}`)))
          )
        ),
        h(
          "div",
          { class: "panel" },
          h("h2", {}, "Latest firings"),
          table(
            ["Nominal (UTC)", "By", "Outcome", "Process id", "Resolved (UTC)", "Reason"],
            (recentFirings ?? []).map(
              (f) => h(
                "tr",
                { "data-testid": "schedule-firing", "data-trigger": f.trigger, "data-outcome": f.outcome, "data-process-id": f.processId },
                h("td", {}, formatTime(f.nominalTimestampMs)),
                h("td", {}, f.trigger),
                h("td", {}, h("span", { class: statusClass(f.outcome) }, f.outcome)),
                h(
                  "td",
                  { class: "mono small" },
                  f.processExecutionId ? h("a", { href: executionHref(f.processId, f.processExecutionId) }, f.processId) : f.processId
                ),
                h("td", {}, formatTime(f.resolvedTimestampMs)),
                h("td", {}, f.reason ?? "")
              )
            ),
            "No firings yet.",
            "schedule-firings"
          )
        )
      )
    );
  }
  async function control(action) {
    const values = await ask(
      action === "pause" ? "Pause the schedule?" : "Resume the schedule?",
      action === "pause" ? "Nothing fires until it is resumed; executions already started run on." : `Firings missed while it was paused run if they are within its catch-up window; older ones are dropped.`,
      [{ name: "reason", label: "Reason (kept with the schedule)", placeholder: "optional" }],
      action === "pause" ? "Pause" : "Resume"
    );
    if (!values) return;
    const reason = values("reason").trim() || void 0;
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
  async function trigger(own) {
    const values = await ask(
      "Fire the schedule now?",
      "One firing now, whatever the spec and the paused flag say. Its process id is the schedule id and this moment.",
      [{ name: "overlap", label: "Overlap policy (the schedule's unless changed)", kind: "select", options: [...OVERLAP_POLICIES], value: own }],
      "Trigger now"
    );
    if (!values) return;
    const overlap = values("overlap");
    try {
      const fired = await api.scheduleTrigger(scheduleId, overlap === own ? void 0 : overlap);
      notify(`Fired ${fired.processId}`);
    } catch (error) {
      notify(`Could not trigger: ${error instanceof Error ? error.message : String(error)}`, "error");
    }
    void load();
    void history.refresh();
  }
  async function remove() {
    const values = await ask(
      `Delete schedule ${scheduleId}?`,
      "It fires no more and its firings' records go; the executions it started run on.",
      [{ name: "reason", label: "Reason (logged)", placeholder: "optional" }],
      "Delete",
      { danger: true }
    );
    if (!values) return;
    try {
      await api.scheduleDelete(scheduleId, values("reason").trim() || void 0);
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
    h("div", { class: "panel wide", "data-testid": "schedule-history-panel" }, h("h2", {}, "History"), history.element)
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

// src/views/schedules.ts
var REFRESH_MS7 = 5e3;
var PAGE_SIZE2 = 100;
var DESCRIBES_AT_ONCE = 4;
async function latestFirings(schedules) {
  const found = /* @__PURE__ */ new Map();
  let next = 0;
  const work = async () => {
    while (next < schedules.length) {
      const id = schedules[next++]?.scheduleId ?? "";
      found.set(id, await api.scheduleDescribe(id).then((d) => d.recentFirings ?? [], () => void 0));
    }
  };
  await Promise.all(Array.from({ length: Math.min(DESCRIBES_AT_ONCE, schedules.length) }, work));
  return found;
}
function schedulesView(root) {
  const results = h("div");
  let stopped = false;
  async function load() {
    try {
      const listed = await api.scheduleList({ pageSize: PAGE_SIZE2 });
      const firings = await latestFirings(listed.schedules);
      if (stopped) return;
      replace(
        results,
        table(
          ["Schedule", "Process type", "Spec", "State", "Next fire (UTC)", "Last firing"],
          listed.schedules.map((s2) => {
            const recent = firings.get(s2.scheduleId);
            const declaredBy = declaredByText(s2);
            return h(
              "tr",
              { "data-testid": "schedule-row", "data-schedule-id": s2.scheduleId, "data-declared-by": s2.declaredBy },
              h(
                "td",
                {},
                h("a", { href: scheduleHref(s2.scheduleId), class: "mono small" }, s2.scheduleId),
                declaredBy && h("div", { class: "small", "data-testid": "schedule-row-declared-by" }, declaredBy)
              ),
              h("td", {}, h("a", { href: definitionHref(s2.start.processType) }, s2.start.processType)),
              h("td", { class: "mono small", "data-testid": "schedule-row-spec" }, specText(s2.spec)),
              h("td", {}, h("span", { class: statusClass(scheduleState(s2)), "data-testid": "schedule-row-state" }, scheduleState(s2))),
              h("td", { "data-testid": "schedule-row-next" }, nextFireText(s2)),
              h(
                "td",
                {},
                h("span", { "data-testid": "schedule-row-last", class: recent?.[0] ? statusClass(recent[0].outcome) : "" }, recent === void 0 ? "—" : lastFiringText(recent))
              )
            );
          }),
          "No schedules yet: create one below.",
          "schedules-table"
        ),
        listed.nextPageToken && h("p", { class: "small" }, `The first ${PAGE_SIZE2} schedules by id.`)
      );
    } catch (error) {
      if (!stopped) replace(results, h("p", { class: "error", role: "alert" }, `Could not list schedules: ${String(error)}`));
    }
  }
  replace(root, h("h1", {}, "Schedules"), results, createForm());
  void load();
  const timer = setInterval(() => void load(), REFRESH_MS7);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
function createForm() {
  const inputs = /* @__PURE__ */ new Map();
  const input = (name, placeholder = "", list2) => {
    const element = h("input", { name, placeholder, autocomplete: "off", list: list2, "data-testid": `schedule-${name}` });
    inputs.set(name, element);
    return element;
  };
  const select = (name, options, value) => {
    const element = h(
      "select",
      { name, "data-testid": `schedule-${name}` },
      options.map(([v, label]) => h("option", { value: v, selected: v === value }, label))
    );
    inputs.set(name, element);
    return element;
  };
  const row = (label, control, hint) => h("label", {}, h("span", {}, label), control, hint && h("span", { class: "small" }, hint));
  const types = h("datalist", { id: "schedule-process-types" });
  const zones = h("datalist", { id: "schedule-time-zones" }, ["UTC", Intl.DateTimeFormat().resolvedOptions().timeZone].map((z) => h("option", { value: z })));
  const kind = select("kind", [["cron", "cron expression"], ["interval", "fixed interval"]], "cron");
  const cronRows = [
    row("Cron expression", input("cronExpression", "0 3 * * *"), "5 fields (minute hour day month weekday), or 6 with seconds first"),
    row("Time zone", input("timeZone", "UTC", "schedule-time-zones"), "an IANA zone; empty: UTC")
  ];
  const intervalRows = [
    row("Every (seconds)", input("everySeconds", "60")),
    row("Jitter (seconds)", input("jitterSeconds", "0"), "each firing up to this much later; less than the interval")
  ];
  const showSpec = () => {
    for (const r of cronRows) r.hidden = kind.value !== "cron";
    for (const r of intervalRows) r.hidden = kind.value !== "interval";
  };
  kind.addEventListener("change", showSpec);
  showSpec();
  const problem = h("p", { class: "error", role: "alert", "data-testid": "schedule-create-error", hidden: true });
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "schedule-create-submit" }, "Create schedule");
  const show = (error, field) => {
    problem.textContent = error ?? "";
    problem.hidden = !error;
    for (const [name, element] of inputs) element.toggleAttribute("aria-invalid", name === field);
    if (field) inputs.get(field)?.focus();
  };
  const create = async () => {
    const checked = scheduleRequest((name) => inputs.get(name)?.value ?? "");
    if ("error" in checked) {
      show(checked.error, checked.field);
      return;
    }
    submit.disabled = true;
    try {
      const created = await api.scheduleCreate(checked.request);
      show(void 0);
      location.hash = scheduleHref(created.schedule.scheduleId);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      show(`The service refused the schedule: ${message}`, errorField2(message, error instanceof ApiError ? error.subType : ""));
    } finally {
      submit.disabled = false;
    }
  };
  const form = h(
    "form",
    {
      class: "schedule-form",
      onsubmit: (event) => {
        event.preventDefault();
        void create();
      }
    },
    row("Schedule id", input("scheduleId", "nightly-report"), "each firing's process id is this id and its time"),
    row("Process type", input("processType", "ReportProcess", "schedule-process-types")),
    row("Worker URL", input("workerUrl", "optional"), "empty: the current deployment's, when the type is registered"),
    row("Start state", input("startStateId", "optional"), "the state each execution starts in"),
    row("When", kind),
    cronRows,
    intervalRows,
    row("Overlap policy", select("overlapPolicy", OVERLAP_POLICIES.map((p) => [p, p]), "SKIP"), "what a firing does while the previous one still runs"),
    row("Catch-up window (seconds)", input("catchupWindowSeconds", "60"), "missed firings at most this old still run"),
    problem,
    h("div", { class: "buttons" }, submit),
    types,
    zones
  );
  void api.definitions().then(
    ({ definitions }) => replace(types, definitions.map((d) => h("option", { value: d.processType }))),
    () => void 0
  );
  return h("details", { class: "panel schedule-create", "data-testid": "schedule-create" }, h("summary", {}, h("strong", {}, "New schedule")), form);
}

// src/main.ts
var leave;
var NAV_PAGE = {
  definition: "definitions",
  execution: "executions",
  batch: "batches",
  schedule: "schedules"
};
function route2() {
  const root = document.getElementById("app");
  if (!root) return;
  leave?.();
  const current = parseRoute(location.hash);
  for (const link of document.querySelectorAll("nav a[data-page]")) {
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
        h("a", { href: "#/definitions", "data-page": "definitions" }, "Definitions"),
        h("a", { href: "#/deployments", "data-page": "deployments" }, "Deployments"),
        h("a", { href: "#/batches", "data-page": "batches" }, "Batches"),
        h("a", { href: "#/schedules", "data-page": "schedules" }, "Schedules"),
        h("a", { href: "#/flow-limits", "data-page": "flow-limits" }, "Flow limits"),
        h("a", { href: "#/dashboard", "data-page": "dashboard" }, "Dashboard")
      ),
      forget
    );
  }
  window.addEventListener("hashchange", () => {
    forget.hidden = !token();
    route2();
  });
  route2();
}
start();
