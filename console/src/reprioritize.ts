// Pure parts of an operator's reprioritization, on an execution's page and as a batch: the
// form's fields, its values checked and turned into the change to send, the field a
// refusal is about, and a claim order (priority, fairness key and weight) as text.
import { formatFairness, formatPriority } from "./format.js";
import type { ClaimOrder, Reprioritization } from "./types.js";
import type { Field, Problem } from "./views/dialog.js";

/** An execution's claim order as `describe` answers it (a service before priorities
 * answers none: the default, 3). */
export interface CurrentOrder {
  priority?: number | null;
  fairnessKey?: string | null;
  fairnessWeight?: number | null;
}

const PRIORITIES = ["1", "2", "3", "4", "5"];

/** A claim order's fairness as text: `acme (weight 2)`, or `none`. */
export function fairnessText(order: Pick<ClaimOrder, "fairnessKey" | "fairnessWeight">): string {
  return formatFairness(order.fairnessKey, order.fairnessWeight) ?? "none";
}

/** The form's fields. With `current` (an execution's page) they start at its order, so
 * the operator edits what is in force; without (a batch, whose executions differ) they
 * start empty, each meaning "as it is". */
export function reprioritizeFields(current?: CurrentOrder): Field[] {
  const key = current?.fairnessKey ?? undefined;
  const priority: Field = current
    ? {
        name: "priority",
        label: "Priority (1 claimed first, 5 last)",
        kind: "select",
        value: String(current.priority ?? 3),
        options: PRIORITIES,
        optionLabels: Object.fromEntries(PRIORITIES.map((p) => [p, formatPriority(Number(p))])),
      }
    : {
        name: "priority",
        label: "Priority (1 claimed first, 5 last)",
        kind: "select",
        value: "",
        options: ["", ...PRIORITIES],
        optionLabels: { "": "as it is", ...Object.fromEntries(PRIORITIES.map((p) => [p, formatPriority(Number(p))])) },
      };
  return [
    priority,
    {
      name: "fairnessKey",
      label: current ? "Fairness key (at one priority, claims go key by key in turn)" : "Fairness key (empty: as it is)",
      value: key ?? "",
      placeholder: current ? "none" : "as it is",
    },
    {
      name: "fairnessWeight",
      label: current ? "Fairness weight (its key's calls a turn, 1 to 1,000)" : "Fairness weight (1 to 1,000; empty: as it is)",
      kind: "number",
      value: key !== undefined ? String(current?.fairnessWeight ?? 1) : "",
      placeholder: current ? "1" : "as it is",
    },
    // Offered where there is a key to remove: an execution's own, or any of a batch's.
    ...(current && key === undefined
      ? []
      : [
          {
            name: "removeKey",
            label: current ? `Remove its fairness key ${key ?? ""} (and weight)` : "Remove their fairness keys (and weights)",
            kind: "checkbox",
            disables: ["fairnessKey", "fairnessWeight"],
          } satisfies Field,
        ]),
  ];
}

/** The change the form's `values` ask for, or what is wrong with them. With `current`
 * only what differs from it is sent, so the history's before and after show the change
 * itself. The priority's range and the weight's, and a weight given to an execution
 * without a key, are the service's to check: its refusal lands on the field. */
