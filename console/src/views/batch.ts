// Batches: acting on every execution a filter selects. The start asks for the operation,
// then its arguments and its rate (checked before it is sent) beside the count of what it
// selects (the `count` call with the same selection), and sends a requestId, so a second
// click or a retried request does not start a second batch. What the service refuses
// keeps the dialog open, shown on the field it is about. A batch's page follows its
// progress each second and shows the rate it was started with.
import { api } from "../api.js";
import { facts, h, replace, table } from "../dom.js";
import { treeToText } from "../filter.js";
import { formatTime, statusClass } from "../format.js";
import { selectionRequest, type Selection } from "../query.js";
import { reprioritization, reprioritizationText, reprioritizeErrorField, reprioritizeFields } from "../reprioritize.js";
import type { BatchDescribeResponse, BatchInfo, BatchOperation, BatchStartRequest, BatchStartResponse } from "../types.js";
import { ask, notify, type Field, type Problem } from "./dialog.js";
import { batchHref } from "./routes.js";

const OPERATIONS: BatchOperation[] = [
  "PAUSE", "RESUME", "RETRY_NOW", "GIVE_UP", "TERMINATE", "FAIL", "PUBLISH_TO_LOCAL_QUEUE", "RESET", "MOVE_TO_DEPLOYMENT", "REPRIORITIZE",
];
const POLL_MS = 1000;

/** The service's default and bounds of a batch's rate (executions per second). */
export const RATE = { default: 100, min: 1, max: 10_000 } as const;

/** What is wrong with `text` as a batch's rate; undefined when it is one. */
export function rateError(text: string): string | undefined {
  const t = text.trim();
  if (t === "") return `The rate is missing: a whole number of executions per second, ${RATE.min} to ${RATE.max}.`;
  if (!/^\d+$/.test(t) || Number(t) < RATE.min || Number(t) > RATE.max) {
    return `The rate ${t} is not one the service takes: a whole number of executions per second, ${RATE.min} to ${RATE.max}.`;
  }
  return undefined;
}

/** The fields `operation` takes beside its rate and reason. */
function argumentFields(operation: BatchOperation, deployments: string[]): Field[] {
  const common: Field[] = [
    { name: "rate", label: `Rate (executions per second, ${RATE.min} to ${RATE.max})`, kind: "number", value: String(RATE.default) },
    { name: "reason", label: "Reason (kept in the batch and the histories)", placeholder: "optional" },
  ];
  switch (operation) {
    case "PUBLISH_TO_LOCAL_QUEUE":
      return [
        { name: "queue", label: "Queue", placeholder: "queue name" },
        { name: "payload", label: "Payload (JSON, optional)", kind: "textarea", placeholder: '{"source": "console"}' },
        ...common,
      ];
    case "RESET":
      return [
        { name: "state", label: "State to reset to", placeholder: "state id" },
        { name: "input", label: "State input (JSON, optional)", kind: "textarea" },
        ...common,
      ];
    case "MOVE_TO_DEPLOYMENT":
      return [{ name: "deployment", label: "Deployment (name@version)", suggestions: deployments, value: deployments[0] ?? "" }, ...common];
    case "REPRIORITIZE":
      return [...reprioritizeFields(), ...common];
    default:
      return common;
  }
}

/** What is wrong with the dialog's `values` for `operation`, and its field; undefined
 * when nothing. */
export function argumentsProblem(operation: BatchOperation, values: (name: string) => string): Problem | undefined {
  const rate = rateError(values("rate"));
  if (rate) return { message: rate, field: "rate" };
  const notJson = (name: string, what: string) => {
    try {
      json(values(name));
      return undefined;
    } catch (error) {
      return { message: `${what} is not JSON: ${error instanceof Error ? error.message : String(error)}`, field: name };
    }
  };
  switch (operation) {
    case "PUBLISH_TO_LOCAL_QUEUE":
      return values("queue").trim() ? notJson("payload", "The payload") : { message: "The queue is missing.", field: "queue" };
    case "RESET":
      return values("state").trim() ? notJson("input", "The state input") : { message: "The state to reset to is missing.", field: "state" };
    case "MOVE_TO_DEPLOYMENT":
      return /^[^@]+@[^@]+$/.test(values("deployment").trim()) ? undefined : { message: "The deployment is name@version.", field: "deployment" };
    case "REPRIORITIZE": {
      const checked = reprioritization(values);
      return "message" in checked ? checked : undefined;
    }
    default:
      return undefined;
  }
}

