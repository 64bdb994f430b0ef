from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from tests.unit.sample_processes import ShopProcess, Wait
from xdb import AsyncClient, WorkerService
from xdb.encoding import encode
from xdb.protocol import WORKER_EXECUTE, WORKER_RPC, WORKER_WAIT_UNTIL
from xdb.signature import sign

SECRET = "worker-secret-0123456789"
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def context(api: str = "execute", attempt: int = 1) -> dict[str, Any]:
    return {
        "processId": "order-1",
        "processExecutionId": "e-1",
        "processType": "ShopProcess",
        "stateExecutionId": "Start-1",
        "attempt": attempt,
        "firstAttemptTimestampMs": 1,
        "processStartedTimestampMs": 1,
        "idempotencyKey": f"e-1/Start-1/{api}",
    }


def attributes() -> dict[str, Any]:
    return {
        "globalAttributes": [{"column": "status", "value": "new"}],
        "localAttributes": [],
    }


def call(worker: WorkerService, path: str, body: Any, **headers: str) -> httpx.Response:
    import asyncio

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=worker)
        async with httpx.AsyncClient(transport=transport, base_url="http://w") as http:
            return await http.post(path, json=body, headers=headers)

    return asyncio.run(go())


def execute_body(item: str = "tea", state: str = "Start", **extra: Any) -> dict[str, Any]:
    return {
        "context": context(),
        "processType": "ShopProcess",
        "stateId": state,
        "stateInput": {"encoding": "json", "data": f'{{"item":"{item}"}}'},
        "attributes": attributes(),
        **extra,
    }


def test_execute_answers_the_decision_writes_and_messages() -> None:
    response = call(WorkerService(ShopProcess()), WORKER_EXECUTE, execute_body())
    assert response.status_code == 200
    body = response.json()
    assert [s["stateId"] for s in body["stateDecision"]["nextStates"]] == ["Wait", "Recover"]
    assert body["stateDecision"]["nextStates"][0]["stateConfig"]["skipWaitUntil"] is False
    assert body["writes"]["globalAttributes"] == [{"column": "status", "value": "ordered 1 tea"}]
    assert body["writes"]["localAttributes"] == [
        {"key": "attempts", "value": {"encoding": "json", "data": "1"}}
    ]
    assert body["publishToLocalQueue"] == [
        {
            "queueName": "events",
            "dedupId": "o-1",
            "payload": {"encoding": "json", "data": '{"ordered":"tea"}'},
        }
    ]


def test_wait_until_runs_sync_code_in_a_thread_with_the_callers_trace_context() -> None:
    Wait.seen_trace.clear()
    body = {**execute_body(state="Wait"), "stateInput": None}
    response = call(WorkerService(ShopProcess()), WORKER_WAIT_UNTIL, body, traceparent=TRACEPARENT)
    assert response.status_code == 200, response.text
    assert response.json()["commandRequest"] == {
        "waitingType": "ANY_OF_COMPLETION",
        "timerCommands": [{"delayInSeconds": 2}],
        "localQueueCommands": [{"queueName": "events", "count": 2}],
    }
    assert Wait.seen_trace == [TRACEPARENT]


def test_execute_gets_command_results() -> None:
    body = {
        **execute_body(state="Wait"),
        "stateInput": None,
        "commandResults": {
            "timerResults": [{"status": "SKIPPED"}],
            "localQueueResults": [
                {
                    "queueName": "events",
                    "status": "RECEIVED",
                    "messages": [
                        {"queueName": "events", "payload": encode("m", "a").to_wire()},
                        {"queueName": "events", "payload": encode("m", "b").to_wire()},
                    ],
                }
            ],
        },
    }
    response = call(WorkerService(ShopProcess()), WORKER_EXECUTE, body)
    close = response.json()["stateDecision"]["threadCloseDecision"]
    assert close == {
        "closeType": "GRACEFUL_COMPLETE_PROCESS",
        "output": {"encoding": "json", "data": '["a","b"]'},
    }


