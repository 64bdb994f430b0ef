import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { figures, parsePrometheus, quantile, rate, total } from "../../src/metrics.js";

const API = `# HELP xdb_api_requests_total Requests.
# TYPE xdb_api_requests_total counter
xdb_api_requests_total{method="POST",route="/a",status="200"} 10
xdb_api_requests_total{method="POST",route="/a",status="500"} 2
xdb_api_requests_total{method="GET",route="/b",status="200"} 8
`;

const ASYNC = `xdb_async_tasks_completed_total{task_type="EXECUTE",outcome="ok"} 40
xdb_async_tasks_completed_total{task_type="EXECUTE",outcome="stale"} 3
xdb_async_worker_call_errors_total{process_type="P",state_id="S",api="execute"} 5
xdb_async_queue_backlog 7
xdb_async_parked_tasks 1
xdb_async_paused_executions 2
xdb_async_pending_executions 4
xdb_async_states_past_attempts 0
xdb_async_timer_lateness_seconds_bucket{le="0.01"} 90
xdb_async_timer_lateness_seconds_bucket{le="0.1"} 100
xdb_async_timer_lateness_seconds_bucket{le="+Inf"} 100
xdb_async_timer_lateness_seconds_sum 1.5
xdb_async_timer_lateness_seconds_count 100
`;

describe("metrics", () => {
  it("parses samples with labels, escapes and special values", () => {
    const samples = parsePrometheus(`a{x="q\\"uote",y="2"} 1.5\nb +Inf\n# comment\nbad line\nc 3 1700000000000`);
    assert.deepEqual(samples, [
      { name: "a", labels: { x: 'q"uote', y: "2" }, value: 1.5 },
      { name: "b", labels: {}, value: Infinity },
      { name: "c", labels: {}, value: 3 },
    ]);
  });

  it("sums, rates (across a reset) and interpolates quantiles", () => {
    const samples = parsePrometheus(API);
    assert.equal(total(samples, "xdb_api_requests_total"), 20);
    assert.equal(total(samples, "xdb_api_requests_total", (l) => l.status === "500"), 2);
    assert.equal(total(samples, "missing"), undefined);
    assert.equal(rate(10, 30, 4), 5);
    assert.equal(rate(30, 6, 2), 3, "a counter that went down restarted from zero");
    const a = parsePrometheus(ASYNC);
    assert.equal(quantile(a, "xdb_async_timer_lateness_seconds", 0.5), (0.01 * 50) / 90);
    assert.ok(Math.abs((quantile(a, "xdb_async_timer_lateness_seconds", 0.99) ?? 0) - 0.091) < 1e-9);
    assert.equal(quantile(parsePrometheus(""), "xdb_async_timer_lateness_seconds", 0.99), undefined);
  });

  it("shows what each service reports, and only the API's when the async service is apart", () => {
    const apiOnly = figures({ atMs: 0, api: parsePrometheus(API) });
    assert.deepEqual(apiOnly.map((f) => [f.label, f.value, f.source]), [
      ["API requests/s", "—", "api"],
      ["API server errors", "2", "api"],
    ]);
    const before = { atMs: 0, api: parsePrometheus(API), async: parsePrometheus(ASYNC) };
    const later = {
      atMs: 2000,
      api: parsePrometheus(API.replace("} 8", "} 18")),
      async: parsePrometheus(ASYNC.replace('outcome="ok"} 40', 'outcome="ok"} 50')),
    };
    const shown = Object.fromEntries(figures(later, before).map((f) => [f.label, f.value]));
    assert.equal(shown["API requests/s"], "5.0");
    assert.equal(shown["Tasks completed/s"], "5.0");
    assert.equal(shown["Worker call failures"], "5");
    assert.equal(shown["Backlog (due tasks)"], "7");
    assert.equal(shown["Timer lateness p99"], "91 ms");
    assert.equal(shown["Timer lateness mean"], "15 ms");
    assert.equal(shown["Parked tasks"], "1");
    assert.equal(shown["Paused executions"], "2");
    assert.equal(shown["Pending executions"], "4");
  });
});
