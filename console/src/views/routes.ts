// Hash routes: #/executions, #/execution/<process id>/<execution id>, #/dashboard.

export type Route =
  | { page: "executions" }
  | { page: "dashboard" }
  | { page: "execution"; processId: string; processExecutionId?: string };

export function executionHref(processId: string, processExecutionId?: string): string {
  const id = encodeURIComponent(processId);
  return processExecutionId ? `#/execution/${id}/${encodeURIComponent(processExecutionId)}` : `#/execution/${id}`;
}

/** The route a location hash names; anything unknown is the executions list. */
export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/");
  try {
    if (parts[0] === "dashboard") return { page: "dashboard" };
    if (parts[0] === "execution" && parts[1]) {
      const processId = decodeURIComponent(parts[1]);
      return parts[2]
        ? { page: "execution", processId, processExecutionId: decodeURIComponent(parts[2]) }
        : { page: "execution", processId };
    }
  } catch {
    // a malformed escape: fall through to the list
  }
  return { page: "executions" };
}