/** What is wrong with the dialog's `values` for `operation`; undefined when nothing. */
export function argumentsError(operation: BatchOperation, values: (name: string) => string): string | undefined {
  return argumentsProblem(operation, values)?.message;
}

/** The dialog's field a refusal of the start names (`ratePerSecond: ...`,
 * `reprioritize.fairnessWeight: ...`); undefined when none. */
export function startErrorField(message: string): string | undefined {
  return /\bratePerSecond\b/.test(message) ? "rate" : reprioritizeErrorField({ message });
}

/** `text` as JSON text, undefined when empty; throws when it is not JSON. */
function json(text: string): string | undefined {
  const data = text.trim();
  if (!data) return undefined;
  JSON.parse(data);
  return data;
}

/** The start request for `operation` over `selection` with the dialog's `values`. */
export function batchRequest(selection: Selection, operation: BatchOperation, values: (name: string) => string, requestId: string): BatchStartRequest {
  const reason = values("reason").trim();
  const rate = values("rate").trim();
  const request: BatchStartRequest = {
    ...selectionRequest(selection),
    operation,
    requestId,
    identity: "console",
    ratePerSecond: rate ? Number(rate) : RATE.default,
    ...(reason ? { reason } : {}),
  };
  if (operation === "PUBLISH_TO_LOCAL_QUEUE") {
    const data = json(values("payload"));
    request.messages = [{ queueName: values("queue").trim(), ...(data ? { payload: { encoding: "json", data } } : {}) }];
  } else if (operation === "RESET") {
    const data = json(values("input"));
    request.reset = { stateId: values("state").trim(), ...(data ? { stateInput: { encoding: "json", data } } : {}) };
  } else if (operation === "MOVE_TO_DEPLOYMENT") {
    const [name, version] = values("deployment").trim().split("@");
    request.moveTo = { name: name ?? "", version: version ?? "" };
  } else if (operation === "REPRIORITIZE") {
    const checked = reprioritization(values);
    if ("message" in checked) throw new Error(checked.message);
    request.reprioritize = checked.change;
  }
  return request;
}

/** Asks for an operation and its arguments, shows what it selects, and starts it. */
export async function startBatch(selection: Selection): Promise<void> {
  let base;
  try {
    base = selectionRequest(selection);
  } catch (error) {
    notify(`The filter text: ${error instanceof Error ? error.message : String(error)}`, "error");
    return;
  }
  const chosen = await ask(
    "Act on every matching execution",
    "Choose what the batch does to each execution the list's filter selects.",
    [{ name: "operation", label: "Operation", kind: "select", options: OPERATIONS, value: "PAUSE" }],
    "Next",
  );
  if (!chosen) return;
  const operation = chosen("operation") as BatchOperation;
  let count: number;
  let deployments: string[] = [];
  try {
    count = (await api.count(base)).count;
    if (operation === "MOVE_TO_DEPLOYMENT") {
      deployments = (await api.deployments().catch(() => ({ deployments: [] }))).deployments.map((d) => `${d.deployment.name}@${d.deployment.version}`);
    }
  } catch (error) {
    notify(`Could not count the selection: ${error instanceof Error ? error.message : String(error)}`, "error");
    return;
  }
  const requestId = crypto.randomUUID();
  let started: BatchStartResponse | undefined;
  const values = await ask(
    `${operation} ${count} execution${count === 1 ? "" : "s"}?`,
    `The filter selects ${count} execution${count === 1 ? "" : "s"} now; the batch handles those still matching when it reaches them, ` +
      "and skips those the operation does not apply to" +
      (operation === "REPRIORITIZE" ? " (a weight for one without a fairness key, unless the batch gives it one)." : "."),
    argumentFields(operation, deployments),
    `Start ${operation}`,
    {
      // Red for what cannot be taken back; another reprioritization undoes one.
      danger: operation !== "RESUME" && operation !== "RETRY_NOW" && operation !== "REPRIORITIZE",
      validate: (v) => argumentsProblem(operation, v),
      // A refused start wrote nothing (its requestId included): corrected, it is sent again.
      submit: async (v) => {
        try {
          started = await api.batchStart(batchRequest(selection, operation, v, requestId));
          return undefined;
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          return { message: `The batch did not start: ${message}`, field: startErrorField(message) };
        }
      },
    },
  );
  if (!values || !started) return;
  location.hash = batchHref(started.batchId);
}

