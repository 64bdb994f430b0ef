// The dashboard's time series: one sample of throughput, failures, backlog and timer
// lateness per scrape of the services' metrics, the last hour of them kept (in
// sessionStorage by the dashboard, so a reload keeps them), and their scaling to a
// chart's pixels. Pure.
import { rate, total, type Scrape } from "./metrics.js";

export const WINDOW_MS = 60 * 60 * 1000;

/** One sample; a series with no value at this time (not reachable, no rate yet) is absent. */
export interface Point {
  atMs: number;
  /** Tasks completed per second (the async service's), else API requests per second. */
  throughput?: number;
  /** Worker call failures and API 5xx answers per second. */
  failures?: number;
  /** Due tasks no instance holds. */
  backlog?: number;
  /** Mean lateness of the timers claimed since the previous scrape, ms. */
  lateness?: number;
}

export type Series = "throughput" | "failures" | "backlog" | "lateness";
export const SERIES: { key: Series; label: string; unit: string; help: string }[] = [
  { key: "throughput", label: "Throughput", unit: "/s", help: "xdb_async_tasks_completed_total{outcome=ok} per second (API requests per second without the async service's metrics)" },
  { key: "failures", label: "Failures", unit: "/s", help: "xdb_async_worker_call_errors_total and 5xx answers of xdb_api_requests_total, per second" },
  { key: "backlog", label: "Backlog", unit: " tasks", help: "xdb_async_queue_backlog: due tasks no instance holds" },
  { key: "lateness", label: "Timer lateness", unit: " ms", help: "mean of xdb_async_timer_lateness_seconds over each interval" },
];

const serverError = (labels: Record<string, string>) => (labels.status ?? "").startsWith("5");

/** The sample of scrape `now`, with rates over the time since `before`. */
export function pointFrom(now: Scrape, before?: Scrape): Point {
  const point: Point = { atMs: now.atMs };
  const seconds = before ? (now.atMs - before.atMs) / 1000 : 0;
  const a = now.async;
  const b = before?.async;
  const change = (x: number | undefined, y: number | undefined) => (x === undefined || y === undefined ? undefined : y >= x ? y - x : y);
  if (before) {
    const apiRate = rate(total(before.api, "xdb_api_requests_total"), total(now.api, "xdb_api_requests_total"), seconds);
    const apiErrors = rate(total(before.api, "xdb_api_requests_total", serverError) ?? 0, total(now.api, "xdb_api_requests_total", serverError) ?? 0, seconds);
    const ok = (l: Record<string, string>) => l.outcome === "ok";
    const tasks = a && b ? rate(total(b, "xdb_async_tasks_completed_total", ok) ?? 0, total(a, "xdb_async_tasks_completed_total", ok) ?? 0, seconds) : undefined;
    const workerErrors = a && b ? rate(total(b, "xdb_async_worker_call_errors_total") ?? 0, total(a, "xdb_async_worker_call_errors_total") ?? 0, seconds) : 0;
    const throughput = tasks ?? apiRate;
    if (throughput !== undefined) point.throughput = throughput;
    if (apiErrors !== undefined && workerErrors !== undefined) point.failures = apiErrors + workerErrors;
    if (a && b) {
      const count = change(total(b, "xdb_async_timer_lateness_seconds_count"), total(a, "xdb_async_timer_lateness_seconds_count"));
      const sum = change(total(b, "xdb_async_timer_lateness_seconds_sum"), total(a, "xdb_async_timer_lateness_seconds_sum"));
      point.lateness = count && sum !== undefined ? (sum / count) * 1000 : 0;
    }
  }
  const backlog = a ? total(a, "xdb_async_queue_backlog") : undefined;
  if (backlog !== undefined) point.backlog = backlog;
  return point;
}

/** `points` with `point` added, those older than the window before it dropped. */
export function addPoint(points: Point[], point: Point, windowMs = WINDOW_MS): Point[] {
  return [...points.filter((p) => p.atMs > point.atMs - windowMs && p.atMs < point.atMs), point];
}

/** Points read back from storage; anything malformed is dropped. */
export function readPoints(text: string | null): Point[] {
  if (!text) return [];
  try {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed)) return [];
    return parsed.filter((p): p is Point => typeof p === "object" && p !== null && typeof (p as Point).atMs === "number");
  } catch {
    return [];
  }
}

/** The smallest "round" number (1, 2 or 5 times a power of ten) at least `value`. */
export function niceMax(value: number): number {
  if (!(value > 0) || !Number.isFinite(value)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

export interface Plot {
  /** Pixel coordinates, left to right. */
  xy: [number, number][];
  /** The value at the top of the chart. */
  max: number;
}

/** The span a chart shows: the window before `endMs`, or less while the samples kept
 * do not reach back that far (so the first minutes are not squeezed into a corner). */
export function span(points: Point[], endMs: number, windowMs = WINDOW_MS): number {
  const oldest = points.reduce((min, p) => Math.min(min, p.atMs), endMs);
  return Math.max(Math.min(windowMs, endMs - oldest), 1000);
}

/** `series` of `points` in a `width`×`height` box over the `spanMs` before `endMs`:
 * time to x, 0..niceMax(largest value) to the bottom..top, `pad` pixels kept free
 * above and below so a line at 0 or at the top stays visible. */
export function plot(points: Point[], series: Series, endMs: number, width: number, height: number, spanMs = WINDOW_MS, pad = 0): Plot {
  const start = endMs - spanMs;
  const values = points.filter((p) => p.atMs >= start && p.atMs <= endMs && typeof p[series] === "number" && Number.isFinite(p[series]));
  const max = niceMax(Math.max(0, ...values.map((p) => p[series] as number)));
  const round = (n: number) => Math.round(n * 10) / 10;
  const inner = height - 2 * pad;
  return {
    max,
    xy: values.map((p) => [round(((p.atMs - start) / spanMs) * width), round(pad + inner - ((p[series] as number) / max) * inner)]),
  };
}

/** An SVG path through `xy`: `M x y L x y ...`; empty without points. */
export function pathData(xy: [number, number][]): string {
  return xy.map(([x, y], i) => `${i === 0 ? "M" : "L"}${x} ${y}`).join(" ");
}