export function reprioritization(values: (name: string) => string, current?: CurrentOrder): { change: Reprioritization } | Problem {
  const get = (name: string) => values(name).trim();
  const change: Reprioritization = {};
  const priority = get("priority");
  if (priority) {
    if (!/^\d+$/.test(priority)) return { message: `The priority ${priority} is not a whole number from 1 (claimed first) to 5.`, field: "priority" };
    if (Number(priority) !== (current ? (current.priority ?? 3) : undefined)) change.priority = Number(priority);
  }
  const had = current?.fairnessKey ?? undefined;
  if (get("removeKey") === "yes") {
    if (!current || had !== undefined) change.fairnessKey = "";
  } else {
    const key = get("fairnessKey");
    // An emptied field would remove the key unasked for: removing is the checkbox's.
    if (!key && had !== undefined) {
      return { message: `A fairness key is not empty: tick “Remove its fairness key” to remove ${had}.`, field: "fairnessKey" };
    }
    if (key && key !== had) change.fairnessKey = key;
    const weight = get("fairnessWeight");
    if (weight) {
      if (!/^\d+$/.test(weight)) return { message: `The fairness weight ${weight} is not a whole number from 1 to 1,000.`, field: "fairnessWeight" };
      const weighs = had !== undefined ? (current?.fairnessWeight ?? 1) : undefined;
      if (!current || Number(weight) !== weighs) change.fairnessWeight = Number(weight);
    }
  }
  if (change.priority === undefined && change.fairnessKey === undefined && change.fairnessWeight === undefined) {
    return {
      message: current
        ? "Nothing to change: pick another priority, fairness key or weight, or remove the key."
        : "Nothing to change: give a priority, a fairness key or weight, or remove the keys.",
    };
  }
  return { change };
}

/** A change as a batch names it: `priority 1 · fairness key acme (weight 2)`, `fairness
 * weight 5` (of the key each has), `no fairness key`. */
export function reprioritizationText(change: Reprioritization): string {
  const parts: string[] = [];
  if (change.priority !== null && change.priority !== undefined) parts.push(`priority ${change.priority}`);
  const weight = change.fairnessWeight ?? undefined;
  if (change.fairnessKey === "") parts.push("no fairness key");
  else if (change.fairnessKey) parts.push(`fairness key ${change.fairnessKey}${weight !== undefined ? ` (weight ${weight})` : ""}`);
  else if (weight !== undefined) parts.push(`fairness weight ${weight}`);
  return parts.join(" · ");
}

/** The service's names of the change's fields (`reprioritize.priority`), and the form's. */
const FIELDS: [string, string][] = [
  ["reprioritize.priority", "priority"],
  ["reprioritize.fairnessKey", "fairnessKey"],
  ["reprioritize.fairnessWeight", "fairnessWeight"],
];

/** The form field a refusal of a reprioritization is about (the first field its message
 * names); undefined when it names none. A 409 CONTROL_NOT_APPLICABLE is a weight given to
 * an execution without a key (the one change that depends on the execution): the weight's,
 * though its message also names the key it asks for. */
export function reprioritizeErrorField(error: { subType?: string; message: string }): string | undefined {
  if (error.subType === "CONTROL_NOT_APPLICABLE") return "fairnessWeight";
  let best: { at: number; field: string } | undefined;
  for (const [path, field] of FIELDS) {
    const at = error.message.indexOf(path);
    if (at >= 0 && (best === undefined || at < best.at)) best = { at, field };
  }
  return best?.field;
}

/** How a claim order changed, only what did: `priority 5 → 1 · fairness key none → acme
 * (weight 2)`, `fairness key acme (weight 2 → 9)`; a change to the order it had says so
 * (`unchanged: priority 4`), so the line is not blank. The words are the CLI's
 * (`xdb history`), so an operator reads them alike in both. */
export function reorderingText(before: Partial<ClaimOrder>, after: Partial<ClaimOrder>): string {
  const priority = (order: Partial<ClaimOrder>) => order.priority ?? 3;
  const key = (order: Partial<ClaimOrder>) => order.fairnessKey ?? undefined;
  const weight = (order: Partial<ClaimOrder>) => order.fairnessWeight ?? 1;
  const changes: string[] = [];
  if (priority(before) !== priority(after)) changes.push(`priority ${priority(before)} → ${priority(after)}`);
  const [was, now] = [key(before), key(after)];
  if (was !== undefined && was === now) {
    if (weight(before) !== weight(after)) changes.push(`fairness key ${now} (weight ${weight(before)} → ${weight(after)})`);
  } else if (was !== now) {
    changes.push(`fairness key ${fairnessText(before)} → ${fairnessText(after)}`);
  }
  if (changes.length > 0) return changes.join(" · ");
  return `unchanged: priority ${priority(after)}${now !== undefined ? `, fairness key ${fairnessText(after)}` : ""}`;
}
