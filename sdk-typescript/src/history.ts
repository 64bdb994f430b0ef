/**
 * Reading history events: which state execution an event is about, and the typed details
 * of an operator's reprioritization. The events are the service's (`HistoryEvent`,
 * `details` shaped by `eventType`); these read the state execution id from the details
 * that carry one. Nothing here does IO.
 */
import { XdbInvalidResponseError } from "./errors.js";
import { ReprioritizedDetailsSchema, SERVICE_PATHS, type HistoryEvent, type ReprioritizedDetails } from "./protocol.js";

/**
 * The state execution (`stateId-number`) `event` is about, where it has one: set for
 * `WAIT_UNTIL_COMPLETED`, `EXECUTE_COMPLETED`, `STATE_API_FAILED`, `STATE_FAILED`,
 * `TIMER_FIRED` and `LOCAL_QUEUE_MESSAGES_CONSUMED`; for `LOCAL_QUEUE_MESSAGES_PUBLISHED`
 * when a state published; for `TASK_PARKED` unless the task was the process timeout.
 * An operator's control (`reprioritize` too) names the state executions it acted on:
 * `stateExecutionIdsOf`.
 */
export function stateExecutionIdOf(event: HistoryEvent): string | undefined {
  const value = event.details.stateExecutionId;
  return typeof value === "string" ? value : undefined;
}

/** Every state execution `event` is about: its own, or those a control acted on. */
export function stateExecutionIdsOf(event: HistoryEvent): string[] {
  const single = stateExecutionIdOf(event);
  if (single !== undefined) return [single];
  const many = event.details.stateExecutionIds;
  return Array.isArray(many) ? many.filter((v): v is string => typeof v === "string") : [];
}

/**
 * The details of a `REPRIORITIZED` event: the execution's claim order `before` and
 * `after` (priority, and fairness key and weight when it has a key), who asked and why,
 * and the state executions whose waiting calls were reordered; undefined for an event of
 * another type. Throws `XdbInvalidResponseError` when the details are not that shape.
 */
export function reprioritizedDetailsOf(event: HistoryEvent): ReprioritizedDetails | undefined {
  if (event.eventType !== "REPRIORITIZED") return undefined;
  // History pages check `details` only as an object, since its shape depends on the type.
  const parsed = ReprioritizedDetailsSchema.safeParse(event.details);
  if (!parsed.success) {
    throw new XdbInvalidResponseError(`REPRIORITIZED event ${event.eventId}: ${parsed.error.message}`, SERVICE_PATHS.history);
  }
  return parsed.data;
}
