// Pure parts of the schedules pages: a spec as text, a firing as text, who owns a
// schedule, a change of the audit history as text, the create form's values checked and
// turned into a request, and the form field a 400 names.
import { formatDuration, formatTime } from "./format.js";
import type { ScheduleChange, ScheduleCreateRequest, ScheduleFiring, ScheduleInfo, ScheduleOverlapPolicy, ScheduleSpec } from "./types.js";

/** The overlap policies, the service's default first. */
export const OVERLAP_POLICIES = ["SKIP", "BUFFER_ONE", "ALLOW_ALL", "TERMINATE_PREVIOUS"] as const satisfies readonly ScheduleOverlapPolicy[];
// A policy the contract gains and OVERLAP_POLICIES does not offer fails to compile here.
type _Holds<T extends true> = T;
type _EveryPolicyOffered = _Holds<[Exclude<ScheduleOverlapPolicy, (typeof OVERLAP_POLICIES)[number]>] extends [never] ? true : false>;

/** A spec as people read it: `cron 0 3 * * * (Europe/Paris)`, `every 1m 0s`, `every 60 s ± 10 s`. */
export function specText(spec: ScheduleSpec): string {
  if (spec.cron) return `cron ${spec.cron.expression} (${spec.cron.timeZone || "UTC"})`;
  if (spec.interval) {
    const every = `every ${formatDuration(spec.interval.everySeconds * 1000)}`;
    return spec.interval.jitterSeconds ? `${every}, up to ${formatDuration(spec.interval.jitterSeconds * 1000)} later` : every;
  }
  return "—";
}

/** `active` or `paused`. */
export function scheduleState(schedule: ScheduleInfo): "active" | "paused" {
  return schedule.paused ? "paused" : "active";
}

/** Who owns a schedule a definition declares: `declared by Report (its code owns it)`;
 * undefined for an operator's. */
export function declaredByText(schedule: ScheduleInfo): string | undefined {
  return schedule.declaredBy ? `declared by ${schedule.declaredBy} (its code owns it)` : undefined;
}

/** Why a schedule cannot be deleted here (the service refuses to delete a schedule a
 * definition declares), or undefined when it can. */
export function deleteRefusal(schedule: ScheduleInfo): string | undefined {
  return schedule.declaredBy
    ? `The definition of ${schedule.declaredBy} declares this schedule: registering it without the schedule deletes it.`
    : undefined;
}

/** The next firing's time, or why there is none. */
export function nextFireText(schedule: ScheduleInfo): string {
  if (schedule.paused) return "— (paused)";
  return schedule.nextFireTimestampMs === null || schedule.nextFireTimestampMs === undefined ? "— (no more)" : formatTime(schedule.nextFireTimestampMs);
}

/** The latest firing as one line: `STARTED (SPEC, 2026-11-28 15:00:00)`; `none yet`. */
export function lastFiringText(firings: ScheduleFiring[] | undefined): string {
  const last = firings?.[0];
  if (!last) return "none yet";
  return `${last.outcome} (${last.trigger}, ${formatTime(last.nominalTimestampMs)})`;
}

/** `value` as JSON with its keys sorted and its absent (null or undefined) fields left
 * out, so two equal values give the same text whatever the order of their keys. */