/** The progress of `batch` as a bar and its counts. */
export function progress(batch: BatchInfo): HTMLElement {
  return h(
    "span",
    { class: "batch-progress" },
    h("progress", { max: Math.max(batch.expected, batch.matched, 1), value: batch.matched, "data-testid": "batch-bar" }),
    ` ${batch.matched} of ${batch.expected}`,
  );
}

/** One batch, polled each second while it runs, with its cancel button. */
export function batchView(root: HTMLElement, batchId: string): () => void {
  const body = h("div", { "data-testid": "batch" });
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  async function load(): Promise<void> {
    let described: BatchDescribeResponse;
    try {
      described = await api.batchDescribe(batchId);
    } catch (error) {
      if (!stopped) replace(body, h("p", { class: "error", role: "alert" }, `Could not describe batch ${batchId}: ${String(error)}`));
      return;
    }
    if (stopped) return;
    render(described);
    if (described.batch.status === "RUNNING") timer = setTimeout(() => void load(), POLL_MS);
  }

  function render({ batch, notDone }: BatchDescribeResponse): void {
    const request = batch.request;
    replace(
      body,
      h("h1", {}, `Batch ${batch.operation} `, h("span", { class: statusClass(batch.status), "data-testid": "batch-status" }, batch.status)),
      progress(batch),
      facts([
        ["Batch id", h("span", { class: "mono" }, batch.batchId)],
        ["Done", h("strong", { "data-testid": "batch-done" }, String(batch.done))],
        ["Skipped", h("strong", { "data-testid": "batch-skipped" }, String(batch.skipped))],
        ["Failed", h("strong", { "data-testid": "batch-failed" }, String(batch.failed))],
        ["Expected", h("span", { "data-testid": "batch-expected" }, String(batch.expected))],
        ["Rate", h("span", { "data-testid": "batch-rate" }, `${batch.ratePerSecond} per second at most`)],
        ...(request.reprioritize
          ? [["Change", h("span", { "data-testid": "batch-reprioritize" }, reprioritizationText(request.reprioritize))] as [string, HTMLElement]]
          : []),
        ["Process type", request.processType ?? "any"],
        ["Where", h("code", { "data-testid": "batch-where" }, request.where ? treeToText(request.where) : "every execution")],
        ["Created (UTC)", formatTime(batch.createdTimestampMs)],
        ["Closed (UTC)", formatTime(batch.closedTimestampMs)],
        ...(request.reason ? [["Reason", request.reason] as [string, string]] : []),
        ...(batch.error ? [["Error", h("span", { class: "error" }, batch.error)] as [string, HTMLElement]] : []),
      ]),
      batch.status === "RUNNING" &&
        h("button", { type: "button", class: "danger", "data-testid": "batch-cancel", onclick: () => void cancel() }, "Cancel batch"),
      h("h2", {}, "Skipped or failed"),
      table(
        ["Execution id", "Outcome", "Reason"],
        (notDone ?? []).map((item) =>
          h(
            "tr",
            { "data-testid": "batch-not-done" },
            h("td", { class: "mono small" }, item.processExecutionId),
            h("td", {}, item.outcome),
            h("td", {}, item.reason ?? ""),
          ),
        ),
        "None so far.",
      ),
    );
  }

  async function cancel(): Promise<void> {
    const values = await ask("Cancel the batch?", "It stops after the execution in hand; what it did stays done.", [{ name: "reason", label: "Reason", placeholder: "optional" }], "Cancel batch", { danger: true });
    if (!values) return;
    try {
      await api.batchCancel(batchId, values("reason").trim() || undefined);
    } catch (error) {
      notify(`Could not cancel: ${error instanceof Error ? error.message : String(error)}`, "error");
    }
    if (timer) clearTimeout(timer);
    void load();
  }

  replace(root, h("p", {}, h("a", { href: "#/batches" }, "← Batches")), body);
  void load();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
