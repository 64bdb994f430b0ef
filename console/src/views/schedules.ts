// The schedules: by id (and, for one a definition declares, that type: its code owns it),
// with the process type each starts, its spec, whether it is paused, its next fire time and
// its latest firing (from `describe`, which the list call does not carry), each linking to
// its page; and the form that creates one. The form is
// checked before it is sent; what the service refuses (a 400 naming the field, or an id
// taken) is shown under it, with the field marked, and the form keeps what was typed.
import { api, ApiError } from "../api.js";
import { h, replace, table } from "../dom.js";
import { statusClass } from "../format.js";
import { OVERLAP_POLICIES, declaredByText, errorField, lastFiringText, nextFireText, scheduleRequest, scheduleState, specText } from "../schedules.js";
import type { ScheduleFiring, ScheduleInfo } from "../types.js";
import { definitionHref, scheduleHref } from "./routes.js";

// Each refresh describes every listed schedule (its latest firing), so not too often.
const REFRESH_MS = 5000;
const PAGE_SIZE = 100;
/** Describe calls in flight at once for the latest firings. */
const DESCRIBES_AT_ONCE = 4;

/** The latest firings of each of `schedules` (undefined where describe failed, e.g. the
 * schedule was deleted meanwhile). */
async function latestFirings(schedules: ScheduleInfo[]): Promise<Map<string, ScheduleFiring[] | undefined>> {
  const found = new Map<string, ScheduleFiring[] | undefined>();
  let next = 0;
  const work = async () => {
    while (next < schedules.length) {
      const id = schedules[next++]?.scheduleId ?? "";
      found.set(id, await api.scheduleDescribe(id).then((d) => d.recentFirings ?? [], () => undefined));
    }
  };
  await Promise.all(Array.from({ length: Math.min(DESCRIBES_AT_ONCE, schedules.length) }, work));
  return found;
}

