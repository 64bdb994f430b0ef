// A process stuck on a failing call, and the operator's way through it: states, pause,
// resume, retry-now and give-up. Shared by the operator test and the contract test.
import assert from "node:assert/strict";

import {
  StateSchema, isApiError, type AsyncState, type Client, type Process, type StateExecutionInfo, type WorkerContext,
} from "@xdb/sdk";

import { eventually } from "./harness.js";

/** Its execute fails on every attempt and waits an hour between them: only an operator moves it. */
class FailingState implements AsyncState {
  readonly options = {
    executeApiRetryPolicy: { initialIntervalSeconds: 3600, maximumIntervalSeconds: 3600, maximumAttempts: 0 },
  };
  execute(ctx: WorkerContext): never {
    throw new Error(`the provider is down (attempt ${ctx.attempt})`);
  }
}

export class StuckProcess implements Process {
  stateSchema() {
    return StateSchema.withStartingState(new FailingState());
  }
}

async function onlyState(client: Client, processId: string): Promise<StateExecutionInfo> {
  const view = await client.states(processId);
  assert.equal(view.states.length, 1, JSON.stringify(view));
  return view.states[0] as StateExecutionInfo;
}

/** Waits until the state's execute has failed `attempts` times and waits for the next one. */
async function failedAttempts(client: Client, processId: string, attempts: number): Promise<StateExecutionInfo> {
  let state: StateExecutionInfo | undefined;
  await eventually(`attempt ${attempts} of ${processId} to fail`, 30_000, async () => {
    state = await onlyState(client, processId);
    return state.lastFailure?.attempt === attempts && state.pendingCall?.phase === "SCHEDULED";
  });
  return state as StateExecutionInfo;
}

/**
 * Drives a started `StuckProcess` through every control, checking each one's effect:
 * the state view of a failing call, pause (calls held, retry-now refused), resume,
 * retry-now (the next attempt runs at once), give-up (the process fails).
 */
export async function unstick(client: Client, processId: string): Promise<void> {
  const failing = await failedAttempts(client, processId, 1);
  assert.equal(failing.status, "EXECUTE_RUNNING");
  assert.equal(failing.pendingCall?.api, "execute");
  assert.equal(failing.pendingCall?.attempt, 2);
  assert.match(failing.lastFailure?.error ?? "", /the provider is down \(attempt 1\)/);
  assert.ok((failing.pendingCall?.dueTimestampMs ?? 0) > Date.now() + 3_000_000, "the next attempt waits out its backoff");
  const stateExecutionId = failing.stateExecutionId;

  const identity = { reason: "provider maintenance", identity: "ops@example.com" };
  assert.deepEqual((await client.pause(processId, identity)).stateExecutionIds, [stateExecutionId]);
  const paused = await client.states(processId);
  assert.equal(paused.paused?.reason, "provider maintenance");
  assert.equal(paused.states[0]?.pendingCall?.phase, "PAUSED");
  assert.equal((await client.describe(processId)).paused?.identity, "ops@example.com");
  await assert.rejects(client.pause(processId), (e: unknown) => isApiError(e, "CONTROL_NOT_APPLICABLE"));
  await assert.rejects(client.retryNow(processId), (e: unknown) => isApiError(e, "CONTROL_NOT_APPLICABLE"));
  await client.resume(processId, identity);
  assert.equal((await client.states(processId)).paused ?? undefined, undefined, "resumed");

  assert.deepEqual((await client.retryNow(processId, { stateExecutionId, ...identity })).stateExecutionIds, [stateExecutionId]);
  await failedAttempts(client, processId, 2);

  assert.deepEqual((await client.giveUp(processId, identity)).stateExecutionIds, [stateExecutionId]);
  const closed = await client.waitForCompletion(processId, { timeoutMs: 20_000 });
  assert.equal(closed.status, "FAILED");
  const controls = await client.history(processId, { eventTypes: ["PAUSED", "RESUMED", "RETRY_REQUESTED", "GIVE_UP_REQUESTED"] });
  assert.deepEqual(
    controls.events.map((e) => [e.eventType, e.details.identity]),
    [
      ["PAUSED", "ops@example.com"],
      ["RESUMED", "ops@example.com"],
      ["RETRY_REQUESTED", "ops@example.com"],
      ["GIVE_UP_REQUESTED", "ops@example.com"],
    ],
  );
}
