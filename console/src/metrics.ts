// Prometheus text parsing and the dashboard's figures. Pure: the dashboard fetches the
// texts and keeps the previous scrape for rates.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a Prometheus text exposition (comments and bad lines skipped). */
export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? "").matchAll(LABEL)) {
      labels[label[1] as string] = (label[2] as string).replace(/\\n/g, "\n").replace(/\\(.)/g, "$1");
    }
    const value = match[3] === "+Inf" ? Infinity : match[3] === "-Inf" ? -Infinity : Number(match[3]);
    if (!Number.isNaN(value)) samples.push({ name: match[1] as string, labels, value });
  }
  return samples;
}

/** The sum of `name`'s samples whose labels pass `where`; undefined when there are none. */
export function total(
  samples: Sample[],
  name: string,
  where: (labels: Record<string, string>) => boolean = () => true,
): number | undefined {
  const matching = samples.filter((s) => s.name === name && where(s.labels));
  return matching.length === 0 ? undefined : matching.reduce((sum, s) => sum + s.value, 0);
}

/** Per-second increase of a counter between two scrapes `seconds` apart. */
export function rate(before: number | undefined, after: number | undefined, seconds: number): number | undefined {
  if (before === undefined || after === undefined || seconds <= 0) return undefined;
  // A counter that went down was reset (a restart): count from zero.
  const increase = after >= before ? after - before : after;
  return increase / seconds;
}

/**
 * The `q` quantile of histogram `name` (its `_bucket` samples summed over labels),
 * interpolated within the bucket as Prometheus's `histogram_quantile` does; undefined
 * when it has no observations.
 */
export function quantile(samples: Sample[], name: string, q: number): number | undefined {
  const buckets = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket` || s.labels.le === undefined) continue;
    const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
    buckets.set(le, (buckets.get(le) ?? 0) + s.value);
  }
  const sorted = [...buckets.entries()].sort((a, b) => a[0] - b[0]);
  const count = sorted.at(-1)?.[1] ?? 0;
  if (count === 0) return undefined;
  const rank = q * count;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const [le, cumulative] of sorted) {
    if (cumulative >= rank) {
      if (le === Infinity) return lowerBound;
      const inBucket = cumulative - lowerCount;
      return inBucket === 0 ? le : lowerBound + ((le - lowerBound) * (rank - lowerCount)) / inBucket;
    }
    lowerBound = le;
    lowerCount = cumulative;
  }
  return lowerBound;
}

/** One figure of the dashboard and the service it comes from. */
export interface Figure {
  label: string;
  value: string;
  source: "api" | "async";
  help: string;
}

export interface Scrape {
  atMs: number;
  api: Sample[];
  /** Absent when the async service's metrics are not reachable from this service. */
  async?: Sample[];
}

function fixed(n: number | undefined, digits = 1, unit = ""): string {
  return n === undefined ? "—" : `${n.toFixed(digits)}${unit}`;
}

const serverError = (labels: Record<string, string>) => (labels.status ?? "").startsWith("5");

/** The dashboard's figures from the latest scrape and the one before it (for rates). */
export function figures(now: Scrape, before?: Scrape): Figure[] {
  const seconds = before ? (now.atMs - before.atMs) / 1000 : 0;
  const apiRate = (name: string, where?: (l: Record<string, string>) => boolean) =>
    before ? rate(total(before.api, name, where), total(now.api, name, where), seconds) : undefined;
  const list: Figure[] = [
    {
      label: "API requests/s",
      value: fixed(apiRate("xdb_api_requests_total")),
      source: "api",
      help: "xdb_api_requests_total, rate since the last refresh",
    },
    {
      label: "API server errors",
      value: fixed(total(now.api, "xdb_api_requests_total", serverError) ?? 0, 0),
      source: "api",
      help: "xdb_api_requests_total with a 5xx status, since the service started",
    },
  ];
  const a = now.async;
  if (!a) return list;
  const b = before?.async;
  const asyncRate = (name: string, where?: (l: Record<string, string>) => boolean) =>
    b ? rate(total(b, name, where), total(a, name, where), seconds) : undefined;
  const lateness = quantile(a, "xdb_async_timer_lateness_seconds", 0.99);
  const latenessCount = total(a, "xdb_async_timer_lateness_seconds_count");
  const latenessSum = total(a, "xdb_async_timer_lateness_seconds_sum");
  list.push(
    {
      label: "Tasks completed/s",
      value: fixed(asyncRate("xdb_async_tasks_completed_total", (l) => l.outcome === "ok")),
      source: "async",
      help: "xdb_async_tasks_completed_total{outcome=ok}, rate since the last refresh",
    },
    {
      label: "Worker call failures",
      value: fixed(total(a, "xdb_async_worker_call_errors_total") ?? 0, 0),
      source: "async",
      help: "xdb_async_worker_call_errors_total, since the service started",
    },
    {
      label: "Backlog (due tasks)",
      value: fixed(total(a, "xdb_async_queue_backlog"), 0),
      source: "async",
      help: "xdb_async_queue_backlog: due tasks no instance holds",
    },
    {
      label: "Timer lateness p99",
      value: lateness === undefined ? "—" : `${(lateness * 1000).toFixed(0)} ms`,
      source: "async",
      help: "xdb_async_timer_lateness_seconds: how long after its due time a timer was claimed",
    },
    {
      label: "Timer lateness mean",
      value:
        latenessCount && latenessSum !== undefined ? `${((latenessSum / latenessCount) * 1000).toFixed(0)} ms` : "—",
      source: "async",
      help: "xdb_async_timer_lateness_seconds sum / count",
    },
    {
      label: "Parked tasks",
      value: fixed(total(a, "xdb_async_parked_tasks"), 0),
      source: "async",
      help: "xdb_async_parked_tasks: tasks waiting for an operator's retry-now",
    },
    {
      label: "Paused executions",
      value: fixed(total(a, "xdb_async_paused_executions"), 0),
      source: "async",
      help: "xdb_async_paused_executions",
    },
    {
      label: "Pending executions",
      value: fixed(total(a, "xdb_async_pending_executions"), 0),
      source: "async",
      help: "xdb_async_pending_executions: starts waiting for a running slot of their key (maxRunningExecutions)",
    },
    {
      label: "States past attempt threshold",
      value: fixed(total(a, "xdb_async_states_past_attempts"), 0),
      source: "async",
      help: "xdb_async_states_past_attempts: state calls that keep failing",
    },
  );
  return list;
}
