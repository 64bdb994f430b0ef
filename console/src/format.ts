// Pure formatting of what the API answers: times, durations, statuses and payloads.
import type { AsyncStateConfig, EncodedObject, RetryPolicy } from "./types.js";

function pad(n: number, width = 2): string {
  return String(n).padStart(width, "0");
}

/** `ms` since the epoch as `YYYY-MM-DD HH:MM:SS` in UTC (every instance's clock zone). */
export function formatTime(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return "—";
  const d = new Date(ms);
  return (
    `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
    `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`
  );
}

/** A duration as its two largest units: `850 ms`, `12 s`, `3m 4s`, `2h 5m`, `3d 4h`. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)} ms`;
  const s = Math.floor(abs / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const hours = Math.floor(m / 60);
  if (hours < 24) return `${hours}h ${m % 60}m`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}

/** `at` relative to `now`: `in 59m 58s`, `3 s ago`, `now`. */
export function formatRelative(at: number, now: number): string {
  const delta = at - now;
  if (Math.abs(delta) < 1000) return "now";
  return delta > 0 ? `in ${formatDuration(delta)}` : `${formatDuration(delta)} ago`;
}

/** `text`'s first line, cut to `max` characters with an ellipsis when longer. */
export function shorten(text: string, max = 80): string {
  const line = text.trim().split("\n", 1)[0] ?? "";
  const cut = line.length > max ? `${line.slice(0, max - 1).trimEnd()}…` : line;
  return cut.length < text.trim().length && !cut.endsWith("…") ? `${cut} …` : cut;
}

/** The CSS class of a process or state status. */
export function statusClass(status: string): string {
  return `status status-${status.toLowerCase().replace(/_/g, "-")}`;
}

/** A payload as readable text: JSON pretty-printed, anything else as it came. */
export function formatPayload(payload: EncodedObject | null | undefined): string {
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

/** A business-row value as text: strings as they are, the rest as JSON. */
export function formatValue(value: unknown): string {
  if (value === null || value === undefined) return "NULL";
  if (typeof value === "string") return value;
  return JSON.stringify(value, null, 2);
}

/** A `datetime-local` input's value as ms since the epoch, read in UTC; undefined if empty. */
export function parseUtcInput(value: string): number | undefined {
  const trimmed = value.trim();
  if (!trimmed) return undefined;
  const ms = Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(trimmed) ? trimmed : `${trimmed}Z`);
  return Number.isNaN(ms) ? undefined : ms;
}

/** A retry policy as the async service applies it (absent fields at their defaults). */
export function formatRetryPolicy(policy: RetryPolicy | null | undefined): string {
  const attempts = policy?.maximumAttempts ? `${policy.maximumAttempts} attempts` : "unlimited attempts";
  const initial = policy?.initialIntervalSeconds || 1;
  const coefficient = Math.max(1, policy?.backoffCoefficient ?? 2);
  const maximum = policy?.maximumIntervalSeconds ?? 100;
  const within = policy?.maximumAttemptsDurationSeconds ? `, within ${formatDuration(policy.maximumAttemptsDurationSeconds * 1000)}` : "";
  const backoff =
    coefficient === 1 || initial >= maximum
      ? `every ${formatDuration(Math.min(initial, maximum) * 1000)}`
      : `${formatDuration(initial * 1000)} ×${coefficient} up to ${formatDuration(maximum * 1000)}`;
  return `${attempts}, ${backoff}${within}${policy ? "" : " (default)"}`;
}

/** A state's failure recovery: fail the process, or proceed to a state. */
export function formatRecovery(config: AsyncStateConfig | null | undefined): string {
  const recovery = config?.stateFailureRecoveryOptions;
  if (recovery?.policy === "PROCEED_TO_CONFIGURED_STATE") {
    return recovery.stateFailureProceedStateId ? `proceed to ${recovery.stateFailureProceedStateId}` : "proceed (no state: fails)";
  }
  return "fail the process";
}

/** What a call loads before it runs, and the lock it takes: `form, status (SHARED_LOCK)`. */
export function formatLoading(names: string[] | undefined, lockType: string | undefined): string {
  const what = names && names.length > 0 ? names.join(", ") : "nothing";
  return lockType && lockType !== "NO_LOCK" ? `${what} (${lockType})` : what;
}

/** An execution's start priority, 1 (its tasks claimed first) to 5 (last): `1 (claimed
 * first)`, `2`, `3 (default)`, `5 (claimed last)`. None (a service before priorities) is
 * the default, 3. */
export function formatPriority(priority: number | null | undefined): string {
  const p = priority ?? 3;
  const note = p === 1 ? "claimed first" : p === 3 ? "default" : p === 5 ? "claimed last" : undefined;
  return note ? `${p} (${note})` : String(p);
}

/** An execution's fairness key with its weight, the tasks the key takes in each turn of a
 * priority's claims: `tenant-a (weight 5)`; a key the service answers without a weight
 * has the default, 1. Undefined when the start named no key (it shares the key of every
 * start without one). */
export function formatFairness(key: string | null | undefined, weight: number | null | undefined): string | undefined {
  if (key === null || key === undefined) return undefined;
  return `${key} (weight ${weight ?? 1})`;
}
