from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.unit.sample_processes import Order, ShopProcess
from xdb import (
    ApiError,
    AppDatabaseError,
    AsyncClient,
    BatchNotFoundError,
    Client,
    ControlNotApplicableError,
    DatabaseUnavailableError,
    ErrorSubType,
    ForbiddenError,
    HttpError,
    InternalServiceError,
    InvalidRequestError,
    InvalidResponseError,
    OverloadedError,
    PayloadTooLargeError,
    ProcessAlreadyStartedError,
    ProcessClosedDuringRpcError,
    ProcessNotFoundError,
    ProcessNotRunningError,
    ProcessStartOptions,
    RequestIdConflictError,
    SchemaError,
    TransportError,
    UnauthorizedError,
    WorkerApiError,
    trace_context,
)
from xdb.errors import error_from_response
from xdb.protocol import (
    DESCRIBE,
    HISTORY,
    RPC,
    START,
    WAIT_FOR_COMPLETION,
    HistoryEventType,
    ProcessExecutionDescribeResponse,
)

Handler = Callable[[httpx.Request], httpx.Response]


def async_client(handler: Handler, **kwargs: Any) -> AsyncClient:
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return AsyncClient("http://xdb/", worker_url="http://worker", http_client=http, **kwargs)


def sync_client(handler: Handler, **kwargs: Any) -> Client:
    http = httpx.Client(transport=httpx.MockTransport(handler))
    return Client("http://xdb", worker_url="http://worker", http_client=http, **kwargs)


def sent_body(request: httpx.Request) -> dict[str, Any]:
    """The JSON body of ``request`` less its ``requestId``, which must be a UUID v4 if any.

    (The tests of request ids themselves are in test_retries.py.)
    """
    body: dict[str, Any] = json.loads(request.content)
    request_id = body.pop("requestId", None)
    if request_id is not None:
        assert uuid.UUID(request_id).version == 4
    return body


@pytest.mark.parametrize(
    ("status", "sub_type", "cls"),
    [
        (400, "INVALID_REQUEST", InvalidRequestError),
        (401, "UNAUTHORIZED", UnauthorizedError),
        (403, "FORBIDDEN", ForbiddenError),
        (404, "PROCESS_NOT_FOUND", ProcessNotFoundError),
        (409, "PROCESS_ALREADY_STARTED", ProcessAlreadyStartedError),
        (409, "PROCESS_NOT_RUNNING", ProcessNotRunningError),
        (409, "PROCESS_CLOSED_DURING_RPC", ProcessClosedDuringRpcError),
        (409, "CONTROL_NOT_APPLICABLE", ControlNotApplicableError),
        (409, "REQUEST_ID_CONFLICT", RequestIdConflictError),
        (404, "BATCH_NOT_FOUND", BatchNotFoundError),
        (413, "PAYLOAD_TOO_LARGE", PayloadTooLargeError),
        (424, "WORKER_API_ERROR", WorkerApiError),
        (424, "APP_DATABASE_ERROR", AppDatabaseError),
        (500, "INTERNAL_ERROR", InternalServiceError),
        (503, "OVERLOADED", OverloadedError),
        (503, "DATABASE_UNAVAILABLE", DatabaseUnavailableError),
    ],
)
def test_error_bodies_map_to_typed_errors(status: int, sub_type: str, cls: type[ApiError]) -> None:
    body = json.dumps({"subType": sub_type, "message": "why", "workerError": "detail"}).encode()
    error = error_from_response(status, body)
    assert type(error) is cls
    assert isinstance(error, ApiError)
    assert error.status == status
    assert error.sub_type == ErrorSubType(sub_type)
    assert (error.message, error.worker_error) == ("why", "detail")
    assert sub_type in str(error)


def test_unknown_sub_types_and_foreign_bodies_are_kept() -> None:
    error = error_from_response(418, b'{"subType":"TEAPOT","message":"short and stout"}')
    assert type(error) is ApiError
    assert error.sub_type == "TEAPOT"
    foreign = error_from_response(502, b"<html>bad gateway</html>")
    assert isinstance(foreign, HttpError)
    assert foreign.status == 502
    assert "bad gateway" in str(foreign)


