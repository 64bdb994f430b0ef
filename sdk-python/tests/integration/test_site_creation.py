"""The site-creation sample: parallel branches joined by a queue, retries until success,
and a deletion that stops a creation in flight."""

from __future__ import annotations

import uuid

from samples.site_creation import (
    STEP_COLUMNS,
    SiteCreationProcess,
    delete_site,
    process_id,
    start_site_creation,
)
from samples.site_services import Operation
from tests.integration.conftest import Samples
from tests.integration.harness import Database, ThreadedWorker, await_until
from xdb import AsyncClient, ProcessNotRunningError, ProcessStatus, decode_payload
from xdb.protocol import WORKER_EXECUTE


def failed_attempts(worker: ThreadedWorker, pid: str) -> int:
    return sum(
        1 for e in worker.recording.for_process(pid) if e.path == WORKER_EXECUTE and e.status == 500
    )


async def test_a_site_is_created_once_whatever_the_services_fail(
    client: AsyncClient, database: Database, samples: Samples, worker: ThreadedWorker
) -> None:
    site = f"s-{uuid.uuid4().hex[:12]}"
    pid = process_id(site)
    samples.services.set_unavailable(site)  # every creation call fails until lifted
    await start_site_creation(client, site, "Buddha Jumps Over the Wall")

    async def retried() -> bool:
        return failed_attempts(worker, pid) >= 4

    await await_until("failed attempts to be retried", retried)
    samples.services.set_unavailable(site, False)

    done = await client.wait_for_completion(pid, timeout=60)
    assert done.status == ProcessStatus.COMPLETED, done
    assert decode_payload(done.result, str) == "created"
    row = database.row("site", "site_id", site)
    assert row is not None
    assert row["status"] == "created"
    assert row["name"] == "Buddha Jumps Over the Wall"
    assert all(row[c] == "done" for c in STEP_COLUMNS), row
    resources = samples.services.site(site)
    assert (resources.file_system, resources.database, resources.bootstrapped) == (True,) * 3
    for operation in (Operation.CREATE_FILE_SYSTEM, Operation.CREATE_DATABASE, Operation.BOOTSTRAP):
        assert resources.effects[operation] == 1, resources.effects


async def test_a_deletion_stops_a_creation_in_flight(
    client: AsyncClient, database: Database, samples: Samples, worker: ThreadedWorker
) -> None:
    site = f"s-{uuid.uuid4().hex[:12]}"
    pid = process_id(site)
    samples.services.set_unavailable(site)
    await start_site_creation(client, site, "doomed")

    async def stuck() -> bool:
        return failed_attempts(worker, pid) >= 2

    await await_until("the creation to be stuck retrying", stuck)
    assert await delete_site(client, site) == "deleting"
    try:
        again = await client.invoke_rpc(pid, SiteCreationProcess.delete)
        assert again == "already deleting"
    except ProcessNotRunningError:
        pass  # DeleteSite (no grace period here) already ended the process

    done = await client.wait_for_completion(pid, timeout=30)
    assert done.status == ProcessStatus.COMPLETED
    assert decode_payload(done.result, str) == "deleted"
    row = database.row("site", "site_id", site)
    assert row is not None
    assert row["status"] == "deleted"
    resources = samples.services.site(site)
    assert not resources.file_system
    assert not resources.database
    samples.services.set_unavailable(site, False)