function canonical(value: unknown): string {
  if (value === null || value === undefined) return "null";
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== null && v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

const same = (a: unknown, b: unknown) => canonical(a) === canonical(b);

/** A value of the history as text: `—` for none. */
function valueText(value: unknown): string {
  if (value === null || value === undefined || value === "") return "—";
  return typeof value === "string" ? value : canonical(value);
}

/** The fields of a start template, in the order the lines name them. */
const START_FIELDS = ["processType", "workerUrl", "startStateId", "startStateInput", "startStateConfig", "processStartConfig"] as const;
// A field the contract's start template gains and START_FIELDS does not name fails to compile here.
type _EveryStartFieldNamed = _Holds<[Exclude<keyof ScheduleInfo["start"], (typeof START_FIELDS)[number]>] extends [never] ? true : false>;

/** What an update changed, a line a field, as the API names it: `spec: every 2 s → every 5 s`,
 * `start.workerUrl: http://a → http://b`, `catchupWindowSeconds: 30 s → 1m 0s`; structured
 * values (a start state's input, its config) are named, not shown. */
export function changedFields(before: ScheduleInfo, after: ScheduleInfo): string[] {
  const lines: string[] = [];
  if (!same(before.spec, after.spec)) lines.push(`spec: ${specText(before.spec)} → ${specText(after.spec)}`);
  for (const field of START_FIELDS) {
    // An empty text is none.
    const [was, is] = [before.start[field] || undefined, after.start[field] || undefined];
    if (same(was, is)) continue;
    const plain = (v: unknown) => v === null || v === undefined || typeof v === "string";
    lines.push(plain(was) && plain(is) ? `start.${field}: ${valueText(was)} → ${valueText(is)}` : `start.${field} changed`);
  }
  if (before.overlapPolicy !== after.overlapPolicy) lines.push(`overlapPolicy: ${before.overlapPolicy} → ${after.overlapPolicy}`);
  if (before.catchupWindowSeconds !== after.catchupWindowSeconds) {
    lines.push(`catchupWindowSeconds: ${formatDuration(before.catchupWindowSeconds * 1000)} → ${formatDuration(after.catchupWindowSeconds * 1000)}`);
  }
  if (before.paused !== after.paused) lines.push(`paused: ${String(before.paused)} → ${String(after.paused)}`);
  if (!same(before.note || undefined, after.note || undefined)) lines.push(`note: ${valueText(before.note)} → ${valueText(after.note)}`);
  return lines;
}

/** A change of the audit history as lines: for an update, the fields it changed (or that it
 * changed none); then what the change says it did (the process id a trigger started). */
export function scheduleChangeLines(change: ScheduleChange): string[] {
  const lines: string[] = [];
  if (change.action === "UPDATED" && change.before && change.after) {
    const fields = changedFields(change.before, change.after);
    lines.push(...(fields.length > 0 ? fields : ["no field changed"]));
  }
  if (change.detail) lines.push(change.detail);
  return lines;
}

/** The create form's fields, by name. */
export type FormValues = (name: string) => string;

const WHOLE = /^\d+$/;

/** What is wrong with the create form's `values`, or the request they make. */
export function scheduleRequest(values: FormValues): { request: ScheduleCreateRequest } | { error: string; field: string } {
  const get = (name: string) => values(name).trim();
  const scheduleId = get("scheduleId");
  if (!scheduleId) return { error: "The schedule id is missing.", field: "scheduleId" };
  const processType = get("processType");
  if (!processType) return { error: "The process type is missing.", field: "processType" };
  let spec: ScheduleSpec;
  if (get("kind") === "interval") {
    const every = get("everySeconds");
    if (!WHOLE.test(every) || Number(every) < 1) {
      return { error: `The interval ${every ? `${every} ` : ""}is not a whole number of seconds, 1 or more.`, field: "everySeconds" };
    }
    const jitter = get("jitterSeconds");
    if (jitter && !WHOLE.test(jitter)) return { error: `The jitter ${jitter} is not a whole number of seconds.`, field: "jitterSeconds" };
    spec = { interval: { everySeconds: Number(every), ...(jitter && Number(jitter) > 0 ? { jitterSeconds: Number(jitter) } : {}) } };
  } else {
    const expression = get("cronExpression");
    if (!expression) return { error: "The cron expression is missing: 5 fields (minute hour day month weekday), or 6 with seconds first.", field: "cronExpression" };
    const timeZone = get("timeZone");
    spec = { cron: { expression, ...(timeZone ? { timeZone } : {}) } };
  }
  const catchup = get("catchupWindowSeconds");
  if (catchup && !WHOLE.test(catchup)) return { error: `The catch-up window ${catchup} is not a whole number of seconds.`, field: "catchupWindowSeconds" };
  const workerUrl = get("workerUrl");
  const startStateId = get("startStateId");
  const overlap = get("overlapPolicy");
  const request: ScheduleCreateRequest = {
    scheduleId,
    spec,
    start: { processType, ...(workerUrl ? { workerUrl } : {}), ...(startStateId ? { startStateId } : {}) },
    ...(overlap ? { overlapPolicy: overlap as ScheduleOverlapPolicy } : {}),
    ...(catchup ? { catchupWindowSeconds: Number(catchup) } : {}),
  };
  return { request };
}

/** The API's field paths, and the create form's field of each. */
const FIELDS: [string, string][] = [
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
  ["scheduleId", "scheduleId"],
];

/** The form field an API error is about (the first field path its message names), so the
 * form can mark it; undefined when it names none of them. */
export function errorField(message: string, subType = ""): string | undefined {
  if (subType === "SCHEDULE_ALREADY_EXISTS") return "scheduleId";
  let best: { at: number; field: string } | undefined;
  for (const [path, field] of FIELDS) {
    const at = message.indexOf(path);
    if (at >= 0 && (best === undefined || at < best.at)) best = { at, field };
  }
  return best?.field;
}
