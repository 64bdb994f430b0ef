"""The SDK's requests and answers, and XDB's worker calls, against the served OpenAPI document."""

from __future__ import annotations

import uuid

import httpx
import pytest

from samples.user_signup import Form, UserSignupProcess, process_id, start_signup
from tests.contract import Contract
from tests.integration.harness import Recording, ThreadedWorker, XdbServer
from tests.integration.processes import EchoProcess, FlakyProcess
from xdb import (
    AsyncClient,
    ProcessAlreadyStartedError,
    ProcessIdReusePolicy,
    ProcessNotFoundError,
    ProcessStartOptions,
    ProcessStatus,
)
from xdb.protocol import OPENAPI


async def test_requests_answers_and_worker_calls_match_the_served_document(
    client: AsyncClient,
    server: XdbServer,
    worker: ThreadedWorker,
    client_recording: Recording,
) -> None:
    async with httpx.AsyncClient() as http:
        contract = Contract((await http.get(server.url + OPENAPI, timeout=10)).json())
    run = uuid.uuid4().hex[:10]

    echo = f"contract-echo-{run}"
    await client.start_process(
        echo,
        EchoProcess,
        {"nested": [1, "two", None]},
        ProcessStartOptions(initial_local_attributes={"note": "from the start"}, timeout=600),
    )
    await client.describe_process(echo)
    await client.get_process_history(echo)
    await client.list_processes(process_type=EchoProcess, status=ProcessStatus.RUNNING)
    assert await client.invoke_rpc(echo, EchoProcess.echo, {"x": 1}) == {"x": 1}
    await client.publish_to_local_queue(echo, "go", None, dedup_id="go-1")
    assert (await client.wait_for_completion(echo, 30)).status == ProcessStatus.COMPLETED

    flaky = f"contract-flaky-{run}"
    await client.start_process(flaky, FlakyProcess)
    assert (await client.wait_for_completion(flaky, 30)).status == ProcessStatus.COMPLETED

    user = f"contract-{run}"
    await start_signup(client, user, Form(email=f"{user}@example.com"))
    assert await client.invoke_rpc(process_id(user), UserSignupProcess.verify, "email") == "done"
    await client.wait_for_completion(process_id(user), 30)
    stopped = f"contract-stop-{run}"
    await client.start_process(stopped, EchoProcess)
    await client.stop_process(stopped, reason="contract test")

    with pytest.raises(ProcessNotFoundError):
        await client.describe_process(f"no-such-process-{run}")
    with pytest.raises(ProcessAlreadyStartedError):
        await client.start_process(
            echo,
            EchoProcess,
            options=ProcessStartOptions(id_reuse_policy=ProcessIdReusePolicy.DISALLOW_REUSE),
        )

    sent = client_recording.all()
    assert {e.status for e in sent} >= {200, 404, 409}
    paths = set()
    for e in sent:
        contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)
        paths.add(e.path)
    assert len(paths) == 8, sorted(paths)  # every service operation of the client

    calls = [
        e
        for pid in (echo, flaky, process_id(user), stopped)
        for e in worker.recording.for_process(pid)
    ]
    assert {e.path.rsplit("/", 1)[-1] for e in calls} == {"wait-until", "execute", "rpc"}
    assert {e.status for e in calls} == {200, 500}
    for e in calls:
        contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)
