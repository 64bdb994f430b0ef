"""Deployments and versions against the real service: two deployments of one process type
at two worker URLs. An execution stays on the deployment it started on while new starts go
to the current one, the operator sees both, and moves the execution to the new one.

The test runs on a database and server of its own: its registrations would change where
the other tests' starts go.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.integration.harness import (
    Database,
    XdbServer,
    create_database,
    drop_database,
    running_worker,
    start_server,
    wait_until,
)
from tests.integration.processes import EchoProcess
from xdb import (
    AsyncClient,
    DefinitionNotFoundError,
    DeploymentRef,
    ProcessStatus,
    WorkerDeployment,
    WorkerService,
    decode_payload,
)


@pytest.fixture
def own_server(database: Database) -> Iterator[XdbServer]:
    own = create_database(database.kind)
    server = start_server(own)
    try:
        yield server
    finally:
        server.stop()
        drop_database(own)


async def test_an_execution_stays_on_its_deployment_until_moved(own_server: XdbServer) -> None:
    with (
        running_worker(WorkerService(EchoProcess())) as worker_1,
        running_worker(WorkerService(EchoProcess())) as worker_2,
    ):
        v1 = WorkerDeployment(name="echo", version="1", worker_url=worker_1.url)
        v2 = WorkerDeployment(name="echo", version="2", worker_url=worker_2.url)
        async with AsyncClient(own_server.url) as client:
            await client.register_definitions(v1, [EchoProcess])
            old = f"echo-{uuid.uuid4().hex[:12]}"
            await client.start_process(old, EchoProcess, "old")
            # Its waitUntil ran on v1: it waits for a message on "go".
            wait_until(
                "the first execution's waitUntil on v1",
                lambda: worker_1.recording.for_process(old),
            )

            await client.register_definitions(v2, [EchoProcess])
            new = f"echo-{uuid.uuid4().hex[:12]}"
            await client.start_process(new, EchoProcess, "new")
            assert (await client.describe_process(old)).worker_url == worker_1.url
            assert (await client.describe_process(new)).worker_url == worker_2.url

            listed = {
                d.deployment.version: d for d in (await client.list_deployments()).deployments
            }
            assert listed["2"].current_for == ["EchoProcess"]
            assert listed["2"].running_executions == 1
            assert listed["1"].current_for == []
            assert listed["1"].running_executions == 1
            assert listed["1"].process_types == ["EchoProcess"]
            assert not listed["1"].drained

            with pytest.raises(DefinitionNotFoundError):
                await client.move_executions(EchoProcess, DeploymentRef(name="echo", version="9"))
            moved = await client.move_executions(EchoProcess, v2, from_=v1)
            assert moved.moved == 1
            assert (await client.describe_process(old)).worker_url == worker_2.url
            after = {d.deployment.version: d for d in (await client.list_deployments()).deployments}
            assert (after["1"].running_executions, after["1"].drained) == (0, True)
            assert after["2"].running_executions == 2

            await client.publish_to_local_queue(old, "go")
            done = await client.wait_for_completion(old, 30)
            assert done.status == ProcessStatus.COMPLETED
            assert decode_payload(done.result) == {"input": "old", "note": None}
            # Its execute ran on v2, where it was moved.
            executes = [e.path for e in worker_2.recording.for_process(old)]
            assert executes == ["/api/v1/xdb/worker/async-state/execute"]
            assert all("execute" not in e.path for e in worker_1.recording.for_process(old))