export function schedulesView(root: HTMLElement): () => void {
  const results = h("div");
  let stopped = false;

  async function load(): Promise<void> {
    try {
      const listed = await api.scheduleList({ pageSize: PAGE_SIZE });
      const firings = await latestFirings(listed.schedules);
      if (stopped) return;
      replace(
        results,
        table(
          ["Schedule", "Process type", "Spec", "State", "Next fire (UTC)", "Last firing"],
          listed.schedules.map((s) => {
            const recent = firings.get(s.scheduleId);
            const declaredBy = declaredByText(s);
            return h(
              "tr",
              { "data-testid": "schedule-row", "data-schedule-id": s.scheduleId, "data-declared-by": s.declaredBy },
              h(
                "td",
                {},
                h("a", { href: scheduleHref(s.scheduleId), class: "mono small" }, s.scheduleId),
                declaredBy && h("div", { class: "small", "data-testid": "schedule-row-declared-by" }, declaredBy),
              ),
              h("td", {}, h("a", { href: definitionHref(s.start.processType) }, s.start.processType)),
              h("td", { class: "mono small", "data-testid": "schedule-row-spec" }, specText(s.spec)),
              h("td", {}, h("span", { class: statusClass(scheduleState(s)), "data-testid": "schedule-row-state" }, scheduleState(s))),
              h("td", { "data-testid": "schedule-row-next" }, nextFireText(s)),
              h(
                "td",
                {},
                h("span", { "data-testid": "schedule-row-last", class: recent?.[0] ? statusClass(recent[0].outcome) : "" }, recent === undefined ? "—" : lastFiringText(recent)),
              ),
            );
          }),
          "No schedules yet: create one below.",
          "schedules-table",
        ),
        listed.nextPageToken && h("p", { class: "small" }, `The first ${PAGE_SIZE} schedules by id.`),
      );
    } catch (error) {
      if (!stopped) replace(results, h("p", { class: "error", role: "alert" }, `Could not list schedules: ${String(error)}`));
    }
  }

  replace(root, h("h1", {}, "Schedules"), results, createForm());
  void load();
  const timer = setInterval(() => void load(), REFRESH_MS);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/** The create form: on success the page of the new schedule opens. */
function createForm(): HTMLElement {
  const inputs = new Map<string, HTMLInputElement | HTMLSelectElement>();
  const input = (name: string, placeholder = "", list?: string) => {
    const element = h("input", { name, placeholder, autocomplete: "off", list, "data-testid": `schedule-${name}` });
    inputs.set(name, element);
    return element;
  };
  const select = (name: string, options: [string, string][], value: string) => {
    const element = h(
      "select",
      { name, "data-testid": `schedule-${name}` },
      options.map(([v, label]) => h("option", { value: v, selected: v === value }, label)),
    );
    inputs.set(name, element);
    return element;
  };
  const row = (label: string, control: HTMLElement, hint?: string) => h("label", {}, h("span", {}, label), control, hint && h("span", { class: "small" }, hint));

  const types = h("datalist", { id: "schedule-process-types" });
  const zones = h("datalist", { id: "schedule-time-zones" }, ["UTC", Intl.DateTimeFormat().resolvedOptions().timeZone].map((z) => h("option", { value: z })));
  const kind = select("kind", [["cron", "cron expression"], ["interval", "fixed interval"]], "cron");
  const cronRows = [
    row("Cron expression", input("cronExpression", "0 3 * * *"), "5 fields (minute hour day month weekday), or 6 with seconds first"),
    row("Time zone", input("timeZone", "UTC", "schedule-time-zones"), "an IANA zone; empty: UTC"),
  ];
  const intervalRows = [
    row("Every (seconds)", input("everySeconds", "60")),
    row("Jitter (seconds)", input("jitterSeconds", "0"), "each firing up to this much later; less than the interval"),
  ];
  const showSpec = () => {
    for (const r of cronRows) r.hidden = kind.value !== "cron";
    for (const r of intervalRows) r.hidden = kind.value !== "interval";
  };
  kind.addEventListener("change", showSpec);
  showSpec();

  const problem = h("p", { class: "error", role: "alert", "data-testid": "schedule-create-error", hidden: true });
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "schedule-create-submit" }, "Create schedule");
  const show = (error: string | undefined, field?: string) => {
    problem.textContent = error ?? "";
    problem.hidden = !error;
    for (const [name, element] of inputs) element.toggleAttribute("aria-invalid", name === field);
    if (field) inputs.get(field)?.focus();
  };
  const create = async () => {
    const checked = scheduleRequest((name) => inputs.get(name)?.value ?? "");
    if ("error" in checked) {
      show(checked.error, checked.field);
      return;
    }
    submit.disabled = true;
    try {
      const created = await api.scheduleCreate(checked.request);
      show(undefined);
      location.hash = scheduleHref(created.schedule.scheduleId);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      show(`The service refused the schedule: ${message}`, errorField(message, error instanceof ApiError ? error.subType : ""));
    } finally {
      submit.disabled = false;
    }
  };
  const form = h(
    "form",
    {
      class: "schedule-form",
      onsubmit: (event: Event) => {
        event.preventDefault();
        void create();
      },
    },
    row("Schedule id", input("scheduleId", "nightly-report"), "each firing's process id is this id and its time"),
    row("Process type", input("processType", "ReportProcess", "schedule-process-types")),
    row("Worker URL", input("workerUrl", "optional"), "empty: the current deployment's, when the type is registered"),
    row("Start state", input("startStateId", "optional"), "the state each execution starts in"),
    row("When", kind),
    cronRows,
    intervalRows,
    row("Overlap policy", select("overlapPolicy", OVERLAP_POLICIES.map((p) => [p, p]), "SKIP"), "what a firing does while the previous one still runs"),
    row("Catch-up window (seconds)", input("catchupWindowSeconds", "60"), "missed firings at most this old still run"),
    problem,
    h("div", { class: "buttons" }, submit),
    types,
    zones,
  );
  void api.definitions().then(
    ({ definitions }) => replace(types, definitions.map((d) => h("option", { value: d.processType }))),
    () => undefined,
  );
  return h("details", { class: "panel schedule-create", "data-testid": "schedule-create" }, h("summary", {}, h("strong", {}, "New schedule")), form);
}
