// Pure parts of the flow-limits page: limits (and a type's priority and fairness) as text, the form's
// values checked and turned into a request, and the form field a 400 names. Also how an execution held by
// its type's running-execution limit (PENDING) reads in the list and on its page.
import type { ExecutionSummary, FlowLimitChange, FlowLimits, FlowLimitsSetRequest, PauseInfo } from "./types.js";

/** Limits as people read them: `2.5 calls/s`, `8 at once`, `2 running per key` (or
 * `2 running per customer_id` when a global attribute keys them), a type's `priority 1`,
 * `fair by tenant_id` and `fairness weight 2` (of its starts that name none), or several
 * of them (`2.5 calls/s, 8 at once`, `1 running per key, priority 1`); `unlimited` for
 * limits that limit nothing and carry no priority or fairness; `—` for none. A priority or
 * fairness alone (`priority 1`, `fair by tenant_id`) limits nothing. The fairness words
 * are the CLI's (`xdb flow-limits`), so an operator reads them alike in both. */
export function limitsText(limits: FlowLimits | null | undefined): string {
  if (limits === null || limits === undefined) return "—";
  const rate = limits.maxCallsPerSecond;
  const atOnce = limits.maxConcurrentCalls;
  const running = limits.maxRunningExecutions;
  const keyedBy = limits.concurrencyKeyAttribute || "key";
  const priority = limits.priority;
  const fairBy = limits.fairnessKeyAttribute;
  const weight = limits.fairnessWeight;
  const parts = [
    rate === null || rate === undefined ? undefined : `${rate} calls/s`,
    atOnce === null || atOnce === undefined ? undefined : `${atOnce} at once`,
    running === null || running === undefined ? undefined : `${running} running per ${keyedBy}`,
    priority === null || priority === undefined ? undefined : `priority ${priority}`,
    fairBy === null || fairBy === undefined ? undefined : `fair by ${fairBy}`,
    weight === null || weight === undefined ? undefined : `fairness weight ${weight}`,
  ].filter((part) => part !== undefined);
  return parts.length === 0 ? "unlimited" : parts.join(", ");
}

/** The status an execution shows: `PENDING` while its type's maxRunningExecutions holds
 * it (it has not begun: the service says RUNNING and paused), else its status. */
export function shownStatus(execution: Pick<ExecutionSummary, "status" | "pending">): string {
  return execution.pending ? "PENDING" : execution.status;
}

/** What a PENDING execution waits for (`waiting for a running slot of key acme`);
 * undefined for an operator's pause, or none. */
export function pendingText(pause: PauseInfo | null | undefined): string | undefined {
  const key = pause?.pendingOnKey;
  if (key === null || key === undefined) return undefined;
  return key === "" ? "waiting for a running slot (no concurrency key)" : `waiting for a running slot of key ${key}`;
}

/** What a call's phase means, when it is not plain: a call held back by a flow limit
 * waits for its turn (a rate) or for a running call to end (a concurrency). */
export function phaseNote(phase: string): string | undefined {
  return phase === "FLOW_LIMITED" ? "held back by a flow limit until due; costs no attempt" : undefined;
}

/** Which calls an entry or a change limits: one state's, or all the type's together. */
export function scopeText(stateId: string | null | undefined): string {
  return stateId ? stateId : "(all states)";
}

/** A change as one line: `10 calls/s → 2.5 calls/s`; `—` where there was, or is, none. */
export function changeText(change: FlowLimitChange): string {
  return `${limitsText(change.before)} → ${limitsText(change.after)}`;
}

/** The form's fields, by name. */
export type FormValues = (name: string) => string;

/** What the form does: set limits (a rate, a concurrency, running executions (keyed by a
 * global attribute or not), a type's priority and fairness, or several), no limit, the
 * default priority and no fairness whatever is declared, or clear the override. */
export const ACTIONS = [
  ["limits", "limit calls a second, at once and/or running executions; set a priority or fairness"],
  ["unlimited", "no limit, priority 3, no fairness (whatever is declared)"],
  ["clear", "clear the override (declared limits apply)"],
] as const;

/** What is wrong with the form's `values`, or the request they make. The limits' ranges
 * (and the priority's, 1 to 5, and the fairness weight's, 1 to 1,000) are the service's to
 * check: its 400 names the field. A priority and fairness, like running executions, are a
 * type's: the form refuses them with a state. */
export function flowLimitsRequest(values: FormValues): { request: FlowLimitsSetRequest } | { error: string; field: string } {
  const get = (name: string) => values(name).trim();
  const processType = get("processType");
  if (!processType) return { error: "The process type is missing.", field: "processType" };
  const stateId = get("stateId");
  const reason = get("reason");
  const request: FlowLimitsSetRequest = { processType, ...(stateId ? { stateId } : {}), ...(reason ? { reason } : {}) };
  const action = get("action") || "limits";
  if (action === "unlimited") return { request: { ...request, override: {} } };
  if (action === "clear") return { request };
  const rate = get("maxCallsPerSecond");
  const atOnce = get("maxConcurrentCalls");
  const running = get("maxRunningExecutions");
  const keyAttribute = get("concurrencyKeyAttribute");
  const priority = get("priority");
  const fairnessAttribute = get("fairnessKeyAttribute");
  const fairnessWeight = get("fairnessWeight");
  if (!rate && !atOnce && !running && !keyAttribute && !priority && !fairnessAttribute && !fairnessWeight) {
    return {
      error:
        "Give a number of calls a second, a number of calls at once, a number of running executions, a priority, a fairness key attribute or weight, or several.",
      field: "maxCallsPerSecond",
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
      field: "stateId",
    };
  }
  // The attribute keys the running-executions limit: alone it limits nothing (the service
  // refuses it too). Whether it is a column name is the service's to check.
  if (keyAttribute && !running) {
    return {
      error: `The concurrency key attribute ${keyAttribute} keys the running-executions limit: give Max running executions with it.`,
      field: "maxRunningExecutions",
    };
  }
  const override: FlowLimits = {};
  if (rate) {
    const value = Number(rate);
    if (!Number.isFinite(value)) {
      return { error: `The rate ${rate} is not a number of calls a second (fractions allowed: 0.5 is one every 2 s).`, field: "maxCallsPerSecond" };
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
  // Unlike the concurrency key attribute, the fairness key attribute keys no limit: it
  // stands alone, and so does a weight (of starts that name their own key). Whether it
  // is a column name is the service's to check.
  if (fairnessAttribute) override.fairnessKeyAttribute = fairnessAttribute;
  if (fairnessWeight) {
    if (!/^\d+$/.test(fairnessWeight)) {
      return { error: `The fairness weight ${fairnessWeight} is not a whole number from 1 to 1,000.`, field: "fairnessWeight" };
    }
    override.fairnessWeight = Number(fairnessWeight);
  }
  return { request: { ...request, override } };
}

/** The API's field paths, and the form's field of each. */
const FIELDS: [string, string][] = [
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
  ["reason", "reason"],
];

/** The form field an API error is about (the first field path its message names), so the
 * form can mark it; undefined when it names none of them. */
export function errorField(message: string): string | undefined {
  let best: { at: number; field: string } | undefined;
  for (const [path, field] of FIELDS) {
    const at = message.indexOf(path);
    if (at >= 0 && (best === undefined || at < best.at)) best = { at, field };
  }
  return best?.field;
}
