// The count behind the executions list's status chips: the list's own filter as a filter
// tree, counted per status by the service in one statement (exact, however many).
import type { CountRequest, FilterNode, ListFilter } from "./types.js";

/** The count of the executions `filter` lists, per status (its own status aside). */
export function statusCountRequest(filter: ListFilter): CountRequest {
  const conditions: FilterNode[] = [];
  if (filter.processId) conditions.push({ field: "processId", op: "=", value: filter.processId });
  if (filter.startTimeMinMs != null) conditions.push({ field: "startTime", op: ">=", value: filter.startTimeMinMs });
  if (filter.startTimeMaxMs != null) conditions.push({ field: "startTime", op: "<", value: filter.startTimeMaxMs });
  return {
    ...(filter.processType ? { processType: filter.processType } : {}),
    ...(conditions.length > 0 ? { where: { and: conditions } } : {}),
    groupBy: { field: "status" },
  };
}
