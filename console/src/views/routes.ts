// Hash routes: #/executions, #/execution/<process id>/<execution id>, #/dashboard,
// #/definitions, #/definition/<process type>/<revision>, #/deployments, #/batches,
// #/batch/<batch id>, #/schedules, #/schedule/<schedule id>, #/flow-limits. The executions list takes its selection as a query:
// #/executions?status=FAILED&where=... (see query.ts).

export type Route =
  | { page: "executions"; query: string }
  | { page: "batches" }
  | { page: "batch"; batchId: string }
  | { page: "schedules" }
  | { page: "schedule"; scheduleId: string }
  | { page: "flow-limits" }
  | { page: "dashboard" }
  | { page: "definitions" }
  | { page: "deployments" }
  | { page: "definition"; processType: string; revision?: number }
  | { page: "execution"; processId: string; processExecutionId?: string };

export function executionHref(processId: string, processExecutionId?: string): string {
  const id = encodeURIComponent(processId);
  return processExecutionId ? `#/execution/${id}/${encodeURIComponent(processExecutionId)}` : `#/execution/${id}`;
}

/** The page of a process type: its current definition, or `revision` of it. */
export function definitionHref(processType: string, revision?: number): string {
  const type = encodeURIComponent(processType);
  return revision === undefined ? `#/definition/${type}` : `#/definition/${type}/${revision}`;
}

export function batchHref(batchId: string): string {
  return `#/batch/${encodeURIComponent(batchId)}`;
}

export function scheduleHref(scheduleId: string): string {
  return `#/schedule/${encodeURIComponent(scheduleId)}`;
}

/** The route a location hash names; anything unknown is the executions list. */
export function parseRoute(hash: string): Route {
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
      const revision = parts[2] && /^\d+$/.test(parts[2]) ? Number(parts[2]) : undefined;
      return revision === undefined ? { page: "definition", processType } : { page: "definition", processType, revision };
    }
    if (parts[0] === "execution" && parts[1]) {
      const processId = decodeURIComponent(parts[1]);
      return parts[2]
        ? { page: "execution", processId, processExecutionId: decodeURIComponent(parts[2]) }
        : { page: "execution", processId };
    }
  } catch {
    // a malformed escape: fall through to the list
  }
  return { page: "executions", query };
}
