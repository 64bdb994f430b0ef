// The query builder of the executions list: conditions on the execution's fields (its
// situation too: parked, backing off, waiting on a timer or a queue, its deployment; its
// start's priority, 1 to 5, picked from a list unless several are typed for IN) and,
// once a process type is chosen, on its business row's columns, ANDed within a group and
// ORed between groups; beside it the same filter as readable text, which can be edited
// directly (a filter the builder cannot draw — a `not`, a JSON path — stays text).
import { h, replace } from "../dom.js";
import { formatPriority } from "../format.js";
import type { BusinessTableRef } from "../types.js";
import { BOOLEAN_FIELDS, FIELDS, PRIORITIES, groupsToTree, opsOf, textToTree, treeToGroups, treeToText, type Condition, type Field, type Groups, type Op } from "../filter.js";

export interface QueryBuilder {
  element: HTMLElement;
  /** The filter as text (what the URL keeps). */
  text(): string;
  /** The business table typed in, if both its name and key column are. */
  table(): BusinessTableRef | undefined;
  /** Shows `message` next to the editor (a parse error or the service's 400); "" clears. */
  showError(message: string): void;
}

const VALUE_HINTS: Record<string, string> = {
  status: "RUNNING",
  processType: "type",
  processId: "id or prefix",
  startTime: "2026-01-31T12:00",
  closeTime: "2026-01-31T12:00",
  paused: "true",
  currentStateId: "state id",
  waitingOnQueue: "queue name",
  deploymentName: "deployment name",
  deploymentVersion: "1.4.0",
};

/** The placeholder of an IN condition's value: a field's own list, else a generic one. */
const IN_HINTS: Partial<Record<Field, string>> = {
  priority: "1, 2",
};

/** What each field of the execution means, shown on hover. */
const FIELD_TITLES: Partial<Record<Field, string>> = {
  parked: "a task is set aside until an operator acts (retry now or give up)",
  backingOff: "a state call failed and waits for its next attempt",
  waitingOnTimer: "a durable timer has not fired yet",
  waitingOnQueue: "a state waits for messages of this local queue",
  deploymentName: "the registered deployment it runs on (NULL: none registered its worker URL)",
  deploymentVersion: "the version of the registered deployment it runs on",
  priority: "its start's priority: 1 (its tasks claimed first) to 5 (last); 3 is the default",
};

const isBoolean = (c: Condition) => c.kind === "field" && BOOLEAN_FIELDS.includes(c.name as Field);
/** A priority compared with one value: picked from 1 to 5 (IN takes a typed list). */
const isOnePriority = (c: Condition) => c.kind === "field" && c.name === "priority" && c.op !== "IN";

/** What a condition's value must be for the list its row offers: true/false, or a
 * priority 1 to 5 (an IN's first one when it was a list, else 1). */
function fitValue(c: Condition): void {
  if (isBoolean(c) && c.value !== "true" && c.value !== "false") c.value = "true";
  if (isOnePriority(c)) {
    const first = c.value.split(",")[0]?.trim() ?? "";
    c.value = (PRIORITIES as readonly string[]).includes(first) ? first : PRIORITIES[0];
  }
}