async def test_start_sends_the_request_with_token_and_trace_and_maps_errors() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            return httpx.Response(200, json={"processExecutionId": "e-1", "future": "ignored"})
        return httpx.Response(409, json={"subType": "PROCESS_ALREADY_STARTED", "message": "dup"})

    client = async_client(handler, bearer_token="token-0123456789abcdef")
    options = ProcessStartOptions(global_attribute_pk_value="o-1")
    with trace_context("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"):
        assert (
            await client.start_process("order-1", ShopProcess, Order(item="tea"), options) == "e-1"
        )
    request = seen[0]
    assert request.url == "http://xdb" + START
    assert request.headers["authorization"] == "Bearer token-0123456789abcdef"
    assert request.headers["traceparent"].startswith("00-0af7651916cd43dd")
    body = json.loads(request.content)
    assert body["workerUrl"] == "http://worker"
    assert body["startStateId"] == "Start"
    with pytest.raises(ProcessAlreadyStartedError):
        await client.start_process("order-1", ShopProcess, Order(item="tea"), options)
    assert "traceparent" not in seen[1].headers
    await client.aclose()


async def test_both_clients_send_a_starts_priority_only_when_given() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == START
        seen.append(sent_body(request))
        return httpx.Response(200, json={"processExecutionId": "e-1"})

    first = ProcessStartOptions(global_attribute_pk_value=1, priority=1)
    plain = ProcessStartOptions(global_attribute_pk_value=2)
    client = async_client(handler)
    assert await client.start_process("order-1", ShopProcess, Order(item="tea"), first) == "e-1"
    await client.start_process("order-2", ShopProcess, Order(item="tea"), plain)
    await client.aclose()
    with sync_client(handler) as blocking:
        blocking.start_process("order-3", ShopProcess, Order(item="tea"), first)
        blocking.start_process("order-4", ShopProcess, Order(item="tea"), plain)
    configs = [body["processStartConfig"] for body in seen]
    assert [config.get("priority") for config in configs] == [1, None, 1, None]
    assert "priority" not in configs[1]
    assert "priority" not in configs[3]


async def test_both_clients_read_an_executions_priority() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == DESCRIBE
        described = {
            "processExecutionId": "e-1",
            "processId": sent_body(request)["processId"],
            "processType": "ShopProcess",
            "workerUrl": "http://worker",
            "status": "RUNNING",
            "startTimestampMs": 1,
            "runningStateExecutions": 1,
        }
        if described["processId"] == "urgent":
            described["priority"] = 1
        return httpx.Response(200, json=described)

    client = async_client(handler)
    assert (await client.describe_process("urgent")).priority == 1
    # An answer without the field (an older service) reads as the default, 3.
    assert (await client.describe_process("plain")).priority == 3
    await client.aclose()
    with sync_client(handler) as blocking:
        assert blocking.describe_process("urgent").priority == 1
        assert blocking.describe_process("plain").priority == 3


async def test_both_clients_send_a_starts_fairness_key_and_weight_only_when_given() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == START
        seen.append(sent_body(request))
        return httpx.Response(200, json={"processExecutionId": "e-1"})

    weighed = ProcessStartOptions(
        global_attribute_pk_value=1, fairness_key="tenant-7", fairness_weight=5
    )
    plain = ProcessStartOptions(global_attribute_pk_value=2)
    client = async_client(handler)
    assert await client.start_process("order-1", ShopProcess, Order(item="tea"), weighed) == "e-1"
    await client.start_process("order-2", ShopProcess, Order(item="tea"), plain)
    await client.aclose()
    with sync_client(handler) as blocking:
        blocking.start_process("order-3", ShopProcess, Order(item="tea"), weighed)
        blocking.start_process("order-4", ShopProcess, Order(item="tea"), plain)
    configs = [body["processStartConfig"] for body in seen]
    assert [(c.get("fairnessKey"), c.get("fairnessWeight")) for c in configs] == [
        ("tenant-7", 5),
        (None, None),
        ("tenant-7", 5),
        (None, None),
    ]
    for unkeyed in (configs[1], configs[3]):
        assert "fairnessKey" not in unkeyed
        assert "fairnessWeight" not in unkeyed


