// History events as an operator reads them: a one-line summary per event type and the
// state execution the event belongs to. Pure; the details stay available in full.
import { reorderingText } from "./reprioritize.js";
import type { ClaimOrder, HistoryEvent } from "./types.js";

type Details = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);
const list = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const obj = (v: unknown): Details => (v && typeof v === "object" && !Array.isArray(v) ? (v as Details) : {});

function clip(text: string, max = 140): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** ` — reason (by identity)` when the event recorded them. */
function why(d: Details): string {
  const reason = str(d.reason);
  const identity = str(d.identity);
  return `${reason ? ` — ${reason}` : ""}${identity ? ` (by ${identity})` : ""}`;
}

/** A claim order from the details, what of it is there. */
function claimOrder(v: unknown): Partial<ClaimOrder> {
  const o = obj(v);
  return { priority: num(o.priority), fairnessKey: str(o.fairnessKey), fairnessWeight: num(o.fairnessWeight) };
}

/** What a state decided: its next states, or how it closed its thread. */
function decision(d: Details): string {
  const next = list(obj(d.decision).nextStates).map((m) => str(obj(m).stateId) ?? "?");
  const close = str(obj(obj(d.decision).threadCloseDecision).closeType);
  if (next.length > 0) return `→ ${next.join(", ")}`;
  if (close) return `closes its thread: ${close}`;
  return "decided";
}

/** What the state waits for, from its command request. */
function waits(d: Details): string {
  const request = obj(d.commandRequest);
  const timers = list(request.timerCommands).length;
  const queues = list(request.localQueueCommands).map((q) => str(obj(q).queueName) ?? "?");
  const parts = [...(timers > 0 ? [`${timers} timer${timers === 1 ? "" : "s"}`] : []), ...queues.map((q) => `queue ${q}`)];
  const type = str(request.waitingType);
  return parts.length === 0 ? "waits for nothing" : `waits for ${type ? `${type.toLowerCase().replace(/_/g, " ")}: ` : ""}${parts.join(", ")}`;
}

/** The one-line summary of `event`. */
export function summarizeEvent(event: Pick<HistoryEvent, "eventType" | "details">): string {
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
      return clip(`${str(d.api) ?? "call"}${attempt !== undefined ? ` attempt ${attempt}` : ""} failed: ${str(d.error) ?? "?"}`);
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
        `${str(d.taskType) ?? "task"} parked${str(d.reason) ? ` (${str(d.reason)})` : ""}` +
          `${num(d.refusals) ? ` after ${num(d.refusals)} refusals` : ""}${str(d.error) ? `: ${str(d.error)}` : ""}`,
      );
    default:
      return clip(
        Object.entries(d)
          .filter(([, v]) => v !== null && v !== undefined)
          .map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)
          .join(" · "),
      );
  }
}

/** The state execution `event` belongs to, when it has one. */
export function eventStateExecution(event: Pick<HistoryEvent, "details">): string | undefined {
  const d = obj(event.details);
  const many = list(d.stateExecutionIds).filter((id): id is string => typeof id === "string");
  return str(d.stateExecutionId) ?? (many.length > 0 ? many.join(", ") : undefined);
}
