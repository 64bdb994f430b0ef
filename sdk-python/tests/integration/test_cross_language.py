"""The SDKs interoperate through the same XDB: a Rust client drives the Python worker, and
the Python client drives the Rust worker and the TypeScript worker (the TypeScript SDK's
sample service, ``sdk-typescript/samples/worker-main.ts``, served by node)."""

from __future__ import annotations

import subprocess
import tempfile
import uuid
from collections.abc import Iterator

import httpx
import pytest

from samples.user_signup import Form, UserSignupProcess, process_id, start_signup
from tests.integration.conftest import Samples
from tests.integration.harness import (
    Database,
    NodeWorker,
    ThreadedWorker,
    XdbServer,
    await_until,
    binary,
    free_port,
    start_typescript_worker,
    wait_until,
)
from xdb import AsyncClient, ProcessStatus, decode_payload


def test_a_rust_client_drives_the_python_worker(
    server: XdbServer, worker: ThreadedWorker, database: Database, samples: Samples
) -> None:
    user = f"rust-client-{uuid.uuid4().hex[:10]}"
    demo = binary("xdb-signup-demo", "xdb-samples")
    args = [str(demo), "--service-url", server.url, "--worker-url", worker.url, "--user-id", user]
    run = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "process closed: Completed" in run.stdout
    kinds = samples.outbox.kinds(f"{user}@example.com")
    assert kinds[0] == "verification"
    assert "reminder" in kinds
    assert kinds[-1] == "welcome"
    row = database.row("user", "user_id", user)
    assert row is not None
    assert (row["status"], row["source"]) == ("verified", "email-link")
    assert row["form"] == {"email": f"{user}@example.com", "name": "Demo User"}


@pytest.fixture
def rust_worker() -> Iterator[str]:
    port = free_port()
    args = [
        str(binary("xdb-sample-worker", "xdb-samples")),
        "--listen",
        f"127.0.0.1:{port}",
        "--reminder-interval-seconds",
        "1",
    ]
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)

        def healthy() -> bool:
            try:
                return httpx.get(url + "/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                assert process.poll() is None, "xdb-sample-worker exited"
                return False

        try:
            wait_until("the Rust sample worker", healthy)
            yield url
        finally:
            process.terminate()
            process.wait(timeout=20)


async def test_the_python_client_drives_the_rust_worker(
    server: XdbServer, rust_worker: str, database: Database
) -> None:
    user = f"py-client-{uuid.uuid4().hex[:10]}"
    pid = process_id(user)
    email = f"{user}@example.com"
    async with AsyncClient(server.url, worker_url=rust_worker) as client, httpx.AsyncClient() as h:
        await start_signup(client, user, Form(email=email, name="Grace"))

        async def reminded() -> bool:
            sent = (await h.get(rust_worker + "/sample/emails")).json()
            return any(e["to"] == email and e["kind"] == "REMINDER" for e in sent)

        await await_until("the Rust worker's reminder", reminded)
        assert await client.invoke_rpc(pid, UserSignupProcess.verify, "python") == "done"
        done = await client.wait_for_completion(pid, timeout=30)
    assert done.status == ProcessStatus.COMPLETED
    assert decode_payload(done.result, str) == "done"
    row = database.row("user", "user_id", user)
    assert row is not None
    assert (row["status"], row["source"]) == ("verified", "python")
    assert row["form"] == {"email": email, "name": "Grace"}


@pytest.fixture
def typescript_worker() -> Iterator[NodeWorker]:
    """The TypeScript sign-up sample on node; a missing build fails, naming the script."""
    worker = start_typescript_worker()
    try:
        yield worker
    finally:
        worker.stop()


async def test_the_python_client_drives_the_typescript_worker(
    server: XdbServer, typescript_worker: NodeWorker, database: Database
) -> None:
    user = f"py-to-ts-{uuid.uuid4().hex[:10]}"
    pid = process_id(user)
    email = f"{user}@example.com"
    with typescript_worker.log_on_failure():
        async with AsyncClient(server.url, worker_url=typescript_worker.url) as client:
            execution_id = await start_signup(client, user, Form(email=email, name="Linus"))
            row = database.row("user", "user_id", user)
            assert row is not None, "the start writes the row in its transaction"
            assert row["status"] == "waiting"

            async def verification_sent() -> bool:
                return "verification" in await typescript_worker.emails(email)

            await await_until("the TypeScript worker's verification email", verification_sent)
            assert await client.invoke_rpc(pid, UserSignupProcess.verify, "python") == "done"
            done = await client.wait_for_completion(pid, timeout=30)
        assert done.status == ProcessStatus.COMPLETED, done
        assert done.process_execution_id == execution_id
        assert decode_payload(done.result, str) == "done"
        # The reminder is a day away: exactly these two emails, each sent once.
        assert await typescript_worker.emails(email) == ["verification", "welcome"]
    row = database.row("user", "user_id", user)
    assert row is not None
    assert (row["status"], row["source"]) == ("verified", "python")
    assert row["form"] == {"email": email, "name": "Linus"}
