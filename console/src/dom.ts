// A tiny DOM builder. Text is always set as text (never parsed as HTML), so values read
// from the API or the business table cannot inject markup into the page.

export type Child = Node | string | number | null | undefined | false;
type Value = string | number | boolean | null | undefined;
export type Attrs = Record<string, Value | ((event: Event) => void)>;

/** An element `tag` with `attrs` (`on<event>` keys take listeners) and `children`. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (typeof value === "function") {
      element.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (value === true) {
      element.setAttribute(key, "");
    } else if (value !== false && value !== null && value !== undefined) {
      element.setAttribute(key, String(value));
    }
  }
  append(element, children);
  return element;
}

/** Appends `children` (nested arrays flattened, empty values skipped) to `parent`. */
export function append(parent: Node, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces the content of `parent` with `children`. */
export function replace(parent: Node, ...children: (Child | Child[])[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, children);
}

/** A `<dl>` row list: term, then its value. */
export function facts(rows: [string, Child | Child[]][]): HTMLDListElement {
  return h("dl", { class: "facts" }, rows.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]).flat());
}

/** A table with `head` and `rows`; an empty table says `empty`. */
export function table(head: string[], rows: HTMLTableRowElement[], empty: string, testId?: string): HTMLElement {
  if (rows.length === 0) return h("p", { class: "empty", "data-testid": testId }, empty);
  return h(
    "table",
    { "data-testid": testId },
    h("thead", {}, h("tr", {}, head.map((label) => h("th", {}, label)))),
    h("tbody", {}, rows),
  );
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** An SVG element `tag` with `attrs` and `children`, as `h` builds HTML ones. */
export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (typeof value === "function") element.addEventListener(key.slice(2).toLowerCase(), value);
    else if (value !== false && value !== null && value !== undefined) element.setAttribute(key, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}