/** A builder showing `initial`; `processType` says whether column conditions can be had. */
export function queryBuilder(initial: string, initialTable: BusinessTableRef | undefined, processType: () => string): QueryBuilder {
  const tableName = h("input", { "data-testid": "where-table", value: initialTable?.tableName ?? "", placeholder: "table", size: 12 });
  const keyColumn = h("input", { "data-testid": "where-key", value: initialTable?.primaryKeyColumn ?? "", placeholder: "key column", size: 10 });
  const error = h("p", { class: "error small", role: "alert", "data-testid": "where-error", hidden: true });
  const rows = h("div", { class: "where-groups" });
  const textArea = h("textarea", { rows: 2, class: "mono", "data-testid": "where-text", placeholder: "execution.status = 'RUNNING' and amount >= 100" }, initial);
  let groups: Groups = [[]];
  let drawable = true;

  const showError = (message: string) => {
    error.textContent = message;
    error.hidden = message === "";
  };

  const fromText = () => {
    try {
      const parsed = treeToGroups(textToTree(textArea.value));
      drawable = parsed !== undefined;
      groups = parsed ?? [[]];
      showError("");
    } catch (e) {
      drawable = false;
      showError(`The filter text: ${e instanceof Error ? e.message : String(e)}`);
    }
    draw();
  };
  const toText = () => {
    textArea.value = treeToText(groupsToTree(groups));
    showError("");
  };

  function conditionRow(group: Condition[], c: Condition, index: number): HTMLElement {
    const changed = () => toText();
    const kind = h(
      "select",
      { "data-testid": "where-kind", "aria-label": "condition on" },
      h("option", { value: "field", selected: c.kind === "field" }, "execution"),
      h("option", { value: "column", selected: c.kind === "column", title: processType() ? "" : "needs a process type" }, "column"),
    );
    const name: HTMLSelectElement | HTMLInputElement =
      c.kind === "field"
        ? h("select", { "data-testid": "where-name", "aria-label": "field" }, FIELDS.map((f) => h("option", { value: f, selected: c.name === f, title: FIELD_TITLES[f] ?? "" }, f)))
        : h("input", { "data-testid": "where-name", "aria-label": "column", value: c.name, placeholder: "column" });
    const ops = opsOf(c).includes(c.op) ? opsOf(c) : [...opsOf(c), c.op];
    const op = h("select", { "data-testid": "where-op", "aria-label": "operator" }, ops.map((o) => h("option", { value: o, selected: c.op === o }, o)));
    // A priority read from text may be out of range: shown as it is, for the service's 400.
    const priorities: readonly string[] = (PRIORITIES as readonly string[]).includes(c.value.trim()) ? PRIORITIES : [...PRIORITIES, c.value.trim()];
    const value: HTMLSelectElement | HTMLInputElement = isBoolean(c)
      ? h("select", { "data-testid": "where-value", "aria-label": "value" }, ["true", "false"].map((v) => h("option", { value: v, selected: c.value === v }, v)))
      : isOnePriority(c)
        ? h("select", { "data-testid": "where-value", "aria-label": "value" }, priorities.map((v) => h("option", { value: v, selected: c.value.trim() === v }, /^[1-5]$/.test(v) ? formatPriority(Number(v)) : v)))
        : h("input", {
            "data-testid": "where-value",
            "aria-label": "value",
            value: c.value,
            placeholder: c.op === "IN" ? (IN_HINTS[c.name as Field] ?? "a, b, c") : (VALUE_HINTS[c.name] ?? "value"),
            hidden: c.op === "IS NULL" || c.op === "IS NOT NULL",
          });
    kind.addEventListener("change", () => {
      c.kind = kind.value as Condition["kind"];
      c.name = c.kind === "field" ? "status" : "";
      if (!opsOf(c).includes(c.op)) c.op = "=";
      toText();
      draw();
    });
    name.addEventListener("input", () => {
      c.name = name.value;
      changed();
    });
    name.addEventListener("change", () => {
      c.name = name.value;
      if (c.kind !== "field") return changed();
      // Another field of the execution: its operators and, for one picked from a list, its value.
      if (!opsOf(c).includes(c.op)) c.op = opsOf(c)[0] ?? "=";
      fitValue(c);
      toText();
      draw();
    });
    op.addEventListener("change", () => {
      c.op = op.value as Op;
      fitValue(c);
      toText();
      draw();
    });
    for (const event of ["input", "change"]) {
      value.addEventListener(event, () => {
        c.value = value.value;
        changed();
      });
    }
    const remove = h("button", { type: "button", class: "link", "data-testid": "where-remove", title: "remove this condition" }, "×");
    remove.addEventListener("click", () => {
      group.splice(index, 1);
      if (group.length === 0 && groups.length > 1) groups.splice(groups.indexOf(group), 1);
      toText();
      draw();
    });
    return h("div", { class: "where-row", "data-testid": "where-row" }, index > 0 && h("span", { class: "small" }, "and "), kind, name, op, value, remove);
  }

  function draw(): void {
    if (!drawable) {
      replace(rows, h("p", { class: "small" }, "This filter is edited as text."));
      return;
    }
    replace(
      rows,
      groups.map((group, g) =>
        h(
          "div",
          { class: "where-group", "data-testid": "where-group" },
          g > 0 && h("div", { class: "small" }, "or"),
          group.map((c, i) => conditionRow(group, c, i)),
          h(
            "button",
            {
              type: "button",
              class: "link",
              "data-testid": "where-add",
              onclick: () => {
                group.push({ kind: "field", name: "status", op: "=", value: "" });
                toText();
                draw();
              },
            },
            "+ condition",
          ),
        ),
      ),
      h(
        "button",
        {
          type: "button",
          class: "link",
          "data-testid": "where-add-group",
          onclick: () => {
            groups.push([{ kind: "field", name: "status", op: "=", value: "" }]);
            toText();
            draw();
          },
        },
        "+ or group",
      ),
    );
  }

  textArea.addEventListener("change", fromText);
  fromText();
  return {
    element: h(
      "div",
      { class: "query-builder", "data-testid": "query-builder" },
      h("div", { class: "small" }, "Where"),
      rows,
      h("label", { class: "where-text" }, h("span", { class: "small" }, "as text "), textArea),
      h(
        "div",
        { class: "small", title: "needed for column conditions when the process type has no registered definition; found from its latest execution when left empty" },
        "business table ",
        tableName,
        " ",
        keyColumn,
      ),
      error,
    ),
    text: () => textArea.value.trim(),
    table: () =>
      tableName.value.trim() && keyColumn.value.trim() ? { tableName: tableName.value.trim(), primaryKeyColumn: keyColumn.value.trim() } : undefined,
    showError,
  };
}
