// Modal dialogs: the confirmation every action asks for, and the token prompt. Built on
// <dialog>, so focus and Escape behave as the browser's own.
import { h } from "../dom.js";

export interface Field {
  name: string;
  label: string;
  /** A checkbox's value is "yes" when ticked, else "". */
  kind?: "text" | "password" | "number" | "textarea" | "select" | "checkbox";
  value?: string;
  /** A select's values; `optionLabels` (by value) names those worth more than their value. */
  options?: string[];
  optionLabels?: Record<string, string>;
  /** Offered in a list under a text field, which still takes any text. */
  suggestions?: string[];
  placeholder?: string;
  /** A checkbox's: the fields it turns off while ticked (their values are then ""), so
   * what they hold cannot contradict it. */
  disables?: string[];
}

/** What is wrong with a dialog's values, and the field it is about (none: all of them). */
export interface Problem {
  message: string;
  field?: string;
}

type Values = (name: string) => string;

let datalists = 0;

/**
 * Shows `title` and `message` with `fields`; resolves with the fields' values (by name)
 * when the user confirms, or null when they cancel. `validate` says what is wrong with
 * the values (undefined: nothing): the dialog then stays open and shows it, on the field
 * it names. `submit`, given, sends the valid values while the dialog stays open: what it
 * answers is wrong (the service's refusal) is shown the same way, so the user corrects
 * the field instead of starting over; the dialog closes once it answers nothing.
 */
export function ask(
  title: string,
  message: string,
  fields: Field[],
  confirmLabel: string,
  options: {
    cancellable?: boolean;
    danger?: boolean;
    validate?: (values: Values) => string | Problem | undefined;
    submit?: (values: Values) => Promise<string | Problem | undefined>;
  } = {},
): Promise<Values | null> {
  const cancellable = options.cancellable ?? true;
  return new Promise((resolve) => {
    const inputs = new Map<string, HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>();
    const rows = fields.map((field) => {
      let suggestions: HTMLDataListElement | undefined;
      let input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement;
      if (field.kind === "textarea") {
        input = h("textarea", { name: field.name, rows: 4, placeholder: field.placeholder }, field.value ?? "");
      } else if (field.kind === "select") {
        input = h(
          "select",
          { name: field.name },
          (field.options ?? []).map((option) =>
            h("option", { value: option, selected: option === field.value }, field.optionLabels?.[option] ?? option),
          ),
        );
      } else if (field.kind === "checkbox") {
        const box = h("input", { name: field.name, type: "checkbox", checked: field.value === "yes" });
        const turnOff = () => {
          for (const name of field.disables ?? []) {
            const other = inputs.get(name);
            if (other) other.disabled = box.checked;
          }
        };
        box.addEventListener("change", turnOff);
        // The fields it turns off may come after it: set once they all exist.
        queueMicrotask(turnOff);
        input = box;
      } else {
        const list = field.suggestions && field.suggestions.length > 0 ? `dialog-list-${++datalists}` : undefined;
        input = h("input", {
          name: field.name,
          type: field.kind ?? "text",
          value: field.value ?? "",
          placeholder: field.placeholder,
          autocomplete: "off",
          list,
        });
        if (list) {
          suggestions = h(
            "datalist",
            { id: list, "data-testid": `suggestions-${field.name}` },
            (field.suggestions ?? []).map((option) => h("option", { value: option })),
          );
        }
      }
      input.setAttribute("data-testid", `field-${field.name}`);
      inputs.set(field.name, input);
      return field.kind === "checkbox"
        ? h("label", { class: "check" }, input, h("span", {}, field.label))
        : h("label", {}, h("span", {}, field.label), input, suggestions);
    });
    const dialog = h("dialog", { class: "modal", "data-testid": "dialog" });
    const problem = h("p", { class: "error", role: "alert", "data-testid": "dialog-error", hidden: true });
    const confirm = h(
      "button",
      { type: "button", class: options.danger ? "danger" : "primary", "data-testid": "confirm", onclick: () => void finish(true) },
      confirmLabel,
    );
    const show = (wrong: string | Problem | undefined): boolean => {
      const { message: text, field } = typeof wrong === "string" ? { message: wrong, field: undefined } : (wrong ?? { message: "" });
      problem.textContent = text;
      problem.hidden = !text;
      for (const [name, input] of inputs) input.toggleAttribute("aria-invalid", Boolean(text) && name === field);
      if (text && field) inputs.get(field)?.focus();
      return Boolean(text);
    };
    let sending = false;
    const finish = async (confirmed: boolean) => {
      if (sending) return;
      const values = new Map(
        [...inputs].map(([name, input]) => [
          name,
          input.disabled ? "" : input instanceof HTMLInputElement && input.type === "checkbox" ? (input.checked ? "yes" : "") : input.value,
        ]),
      );
      const read: Values = (name) => values.get(name) ?? "";
      if (confirmed && show(options.validate?.(read))) return;
      if (confirmed && options.submit) {
        sending = true;
        confirm.disabled = true;
        try {
          if (show(await options.submit(read))) return;
        } catch (error) {
          show(error instanceof Error ? error.message : String(error));
          return;
        } finally {
          sending = false;
          confirm.disabled = false;
        }
      }
      dialog.close();
      dialog.remove();
      resolve(confirmed ? read : null);
    };
    dialog.append(
      h("h2", {}, title),
      h("p", {}, message),
      ...rows,
      problem,
      h(
        "div",
        { class: "buttons" },
        cancellable && h("button", { type: "button", "data-testid": "cancel", onclick: () => void finish(false) }, "Cancel"),
        confirm,
      ),
    );
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      if (cancellable) void finish(false);
    });
    dialog.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !(event.target instanceof HTMLTextAreaElement)) {
        event.preventDefault();
        void finish(true);
      }
    });
    document.body.append(dialog);
    dialog.showModal();
    (rows.length > 0 ? inputs.values().next().value : undefined)?.focus();
  });
}

/** Asks for the service's bearer token until one is entered. */
export async function askToken(message: string): Promise<string> {
  for (;;) {
    const values = await ask(
      "Token required",
      `${message} It is kept for this browser tab only.`,
      [{ name: "token", label: "Bearer token", kind: "password" }],
      "Use token",
      { cancellable: false },
    );
    const token = values?.("token").trim();
    if (token) return token;
  }
}

/** A short notice at the top of the page; errors stay until dismissed. */
export function notify(text: string, kind: "ok" | "error" = "ok"): void {
  const area = document.getElementById("notices");
  if (!area) return;
  const notice = h(
    "div",
    { class: `notice notice-${kind}`, role: kind === "error" ? "alert" : "status", "data-testid": `notice-${kind}` },
    text,
    h("button", { type: "button", class: "link", onclick: () => notice.remove() }, "×"),
  );
  area.append(notice);
  if (kind === "ok") setTimeout(() => notice.remove(), 5000);
}
