import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { parsePrometheus } from "../../src/metrics.js";
import { addPoint, niceMax, pathData, plot, pointFrom, readPoints, span, WINDOW_MS, type Point } from "../../src/series.js";

const api = (requests: number, errors: number) =>
  parsePrometheus(`xdb_api_requests_total{status="200"} ${requests}\nxdb_api_requests_total{status="503"} ${errors}\n`);
const async_ = (ok: number, workerErrors: number, backlog: number, latenessSum: number, latenessCount: number) =>
  parsePrometheus(
    `xdb_async_tasks_completed_total{outcome="ok"} ${ok}\nxdb_async_tasks_completed_total{outcome="error"} 99\n` +
      `xdb_async_worker_call_errors_total ${workerErrors}\nxdb_async_queue_backlog ${backlog}\n` +
      `xdb_async_timer_lateness_seconds_sum ${latenessSum}\nxdb_async_timer_lateness_seconds_count ${latenessCount}\n`,
  );

describe("dashboard series", () => {
  it("samples throughput, failures, backlog and lateness between two scrapes", () => {
    const before = { atMs: 0, api: api(10, 1), async: async_(100, 2, 7, 1, 10) };
    const now = { atMs: 10_000, api: api(30, 2), async: async_(150, 6, 3, 1.5, 20) };
    assert.deepEqual(pointFrom(now, before), { atMs: 10_000, throughput: 5, failures: 0.5, backlog: 3, lateness: 50 });
    // The first scrape: no rates yet, the backlog already.
    assert.deepEqual(pointFrom(now), { atMs: 10_000, backlog: 3 });
    // Without the async service's metrics: API requests per second.
    assert.deepEqual(pointFrom({ atMs: 2000, api: api(4, 0) }, { atMs: 0, api: api(2, 0) }), { atMs: 2000, throughput: 1, failures: 0 });
  });

  it("keeps the last hour and reads back only well-formed samples", () => {
    let points: Point[] = [];
    for (const atMs of [0, 1000, WINDOW_MS, WINDOW_MS + 1000]) points = addPoint(points, { atMs, backlog: 1 });
    assert.deepEqual(points.map((p) => p.atMs), [WINDOW_MS, WINDOW_MS + 1000]);
    assert.deepEqual(readPoints(JSON.stringify([{ atMs: 5, backlog: 2 }, { nope: 1 }, null])), [{ atMs: 5, backlog: 2 }]);
    assert.deepEqual(readPoints("not json"), []);
    assert.deepEqual(readPoints(null), []);
  });

  it("scales a series into the chart's box with a round top", () => {
    assert.equal(niceMax(0), 1);
    assert.equal(niceMax(0.3), 0.5);
    assert.equal(niceMax(7), 10);
    assert.equal(niceMax(120), 200);
    assert.equal(niceMax(2000), 2000);
    const points: Point[] = [
      { atMs: 0, backlog: 0 },
      { atMs: 1800_000, backlog: 4 },
      { atMs: 3600_000, backlog: 8 },
      { atMs: 3600_000, throughput: 1 },
    ];
    const drawn = plot(points, "backlog", 3600_000, 300, 100);
    assert.equal(drawn.max, 10);
    assert.deepEqual(drawn.xy, [[0, 100], [150, 60], [300, 20]]);
    assert.equal(pathData(drawn.xy), "M0 100 L150 60 L300 20");
    assert.deepEqual(plot(points, "lateness", 3600_000, 300, 100).xy, []);
    // Kept clear of the edges by the padding.
    assert.deepEqual(plot(points, "backlog", 3600_000, 300, 100, WINDOW_MS, 5).xy, [[0, 95], [150, 59], [300, 23]]);
  });

  it("spans the hour, or the time since the oldest sample while there is less", () => {
    assert.equal(span([{ atMs: 50_000 }, { atMs: 80_000 }], 90_000), 40_000);
    assert.equal(span([{ atMs: 0 }], 2 * WINDOW_MS), WINDOW_MS);
    assert.equal(span([], 5000), 1000);
    const drawn = plot([{ atMs: 50_000, backlog: 1 }, { atMs: 90_000, backlog: 1 }], "backlog", 90_000, 300, 100, span([{ atMs: 50_000 }], 90_000));
    assert.deepEqual(drawn.xy, [[0, 0], [300, 0]]);
  });
});
