"""The flow-limit calls and declarations: requests, answers, retries and registration.

Also the running-execution limit's parts: a start's concurrency key, and the PENDING
executions lists and descriptions show.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

import httpx
import pytest

from tests.unit.sample_processes import NoTableProcess, Order, Recover, ShopProcess, Start
from tests.unit.scripted_service import Answer, Drop, refusal
from tests.unit.scripted_service import scripted_service as serve
from tests.unit.test_client import async_client, sent_body, sync_client
from xdb import (
    AsyncClient,
    ControlNotApplicableError,
    FlowLimits,
    FlowLimitSource,
    InvalidRequestError,
    ProcessStartOptions,
    SchemaError,
    StateSchema,
    export_definition,
)
from xdb.protocol import (
    DESCRIBE,
    FLOW_LIMITS_HISTORY,
    FLOW_LIMITS_LIST,
    FLOW_LIMITS_SET,
    LIST,
    RESUME,
    START,
    PauseInfo,
)

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


async def test_set_sends_a_running_executions_limit_and_reads_it_back() -> None:
    entry = {
        "processType": "ShopProcess",
        "override": {"maxRunningExecutions": 3},
        "effective": {"maxRunningExecutions": 3},
        "updatedTimestampMs": 1_700_000_000_000,
    }
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(sent_body(request))
        return httpx.Response(200, json=entry)

    client = async_client(handler)
    answered = await client.set_flow_limits(
        "ShopProcess", FlowLimits(max_running_executions=3), reason="one export per customer"
    )
    await client.set_flow_limits(
        "ShopProcess", FlowLimits(max_concurrent_calls=8, max_running_executions=100_000)
    )
    await client.aclose()
    assert answered.effective == FlowLimits(max_running_executions=3)
    assert answered.effective.max_concurrent_calls is None
    assert seen == [
        {
            "processType": "ShopProcess",
            "override": {"maxRunningExecutions": 3},
            "reason": "one export per customer",
        },
        {
            "processType": "ShopProcess",
            "override": {"maxConcurrentCalls": 8, "maxRunningExecutions": 100_000},
        },
    ]


async def test_a_running_executions_limit_on_a_state_is_refused_naming_its_field() -> None:
    bad = Answer(
        400,
        {
            "subType": "INVALID_REQUEST",
            "message": "override.maxRunningExecutions: limits a process type's executions: "
            "set it on the type, not on a state",
        },
    )
    with serve(bad) as service:
        async with AsyncClient(service.url, max_retry_delay=0.05) as c:
            with pytest.raises(InvalidRequestError, match=r"override\.maxRunningExecutions"):
                await c.set_flow_limits(
                    "ShopProcess", FlowLimits(max_running_executions=1), state_id="Start"
                )
    assert len(service.seen) == 1, "a refusal is final"
    assert service.seen[0].json()["stateId"] == "Start"


def start_answers(seen: list[dict[str, Any]]) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == START
        seen.append(sent_body(request))
        return httpx.Response(200, json={"processExecutionId": "e-1"})

    return handler


async def test_both_clients_send_a_starts_concurrency_key() -> None:
    seen: list[dict[str, Any]] = []
    options = ProcessStartOptions(global_attribute_pk_value=1, concurrency_key="customer-42")
    client = async_client(start_answers(seen))
    assert await client.start_process("order-1", ShopProcess, Order(item="tea"), options) == "e-1"
    await client.start_process(
        "order-2", ShopProcess, Order(item="tea"), ProcessStartOptions(global_attribute_pk_value=2)
    )
    await client.aclose()
    with sync_client(start_answers(seen)) as blocking:
        blocking.start_process("order-3", ShopProcess, Order(item="tea"), options)
    keys = [body["processStartConfig"].get("concurrencyKey") for body in seen]
    assert keys == ["customer-42", None, "customer-42"]


async def test_a_pending_execution_reads_as_pending_and_on_its_key() -> None:
    pending = {
        "sinceTimestampMs": 2,
        "reason": "PENDING: waiting for a running slot (customer-42: at most 1 running at once)",
        "identity": "maxRunningExecutions",
        "pendingOnKey": "customer-42",
    }
    described = {
        "processExecutionId": "e-2",
        "processId": "p",
        "processType": "ShopProcess",
        "workerUrl": "http://worker",
        "status": "RUNNING",
        "startTimestampMs": 1,
        "runningStateExecutions": 1,
        "paused": pending,
        "parkedTasks": 1,
    }

    def summary(process_id: str, **flags: bool) -> dict[str, Any]:
        return {
            "processExecutionId": f"e-{process_id}",
            "processId": process_id,
            "processType": "ShopProcess",
            "status": "RUNNING",
            "startTimestampMs": 1,
            **flags,
        }

    listed_summaries = [
        summary("waiting", paused=True, pending=True),
        summary("paused", paused=True),
        summary("running"),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == DESCRIBE:
            return httpx.Response(200, json=described)
        if request.url.path == LIST:
            return httpx.Response(200, json={"executions": listed_summaries})
        assert request.url.path == RESUME
        return httpx.Response(
            409,
            json={
                "subType": "CONTROL_NOT_APPLICABLE",
                "message": "the execution is PENDING, held by its type's maxRunningExecutions",
            },
        )

    client = async_client(handler)
    description = await client.describe_process("p")
    assert description.paused is not None
    assert description.paused.pending_on_key == "customer-42"
    assert description.paused.identity == "maxRunningExecutions"
    listed = await client.list_processes(process_type=ShopProcess)
    assert [(e.process_id, e.paused, e.pending) for e in listed.executions] == [
        ("waiting", True, True),
        ("paused", True, False),
        ("running", False, False),
    ]
    with pytest.raises(ControlNotApplicableError, match="PENDING"):
        await client.resume("p")
    await client.aclose()
    # An operator's pause has no key: the field is absent, not "".
    operator = PauseInfo.model_validate({"sinceTimestampMs": 3, "reason": "ops"})
    assert operator.pending_on_key is None


def test_a_process_declares_a_running_executions_limit_and_a_state_cannot() -> None:
    class OnePerKey(ShopProcess):
        flow_limits = FlowLimits(max_concurrent_calls=16, max_running_executions=2)

    wire = export_definition(OnePerKey()).to_wire()
    assert wire["flowLimits"] == {"maxConcurrentCalls": 16, "maxRunningExecutions": 2}
    assert all("flowLimits" not in s for s in wire["states"])

    class RunningStart(Start):
        flow_limits = FlowLimits(max_running_executions=1)

        @classmethod
        def get_state_id(cls) -> str:
            return "Start"

    class StateLimited(ShopProcess):
        def get_state_schema(self) -> StateSchema:
            return StateSchema.with_starting_state(RunningStart(), Recover())

    with pytest.raises(
        SchemaError, match=r"StateLimited\.Start: flow_limits\.max_running_executions"
    ):
        export_definition(StateLimited())


async def test_both_clients_send_a_concurrency_key_attribute_and_read_it_back() -> None:
    keyed = {"maxRunningExecutions": 2, "concurrencyKeyAttribute": "customer_id"}
    entry = {
        "processType": "ShopProcess",
        "override": keyed,
        "effective": keyed,
        "updatedTimestampMs": 1_700_000_000_000,
    }
    seen: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(sent_body(request))
        return httpx.Response(200, json=entry)

    limits = FlowLimits(max_running_executions=2, concurrency_key_attribute="customer_id")
    client = async_client(handler)
    answered = await client.set_flow_limits("ShopProcess", limits, reason="per customer")
    await client.aclose()
    with sync_client(handler) as blocking:
        blocking.set_flow_limits("ShopProcess", limits)
    assert answered.effective.concurrency_key_attribute == "customer_id"
    assert answered.override == limits
    assert seen == [
        {"processType": "ShopProcess", "override": keyed, "reason": "per customer"},
        {"processType": "ShopProcess", "override": keyed},
    ]


async def test_a_bad_concurrency_key_attribute_is_refused_naming_its_field() -> None:
    bad = Answer(
        400,
        {
            "subType": "INVALID_REQUEST",
            "message": "override.concurrencyKeyAttribute: 'customer id' is not a valid SQL "
            "identifier (letters, digits and _, at most 64, not starting with a digit)",
        },
    )
    with serve(bad) as service:
        async with AsyncClient(service.url, max_retry_delay=0.05) as c:
            with pytest.raises(InvalidRequestError, match=r"override\.concurrencyKeyAttribute"):
                await c.set_flow_limits(
                    "ShopProcess",
                    FlowLimits(max_running_executions=1, concurrency_key_attribute="customer id"),
                )
    assert len(service.seen) == 1, "a refusal is final"
    assert service.seen[0].json()["override"] == {
        "maxRunningExecutions": 1,
        "concurrencyKeyAttribute": "customer id",
    }


async def test_a_start_keyed_by_an_attribute_sends_the_value_and_no_key() -> None:
    seen: list[dict[str, Any]] = []
    client = async_client(start_answers(seen))
    options = ProcessStartOptions(
        global_attribute_pk_value=1, initial_global_attributes={"status": "c-42"}
    )
    await client.start_process("order-1", ShopProcess, Order(item="tea"), options)
    await client.aclose()
    # The service reads the key from the row's values; the client sends them as given.
    config = seen[0]["processStartConfig"]
    assert "concurrencyKey" not in config
    assert config["globalAttributeConfig"]["initialWrite"] == [
        {"column": "status", "value": "c-42"}
    ]


async def test_a_start_writing_no_value_for_the_key_attribute_raises_naming_the_key() -> None:
    bad = Answer(
        400,
        {
            "subType": "INVALID_REQUEST",
            "message": "processStartConfig.concurrencyKey: the type counts its running "
            "executions per global attribute 'status' (concurrencyKeyAttribute): write a "
            "value for it in the start, or name a concurrencyKey",
        },
    )
    with serve(bad) as service:
        async with AsyncClient(service.url, max_retry_delay=0.05) as c:
            with pytest.raises(
                InvalidRequestError, match=r"processStartConfig\.concurrencyKey"
            ) as refused:
                await c.start_process(
                    "order-1",
                    ShopProcess,
                    Order(item="tea"),
                    ProcessStartOptions(global_attribute_pk_value=1, worker_url="http://w"),
                )
    assert refused.value.status == 400
    assert len(service.seen) == 1, "a refusal is final"


def test_a_process_declares_a_key_attribute_with_its_limit_and_a_state_cannot() -> None:
    class PerCustomer(ShopProcess):
        flow_limits = FlowLimits(max_running_executions=2, concurrency_key_attribute="status")

    wire = export_definition(PerCustomer()).to_wire()
    assert wire["flowLimits"] == {"maxRunningExecutions": 2, "concurrencyKeyAttribute": "status"}

    class KeyAlone(ShopProcess):
        flow_limits = FlowLimits(max_concurrent_calls=4, concurrency_key_attribute="status")

    with pytest.raises(
        SchemaError,
        match=r"KeyAlone: flow_limits\.concurrency_key_attribute .*max_running_executions",
    ):
        export_definition(KeyAlone())

    class KeyedStart(Start):
        flow_limits = FlowLimits(max_calls_per_second=1, concurrency_key_attribute="status")

        @classmethod
        def get_state_id(cls) -> str:
            return "Start"

    class StateKeyed(ShopProcess):
        def get_state_schema(self) -> StateSchema:
            return StateSchema.with_starting_state(KeyedStart(), Recover())

    with pytest.raises(
        SchemaError,
        match=r"StateKeyed\.Start: flow_limits\.concurrency_key_attribute .*not a state's",
    ):
        export_definition(StateKeyed())


def test_a_process_declares_its_starts_priority_and_a_state_cannot() -> None:
    class Urgent(ShopProcess):
        flow_limits = FlowLimits(max_concurrent_calls=16, priority=2)

    wire = export_definition(Urgent()).to_wire()
    assert wire["flowLimits"] == {"maxConcurrentCalls": 16, "priority": 2}
    assert all("flowLimits" not in s for s in wire["states"])
    for bound in (1, 5):

        class Bound(ShopProcess):
            flow_limits = FlowLimits(priority=bound)

        assert export_definition(Bound()).to_wire()["flowLimits"] == {"priority": bound}

    for bad in (0, 6, -1):

        class OutOfRange(ShopProcess):
            flow_limits = FlowLimits(priority=bad)

        with pytest.raises(
            SchemaError,
            match=rf"OutOfRange: flow_limits\.priority must be 1 \(claimed first\) to 5, not {bad}",
        ):
            export_definition(OutOfRange())

    class PrioritizedStart(Start):
        flow_limits = FlowLimits(max_calls_per_second=1, priority=1)

        @classmethod
        def get_state_id(cls) -> str:
            return "Start"

    class StatePrioritized(ShopProcess):
        def get_state_schema(self) -> StateSchema:
            return StateSchema.with_starting_state(PrioritizedStart(), Recover())

    with pytest.raises(
        SchemaError,
        match=r"StatePrioritized\.Start: flow_limits\.priority is the priority of a process "
        r"type's starts: .*not a state's",
    ):
        export_definition(StatePrioritized())


async def test_both_clients_send_a_types_priority_and_read_it_back() -> None:
    entry = {
        "processType": "ShopProcess",
        "declared": {"priority": 2},
        "override": {"priority": 1},
        "effective": {"priority": 1},
        "updatedTimestampMs": 1_700_000_000_000,
    }
    # An operator's change: the override before (none) and after.
    change = {**CHANGE, "before": None, "after": {"priority": 1}, "reason": "launch day"}
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        if request.url.path == FLOW_LIMITS_SET:
            return httpx.Response(200, json=entry)
        return httpx.Response(200, json={"changes": [change]})

    client = async_client(handler)
    answered = await client.set_flow_limits(
        "ShopProcess", FlowLimits(priority=1), reason="launch day"
    )
    history = await client.flow_limit_history(process_type="ShopProcess")
    await client.aclose()
    with sync_client(handler) as blocking:
        blocking.set_flow_limits("ShopProcess", FlowLimits(max_concurrent_calls=8, priority=1))
    assert (answered.declared, answered.effective) == (
        FlowLimits(priority=2),
        FlowLimits(priority=1),
    )
    assert answered.effective.max_running_executions is None
    assert [(c.source, c.before, c.after) for c in history.changes] == [
        (FlowLimitSource.OPERATOR, None, FlowLimits(priority=1))
    ]
    assert [body.get("override") for path, body in seen if path == FLOW_LIMITS_SET] == [
        {"priority": 1},
        {"maxConcurrentCalls": 8, "priority": 1},
    ]


@pytest.mark.parametrize(
    ("override", "state_id", "message"),
    [
        (
            FlowLimits(priority=1),
            "Start",
            "override.priority: is the priority of a process type's starts: set it on the "
            "type, not on a state",
        ),
        (FlowLimits(priority=9), None, "override.priority: must be 1 (claimed first) to 5, not 9"),
    ],
)
async def test_a_priority_on_a_state_or_out_of_range_is_refused_naming_its_field(
    override: FlowLimits, state_id: str | None, message: str
) -> None:
    # The client sends an override as given; the service refuses it, and names the field.
    bad = Answer(400, {"subType": "INVALID_REQUEST", "message": message})
    with serve(bad) as service:
        async with AsyncClient(service.url, max_retry_delay=0.05) as c:
            with pytest.raises(InvalidRequestError, match=r"override\.priority") as refused:
                await c.set_flow_limits("ShopProcess", override, state_id=state_id)
    assert refused.value.status == 400
    assert len(service.seen) == 1, "a refusal is final"
    sent = service.seen[0].json()
    assert (sent["override"], sent.get("stateId")) == (
        {"priority": override.priority},
        state_id,
    )


def test_a_process_declares_its_starts_fairness_and_a_state_cannot() -> None:
    class PerTenant(ShopProcess):
        flow_limits = FlowLimits(
            max_concurrent_calls=16, fairness_key_attribute="status", fairness_weight=5
        )

    wire = export_definition(PerTenant()).to_wire()
    assert wire["flowLimits"] == {
        "maxConcurrentCalls": 16,
        "fairnessKeyAttribute": "status",
        "fairnessWeight": 5,
    }
    assert all("flowLimits" not in s for s in wire["states"])
    # Neither needs the other, nor a running-executions limit.
    longest = "_" + "t" * 62
    for alone, sent in (
        (FlowLimits(fairness_key_attribute=longest), {"fairnessKeyAttribute": longest}),
        (FlowLimits(fairness_weight=1), {"fairnessWeight": 1}),
        (FlowLimits(fairness_weight=1000), {"fairnessWeight": 1000}),
    ):

        class Alone(ShopProcess):
            flow_limits = alone

        assert export_definition(Alone()).to_wire()["flowLimits"] == sent

    for bad in (0, 1001, -1):

        class OutOfRange(ShopProcess):
            flow_limits = FlowLimits(fairness_weight=bad)

        with pytest.raises(
            SchemaError,
            match=rf"OutOfRange: flow_limits\.fairness_weight must be 1 to 1000, not {bad}",
        ):
            export_definition(OutOfRange())

    for name in ("tenant id", "1tenant", 'tenant"; DROP TABLE x', "", "t" * 64, "ténant"):

        class NotAColumn(ShopProcess):
            flow_limits = FlowLimits(fairness_key_attribute=name)

        with pytest.raises(
            SchemaError, match=r"NotAColumn: flow_limits\.fairness_key_attribute .* not a column"
        ):
            export_definition(NotAColumn())

    for declared, field, what in (
        (FlowLimits(fairness_key_attribute="status"), "fairness_key_attribute", "keys"),
        (FlowLimits(max_calls_per_second=1, fairness_weight=2), "fairness_weight", "weighs"),
    ):

        class FairStart(Start):
            flow_limits = declared

            @classmethod
            def get_state_id(cls) -> str:
                return "Start"

        class StateFair(ShopProcess):
            def get_state_schema(self) -> StateSchema:
                return StateSchema.with_starting_state(FairStart(), Recover())

        with pytest.raises(
            SchemaError,
            match=rf"StateFair\.Start: flow_limits\.{field} {what} a process type's starts: "
            r".*not a state's",
        ):
            export_definition(StateFair())


def test_a_concurrency_key_attribute_that_is_not_a_column_is_refused_at_export() -> None:
    class NotAColumn(ShopProcess):
        flow_limits = FlowLimits(max_running_executions=1, concurrency_key_attribute="customer id")

    with pytest.raises(
        SchemaError,
        match=r"NotAColumn: flow_limits\.concurrency_key_attribute 'customer id' is not a column",
    ):
        export_definition(NotAColumn())


async def test_both_clients_send_a_types_fairness_and_read_it_back() -> None:
    fair = {"fairnessKeyAttribute": "tenant_id", "fairnessWeight": 4}
    entry = {
        "processType": "ShopProcess",
        "declared": {"fairnessWeight": 2},
        "override": fair,
        "effective": fair,
        "updatedTimestampMs": 1_700_000_000_000,
    }
    change = {**CHANGE, "before": None, "after": fair, "reason": "per tenant"}
    seen: list[tuple[str, dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        if request.url.path == FLOW_LIMITS_SET:
            return httpx.Response(200, json=entry)
        return httpx.Response(200, json={"changes": [change]})

    limits = FlowLimits(fairness_key_attribute="tenant_id", fairness_weight=4)
    client = async_client(handler)
    answered = await client.set_flow_limits("ShopProcess", limits, reason="per tenant")
    history = await client.flow_limit_history(process_type="ShopProcess")
    await client.aclose()
    with sync_client(handler) as blocking:
        blocking.set_flow_limits("ShopProcess", FlowLimits(fairness_weight=7))
    assert (answered.declared, answered.override, answered.effective) == (
        FlowLimits(fairness_weight=2),
        limits,
        limits,
    )
    assert (answered.effective.fairness_key_attribute, answered.effective.fairness_weight) == (
        "tenant_id",
        4,
    )
    assert [(c.source, c.before, c.after) for c in history.changes] == [
        (FlowLimitSource.OPERATOR, None, limits)
    ]
    assert [body.get("override") for path, body in seen if path == FLOW_LIMITS_SET] == [
        fair,
        {"fairnessWeight": 7},
    ]


@pytest.mark.parametrize(
    ("override", "state_id", "field", "message"),
    [
        (
            FlowLimits(fairness_key_attribute="tenant id"),
            None,
            "fairnessKeyAttribute",
            "override.fairnessKeyAttribute: 'tenant id' is not a valid SQL identifier "
            "(letters, digits and _, at most 63, not starting with a digit)",
        ),
        (
            FlowLimits(fairness_key_attribute="tenant_id"),
            "Start",
            "fairnessKeyAttribute",
            "override.fairnessKeyAttribute: keys a process type's starts: set it on the "
            "type, not on a state",
        ),
        (
            FlowLimits(fairness_weight=1001),
            None,
            "fairnessWeight",
            "override.fairnessWeight: must be 1 to 1000, not 1001",
        ),
        (
            FlowLimits(fairness_weight=2),
            "Start",
            "fairnessWeight",
            "override.fairnessWeight: weighs a process type's starts: set it on the type, "
            "not on a state",
        ),
    ],
)
async def test_a_bad_fairness_override_is_sent_as_given_and_refused_naming_its_field(
    override: FlowLimits, state_id: str | None, field: str, message: str
) -> None:
    # Operators' overrides are the service's to check: the client sends them as given.
    bad = Answer(400, {"subType": "INVALID_REQUEST", "message": message})
    with serve(bad) as service:
        async with AsyncClient(service.url, max_retry_delay=0.05) as c:
            with pytest.raises(InvalidRequestError, match=rf"override\.{field}") as refused:
                await c.set_flow_limits("ShopProcess", override, state_id=state_id)
    assert refused.value.status == 400
    assert len(service.seen) == 1, "a refusal is final"
    sent = service.seen[0].json()
    assert (sent["override"], sent.get("stateId")) == (
        override.model_dump(by_alias=True, exclude_none=True),
        state_id,
    )


async def test_a_start_keyed_by_the_types_fairness_attribute_sends_the_value_and_no_key() -> None:
    seen: list[dict[str, Any]] = []
    client = async_client(start_answers(seen))
    options = ProcessStartOptions(
        global_attribute_pk_value=1, initial_global_attributes={"status": "tenant-42"}
    )
    await client.start_process("order-1", ShopProcess, Order(item="tea"), options)
    await client.aclose()
    # The service derives the key and the type's weight; the client sends neither.
    config = seen[0]["processStartConfig"]
    assert "fairnessKey" not in config
    assert "fairnessWeight" not in config
    assert config["globalAttributeConfig"]["initialWrite"] == [
        {"column": "status", "value": "tenant-42"}
    ]
