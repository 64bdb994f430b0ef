// The executions list's selection: the simple filter (status, type, id, start times) and
// the query builder's `where` tree, as one filter tree for `count` and batches, and as
// the URL query that links a view (`#/executions?status=FAILED&where=...`).
import { textToTree } from "./filter.js";
import { STATUSES, type BusinessTableRef, type CountRequest, type FilterNode, type ListFilter, type ProcessStatus } from "./types.js";

/** What the list shows: its simple filter, the `where` text (empty: none) and, for
 * column conditions on a type with no registered definition, its business table. */
export interface Selection {
  filter: ListFilter;
  where: string;
  table?: BusinessTableRef;
}

/** The simple filter's conditions as filter-tree nodes (its status only if `withStatus`). */
function filterConditions(filter: ListFilter, withStatus: boolean): FilterNode[] {
  const conditions: FilterNode[] = [];
  if (withStatus && filter.status) conditions.push({ field: "status", op: "=", value: filter.status });
  if (filter.processId) conditions.push({ field: "processId", op: "=", value: filter.processId });
  if (filter.startTimeMinMs != null) conditions.push({ field: "startTime", op: ">=", value: filter.startTimeMinMs });
  if (filter.startTimeMaxMs != null) conditions.push({ field: "startTime", op: "<", value: filter.startTimeMaxMs });
  return conditions;
}

/** The whole selection as `processType` and one `where` tree (throws on bad `where` text). */
export function selectionRequest(
  selection: Selection,
  withStatus = true,
): { processType?: string; where?: FilterNode; businessTable?: BusinessTableRef } {
  const conditions = filterConditions(selection.filter, withStatus);
  const where = textToTree(selection.where);
  if (where) conditions.push(where);
  return {
    ...(selection.filter.processType ? { processType: selection.filter.processType } : {}),
    ...(conditions.length > 0 ? { where: conditions.length === 1 ? conditions[0] : { and: conditions } } : {}),
    ...(selection.table ? { businessTable: selection.table } : {}),
  };
}

/** The count of the executions the selection lists, per status (its own status aside);
 * with `explain`, the database's plan for that same count instead of the count. */
export function statusCountRequest(filter: ListFilter, where = "", table?: BusinessTableRef, explain = false): CountRequest {
  return {
    ...selectionRequest({ filter, where, ...(table ? { table } : {}) }, false),
    groupBy: { field: "status" },
    ...(explain ? { explain } : {}),
  };
}

/** What Explain asks the database's plan of: the list's page or its counts per status. */
export type Explained = "list" | "count";

/** Why Explain of `what` is not asked while the Where editor holds `text` and the list
 * shows the `applied` Where text; undefined when it can be. The plan is of what the page
 * shows, so the text must be the one applied; the list's also needs a Where filter
 * (without one it reads XDB's own indexes only), the count's statement has a plan anyway. */
export function explainUnavailable(what: Explained, text: string, applied: string): string | undefined {
  const typed = text.trim();
  if (what === "list" && !typed) return "Explain needs a Where filter: without one the list reads XDB's own indexes only.";
  if (typed !== applied.trim()) return `Apply this filter first: Explain shows the plan of the ${what === "list" ? "list" : "counts"} shown.`;
  return undefined;
}

/** The selection as a URL query (no leading `?`; empty when there is nothing). */
export function selectionToQuery(selection: Selection): string {
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

/** The selection a URL query names; unknown or malformed parts are left out. */
export function queryToSelection(query: string): Selection {
  const params = new URLSearchParams(query.replace(/^\?/, ""));
  const filter: ListFilter = {};
  const status = params.get("status");
  if (status && (STATUSES as readonly string[]).includes(status)) filter.status = status as ProcessStatus;
  const type = params.get("type");
  if (type) filter.processType = type;
  const id = params.get("id");
  if (id) filter.processId = id;
  const from = params.get("from");
  if (from && /^\d+$/.test(from)) filter.startTimeMinMs = Number(from);
  const to = params.get("to");
  if (to && /^\d+$/.test(to)) filter.startTimeMaxMs = Number(to);
  const table = params.get("table");
  const key = params.get("key");
  return { filter, where: params.get("where") ?? "", ...(table && key ? { table: { tableName: table, primaryKeyColumn: key } } : {}) };
}

/** The executions list's link showing `selection`. */
export function executionsHref(selection: Selection): string {
  const query = selectionToQuery(selection);
  return query ? `#/executions?${query}` : "#/executions";
}
