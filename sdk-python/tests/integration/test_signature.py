"""Signed worker calls: a worker with a signing secret refuses calls not signed with it."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.harness import (
    Database,
    Recording,
    XdbServer,
    await_until,
    create_database,
    drop_database,
    running_worker,
    start_server,
)
from tests.integration.processes import EchoProcess
from xdb import AsyncClient, ProcessStatus, WorkerApiError, WorkerService, decode_payload
from xdb.protocol import WORKER_WAIT_UNTIL

SECRET = "s3cret-shared-with-the-workers"


async def refused(recording: Recording, pid: str) -> list[int]:
    async def check() -> list[int]:
        return [e.status for e in recording.for_process(pid) if e.path == WORKER_WAIT_UNTIL]

    return await await_until("a refused waitUntil call", check)


async def test_signed_calls_pass_and_unsigned_or_badly_signed_calls_are_refused(
    database: Database, server: XdbServer
) -> None:
    own = create_database(database.kind)
    signed_server = start_server(own, f"security.worker_signing_secret={SECRET}")
    good = WorkerService(EchoProcess(), signing_secret=SECRET)
    bad = WorkerService(EchoProcess(), signing_secret="another-secret-of-16+bytes")
    try:
        with running_worker(good) as good_worker, running_worker(bad) as bad_worker:
            # Signed with the shared secret: served.
            async with AsyncClient(signed_server.url, worker_url=good_worker.url) as client:
                pid = f"signed-{uuid.uuid4().hex[:12]}"
                await client.start_process(pid, EchoProcess, "hi")
                assert await client.invoke_rpc(pid, EchoProcess.echo, "ping") == "ping"
                await client.publish_to_local_queue(pid, "go")
                done = await client.wait_for_completion(pid, timeout=30)
                assert done.status == ProcessStatus.COMPLETED
                assert decode_payload(done.result) == {"input": "hi", "note": "rpc was here"}
                calls = good_worker.recording.for_process(pid)
                assert calls
                assert all(e.status == 200 for e in calls)
                assert all(e.headers["x-xdb-signature"].startswith("t=") for e in calls)

            # Signed with another secret: refused with 401, so the process makes no progress.
            async with AsyncClient(signed_server.url, worker_url=bad_worker.url) as client:
                pid = f"badly-signed-{uuid.uuid4().hex[:12]}"
                await client.start_process(pid, EchoProcess, "hi")
                assert 401 in await refused(bad_worker.recording, pid)
                body = bad_worker.recording.for_process(pid)[0].response_json()
                assert body["errorType"] == "UNAUTHORIZED"
                assert "does not match" in body["detail"]
                with pytest.raises(WorkerApiError) as rpc_error:
                    await client.invoke_rpc(pid, EchoProcess.echo, "ping")
                assert rpc_error.value.status == 424
                assert "401" in (rpc_error.value.worker_error or ""), rpc_error.value
                assert (await client.describe_process(pid)).status == ProcessStatus.RUNNING
                await client.stop_process(pid)

            # Not signed at all (the session's server has no secret): refused too.
            async with AsyncClient(server.url, worker_url=good_worker.url) as client:
                pid = f"unsigned-{uuid.uuid4().hex[:12]}"
                await client.start_process(pid, EchoProcess, "hi")
                assert 401 in await refused(good_worker.recording, pid)
                body = good_worker.recording.for_process(pid)[0].response_json()
                assert "X-XDB-Signature" in body["detail"]
                with pytest.raises(WorkerApiError):
                    await client.invoke_rpc(pid, EchoProcess.echo, "ping")
                await client.stop_process(pid)
                assert (await client.describe_process(pid)).status == ProcessStatus.TERMINATED
    finally:
        signed_server.stop()
        drop_database(own)
