"""At-least-once worker calls: a failed attempt is retried with the same idempotency key;
and the caller's trace context reaches the worker."""

from __future__ import annotations

import uuid

from tests.integration.harness import (
    Database,
    ThreadedWorker,
    await_until,
    create_database,
    drop_database,
    start_server,
)
from tests.integration.processes import CALLS, EchoProcess, FlakyProcess
from xdb import AsyncClient, ProcessStatus, decode_payload, trace_context
from xdb.protocol import WORKER_EXECUTE


async def test_a_failed_attempt_is_retried_with_the_same_idempotency_key(
    client: AsyncClient, worker: ThreadedWorker
) -> None:
    pid = f"flaky-{uuid.uuid4().hex[:12]}"
    await client.start_process(pid, FlakyProcess)
    done = await client.wait_for_completion(pid, timeout=30)
    assert done.status == ProcessStatus.COMPLETED
    assert decode_payload(done.result, str) == "recovered"

    attempts = CALLS.of(pid, "FailOnce")
    assert [c.attempt for c in attempts] == [1, 2]
    first, second = attempts
    assert first.idempotency_key == second.idempotency_key
    assert first.state_execution_id == second.state_execution_id == "FailOnce-1"
    assert first.first_attempt_timestamp_ms == second.first_attempt_timestamp_ms

    calls = [e for e in worker.recording.for_process(pid) if e.path == WORKER_EXECUTE]
    assert [e.status for e in calls] == [500, 200]
    assert calls[0].response_json()["errorType"] == "USER_CODE_ERROR"
    assert "payment service is down" in calls[0].response_json()["detail"]
    # The key is in the body's context and in the Idempotency-Key header of every attempt.
    assert {e.headers["idempotency-key"] for e in calls} == {first.idempotency_key}

    history = await client.get_process_history(pid)
    assert any("FAILED" in e.event_type or "RETR" in e.event_type for e in history.events), [
        e.event_type for e in history.events
    ]


async def test_trace_context_flows_from_the_client_through_xdb_to_the_worker(
    database: Database, worker: ThreadedWorker
) -> None:
    # Spans are exported only when telemetry is on; the collector need not exist. A
    # database of its own, so that no other server runs this process's tasks.
    own = create_database(database.kind)
    server = start_server(
        own,
        "telemetry.enabled=true",
        "telemetry.otlp_endpoint=http://127.0.0.1:9",
    )
    try:
        trace_id = uuid.uuid4().hex
        traceparent = f"00-{trace_id}-{uuid.uuid4().hex[:16]}-01"
        pid = f"traced-{uuid.uuid4().hex[:12]}"
        async with AsyncClient(server.url, worker_url=worker.url) as client:
            with trace_context(traceparent):
                await client.start_process(pid, EchoProcess, {"hello": "trace"})
                output = await client.invoke_rpc(pid, EchoProcess.echo, [1, 2])
                await client.publish_to_local_queue(pid, "go")
            assert output == [1, 2]
            done = await client.wait_for_completion(pid, timeout=30)
        assert done.status == ProcessStatus.COMPLETED

        async def seen() -> bool:
            return all(CALLS.of(pid, what) for what in ("Echo.wait_until", "Echo", "echo"))

        await await_until("both worker calls", seen)
        for ctx in CALLS.of(pid):
            assert ctx.trace is not None, "XDB sent no traceparent"
            assert ctx.trace.trace_id == trace_id, ctx.trace
    finally:
        server.stop()
        drop_database(own)
