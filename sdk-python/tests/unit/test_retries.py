"""Request ids and retries, against a real HTTP server that drops, hangs and refuses.

A write (start, stop, publish, the controls, reset, batch start) carries a request id
(the caller's, else a UUID v4 made once per call) and is sent again with the same id and
the same bytes on a lost connection and on 503; reads are sent again too; nothing is sent
again on another status, and never more than ``max_attempts`` times.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tests.unit.sample_processes import Order, ShopProcess
from tests.unit.scripted_service import Answer, Drop, Hang, ScriptedService, refusal
from tests.unit.scripted_service import scripted_service as serve
from xdb import (
    AsyncClient,
    BatchNotFoundError,
    Client,
    DatabaseUnavailableError,
    InternalServiceError,
    InvalidRequestError,
    ProcessNotFoundError,
    ProcessStartOptions,
    RequestIdConflictError,
    SchemaError,
    TransportError,
)
from xdb.protocol import (
    BATCH_DESCRIBE,
    BATCH_START,
    DESCRIBE,
    GIVE_UP,
    PAUSE,
    PUBLISH_TO_LOCAL_QUEUE,
    REPRIORITIZE,
    RESET,
    RESUME,
    RETRY_NOW,
    RPC,
    START,
    STOP,
)
from xdb.retries import CallRetries, repeatable

# A pause short enough for tests (it caps Retry-After and the backoff alike).
FAST = 0.05


def client(
    service: ScriptedService,
    *,
    max_attempts: int = 5,
    max_retry_delay: float = FAST,
    request_timeout: float = 10.0,
) -> AsyncClient:
    return AsyncClient(
        service.url,
        worker_url="http://worker",
        max_attempts=max_attempts,
        max_retry_delay=max_retry_delay,
        request_timeout=request_timeout,
    )


AsyncCall = Callable[[AsyncClient], Awaitable[object]]

CONTROL_ANSWER = {"stateExecutionIds": ["Pay-1"]}
RESET_ANSWER = {"processExecutionId": "e-2", "newExecution": False, "stateExecutionId": "Pay-2"}

# Every call that carries a request id, with the path it posts to and an answer.
WRITES: list[tuple[str, AsyncCall, Any]] = [
    (
        START,
        lambda c: c.start_process(
            "p", ShopProcess, Order(item="tea"), ProcessStartOptions(global_attribute_pk_value="o")
        ),
        {"processExecutionId": "e-1"},
    ),
    (STOP, lambda c: c.stop_process("p", reason="done"), {}),
    (PUBLISH_TO_LOCAL_QUEUE, lambda c: c.publish_to_local_queue("p", "q", {"n": 1}), {}),
    (RETRY_NOW, lambda c: c.retry_now("p"), CONTROL_ANSWER),
    (GIVE_UP, lambda c: c.give_up("p", state_execution_id="Pay-1"), CONTROL_ANSWER),
    (PAUSE, lambda c: c.pause("p", reason="upgrade"), CONTROL_ANSWER),
    (RESUME, lambda c: c.resume("p"), CONTROL_ANSWER),
    (REPRIORITIZE, lambda c: c.reprioritize("p", priority=1), CONTROL_ANSWER),
    (RESET, lambda c: c.reset("p", "Pay", {"amount": 1}), RESET_ANSWER),
    (
        BATCH_START,
        lambda c: c.start_batch("PAUSE", process_type="T"),
        {"batchId": "b-1", "expected": 3},
    ),
]
WRITE_IDS = [path.rsplit("/", 2)[-2] + "/" + path.rsplit("/", 1)[-1] for path, _, _ in WRITES]


def assert_sent_again_unchanged(service: ScriptedService, path: str, times: int) -> str:
    """Every request went to ``path`` with the same bytes and a UUID v4; returns the id."""
    assert [s.path for s in service.seen] == [path] * times
    assert len({s.body for s in service.seen}) == 1, "a retry changed the body"
    request_id: str = service.seen[0].json()["requestId"]
    assert uuid.UUID(request_id).version == 4
    return request_id


@pytest.mark.parametrize(("path", "call", "answer"), WRITES, ids=WRITE_IDS)
async def test_a_write_is_sent_again_with_its_id_after_a_dropped_connection(
    path: str, call: AsyncCall, answer: Any
) -> None:
    with serve(Drop(), Answer(200, answer)) as service:
        async with client(service) as c:
            await call(c)
    assert_sent_again_unchanged(service, path, 2)


@pytest.mark.parametrize(("path", "call", "answer"), WRITES, ids=WRITE_IDS)
async def test_a_write_is_sent_again_with_its_id_after_a_503(
    path: str, call: AsyncCall, answer: Any
) -> None:
    with serve(
        refusal(503, "DATABASE_UNAVAILABLE", retry_after="0"),
        refusal(503, "OVERLOADED", retry_after="0"),
        Answer(200, answer),
    ) as service:
        async with client(service) as c:
            await call(c)
    assert_sent_again_unchanged(service, path, 3)


async def test_each_call_has_its_own_id_and_the_callers_id_is_sent_as_given() -> None:
    with serve(Answer(200, {"processExecutionId": "e-1"})) as service:
        async with client(service) as c:
            options = ProcessStartOptions(global_attribute_pk_value="o")
            await c.start_process("p", ShopProcess, Order(item="tea"), options)
            await c.start_process("p", ShopProcess, Order(item="tea"), options)
            await c.start_process(
                "p", ShopProcess, Order(item="tea"), options, request_id="signup:u1.v2_x-1"
            )
    ids = [s.json()["requestId"] for s in service.seen]
    assert len(set(ids)) == 3
    assert ids[2] == "signup:u1.v2_x-1"
    with serve(
        Answer(200, CONTROL_ANSWER),
        Answer(200, {}),
        Answer(200, {}),
        Answer(200, RESET_ANSWER),
        Answer(200, {"batchId": "b-1", "expected": 0}),
    ) as service:
        async with client(service) as c:
            await c.pause("p", request_id="pause-1")
            await c.stop_process("p", process_execution_id="e-1", request_id="stop-1")
            await c.publish_to_local_queue("p", "q", process_execution_id="e-1", request_id="m-1")
            await c.reset("p", "Pay", request_id="reset-1")
            await c.start_batch("RESUME", request_id="batch-1")
    assert [s.json()["requestId"] for s in service.seen] == [
        "pause-1",
        "stop-1",
        "m-1",
        "reset-1",
        "batch-1",
    ]
    assert service.seen[1].json()["processExecutionId"] == "e-1"
    assert service.seen[2].json()["processExecutionId"] == "e-1"


@pytest.mark.parametrize("bad", ["", "x" * 201, "has space", "a/b", "é"])
async def test_a_malformed_request_id_is_refused_before_sending(bad: str) -> None:
    with serve(Answer(200, CONTROL_ANSWER)) as service:
        async with client(service) as c:
            with pytest.raises(SchemaError, match="request id"):
                await c.pause("p", request_id=bad)
            with pytest.raises(SchemaError, match="request id"):
                await c.start_batch("PAUSE", request_id=bad)
    assert service.seen == []


async def test_retries_are_bounded_by_max_attempts() -> None:
    with serve(refusal(503, "DATABASE_UNAVAILABLE", retry_after="0")) as service:
        async with client(service, max_attempts=3) as c:
            with pytest.raises(DatabaseUnavailableError):
                await c.stop_process("p")
    assert_sent_again_unchanged(service, STOP, 3)
    with serve(Drop()) as service:
        async with client(service) as c:
            with pytest.raises(TransportError, match="after 5 attempts"):
                await c.pause("p")
    assert_sent_again_unchanged(service, PAUSE, 5)
    with serve(Drop()) as service:
        async with client(service, max_attempts=1) as c:
            with pytest.raises(TransportError) as once:
                await c.pause("p")
    assert "attempts" not in str(once.value)
    assert len(service.seen) == 1


@pytest.mark.parametrize(
    ("status", "sub_type", "error"),
    [
        (400, "INVALID_REQUEST", InvalidRequestError),
        (409, "REQUEST_ID_CONFLICT", RequestIdConflictError),
        (404, "PROCESS_NOT_FOUND", ProcessNotFoundError),
        (500, "INTERNAL_ERROR", InternalServiceError),
    ],
)
async def test_other_refusals_are_never_sent_again(
    status: int, sub_type: str, error: type[Exception]
) -> None:
    with serve(refusal(status, sub_type, retry_after="0")) as service:
        async with client(service) as c:
            with pytest.raises(error):
                await c.retry_now("p")
            with pytest.raises(error):
                await c.describe_process("p")
    assert [s.path for s in service.seen] == [RETRY_NOW, DESCRIBE]


async def test_a_409_request_id_conflict_names_the_first_request() -> None:
    conflict = Answer(
        409,
        {"subType": "REQUEST_ID_CONFLICT", "message": "request id r-1 was used by a stop"},
    )
    with serve(conflict) as service:
        async with client(service) as c:
            with pytest.raises(RequestIdConflictError, match="used by a stop") as refused:
                await c.pause("p", request_id="r-1")
    assert refused.value.status == 409
    assert len(service.seen) == 1


async def test_reads_are_sent_again_without_a_request_id() -> None:
    described = {
        "processExecutionId": "e-1",
        "processId": "p",
        "processType": "T",
        "workerUrl": "http://w",
        "status": "RUNNING",
        "startTimestampMs": 1,
        "runningStateExecutions": 1,
    }
    with serve(Drop(), refusal(503, "DATABASE_UNAVAILABLE"), Answer(200, described)) as service:
        async with client(service) as c:
            assert (await c.describe_process("p")).process_execution_id == "e-1"
    assert [s.path for s in service.seen] == [DESCRIBE] * 3
    assert all("requestId" not in s.json() for s in service.seen)
    with serve(Drop(), refusal(404, "BATCH_NOT_FOUND")) as service:
        async with client(service) as c:
            with pytest.raises(BatchNotFoundError):
                await c.describe_batch("b-9")
    assert [s.path for s in service.seen] == [BATCH_DESCRIBE] * 2


async def test_an_rpc_is_sent_again_only_when_the_service_did_nothing() -> None:
    # The worker is called once per RPC: after a lost answer the RPC may have run.
    with serve(Drop(), Answer(200, {})) as service:
        async with client(service) as c:
            with pytest.raises(TransportError):
                await c.invoke_rpc("p", ShopProcess.peek_order)
    assert [s.path for s in service.seen] == [RPC]
    with serve(refusal(503, "DATABASE_UNAVAILABLE", retry_after="0"), Answer(200, {})) as service:
        async with client(service) as c:
            with pytest.raises(DatabaseUnavailableError):
                await c.invoke_rpc("p", ShopProcess.peek_order)
    assert len(service.seen) == 1
    # OVERLOADED changed nothing: any call is sent again.
    with serve(refusal(503, "OVERLOADED", retry_after="0"), Answer(200, {})) as service:
        async with client(service) as c:
            assert await c.invoke_rpc("p", ShopProcess.peek_order) is None
    assert [s.path for s in service.seen] == [RPC, RPC]


async def test_a_refused_connection_is_tried_again_for_any_call() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port now: connecting is refused, so nothing was sent.
    async with AsyncClient(f"http://127.0.0.1:{port}", max_attempts=3, max_retry_delay=FAST) as c:
        with pytest.raises(TransportError, match="after 3 attempts"):
            await c.invoke_rpc("p", ShopProcess.peek_order)


async def test_a_call_whose_answer_timed_out_is_sent_again_with_its_id() -> None:
    with serve(Hang(1.0), Answer(200, CONTROL_ANSWER)) as service:
        async with client(service, request_timeout=0.3) as c:
            assert (await c.give_up("p")).state_execution_ids == ["Pay-1"]
    assert_sent_again_unchanged(service, GIVE_UP, 2)


async def test_retry_after_is_honoured_up_to_max_retry_delay() -> None:
    with serve(refusal(503, "OVERLOADED", retry_after="1"), Answer(200, CONTROL_ANSWER)) as service:
        async with client(service, max_retry_delay=5) as c:
            started = time.monotonic()
            await c.resume("p")
            assert time.monotonic() - started >= 0.95  # a timer may fire a hair early
    assert len(service.seen) == 2
    with serve(
        refusal(503, "OVERLOADED", retry_after="3600"), Answer(200, CONTROL_ANSWER)
    ) as service:
        async with client(service, max_retry_delay=0.1) as c:
            started = time.monotonic()
            await c.resume("p")
            assert time.monotonic() - started < 2.0


def refused_request_id() -> Answer:
    """What a service of a release before request ids answers a request carrying one."""
    message = "request body: unknown field `requestId`, expected one of `processId`, `reason`"
    return Answer(400, {"subType": "INVALID_REQUEST", "message": message})


def assert_sent_again_without_its_id(service: ScriptedService, path: str) -> None:
    """Two requests to ``path``: with a UUID v4, then the same body without it."""
    assert [s.path for s in service.seen] == [path, path]
    first, second = (s.json() for s in service.seen)
    assert uuid.UUID(first.pop("requestId")).version == 4
    assert "requestId" not in second
    assert first == second


@pytest.mark.parametrize(("path", "call", "answer"), WRITES, ids=WRITE_IDS)
async def test_a_write_whose_own_id_is_refused_is_sent_again_without_it(
    path: str, call: AsyncCall, answer: Any
) -> None:
    with serve(refused_request_id(), Answer(200, answer)) as service:
        async with client(service) as c:
            await call(c)
    assert_sent_again_without_its_id(service, path)


async def test_the_callers_refused_id_is_never_dropped() -> None:
    with serve(refused_request_id()) as service:
        async with client(service) as c:
            with pytest.raises(InvalidRequestError, match="unknown field `requestId`"):
                await c.pause("p", request_id="pause-1")
            with pytest.raises(InvalidRequestError, match="unknown field `requestId`"):
                await c.start_batch("PAUSE", request_id="batch-1")
    assert [s.json()["requestId"] for s in service.seen] == ["pause-1", "batch-1"]


@pytest.mark.parametrize(
    "refused",
    [
        refusal(400, "INVALID_REQUEST"),
        Answer(400, {"subType": "INVALID_REQUEST", "message": "unknown field `identityx`"}),
        Answer(400, {"subType": "INVALID_REQUEST", "message": "requestId: at most 200 chars"}),
        Answer(409, {"subType": "REQUEST_ID_CONFLICT", "message": "unknown field requestId"}),
    ],
    ids=["other-message", "other-field", "bad-id", "conflict"],
)
async def test_other_refusals_do_not_drop_the_id(refused: Answer) -> None:
    with serve(refused, Answer(200, CONTROL_ANSWER)) as service:
        async with client(service) as c:
            with pytest.raises((InvalidRequestError, RequestIdConflictError)):
                await c.pause("p")
    assert len(service.seen) == 1


async def test_a_write_without_its_id_is_sent_again_only_when_the_service_did_nothing() -> None:
    # Without an id, a repeat could act twice: a lost answer is not sent again.
    with serve(refused_request_id(), Drop(), Answer(200, {})) as service:
        async with client(service) as c:
            with pytest.raises(TransportError):
                await c.stop_process("p")
    assert [s.path for s in service.seen] == [STOP, STOP]
    # OVERLOADED changed nothing: sent again, still without the id.
    with serve(
        refused_request_id(), refusal(503, "OVERLOADED", retry_after="0"), Answer(200, {})
    ) as service:
        async with client(service) as c:
            await c.stop_process("p")
    assert [s.path for s in service.seen] == [STOP] * 3
    assert ["requestId" in s.json() for s in service.seen] == [True, False, False]


def test_the_sync_client_drops_only_its_own_refused_id() -> None:
    with (
        serve(refused_request_id(), Answer(200, {"batchId": "b", "expected": 1})) as s,
        Client(s.url, max_retry_delay=FAST) as c,
    ):
        assert c.start_batch("TERMINATE", reason="cleanup").batch_id == "b"
    assert_sent_again_without_its_id(s, BATCH_START)
    with (
        serve(refused_request_id(), Answer(200, {})) as s,
        Client(s.url, max_retry_delay=FAST) as c,
        pytest.raises(InvalidRequestError),
    ):
        c.stop_process("p", request_id="s-1")
    assert len(s.seen) == 1
    with (
        serve(refusal(400, "INVALID_REQUEST"), Answer(200, {})) as s,
        Client(s.url, max_retry_delay=FAST) as c,
        pytest.raises(InvalidRequestError),
    ):
        c.stop_process("p")
    assert len(s.seen) == 1


def test_the_sync_client_retries_the_same_way() -> None:
    with (
        serve(
            Drop(), refusal(503, "OVERLOADED"), Answer(200, {"batchId": "b", "expected": 1})
        ) as s,
        Client(s.url, max_retry_delay=FAST) as c,
    ):
        assert c.start_batch("TERMINATE", reason="cleanup").batch_id == "b"
    assert_sent_again_unchanged(s, BATCH_START, 3)
    with (
        serve(refusal(409, "REQUEST_ID_CONFLICT")) as s,
        Client(s.url, max_retry_delay=FAST) as c,
        pytest.raises(RequestIdConflictError),
    ):
        c.stop_process("p", request_id="s-1")
    assert len(s.seen) == 1
    with (
        serve(Drop()) as s,
        Client(s.url, max_attempts=2, max_retry_delay=FAST) as c,
        pytest.raises(TransportError),
    ):
        c.describe_process("p")
    assert len(s.seen) == 2


def test_the_policy_refuses_a_nonsense_bound() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        CallRetries(max_attempts=0)
    with pytest.raises(ValueError, match="max_retry_delay"):
        AsyncClient("http://xdb", max_retry_delay=-1)


def test_the_backoff_doubles_up_to_the_cap() -> None:
    policy = CallRetries(max_attempts=10, max_delay=1.0)
    for attempt, full in [(1, 0.25), (2, 0.5), (3, 1.0), (4, 1.0), (9, 1.0)]:
        pause = policy.backoff(attempt)
        assert full / 2 <= pause <= full


def test_which_calls_are_repeatable() -> None:
    from xdb.call import Call
    from xdb.protocol import (
        ProcessExecutionControlRequest,
        ProcessExecutionDescribeRequest,
        ProcessExecutionRpcRequest,
    )

    def call(path: str, body: Any) -> Call[None]:
        return Call(path, body, 1.0, lambda _: None)

    assert repeatable(call(DESCRIBE, ProcessExecutionDescribeRequest(process_id="p")))
    assert repeatable(call(PAUSE, ProcessExecutionControlRequest(process_id="p", request_id="r")))
    assert not repeatable(call(PAUSE, ProcessExecutionControlRequest(process_id="p")))
    assert not repeatable(call(RPC, ProcessExecutionRpcRequest(process_id="p", rpc_name="r")))
    # Schedules: reads and the writes that leave the same schedule when sent twice, not
    # those that would start or delete twice.
    from xdb import protocol

    schedule = protocol.ScheduleControlRequest(schedule_id="s")
    for path in ("LIST", "DESCRIBE", "HISTORY", "UPDATE", "PAUSE", "RESUME", "BACKFILL"):
        assert repeatable(call(getattr(protocol, f"SCHEDULE_{path}"), schedule)), path
    for path in ("CREATE", "TRIGGER", "DELETE"):
        assert not repeatable(call(getattr(protocol, f"SCHEDULE_{path}"), schedule)), path


def test_an_answer_that_is_not_the_services_503_still_counts_as_503() -> None:
    # A proxy's 503 without the service's body: sent again only if repeatable.
    request = httpx.Request("POST", "http://xdb" + STOP)
    response = httpx.Response(503, text="<html>no upstream</html>", request=request)
    policy = CallRetries(max_attempts=2, max_delay=0.0)
    from xdb.call import Call
    from xdb.protocol import ProcessExecutionRpcRequest, ProcessExecutionStopRequest

    stop = Call(STOP, ProcessExecutionStopRequest(process_id="p", request_id="r"), 1.0, bytes)
    rpc = Call(RPC, ProcessExecutionRpcRequest(process_id="p", rpc_name="r"), 1.0, bytes)
    assert policy.after_answer(stop, 1, response) == 0.0
    assert policy.after_answer(rpc, 1, response) is None
    assert policy.after_answer(stop, 2, response) is None
