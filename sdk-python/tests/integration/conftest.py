"""Fixtures: one fresh database and one xdb-server per database kind, one worker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta

import httpx
import pytest

from samples.email import Outbox
from samples.site_creation import SiteCreationProcess
from samples.site_services import ExternalServices
from samples.user_signup import UserSignupProcess
from tests.integration.harness import (
    Database,
    Recording,
    ThreadedWorker,
    XdbServer,
    create_database,
    drop_database,
    running_worker,
    start_server,
)
from tests.integration.processes import EchoProcess, FlakyProcess, StuckProcess
from xdb import AsyncClient, WorkerService

REMINDER = timedelta(seconds=1)


@dataclass
class Samples:
    """What the shared worker's processes talk to."""

    outbox: Outbox
    services: ExternalServices


@pytest.fixture(scope="session")
def samples() -> Samples:
    # Failures are drawn from a seeded generator; XDB retries every failed step.
    return Samples(Outbox(), ExternalServices(failure_rate=0.3, seed=7))


@pytest.fixture(scope="session")
def worker(samples: Samples) -> Iterator[ThreadedWorker]:
    service = WorkerService(
        UserSignupProcess(samples.outbox, REMINDER),
        SiteCreationProcess(samples.services, deletion_grace=timedelta(0)),
        EchoProcess(),
        FlakyProcess(),
        StuckProcess(),
    )
    with running_worker(service) as w:
        yield w


@pytest.fixture(scope="session", params=["postgres", "mariadb"])
def database(request: pytest.FixtureRequest) -> Iterator[Database]:
    db = create_database(request.param)
    yield db
    drop_database(db)


@pytest.fixture(scope="session")
def server(database: Database) -> Iterator[XdbServer]:
    srv = start_server(database)
    yield srv
    srv.stop()


@pytest.fixture
def client_recording() -> Recording:
    return Recording()


@pytest.fixture
async def client(
    server: XdbServer, worker: ThreadedWorker, client_recording: Recording
) -> AsyncIterator[AsyncClient]:
    """A client of the test's server whose exchanges are recorded."""

    async def record(response: httpx.Response) -> None:
        await response.aread()
        from tests.integration.harness import Exchange

        client_recording.add(
            Exchange(
                response.request.url.path,
                dict(response.request.headers),
                response.request.content,
                response.status_code,
                response.content,
            )
        )

    http = httpx.AsyncClient(event_hooks={"response": [record]})
    async with AsyncClient(server.url, worker_url=worker.url, http_client=http) as c:
        yield c
