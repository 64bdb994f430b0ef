"""The flow-limit calls and declarations: requests, answers, retries and registration."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import httpx
import pytest

from tests.unit.sample_processes import NoTableProcess, Recover, ShopProcess, Start
from tests.unit.scripted_service import Answer, Drop, refusal
from tests.unit.scripted_service import scripted_service as serve
from tests.unit.test_client import async_client, sent_body, sync_client
from xdb import (
    AsyncClient,
    FlowLimits,
    FlowLimitSource,
    InvalidRequestError,
    SchemaError,
    StateSchema,
    export_definition,
)
from xdb.protocol import FLOW_LIMITS_HISTORY, FLOW_LIMITS_LIST, FLOW_LIMITS_SET

ENTRY = {
    "processType": "ShopProcess",
    "stateId": "Start",
    "declared": {"maxCallsPerSecond": 10},
    "override": {"maxCallsPerSecond": 2.5},
    "effective": {"maxCallsPerSecond": 2.5},
    "updatedTimestampMs": 1_700_000_000_000,
    "future": "ignored",
}
CHANGE = {
    "changeId": 7,
    "processType": "ShopProcess",
    "source": "OPERATOR",
    "before": {"maxCallsPerSecond": 10},
    "changedBy": "ops",
    "reason": "payments slow",
    "changedTimestampMs": 1_700_000_000_001,
}


def answers(seen: list[tuple[str, dict[str, Any]]]) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        if request.url.path == FLOW_LIMITS_SET:
            return httpx.Response(200, json=ENTRY)
        if request.url.path == FLOW_LIMITS_LIST:
            return httpx.Response(200, json={"limits": [ENTRY]})
        return httpx.Response(200, json={"changes": [CHANGE], "nextPageToken": "n"})

    return handler


async def test_set_sends_an_override_no_limit_or_a_clearing() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    client = async_client(answers(seen))
    entry = await client.set_flow_limits(
        "ShopProcess",
        FlowLimits(max_calls_per_second=2.5),
        state_id="Start",
        reason="payments slow",
    )
    assert entry.override == FlowLimits(max_calls_per_second=2.5)
    assert entry.declared == FlowLimits(max_calls_per_second=10)
    await client.set_flow_limits("ShopProcess", FlowLimits())
    await client.set_flow_limits("ShopProcess", None, reason="back to normal")
    await client.aclose()
    assert seen == [
        (
            FLOW_LIMITS_SET,
            {
                "processType": "ShopProcess",
                "stateId": "Start",
                "override": {"maxCallsPerSecond": 2.5},
                "reason": "payments slow",
            },
        ),
        (FLOW_LIMITS_SET, {"processType": "ShopProcess", "override": {}}),
        (FLOW_LIMITS_SET, {"processType": "ShopProcess", "reason": "back to normal"}),
    ]


async def test_list_and_history_send_their_filters_and_read_the_answers() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    client = async_client(answers(seen))
    listed = await client.list_flow_limits(process_type="ShopProcess")
    assert [(e.state_id, e.effective.max_calls_per_second) for e in listed.limits] == [
        ("Start", 2.5)
    ]
    history = await client.flow_limit_history(process_type="ShopProcess", page_size=2)
    assert history.next_page_token == "n"
    change = history.changes[0]
    assert (change.source, change.before, change.after) == (
        FlowLimitSource.OPERATOR,
        FlowLimits(max_calls_per_second=10),
        None,
    )
    await client.list_flow_limits()
    await client.aclose()
    assert seen == [
        (FLOW_LIMITS_LIST, {"processType": "ShopProcess"}),
        (FLOW_LIMITS_HISTORY, {"processType": "ShopProcess", "pageSize": 2}),
        (FLOW_LIMITS_LIST, {}),
    ]


def test_the_blocking_client_has_the_flow_limit_calls() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    with sync_client(answers(seen)) as client:
        entry = client.set_flow_limits("ShopProcess", None, state_id="Start")
        assert entry.effective.max_calls_per_second == 2.5
        assert client.list_flow_limits().limits[0].process_type == "ShopProcess"
        assert client.flow_limit_history(next_page_token="n").changes[0].change_id == 7
    assert seen == [
        (FLOW_LIMITS_SET, {"processType": "ShopProcess", "stateId": "Start"}),
        (FLOW_LIMITS_LIST, {}),
        (FLOW_LIMITS_HISTORY, {"nextPageToken": "n"}),
    ]


async def test_set_sends_a_concurrency_alone_or_with_a_rate() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    client = async_client(answers(seen))
    await client.set_flow_limits("ShopProcess", FlowLimits(max_concurrent_calls=8))
    await client.set_flow_limits(
        "ShopProcess",
        FlowLimits(max_calls_per_second=2.5, max_concurrent_calls=3),
        state_id="Start",
    )
    await client.aclose()
    assert [body["override"] for _, body in seen] == [
        {"maxConcurrentCalls": 8},
        {"maxCallsPerSecond": 2.5, "maxConcurrentCalls": 3},
    ]


async def test_an_answer_with_a_concurrency_reads_it() -> None:
    entry = {
        **ENTRY,
        "override": {"maxConcurrentCalls": 8},
        "effective": {"maxConcurrentCalls": 8},
    }
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        return httpx.Response(200, json={"limits": [entry]})

    client = async_client(handler)
    listed = await client.list_flow_limits()
    await client.aclose()
    only = listed.limits[0]
    assert only.effective == FlowLimits(max_concurrent_calls=8)
    assert only.effective.max_calls_per_second is None
    assert only.declared == FlowLimits(max_calls_per_second=10)


async def test_a_concurrency_of_0_is_refused_naming_its_field() -> None:
    bad = Answer(
        400,
        {
            "subType": "INVALID_REQUEST",
            "message": "override.maxConcurrentCalls: must be 1 to 100000, not 0",
        },
    )
    with serve(bad) as service:
        async with AsyncClient(service.url, max_retry_delay=0.05) as c:
            with pytest.raises(InvalidRequestError, match=r"override\.maxConcurrentCalls"):
                await c.set_flow_limits("ShopProcess", FlowLimits(max_concurrent_calls=0))
    assert len(service.seen) == 1, "a refusal is final"
    assert service.seen[0].json()["override"] == {"maxConcurrentCalls": 0}


async def test_set_is_sent_again_unchanged_and_a_refusal_is_final() -> None:
    with serve(Drop(), refusal(503, "DATABASE_UNAVAILABLE", "0"), Answer(200, ENTRY)) as service:
        async with AsyncClient(service.url, max_retry_delay=0.05) as c:
            entry = await c.set_flow_limits("ShopProcess", FlowLimits(max_calls_per_second=2.5))
            assert entry.effective.max_calls_per_second == 2.5
    assert [s.path for s in service.seen] == [FLOW_LIMITS_SET] * 3
    assert len({s.body for s in service.seen}) == 1, "the same bytes every time"
    assert "requestId" not in service.seen[0].json()
    bad = Answer(
        400,
        {"subType": "INVALID_REQUEST", "message": "override.maxCallsPerSecond: more than 0"},
    )
    with serve(bad) as service:
        async with AsyncClient(service.url, max_retry_delay=0.05) as c:
            with pytest.raises(InvalidRequestError, match=r"override\.maxCallsPerSecond"):
                await c.set_flow_limits("ShopProcess", FlowLimits(max_calls_per_second=0))
    assert len(service.seen) == 1


def test_a_process_and_its_states_declare_flow_limits() -> None:
    class Slow(Start):
        flow_limits = FlowLimits(max_calls_per_second=0.5, max_concurrent_calls=4)

    class Limited(ShopProcess):
        flow_limits = FlowLimits(max_concurrent_calls=16)

        def get_state_schema(self) -> StateSchema:
            return StateSchema.with_starting_state(Slow(), Recover())

    wire = export_definition(Limited()).to_wire()
    assert wire["flowLimits"] == {"maxConcurrentCalls": 16}
    states = {s["id"]: s for s in wire["states"]}
    assert states["Slow"]["flowLimits"] == {"maxCallsPerSecond": 0.5, "maxConcurrentCalls": 4}
    assert "flowLimits" not in states["Recover"]
    assert "flowLimits" not in export_definition(NoTableProcess).to_wire()
    assert json.loads(json.dumps(wire))["flowLimits"]["maxConcurrentCalls"] == 16


def test_a_declaration_that_is_not_flow_limits_is_refused() -> None:
    class Wrong(NoTableProcess):
        flow_limits: ClassVar[Any] = {"maxCallsPerSecond": 5}

    with pytest.raises(SchemaError, match=r"Wrong: flow_limits"):
        export_definition(Wrong())
