// The operator's actions on one execution, each confirmed in a dialog first: stop
// (terminate or fail), retry now, give up, pause/resume, reprioritize, publish to a local
// queue, call an RPC, and reset to a state (the one action a closed execution has). The
// publish and RPC dialogs offer the queues and RPCs the process type's registered
// definition declares, and take any name when the type is not registered. The
// reprioritize dialog starts at the execution's priority and fairness key, and stays open
// on what the service refuses, shown on the field it is about.
import { api, ApiError } from "../api.js";
import { formatPayload } from "../format.js";
import { h } from "../dom.js";
import { reprioritization, reprioritizeErrorField, reprioritizeFields, type CurrentOrder } from "../reprioritize.js";
import type { DefinitionDescribeResponse, DescribeResponse, EncodedObject, StatesResponse } from "../types.js";
import { ask, notify } from "./dialog.js";
import { executionHref } from "./routes.js";

/** The action buttons for `execution`, whose type's registered definition is `definition`
 * (undefined: not registered); `done` refreshes the page after one succeeds. */
export function actionButtons(
  execution: DescribeResponse,
  states: StatesResponse,
  definition: DefinitionDescribeResponse | undefined,
  done: () => void,
): HTMLElement {
  const processId = execution.processId;
  const processExecutionId = execution.processExecutionId;
  const run = async (what: string, action: () => Promise<unknown>) => {
    try {
      await action();
      notify(`${what}: done`);
    } catch (error) {
      const text =
        error instanceof ApiError && error.subType === "CONTROL_NOT_APPLICABLE"
          ? `${what}: not applicable now — ${error.message}`
          : `${what} failed: ${error instanceof Error ? error.message : String(error)}`;
      notify(text, "error");
    }
    done();
  };
  const reasonField = { name: "reason", label: "Reason (recorded in the history)", placeholder: "optional" };
  const control = (label: string, testId: string, message: string, call: typeof api.retryNow, danger = false) =>
    button(label, testId, danger, async () => {
      const values = await ask(`${label}?`, message, [reasonField], label, { danger });
      if (!values) return;
      await run(label, () =>
        call({ processId, processExecutionId, ...(values("reason").trim() ? { reason: values("reason").trim() } : {}) }),
      );
    });
  const waitedOn = [...new Set(states.states.flatMap((s) => s.waitingFor?.localQueues.map((q) => q.queueName) ?? []))];
  const declaredQueues = definition?.definition.localQueues ?? [];
  const queues = [...new Set([...waitedOn, ...declaredQueues])];
  const rpcs = (definition?.definition.rpcs ?? []).map((r) => r.name);
  const declaredBy = definition
    ? `${execution.processType} revision ${definition.revision.revision} declares`
    : `${execution.processType} is not registered: any name goes`;
  const paused = Boolean(states.paused);
  // PENDING: the running-execution limit's own pause, which only a freed slot lifts.
  const pending = states.paused?.pendingOnKey !== undefined && states.paused.pendingOnKey !== null;
  const resetButton = button("Reset", "action-reset", true, async () => {
    const stateIds = [...new Set(states.states.map((s) => s.stateId))];
    const closed = execution.status !== "RUNNING";
    const values = await ask(
      `Reset ${processId} to a state?`,
      closed
        ? "A new execution of this process id starts at the state, linked to this one."
        : "Its open states are aborted (their calls, timers and waits cancelled) and the state starts.",
      [
        { name: "state", label: "State", value: stateIds[0] ?? "", placeholder: "state id" },
        { name: "input", label: "State input (JSON, optional)", kind: "textarea", placeholder: '{"amount": 10}' },
        {
          name: "skipWaitUntil",
          label: "Skip waitUntil (default: as the registered definition says)",
          kind: "select",
          value: "default",
          options: ["default", "yes", "no"],
        },
        reasonField,
      ],
      "Reset",
      { danger: true },
    );
    if (!values) return;
    const input = values("input").trim();
    if (input) {
      try {
        JSON.parse(input);
      } catch {
        notify("The state input is not JSON.", "error");
        return;
      }
    }
    const skip = values("skipWaitUntil");
    const reason = values("reason").trim();
    await run("Reset", async () => {
      const answer = await api.reset({
        processId,
        processExecutionId,
        stateId: values("state").trim(),
        ...(input ? { stateInput: { encoding: "json", data: input } } : {}),
        ...(skip === "default" ? {} : { stateConfig: { skipWaitUntil: skip === "yes" } }),
        ...(reason ? { reason } : {}),
        identity: "console",
      });
      if (answer.newExecution) location.hash = executionHref(processId, answer.processExecutionId);
    });
  });
  if (execution.status !== "RUNNING") {
    return h("div", { class: "actions", "data-testid": "actions" }, resetButton);
  }
  return h(
    "div",
    { class: "actions", "data-testid": "actions" },
    button("Terminate", "action-terminate", true, () => stop("TERMINATE")),
    button("Fail", "action-fail", true, () => stop("FAIL")),
    control("Retry now", "action-retry-now", "Calls waiting for their retry backoff run now; parked tasks are released.", api.retryNow),
    control("Give up", "action-give-up", "Failing states go to their failure recovery without their remaining attempts.", api.giveUp, true),
    pending
      ? h(
          "button",
          {
            type: "button",
            disabled: true,
            "data-testid": "action-resume",
            title: "PENDING: it starts by itself when a running execution of its concurrency key closes; it cannot be resumed.",
          },
          "Resume",
        )
      : paused
        ? control("Resume", "action-resume", "What fell due while paused runs now.", api.resume)
        : control("Pause", "action-pause", "Nothing of this execution is called until it resumes.", api.pause),
    button("Reprioritize", "action-reprioritize", false, async () => {
      const current: CurrentOrder = { priority: execution.priority, fairnessKey: execution.fairnessKey, fairnessWeight: execution.fairnessWeight };
      const checked = (values: (name: string) => string) => reprioritization(values, current);
      const values = await ask(
        `Reprioritize ${processId}?`,
        "Its waiting calls, and those it makes later, are claimed in the new order: priority 1 first; " +
          "at one priority, key by key in turn, each key taking up to its weight of calls a turn.",
        [...reprioritizeFields(current), reasonField],
        "Reprioritize",
        {
          validate: (v) => {
            const change = checked(v);
            return "message" in change ? change : undefined;
          },
          submit: async (v) => {
            const change = checked(v);
            if ("message" in change) return change;
            const reason = v("reason").trim();
            try {
              await api.reprioritize({ processId, processExecutionId, reprioritize: change.change, ...(reason ? { reason } : {}), identity: "console" });
              return undefined;
            } catch (error) {
              if (!(error instanceof ApiError)) throw error;
              return {
                message:
                  error.subType === "CONTROL_NOT_APPLICABLE" ? `Not applicable now — ${error.message}` : `The service refused it: ${error.message}`,
                field: reprioritizeErrorField(error),
              };
            }
          },
        },
      );
      if (!values) return;
      notify("Reprioritize: done");
      done();
    }),
    resetButton,
    button("Publish message", "action-publish", false, async () => {
      const values = await ask(
        "Publish to a local queue",
        `A message for ${processId}; a state waiting on the queue receives it at once. ` +
          (definition ? `${declaredBy} ${declaredQueues.length > 0 ? declaredQueues.join(", ") : "no queue"}.` : `${declaredBy}.`),
        [
          { name: "queue", label: "Queue", value: queues[0] ?? "", placeholder: "queue name", suggestions: queues },
          { name: "payload", label: "Payload (JSON, optional)", kind: "textarea", placeholder: '{"source": "console"}' },
          { name: "dedupId", label: "Dedup id (optional)" },
        ],
        "Publish",
      );
      if (!values) return;
      const payload = jsonPayload(values("payload"));
      if (payload === null) return;
      await run("Publish", () =>
        api.publish(processId, values("queue").trim(), payload, values("dedupId").trim() || undefined),
      );
    }),
    button("Call RPC", "action-rpc", false, async () => {
      const values = await ask(
        "Call an RPC",
        `Calls the worker once for ${processId}, in one transaction with what it writes. ` +
          (definition ? `${declaredBy} ${rpcs.length > 0 ? rpcs.join(", ") : "no RPC"}.` : `${declaredBy}.`),
        [
          { name: "rpc", label: "RPC", value: rpcs[0] ?? "", placeholder: "rpc name", suggestions: rpcs },
          { name: "input", label: "Input (JSON, optional)", kind: "textarea", placeholder: '{"source": "console"}' },
        ],
        "Call",
      );
      if (!values) return;
      const input = jsonPayload(values("input"));
      if (input === null) return;
      const rpcName = values("rpc").trim();
      try {
        const response = await api.rpc(processId, rpcName, input);
        notify(`RPC ${rpcName}: ${response.output ? formatPayload(response.output) : "done"}`);
      } catch (error) {
        notify(`RPC ${rpcName} failed: ${error instanceof Error ? error.message : String(error)}`, "error");
      }
      done();
    }),
  );

  async function stop(stopType: "TERMINATE" | "FAIL"): Promise<void> {
    const label = stopType === "TERMINATE" ? "Terminate" : "Fail";
    const values = await ask(
      `${label} ${processId}?`,
      stopType === "TERMINATE"
        ? "The execution ends as TERMINATED; nothing more of it runs."
        : "The execution ends as FAILED; nothing more of it runs.",
      [reasonField],
      label,
      { danger: true },
    );
    if (!values) return;
    await run(label, () => api.stop(processId, stopType, values("reason").trim() || undefined));
  }
}

/** `text` as a JSON payload: undefined when empty, null (after saying so) when not JSON. */
function jsonPayload(text: string): EncodedObject | undefined | null {
  const data = text.trim();
  if (!data) return undefined;
  try {
    JSON.parse(data);
  } catch {
    notify("The payload is not JSON.", "error");
    return null;
  }
  return { encoding: "json", data };
}

function button(label: string, testId: string, danger: boolean, onClick: () => Promise<void>): HTMLButtonElement {
  return h("button", { type: "button", class: danger ? "danger" : "", "data-testid": testId, onclick: () => void onClick() }, label);
}
