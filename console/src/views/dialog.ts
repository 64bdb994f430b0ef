// Modal dialogs: the confirmation every action asks for, and the token prompt. Built on
// <dialog>, so focus and Escape behave as the browser's own.
import { h } from "../dom.js";

export interface Field {
  name: string;
  label: string;
  kind?: "text" | "password" | "number" | "textarea" | "select";
  value?: string;
  options?: string[];
  /** Offered in a list under a text field, which still takes any text. */
  suggestions?: string[];
  placeholder?: string;
}

let datalists = 0;

/**
 * Shows `title` and `message` with `fields`; resolves with the fields' values (by name)
 * when the user confirms, or null when they cancel. `validate` says what is wrong with
 * the values (undefined: nothing): the dialog then stays open and shows it.
 */
export function ask(
  title: string,
  message: string,
  fields: Field[],
  confirmLabel: string,
  options: { cancellable?: boolean; danger?: boolean; validate?: (values: (name: string) => string) => string | undefined } = {},
): Promise<((name: string) => string) | null> {
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
          (field.options ?? []).map((option) => h("option", { value: option, selected: option === field.value }, option)),
        );
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
      return h("label", {}, h("span", {}, field.label), input, suggestions);
    });
    const dialog = h("dialog", { class: "modal", "data-testid": "dialog" });
    const problem = h("p", { class: "error", role: "alert", "data-testid": "dialog-error", hidden: true });
    const finish = (confirmed: boolean) => {
      const values = new Map([...inputs].map(([name, input]) => [name, input.value]));
      const wrong = confirmed ? options.validate?.((name) => values.get(name) ?? "") : undefined;
      if (wrong) {
        problem.textContent = wrong;
        problem.hidden = false;
        return;
      }
      dialog.close();
      dialog.remove();
      resolve(confirmed ? (name: string) => values.get(name) ?? "" : null);
    };
    dialog.append(
      h("h2", {}, title),
      h("p", {}, message),
      ...rows,
      problem,
      h(
        "div",
        { class: "buttons" },
        cancellable && h("button", { type: "button", "data-testid": "cancel", onclick: () => finish(false) }, "Cancel"),
        h(
          "button",
          {
            type: "button",
            class: options.danger ? "danger" : "primary",
            "data-testid": "confirm",
            onclick: () => finish(true),
          },
          confirmLabel,
        ),
      ),
    );
    dialog.addEventListener("cancel", (event) => {
      event.preventDefault();
      if (cancellable) finish(false);
    });
    dialog.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !(event.target instanceof HTMLTextAreaElement)) {
        event.preventDefault();
        finish(true);
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
