"""The operator's calls: their requests, and how their answers and refusals are read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.contract import Contract
from tests.unit.test_client import async_client, sent_body, sync_client
from xdb import (
    CallPhase,
    ControlNotApplicableError,
    ErrorSubType,
    HistoryEventType,
    InvalidRequestError,
    InvalidResponseError,
    LocalQueueCommandStatus,
    ProcessNotFoundError,
    ProcessNotRunningError,
    ProcessStatus,
    ReprioritizedDetails,
    StateApiName,
    StateExecutionStatus,
    TimerStatus,
    state_execution_ids_of,
)
from xdb.protocol import (
    DESCRIBE,
    GIVE_UP,
    HISTORY,
    LIST,
    PAUSE,
    REPRIORITIZE,
    RESET,
    RESUME,
    RETRY_NOW,
    STATES,
    AsyncStateConfig,
    CommandWaitingType,
    ProcessExecutionDescribeResponse,
    ProcessExecutionListResponse,
)

DOCUMENT = Path(__file__).resolve().parents[3] / "xdb-protocol" / "openapi.json"

# A states answer with every field set: a paused execution, one state waiting for its
# commands, one whose execute failed and waits (held by the pause) for its next attempt.
STATES_ANSWER: dict[str, Any] = {
    "processExecutionId": "e-1",
    "status": "RUNNING",
    "paused": {"sinceTimestampMs": 1_700_000_000_500, "reason": "maintenance", "identity": "ops"},
    "states": [
        {
            "stateExecutionId": "Wait-1",
            "stateId": "Wait",
            "status": "WAITING_COMMANDS",
            "startedTimestampMs": 1_700_000_000_000,
            "waitingFor": {
                "waitingType": "ALL_OF_COMPLETION",
                "timers": [
                    {"delayInSeconds": 60, "dueTimestampMs": 1_700_000_060_000},
                    {"delayInSeconds": 0, "status": "FIRED"},
                ],
                "localQueues": [
                    {"queueName": "go", "count": 2, "queued": 1},
                    {"queueName": "stop", "count": 1, "queued": 0, "status": "SKIPPED"},
                ],
            },
            "commandResults": {
                "timerResults": [{"status": "FIRED"}],
                "localQueueResults": [],
            },
        },
        {
            "stateExecutionId": "Pay-1",
            "stateId": "Pay",
            "status": "EXECUTE_RUNNING",
            "startedTimestampMs": 1_700_000_000_100,
            "pendingCall": {
                "api": "execute",
                "attempt": 3,
                "phase": "PAUSED",
                "dueTimestampMs": 1_700_000_300_000,
            },
            "lastFailure": {
                "api": "execute",
                "attempt": 2,
                "error": "HTTP 500: the payment service is down",
                "timestampMs": 1_700_000_000_200,
            },
            "someNewerField": "ignored",
        },
        {
            "stateExecutionId": "Pay-2",
            "stateId": "Pay",
            "status": "WAIT_UNTIL_RUNNING",
            "startedTimestampMs": 1_700_000_000_300,
            "pendingCall": {
                "api": "waitUntil",
                "attempt": 1,
                "phase": "PARKED",
                "dueTimestampMs": 1_700_000_000_300,
                "parkedReason": "refused by the database",
            },
        },
    ],
}


@pytest.fixture(scope="module")
def contract() -> Contract:
    return Contract(json.loads(DOCUMENT.read_text()))


def test_the_sample_answer_is_what_the_document_describes(contract: Contract) -> None:
    contract.check_response(STATES, 200, json.dumps(STATES_ANSWER).encode())


async def test_states_sends_the_execution_and_reads_every_field() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        return httpx.Response(200, json=STATES_ANSWER)

    client = async_client(handler)
    view = await client.states("p", "e-1")
    assert await client.states("p") == view
    await client.aclose()
    assert seen == [
        (STATES, {"processId": "p", "processExecutionId": "e-1"}),
        (STATES, {"processId": "p"}),
    ]

    assert (view.process_execution_id, view.status) == ("e-1", ProcessStatus.RUNNING)
    assert view.paused is not None
    paused = view.paused
    assert (paused.since_timestamp_ms, paused.reason, paused.identity) == (
        1_700_000_000_500,
        "maintenance",
        "ops",
    )
    waiting, failing, parked = view.states
    assert waiting.status == StateExecutionStatus.WAITING_COMMANDS
    assert waiting.pending_call is None
    assert waiting.last_failure is None
    assert waiting.waiting_for is not None
    assert waiting.waiting_for.waiting_type == CommandWaitingType.ALL_OF_COMPLETION
    timer, fired = waiting.waiting_for.timers
    assert (timer.delay_in_seconds, timer.due_timestamp_ms, timer.status) == (
        60,
        1_700_000_060_000,
        None,
    )
    assert (fired.due_timestamp_ms, fired.status) == (None, TimerStatus.FIRED)
    go, stop = waiting.waiting_for.local_queues
    assert (go.queue_name, go.count, go.queued, go.status) == ("go", 2, 1, None)
    assert stop.status == LocalQueueCommandStatus.SKIPPED
    assert waiting.command_results is not None
    assert [r.status for r in waiting.command_results.timer_results] == [TimerStatus.FIRED]

    assert (failing.state_execution_id, failing.state_id) == ("Pay-1", "Pay")
    assert failing.status == StateExecutionStatus.EXECUTE_RUNNING
    assert failing.pending_call is not None
    assert failing.pending_call.api == StateApiName.EXECUTE
    assert (failing.pending_call.attempt, failing.pending_call.phase) == (3, CallPhase.PAUSED)
    assert failing.pending_call.due_timestamp_ms == 1_700_000_300_000
    assert failing.last_failure is not None
    assert failing.last_failure.attempt == 2
    assert failing.last_failure.error.startswith("HTTP 500")

    assert parked.pending_call is not None
    assert parked.pending_call.api == StateApiName.WAIT_UNTIL
    assert parked.pending_call.phase == CallPhase.PARKED
    assert parked.pending_call.parked_reason == "refused by the database"


@pytest.mark.parametrize(
    ("name", "path"),
    [("retry_now", RETRY_NOW), ("give_up", GIVE_UP)],
)
async def test_retry_now_and_give_up_send_the_state_reason_and_identity(
    name: str, path: str
) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        return httpx.Response(200, json={"stateExecutionIds": ["Pay-1"], "future": 1})

    client = async_client(handler)
    control = getattr(client, name)
    answer = await control(
        "p",
        process_execution_id="e-1",
        state_execution_id="Pay-1",
        reason="fixed the bug",
        identity="ops@example.com",
    )
    assert answer.state_execution_ids == ["Pay-1"]
    await control("p")
    await client.aclose()
    assert seen == [
        (
            path,
            {
                "processId": "p",
                "processExecutionId": "e-1",
                "stateExecutionId": "Pay-1",
                "reason": "fixed the bug",
                "identity": "ops@example.com",
            },
        ),
        (path, {"processId": "p"}),
    ]


async def test_pause_and_resume_send_the_execution_reason_and_identity() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        return httpx.Response(200, json={"stateExecutionIds": []})

    client = async_client(handler)
    paused = await client.pause("p", process_execution_id="e-1", reason="upgrade", identity="ops")
    assert paused.state_execution_ids == []
    await client.resume("p", reason="done")
    await client.aclose()
    assert seen == [
        (
            PAUSE,
            {"processId": "p", "processExecutionId": "e-1", "reason": "upgrade", "identity": "ops"},
        ),
        (RESUME, {"processId": "p", "reason": "done"}),
    ]


async def test_reset_sends_the_state_its_input_and_why() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        return httpx.Response(
            200,
            json={
                "processExecutionId": "e-2",
                "newExecution": True,
                "stateExecutionId": "Pay-1",
            },
        )

    client = async_client(handler)
    answer = await client.reset(
        "p",
        "Pay",
        {"amount": 10},
        state_config=AsyncStateConfig(skip_wait_until=True),
        process_execution_id="e-1",
        reason="bad deploy",
        identity="ops",
    )
    assert (answer.process_execution_id, answer.new_execution) == ("e-2", True)
    assert answer.state_execution_id == "Pay-1"
    await client.reset("p", "Pay")
    await client.aclose()
    assert seen == [
        (
            RESET,
            {
                "processId": "p",
                "processExecutionId": "e-1",
                "stateId": "Pay",
                "stateInput": {"encoding": "json", "data": '{"amount":10}'},
                "stateConfig": {"skipWaitUntil": True},
                "reason": "bad deploy",
                "identity": "ops",
            },
        ),
        (RESET, {"processId": "p", "stateId": "Pay"}),
    ]
    with sync_client(handler) as sync:
        assert sync.reset("p", "Pay").process_execution_id == "e-2"


async def test_reprioritize_sends_only_the_fields_given(contract: Contract) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        contract.check_request(request.url.path, json.loads(request.content))
        return httpx.Response(200, json={"stateExecutionIds": ["Pay-1"], "future": 1})

    client = async_client(handler)
    answer = await client.reprioritize(
        "p",
        priority=1,
        fairness_key="tenant-7",
        fairness_weight=5,
        process_execution_id="e-1",
        reason="the customer escalated",
        identity="on-call",
    )
    assert answer.state_execution_ids == ["Pay-1"]
    await client.reprioritize("p", priority=4)
    # "" is the contract's removal of the key, so it must be sent, not taken for absent.
    await client.reprioritize("p", fairness_key="")
    await client.aclose()
    assert seen == [
        (
            REPRIORITIZE,
            {
                "processId": "p",
                "processExecutionId": "e-1",
                "reason": "the customer escalated",
                "identity": "on-call",
                "reprioritize": {"priority": 1, "fairnessKey": "tenant-7", "fairnessWeight": 5},
            },
        ),
        (REPRIORITIZE, {"processId": "p", "reprioritize": {"priority": 4}}),
        (REPRIORITIZE, {"processId": "p", "reprioritize": {"fairnessKey": ""}}),
    ]
    with sync_client(handler) as sync:
        assert sync.reprioritize("p", fairness_weight=3).state_execution_ids == ["Pay-1"]
    assert seen[-1] == (REPRIORITIZE, {"processId": "p", "reprioritize": {"fairnessWeight": 3}})


async def test_reprioritize_refusals_map_to_typed_errors() -> None:
    answers = iter(
        [
            (400, "INVALID_REQUEST", "reprioritize.priority: must be 1 (claimed first) to 5"),
            (409, "CONTROL_NOT_APPLICABLE", "the execution has no fairness key to weigh"),
            (409, "PROCESS_NOT_RUNNING", "the execution is closed"),
        ]
    )

    def handler(request: httpx.Request) -> httpx.Response:
        status, sub_type, message = next(answers)
        return httpx.Response(status, json={"subType": sub_type, "message": message})

    client = async_client(handler)
    with pytest.raises(InvalidRequestError, match=r"reprioritize\.priority"):
        await client.reprioritize("p", priority=9)
    with pytest.raises(ControlNotApplicableError, match="no fairness key") as refused:
        await client.reprioritize("p", fairness_weight=5)
    assert refused.value.status == 409
    with pytest.raises(ProcessNotRunningError):
        await client.reprioritize("p", priority=1)
    await client.aclose()


async def test_a_reprioritized_event_reads_as_its_typed_details(contract: Contract) -> None:
    events: list[dict[str, Any]] = [
        {
            "eventId": 7,
            "eventTimestampMs": 1_700_000_000_000,
            "eventType": "REPRIORITIZED",
            "details": {
                "before": {"priority": 5},
                "after": {"priority": 1, "fairnessKey": "vip", "fairnessWeight": 3},
                "reason": "the customer escalated",
                "identity": "on-call",
                "stateExecutionIds": ["Pay-1"],
            },
        }
    ]
    answer = {"processExecutionId": "e-1", "events": events}
    contract.check_response(HISTORY, 200, json.dumps(answer).encode())

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answer)

    client = async_client(handler)
    history = await client.get_process_history("p", event_types=[HistoryEventType.REPRIORITIZED])
    await client.aclose()
    (event,) = history.events
    assert event.event_type == HistoryEventType.REPRIORITIZED
    details = ReprioritizedDetails.model_validate(event.details)
    assert (details.before.priority, details.before.fairness_key) == (5, None)
    assert (details.after.priority, details.after.fairness_key) == (1, "vip")
    assert details.after.fairness_weight == 3
    assert (details.reason, details.identity) == ("the customer escalated", "on-call")
    assert state_execution_ids_of(event) == details.state_execution_ids == ["Pay-1"]


async def test_refusals_map_to_typed_errors() -> None:
    answers = {
        PAUSE: (409, "CONTROL_NOT_APPLICABLE", "the execution is already paused"),
        RESUME: (409, "CONTROL_NOT_APPLICABLE", "the execution is not paused"),
        RETRY_NOW: (409, "PROCESS_NOT_RUNNING", "the execution is closed"),
        GIVE_UP: (404, "PROCESS_NOT_FOUND", "no process p"),
    }

    def handler(request: httpx.Request) -> httpx.Response:
        status, sub_type, message = answers[request.url.path]
        return httpx.Response(status, json={"subType": sub_type, "message": message})

    client = async_client(handler)
    with pytest.raises(ControlNotApplicableError, match="already paused") as refused:
        await client.pause("p")
    assert refused.value.status == 409
    assert refused.value.sub_type == ErrorSubType.CONTROL_NOT_APPLICABLE
    assert refused.value.message == "the execution is already paused"
    with pytest.raises(ControlNotApplicableError, match="not paused"):
        await client.resume("p")
    with pytest.raises(ProcessNotRunningError):
        await client.retry_now("p")
    with pytest.raises(ProcessNotFoundError):
        await client.give_up("p")
    await client.aclose()


async def test_an_answer_breaking_the_contract_is_an_invalid_response() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == STATES:
            return httpx.Response(200, json={"processExecutionId": "e-1", "states": []})
        return httpx.Response(200, json={"stateExecutionIds": "Pay-1"})

    client = async_client(handler)
    with pytest.raises(InvalidResponseError, match="states"):
        await client.states("p")
    with pytest.raises(InvalidResponseError, match="retry-now"):
        await client.retry_now("p")
    await client.aclose()


def test_the_sync_client_makes_the_same_calls() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        if request.url.path == STATES:
            return httpx.Response(200, json=STATES_ANSWER)
        if request.url.path == GIVE_UP:
            return httpx.Response(
                409, json={"subType": "CONTROL_NOT_APPLICABLE", "message": "no state is failing"}
            )
        return httpx.Response(200, json={"stateExecutionIds": ["Pay-1"]})

    with sync_client(handler) as client:
        assert [s.state_execution_id for s in client.states("p", "e-1").states] == [
            "Wait-1",
            "Pay-1",
            "Pay-2",
        ]
        assert client.pause("p", reason="r").state_execution_ids == ["Pay-1"]
        assert client.resume("p", identity="i").state_execution_ids == ["Pay-1"]
        assert client.retry_now("p", state_execution_id="Pay-2").state_execution_ids == ["Pay-1"]
        with pytest.raises(ControlNotApplicableError, match="no state is failing"):
            client.give_up("p", process_execution_id="e-1", reason="bad input")
    assert seen == [
        (STATES, {"processId": "p", "processExecutionId": "e-1"}),
        (PAUSE, {"processId": "p", "reason": "r"}),
        (RESUME, {"processId": "p", "identity": "i"}),
        (RETRY_NOW, {"processId": "p", "stateExecutionId": "Pay-2"}),
        (GIVE_UP, {"processId": "p", "processExecutionId": "e-1", "reason": "bad input"}),
    ]


async def test_describe_list_and_history_read_the_pause_and_parked_tasks() -> None:
    described: dict[str, Any] = {
        "processExecutionId": "e-1",
        "processId": "p",
        "processType": "ShopProcess",
        "workerUrl": "http://worker",
        "status": "RUNNING",
        "startTimestampMs": 1,
        "runningStateExecutions": 1,
        "paused": {"sinceTimestampMs": 2, "reason": "maintenance"},
        "parkedTasks": 2,
    }
    summary: dict[str, Any] = {
        "processExecutionId": "e-1",
        "processId": "p",
        "processType": "ShopProcess",
        "status": "RUNNING",
        "startTimestampMs": 1,
        "paused": True,
    }

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == DESCRIBE:
            return httpx.Response(200, json=described)
        if request.url.path == LIST:
            return httpx.Response(200, json={"executions": [summary]})
        body = json.loads(request.content)
        events = [
            {
                "eventId": i,
                "eventTimestampMs": i,
                "eventType": t,
                "details": {"stateExecutionIds": ["Pay-1"], "reason": "r"},
            }
            for i, t in enumerate(body["eventTypes"], 1)
        ]
        return httpx.Response(200, json={"processExecutionId": "e-1", "events": events})

    client = async_client(handler)
    description = await client.describe_process("p")
    assert description.paused is not None
    assert (description.paused.reason, description.paused.identity) == ("maintenance", None)
    assert description.parked_tasks == 2
    listed = await client.list_processes(process_id="p")
    assert listed.executions[0].paused is True
    operator_events = [
        HistoryEventType.RETRY_REQUESTED,
        HistoryEventType.GIVE_UP_REQUESTED,
        HistoryEventType.PAUSED,
        HistoryEventType.RESUMED,
        "TASK_PARKED",
    ]
    history = await client.get_process_history("p", event_types=operator_events)
    assert [e.event_type for e in history.events] == [
        "RETRY_REQUESTED",
        "GIVE_UP_REQUESTED",
        "PAUSED",
        "RESUMED",
        "TASK_PARKED",
    ]
    await client.aclose()

    # An older service leaves the new fields out.
    for key in ("paused", "parkedTasks"):
        del described[key]
    del summary["paused"]
    plain = ProcessExecutionDescribeResponse.model_validate(described)
    assert (plain.paused, plain.parked_tasks) == (None, 0)
    assert (
        ProcessExecutionListResponse.model_validate({"executions": [summary]}).executions[0].paused
        is False
    )
