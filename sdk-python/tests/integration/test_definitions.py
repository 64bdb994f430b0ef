"""Registered definitions against the real service: a worker registers what it hosts, starts
without a worker URL go to it, and the service refuses what the definitions rule out.

Each test runs on a database and server of its own, so that no registration here changes
what the other tests' starts are checked against.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta

import httpx
import pytest

from samples.email import Outbox
from samples.user_signup import UserSignupProcess
from tests.integration.harness import (
    Database,
    ThreadedWorker,
    XdbServer,
    create_database,
    drop_database,
    running_worker,
    start_server,
)
from tests.integration.processes import Order, RegisteredOrderProcess
from xdb import (
    AsyncClient,
    DefinitionNotFoundError,
    InvalidRequestError,
    ProcessNotFoundError,
    ProcessStatus,
    WorkerDeployment,
    WorkerService,
    decode_payload,
    export_definition,
)
from xdb.protocol import START, ProcessExecutionStartRequest


@dataclass
class Deployed:
    server: XdbServer
    worker: ThreadedWorker
    service: WorkerService
    deployment: WorkerDeployment


@pytest.fixture
def deployed(database: Database) -> Iterator[Deployed]:
    own = create_database(database.kind)
    server = start_server(own)
    service = WorkerService(
        RegisteredOrderProcess(), UserSignupProcess(Outbox(), timedelta(seconds=1))
    )
    try:
        with running_worker(service) as worker:
            deployment = WorkerDeployment(name="orders", version="1.0.0", worker_url=worker.url)
            yield Deployed(server, worker, service, deployment)
    finally:
        server.stop()
        drop_database(own)


@pytest.fixture
async def client(deployed: Deployed) -> AsyncIterator[AsyncClient]:
    """A client with no worker URL: starts go where the registered deployment is."""
    async with AsyncClient(deployed.server.url) as c:
        yield c


async def test_the_worker_registers_and_a_start_without_worker_url_runs_on_it(
    deployed: Deployed, client: AsyncClient
) -> None:
    first = await deployed.service.register_definitions(client, deployed.deployment)
    assert [r.revision.process_type for r in first.registered] == [
        "RegisteredOrderProcess",
        "UserSignupProcess",
    ]
    assert all(r.changed and r.revision.revision == 1 for r in first.registered)
    assert all(r.revision.deployment == deployed.deployment for r in first.registered)

    # Registering the same definitions again changes nothing.
    again = await deployed.service.register_definitions(client, deployed.deployment)
    assert [(r.changed, r.revision) for r in again.registered] == [
        (False, r.revision) for r in first.registered
    ]

    listed = await client.list_definitions()
    assert sorted(d.process_type for d in listed.definitions) == [
        "RegisteredOrderProcess",
        "UserSignupProcess",
    ]
    described = await client.describe_definition(RegisteredOrderProcess)
    assert described.definition == export_definition(RegisteredOrderProcess)
    assert [r.revision for r in described.revisions] == [1]
    with pytest.raises(DefinitionNotFoundError):
        await client.describe_definition("NoSuchProcess")

    pid = f"order-{uuid.uuid4().hex[:12]}"
    await client.start_process(pid, RegisteredOrderProcess, Order(item="tea", quantity=3))
    done = await client.wait_for_completion(pid, 30)
    assert done.status == ProcessStatus.COMPLETED
    assert decode_payload(done.result, str) == "shipped 3 x tea"
    assert (await client.describe_process(pid)).worker_url == deployed.worker.url
    calls = deployed.worker.recording.for_process(pid)
    assert [e.request_json()["stateId"] for e in calls] == ["PlaceOrder", "ShipOrder"]
    assert all(e.status == 200 for e in calls)


async def test_a_start_naming_an_unknown_state_is_refused_and_writes_nothing(
    deployed: Deployed, client: AsyncClient
) -> None:
    await deployed.service.register_definitions(client, deployed.deployment)
    pid = f"order-{uuid.uuid4().hex[:12]}"
    request = ProcessExecutionStartRequest(
        process_id=pid, process_type="RegisteredOrderProcess", start_state_id="NoSuchState"
    )
    async with httpx.AsyncClient() as http:
        answer = await http.post(deployed.server.url + START, json=request.to_wire(), timeout=10)
    assert answer.status_code == 400, answer.text
    assert answer.json()["subType"] == "INVALID_REQUEST"
    assert "NoSuchState" in answer.json()["message"]

    # An input its state's schema refuses (an order names its item): refused too.
    with pytest.raises(InvalidRequestError):
        await client.start_process(pid, RegisteredOrderProcess, {"quantity": 2})

    with pytest.raises(ProcessNotFoundError):
        await client.describe_process(pid)
    assert (await client.list_processes(process_id=pid)).executions == []
    assert deployed.worker.recording.for_process(pid) == []