async def test_both_clients_read_an_executions_fairness_key_and_weight() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == DESCRIBE
        described = {
            "processExecutionId": "e-1",
            "processId": sent_body(request)["processId"],
            "processType": "ShopProcess",
            "workerUrl": "http://worker",
            "status": "RUNNING",
            "startTimestampMs": 1,
            "runningStateExecutions": 1,
        }
        if described["processId"] == "tenant":
            described |= {"fairnessKey": "tenant-7", "fairnessWeight": 5}
        return httpx.Response(200, json=described)

    def read(described: ProcessExecutionDescribeResponse) -> tuple[str | None, int | None]:
        return described.fairness_key, described.fairness_weight

    client = async_client(handler)
    assert read(await client.describe_process("tenant")) == ("tenant-7", 5)
    # An execution whose start named no key (or an older service's answer): neither.
    assert read(await client.describe_process("plain")) == (None, None)
    await client.aclose()
    with sync_client(handler) as blocking:
        assert read(blocking.describe_process("tenant")) == ("tenant-7", 5)
        assert read(blocking.describe_process("plain")) == (None, None)


async def test_invoke_rpc_sends_the_rpcs_loading_policy_and_decodes_the_output() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == RPC
        seen.append(json.loads(request.content))
        if seen[-1]["rpcName"] != "cancel":
            return httpx.Response(200, json={})
        data = json.dumps({"previous": "new", "reason": "r"})
        return httpx.Response(200, json={"output": {"encoding": "json", "data": data}})

    client = async_client(handler)
    assert await client.invoke_rpc("order-1", ShopProcess.cancel, "r") == {
        "previous": "new",
        "reason": "r",
    }
    assert seen[0] == {
        "processId": "order-1",
        "rpcName": "cancel",
        "input": {"encoding": "json", "data": '"r"'},
        "timeoutSeconds": 5,
        "globalAttributeLoading": {"columns": ["status", "order"], "lockType": "EXCLUSIVE_LOCK"},
        "localAttributeLoading": {"keys": ["attempts"], "lockType": "EXCLUSIVE_LOCK"},
    }
    await client.invoke_rpc("order-1", "peek", process=ShopProcess)
    assert seen[1]["rpcName"] == "peek"
    assert seen[1]["globalAttributeLoading"]["lockType"] == "NO_LOCK"
    assert "input" not in seen[1]
    with pytest.raises(SchemaError, match="needs process="):
        await client.invoke_rpc("order-1", "peek")
    await client.aclose()


async def test_wait_for_completion_polls_again_until_the_execution_closes() -> None:
    answers = iter([True, True, False])

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == WAIT_FOR_COMPLETION
        assert 1 <= json.loads(request.content)["timeoutSeconds"] <= 300
        timed_out = next(answers)
        return httpx.Response(
            200,
            json={
                "processExecutionId": "e-1",
                "status": "RUNNING" if timed_out else "COMPLETED",
                "timedOut": timed_out,
            },
        )

    client = async_client(handler)
    response = await client.wait_for_completion("p", timeout=3600)
    assert not response.timed_out
    assert response.status == "COMPLETED"
    await client.aclose()


def history_pages(seen: list[dict[str, Any]], pages: list[tuple[list[int], int | None]]) -> Handler:
    """A history service answering ``pages`` (event ids, next cursor) in turn."""
    answers = iter(pages)

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == HISTORY
        seen.append(json.loads(request.content))
        ids, cursor = next(answers)
        events = [
            {"eventId": i, "eventTimestampMs": i, "eventType": "TIMER_FIRED", "details": {}}
            for i in ids
        ]
        answer: dict[str, Any] = {"processExecutionId": "e-1", "events": events}
        if cursor is not None:
            answer["nextAfterEventId"] = cursor
        return httpx.Response(200, json=answer)

    return handler


async def test_history_sends_the_cursor_page_size_and_event_types() -> None:
    seen: list[dict[str, Any]] = []
    client = async_client(history_pages(seen, [([4], 4), ([1], None)]))
    page = await client.get_process_history(
        "p",
        "e-1",
        after_event_id=3,
        page_size=1,
        event_types=[HistoryEventType.TIMER_FIRED, "STATE_FAILED"],
    )
    assert [e.event_id for e in page.events] == [4]
    assert page.next_after_event_id == 4
    last = await client.get_process_history("p", event_types=[])
    assert last.next_after_event_id is None
    assert seen == [
        {
            "processId": "p",
            "processExecutionId": "e-1",
            "afterEventId": 3,
            "pageSize": 1,
            "eventTypes": ["TIMER_FIRED", "STATE_FAILED"],
        },
        {"processId": "p", "eventTypes": []},
    ]
    with pytest.raises(ValueError, match="NOT_A_TYPE"):
        await client.get_process_history("p", event_types=["NOT_A_TYPE"])
    await client.aclose()


