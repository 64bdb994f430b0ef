// The flow limits: for each process type and state with limits (calls a second, calls
// at once and, for a type, running executions per concurrency key, perhaps keyed by a global
// attribute, and the priority and fairness of its starts that name none), what its definition declares,
// an operator's override and what is in force; the form that sets or clears an
// override (with a reason, kept in the audit history); and the history of changes, by
// registrations and operators, newest first, older ones on demand (views/changes.ts). The form is checked before it is sent; what
// the service refuses (a 400 naming the field) is shown under it, with the field marked,
// and the form keeps what was typed.
import { api } from "../api.js";
import { h, replace, table } from "../dom.js";
import { formatPriority, formatTime } from "../format.js";
import { ACTIONS, changeText, errorField, flowLimitsRequest, limitsText, scopeText } from "../flow-limits.js";
import type { FlowLimitChange } from "../types.js";
import { changeHistory } from "./changes.js";
import { definitionHref } from "./routes.js";

const REFRESH_MS = 5000;
/** Changes in a page of the history. */
const HISTORY_SIZE = 50;

export function flowLimitsView(root: HTMLElement): () => void {
  const limits = h("div");
  const history = changeHistory<FlowLimitChange>({
    read: (pageSize, nextPageToken) => api.flowLimitsHistory({ pageSize, ...(nextPageToken ? { nextPageToken } : {}) }),
    pageSize: HISTORY_SIZE,
    columns: [
      { label: "Process type", cell: (c) => h("td", {}, c.processType) },
      { label: "State", cell: (c) => h("td", { class: "mono small" }, scopeText(c.stateId)) },
      { label: "Source", cell: (c) => h("td", {}, c.source) },
      { label: "Change", cell: (c) => h("td", { "data-testid": "flow-limit-change-text" }, changeText(c)) },
    ],
    row: () => ({ "data-testid": "flow-limit-change" }),
    empty: "No changes yet.",
    testId: "flow-limit-history",
  });
  let stopped = false;

  async function load(): Promise<void> {
    try {
      void history.refresh();
      const listed = await api.flowLimitsList();
      if (stopped) return;
      replace(
        limits,
        table(
          ["Process type", "State", "Declared", "Override", "Effective", "Updated (UTC)", ""],
          listed.limits.map((e) =>
            h(
              "tr",
              { "data-testid": "flow-limit-row", "data-process-type": e.processType, "data-state-id": e.stateId ?? "" },
              h("td", {}, h("a", { href: definitionHref(e.processType) }, e.processType)),
              h("td", { class: "mono small" }, scopeText(e.stateId)),
              h("td", { "data-testid": "flow-limit-declared" }, limitsText(e.declared)),
              h("td", { "data-testid": "flow-limit-override" }, limitsText(e.override)),
              h("td", { "data-testid": "flow-limit-effective" }, h("strong", {}, limitsText(e.effective))),
              h("td", { class: "small" }, formatTime(e.updatedTimestampMs)),
              h("td", {}, h("button", { type: "button", class: "link", "data-testid": "flow-limit-edit", onclick: () => form.edit(e.processType, e.stateId ?? "") }, "Change")),
            ),
          ),
          "No limits yet: a definition may declare them, or set an override below.",
          "flow-limits-table",
        ),
      );
    } catch (error) {
      if (!stopped) replace(limits, h("p", { class: "error", role: "alert" }, `Could not list flow limits: ${String(error)}`));
    }
  }

  const form = setForm(() => void load());
  replace(
    root,
    h("h1", {}, "Flow limits"),
    h(
      "p",
      { class: "small" },
      "How many worker calls a second, and how many at once, the async service makes for a process type (all its states together) or one state; and, for a type, how many of its executions run at once per concurrency key (a start's concurrencyKey, or the value it writes for the limit's concurrency key attribute, a column of its business row), the priority of its starts that name none (1 claimed first to 5; none: 3), and their fairness (the attribute whose value is the fairness key of a start that names none, waiting tasks of a priority being claimed key by key in turn, and how many tasks such a start's key takes a turn; none: no key, 1). An override wins while set, whole (what it leaves out is not in force); cleared, the declared limits apply again. A call held back shows as FLOW_LIMITED in an execution's states; a start held back, as a PENDING execution.",
    ),
    limits,
    form.element,
    h("h2", {}, "History"),
    history.element,
  );
  void load();
  const timer = setInterval(() => void load(), REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/** The form that sets or clears an override; `changed` runs after the service took one. */
function setForm(changed: () => void): { element: HTMLElement; edit: (processType: string, stateId: string) => void } {
  const inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();
  const input = (name: string, placeholder = "", list?: string) => {
    const element = h("input", { name, placeholder, autocomplete: "off", list, "data-testid": `flow-limit-${name}` });
    inputs.set(name, element);
    return element;
  };
  const row = (label: string, control: HTMLElement, hint?: string) => h("label", {}, h("span", {}, label), control, hint && h("span", { class: "small" }, hint));
  const types = h("datalist", { id: "flow-limit-process-types" });
  const action = h(
    "select",
    { name: "action", "data-testid": "flow-limit-action" },
    ACTIONS.map(([value, label]) => h("option", { value }, label)),
  );
  inputs.set("action", action);
  const rateRow = row("Max calls a second", input("maxCallsPerSecond", "20"), "more than 0, at most 1,000,000; 0.5 is one call every 2 s; empty: no rate limit");
  const atOnceRow = row("Max concurrent calls", input("maxConcurrentCalls", "8"), "at most so many calls running at once, 1 to 100,000; empty: no such limit");
  const running = input("maxRunningExecutions", "2");
  const runningRow = row(
    "Max running executions",
    running,
    "per concurrency key, 1 to 100,000: a start over it waits PENDING until one of its key closes; a type's limit (State empty); empty: no such limit",
  );
  const keyAttribute = input("concurrencyKeyAttribute", "customer_id");
  const keyAttributeRow = row(
    "Concurrency key attribute",
    keyAttribute,
    "with Max running executions: a column of the type's business row; a start naming no concurrencyKey is counted under the value it writes for it (and refused if it writes none); empty: the start's concurrencyKey",
  );
  // A type's priority: one of 1 to 5, or none (its starts that name none at 3).
  const priority = h(
    "select",
    { name: "priority", "data-testid": "flow-limit-priority" },
    h("option", { value: "" }, "none (3, the default)"),
    [1, 2, 3, 4, 5].map((p) => h("option", { value: String(p) }, formatPriority(p))),
  );
  inputs.set("priority", priority);
  const priorityRow = row(
    "Priority",
    priority,
    "1 claimed first; of the type's starts that name none (a start's own wins), within a second, not those already started; a type's (State empty); it limits nothing, and an override replaces the declared limits whole: give those to keep with it",
  );
  const fairnessAttribute = input("fairnessKeyAttribute", "tenant_id");
  const fairnessAttributeRow = row(
    "Fairness key attribute",
    fairnessAttribute,
    "a column of the type's business row; a start naming no fairnessKey is keyed by the value it writes for it (none written: no key), and waiting tasks of a priority are claimed key by key in turn; a type's (State empty); it limits nothing; empty: only a start's own fairnessKey",
  );
  // On a line of its own, beside its weight, rather than beside the priority.
  fairnessAttributeRow.classList.add("starts-line");
  const fairnessWeight = input("fairnessWeight", "2");
  const fairnessWeightRow = row(
    "Fairness weight",
    fairnessWeight,
    "how many tasks a key takes in each turn, 1 to 1,000, for the type's keyed starts that name none (a start's own wins); a type's (State empty); empty: 1",
  );
  const limitRows = [rateRow, atOnceRow, runningRow, keyAttributeRow, priorityRow, fairnessAttributeRow, fairnessWeightRow];
  action.addEventListener("change", () => {
    for (const limitRow of limitRows) limitRow.hidden = action.value !== "limits";
  });
  // Running executions, a priority and fairness are a type's: a state has none to limit,
  // key, order or share.
  const stateInput = input("stateId", "optional");
  const typeOnly = () => {
    running.disabled = stateInput.value.trim() !== "";
    for (const field of [keyAttribute, priority, fairnessAttribute, fairnessWeight]) field.disabled = running.disabled;
  };
  stateInput.addEventListener("input", typeOnly);

  const problem = h("p", { class: "error", role: "alert", "data-testid": "flow-limit-error", hidden: true });
  const done = h("p", { class: "small", role: "status", "data-testid": "flow-limit-done", hidden: true });
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "flow-limit-submit" }, "Apply");
  const show = (error: string | undefined, field?: string) => {
    problem.textContent = error ?? "";
    problem.hidden = !error;
    for (const [name, element] of inputs) element.toggleAttribute("aria-invalid", name === field);
    if (field) inputs.get(field)?.focus();
  };
  const apply = async () => {
    done.hidden = true;
    const checked = flowLimitsRequest((name) => inputs.get(name)?.value ?? "");
    if ("error" in checked) {
      show(checked.error, checked.field);
      return;
    }
    submit.disabled = true;
    try {
      const entry = await api.flowLimitsSet(checked.request);
      show(undefined);
      done.textContent = `${entry.processType} ${scopeText(entry.stateId)}: ${limitsText(entry.effective)} in force.`;
      done.hidden = false;
      changed();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      show(`The service refused the change: ${message}`, errorField(message));
    } finally {
      submit.disabled = false;
    }
  };
  const element = h(
    "details",
    { class: "panel schedule-create", "data-testid": "flow-limit-form" },
    h("summary", {}, h("strong", {}, "Set or clear an override")),
    h(
      "form",
      {
        class: "schedule-form",
        onsubmit: (event: Event) => {
          event.preventDefault();
          void apply();
        },
      },
      row("Process type", input("processType", "OrderProcess", "flow-limit-process-types")),
      row("State", stateInput, "empty: all the type's states together"),
      // Two columns: the change beside its reason, then the limits in pairs, the
      // running-executions limit beside the attribute that keys it, then the type's priority
      // (alone on its line), then the fairness key attribute beside the weight of the starts it keys.
      row("Change", action),
      row("Reason", input("reason", "optional"), "kept in the history"),
      rateRow,
      atOnceRow,
      runningRow,
      keyAttributeRow,
      priorityRow,
      fairnessAttributeRow,
      fairnessWeightRow,
      problem,
      done,
      h("div", { class: "buttons" }, submit),
      types,
    ),
  );
  void api.definitions().then(
    ({ definitions }) => replace(types, definitions.map((d) => h("option", { value: d.processType }))),
    () => undefined,
  );
  const edit = (processType: string, stateId: string) => {
    const set = (name: string, value: string) => {
      const field = inputs.get(name);
      if (field) field.value = value;
    };
    set("processType", processType);
    set("stateId", stateId);
    typeOnly();
    element.open = true;
    inputs.get("maxCallsPerSecond")?.focus();
  };
  return { element, edit };
}
