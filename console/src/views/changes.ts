// An audit history as a table, newest first: when, then the columns of its kind (what
// changed), then who and why; a More button while older changes remain. The flow limits'
// page and a schedule's page show theirs with it.
import { type Change, type ChangePage, type ShownChanges, withFirstPage, withNextPage } from "../changes.js";
import { type Attrs, h, replace, table } from "../dom.js";
import { formatTime } from "../format.js";

/** A column between the time and the author: its head, and its cell for a change. */
export interface ChangeColumn<C extends Change> {
  label: string;
  cell: (change: C) => HTMLTableCellElement;
}

export interface ChangeHistoryOptions<C extends Change> {
  /** Reads a page of `pageSize` changes, newest first: the first, or the one `nextPageToken` names. */
  read: (pageSize: number, nextPageToken?: string) => Promise<ChangePage<C>>;
  pageSize: number;
  columns: ChangeColumn<C>[];
  /** A row's attributes (its `data-testid` among them). */
  row: (change: C) => Attrs;
  /** What the table says when there is no change. */
  empty: string;
  /** The table's `data-testid`; its More button's is this and `-more`. */
  testId: string;
}

export interface ChangeHistory {
  element: HTMLElement;
  /** Reads the first page again: the changes made since go on top; the older pages read stay. */
  refresh: () => Promise<void>;
}

export function changeHistory<C extends Change>(options: ChangeHistoryOptions<C>): ChangeHistory {
  const element = h("div");
  let shown: ShownChanges<C> | undefined;
  let problem: string | undefined;
  let reading = false;

  const describe = (error: unknown) => `Could not read the history: ${error instanceof Error ? error.message : String(error)}`;

  function render(): void {
    const token = shown?.nextPageToken;
    replace(
      element,
      problem && h("p", { class: "error", role: "alert" }, problem),
      shown &&
        table(
          ["Changed (UTC)", ...options.columns.map((c) => c.label), "By", "Reason"],
          shown.changes.map((change) =>
            h(
              "tr",
              options.row(change),
              h("td", { class: "small", "data-testid": "change-time" }, formatTime(change.changedTimestampMs)),
              options.columns.map((c) => c.cell(change)),
              h("td", { "data-testid": "change-by" }, change.changedBy),
              h("td", { "data-testid": "change-reason" }, change.reason ?? ""),
            ),
          ),
          options.empty,
          options.testId,
        ),
      shown &&
        token &&
        h(
          "div",
          { class: "pager" },
          h("button", { type: "button", disabled: reading, "data-testid": `${options.testId}-more`, onclick: () => void more(token) }, "More"),
          h("span", { class: "small" }, `the latest ${shown.changes.length} changes`),
        ),
    );
  }

  async function refresh(): Promise<void> {
    try {
      shown = withFirstPage(shown, await options.read(options.pageSize));
      problem = undefined;
    } catch (error) {
      problem = describe(error);
    }
    render();
  }

  async function more(token: string): Promise<void> {
    if (reading) return;
    reading = true;
    render();
    try {
      const page = await options.read(options.pageSize, token);
      // A refresh that started again from the first page meanwhile has its own token.
      if (shown && shown.nextPageToken === token) shown = withNextPage(shown, page);
      problem = undefined;
    } catch (error) {
      problem = describe(error);
    } finally {
      reading = false;
    }
    render();
  }

  return { element, refresh };
}