async def test_iter_process_history_walks_every_page() -> None:
    pages: list[tuple[list[int], int | None]] = [([5, 7], 7), ([9], 9), ([], None)]
    seen: list[dict[str, Any]] = []
    client = async_client(history_pages(seen, pages))
    walked = [
        e.event_id
        async for e in client.iter_process_history(
            "p", after_event_id=4, page_size=2, event_types=["TIMER_FIRED"]
        )
    ]
    assert walked == [5, 7, 9]
    assert [body.get("afterEventId") for body in seen] == [4, 7, 9]
    assert all(body["pageSize"] == 2 for body in seen)
    assert all(body["eventTypes"] == ["TIMER_FIRED"] for body in seen)
    await client.aclose()

    seen_sync: list[dict[str, Any]] = []
    with sync_client(history_pages(seen_sync, pages)) as sync:
        events = list(sync.iter_process_history("p", "e-1", page_size=2))
    assert [e.event_id for e in events] == [5, 7, 9]
    first = {"processId": "p", "processExecutionId": "e-1", "pageSize": 2, "eventTypes": []}
    assert seen_sync == [first, {**first, "afterEventId": 7}, {**first, "afterEventId": 9}]


async def test_transport_failures_and_bad_answers() -> None:
    attempts: list[httpx.Request] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        raise httpx.ConnectError("connection refused", request=request)

    client = async_client(refuse, max_attempts=3, max_retry_delay=0)
    with pytest.raises(TransportError, match=r"after 3 attempts.*connection refused"):
        await client.describe_process("p")
    assert len(attempts) == 3
    await client.aclose()
    client = async_client(lambda r: httpx.Response(200, json={"unexpected": True}))
    with pytest.raises(InvalidResponseError, match="describe"):
        await client.describe_process("p")
    await client.aclose()


def test_the_sync_client_makes_the_same_calls() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = sent_body(request)
        seen.append((request.url.path.rsplit("/", 1)[-1], body))
        path = request.url.path
        if path.endswith("/start"):
            return httpx.Response(200, json={"processExecutionId": "e-9"})
        if path.endswith("/rpc"):
            return httpx.Response(200, json={})
        if path.endswith("/list"):
            return httpx.Response(200, json={"executions": []})
        if path.endswith("/history"):
            return httpx.Response(200, json={"processExecutionId": "e-9", "events": []})
        if path.endswith("/wait-for-completion"):
            return httpx.Response(
                200, json={"processExecutionId": "e-9", "status": "FAILED", "timedOut": False}
            )
        if path.endswith("/describe"):
            return httpx.Response(404, json={"subType": "PROCESS_NOT_FOUND", "message": "no"})
        return httpx.Response(200)

    with sync_client(handler) as client:
        options = ProcessStartOptions(global_attribute_pk_value="o")
        assert client.start_process("p", ShopProcess, Order(item="x"), options) == "e-9"
        assert client.invoke_rpc("p", ShopProcess.peek_order) is None
        client.publish_to_local_queue("p", "events", {"n": 1}, dedup_id="d-1")
        client.stop_process("p", reason="done")
        assert client.list_processes(process_type=ShopProcess, page_size=5).executions == []
        assert client.get_process_history("p").events == []
        paged = client.get_process_history(
            "p", after_event_id=2, page_size=3, event_types=["STATE_FAILED"]
        )
        assert paged.next_after_event_id is None
        assert client.wait_for_completion("p", 5).status == "FAILED"
        with pytest.raises(ProcessNotFoundError):
            client.describe_process("p", "e-9")
    names = [name for name, _ in seen]
    assert names == [
        "start",
        "rpc",
        "publish-to-local-queue",
        "stop",
        "list",
        "history",
        "history",
        "wait-for-completion",
        "describe",
    ]
    bodies = dict(seen)
    assert bodies["publish-to-local-queue"] == {
        "processId": "p",
        "messages": [
            {
                "queueName": "events",
                "dedupId": "d-1",
                "payload": {"encoding": "json", "data": '{"n":1}'},
            }
        ],
    }
    assert bodies["stop"] == {"processId": "p", "stopType": "TERMINATE", "reason": "done"}
    assert bodies["list"] == {"filter": {"processType": "ShopProcess"}, "pageSize": 5}
    assert bodies["describe"] == {"processId": "p", "processExecutionId": "e-9"}
    assert bodies["history"] == {
        "processId": "p",
        "afterEventId": 2,
        "pageSize": 3,
        "eventTypes": ["STATE_FAILED"],
    }