def test_rpc_answers_output_writes_and_new_threads() -> None:
    body = {
        "context": {**context("rpc"), "stateExecutionId": None},
        "processType": "ShopProcess",
        "rpcName": "cancel",
        "input": {"encoding": "json", "data": '"changed my mind"'},
        "attributes": attributes(),
    }
    response = call(WorkerService(ShopProcess()), WORKER_RPC, body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["output"] == {
        "encoding": "json",
        "data": '{"previous":"new","reason":"changed my mind"}',
    }
    assert answer["writes"]["globalAttributes"] == [{"column": "status", "value": "cancelled"}]
    [movement] = answer["appendNextStates"]
    assert movement["stateId"] == "Recover"
    assert movement["stateInput"] == {"encoding": "json", "data": '{"why":"changed my mind"}'}
    body = {**body, "rpcName": "peek"}
    del body["input"]
    assert "output" not in call(WorkerService(ShopProcess()), WORKER_RPC, body).json()


@pytest.mark.parametrize(
    ("path", "change", "status", "error_type", "detail"),
    [
        (WORKER_EXECUTE, {"processType": "Nope"}, 400, "UNKNOWN_PROCESS_TYPE", "'Nope'"),
        (WORKER_EXECUTE, {"stateId": "Nope"}, 400, "UNKNOWN_STATE", "no state 'Nope'"),
        (WORKER_WAIT_UNTIL, {}, 400, "NOT_IMPLEMENTED", "does not implement waitUntil"),
        (WORKER_EXECUTE, {"stateInput": None}, 400, "UNDECODABLE_INPUT", "input of state"),
        (
            WORKER_EXECUTE,
            {"stateInput": {"encoding": "json", "data": "not json"}},
            400,
            "UNDECODABLE_INPUT",
            "input of state",
        ),
        (
            WORKER_EXECUTE,
            {"stateInput": {"encoding": "json", "data": '{"item":"boom"}'}},
            500,
            "USER_CODE_ERROR",
            "RuntimeError: boom",
        ),
        (
            WORKER_EXECUTE,
            {"stateInput": {"encoding": "json", "data": '{"item":"bad-queue"}'}},
            500,
            "USER_CODE_ERROR",
            "local queue 'nope'",
        ),
        (WORKER_EXECUTE, {"context": {}}, 400, "INVALID_REQUEST", "malformed request body"),
    ],
)
def test_failures_answer_a_status_and_an_error_body(
    path: str, change: dict[str, Any], status: int, error_type: str, detail: str
) -> None:
    response = call(WorkerService(ShopProcess()), path, {**execute_body(), **change})
    assert response.status_code == status
    body = response.json()
    assert body["errorType"] == error_type
    assert detail in body["detail"]


def test_rpc_failures() -> None:
    body = {
        "context": context("rpc"),
        "processType": "ShopProcess",
        "rpcName": "nope",
        "attributes": attributes(),
    }
    response = call(WorkerService(ShopProcess()), WORKER_RPC, body)
    assert (response.status_code, response.json()["errorType"]) == (400, "UNKNOWN_RPC")
    body = {**body, "rpcName": "cancel", "input": {"encoding": "json", "data": '"boom"'}}
    response = call(WorkerService(ShopProcess()), WORKER_RPC, body)
    assert response.status_code == 500
    assert response.json()["detail"] == "ValueError: cannot cancel"


def test_a_signing_secret_refuses_unsigned_badly_signed_and_stale_calls() -> None:
    worker = WorkerService(ShopProcess(), signing_secret=SECRET)
    import json

    body = execute_body()
    raw = json.dumps(body).encode()
    now = int(time.time())

    def post(headers: dict[str, str], content: bytes = raw) -> httpx.Response:
        import asyncio

        async def go() -> httpx.Response:
            transport = httpx.ASGITransport(app=worker)
            async with httpx.AsyncClient(transport=transport, base_url="http://w") as http:
                return await http.post(WORKER_EXECUTE, content=content, headers=headers)

        return asyncio.run(go())

    assert post({}).status_code == 401
    assert post({}).json()["errorType"] == "UNAUTHORIZED"
    wrong = sign(b"another-secret-000000", now, raw)
    assert "does not match" in post({"X-XDB-Signature": wrong}).json()["detail"]
    stale = sign(SECRET.encode(), now - 301, raw)
    assert "away from this worker's clock" in post({"X-XDB-Signature": stale}).json()["detail"]
    tampered = sign(SECRET.encode(), now, raw)
    assert post({"X-XDB-Signature": tampered}, raw + b" ").status_code == 401
    ok = post({"x-xdb-signature": sign(SECRET.encode(), now, raw)})
    assert ok.status_code == 200, ok.text


def test_registering_a_process_type_twice_fails() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        WorkerService(ShopProcess(), ShopProcess())
    assert WorkerService(ShopProcess()).definition("ShopProcess") is not None


async def test_client_calls_made_inside_user_code_continue_the_callers_trace() -> None:
    seen: list[str | None] = []

    def service(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("traceparent"))
        return httpx.Response(200, json={})

    from xdb import AsyncState, Process, StateDecision, StateSchema

    outbound = AsyncClient(
        "http://xdb", http_client=httpx.AsyncClient(transport=httpx.MockTransport(service))
    )

    class Notify(AsyncState[None]):
        async def execute(self, ctx: Any, input: None, *rest: Any) -> StateDecision:
            assert ctx.traceparent == TRACEPARENT
            await outbound.publish_to_local_queue("other-process", "q", "hello")
            return StateDecision.dead_end()

    class Notifier(Process):
        def get_state_schema(self) -> StateSchema:
            return StateSchema.with_starting_state(Notify())

    worker = WorkerService(Notifier())
    transport = httpx.ASGITransport(app=worker)
    async with httpx.AsyncClient(transport=transport, base_url="http://w") as http:
        body = {
            **execute_body(),
            "processType": "Notifier",
            "stateId": "Notify",
            "stateInput": None,
        }
        response = await http.post(WORKER_EXECUTE, json=body, headers={"traceparent": TRACEPARENT})
    assert response.status_code == 200, response.text
    assert seen == [TRACEPARENT]
    await outbound.aclose()


async def test_the_worker_mounts_under_a_prefix_of_another_app() -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Mount, Route

    async def health(request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    app = Starlette(
        routes=[Route("/health", health), Mount("/xdb", app=WorkerService(ShopProcess()))]
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://w") as http:
        assert (await http.get("/health")).text == "ok"
        response = await http.post("/xdb" + WORKER_EXECUTE, json=execute_body())
        assert response.status_code == 200, response.text
        assert (await http.post(WORKER_EXECUTE, json=execute_body())).status_code == 404
