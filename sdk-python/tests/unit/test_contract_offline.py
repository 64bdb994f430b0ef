"""The SDK's requests and the worker's answers against the repository's OpenAPI document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.contract import Contract
from tests.unit.sample_processes import NoTableProcess, Order, ShopProcess
from tests.unit.test_worker import execute_body
from xdb import (
    AsyncClient,
    BatchOperation,
    BatchReset,
    BatchStatus,
    BusinessTableRef,
    DeploymentRef,
    FlowLimits,
    ProcessStartOptions,
    Reprioritization,
    WorkerDeployment,
    WorkerService,
    encoding,
    local_queue_message,
    protocol,
)
from xdb.protocol import (
    CronSpec,
    ProcessExecutionCountRequest,
    ScheduleCreateRequest,
    ScheduleOverlapPolicy,
    ScheduleSpec,
    ScheduleStartTemplate,
    ScheduleUpdateRequest,
    WireModel,
)

DOCUMENT = Path(__file__).resolve().parents[3] / "xdb-protocol" / "openapi.json"


@pytest.fixture(scope="module")
def contract() -> Contract:
    return Contract(json.loads(DOCUMENT.read_text()))


class FairShopProcess(ShopProcess):
    """A type whose limits key and weigh its starts, so registration sends them."""

    flow_limits = FlowLimits(
        max_running_executions=2,
        concurrency_key_attribute="status",
        priority=2,
        fairness_key_attribute="status",
        fairness_weight=5,
    )


def test_the_validator_catches_a_broken_request(contract: Contract) -> None:
    with pytest.raises(AssertionError, match="breaks the contract"):
        contract.check_request(protocol.START, {"processId": "p", "localAttributes": []})


async def test_every_client_request_validates(contract: Contract) -> None:
    sent: list[tuple[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append((request.url.path, json.loads(request.content)))
        return httpx.Response(500, json={"subType": "INTERNAL_ERROR", "message": "offline"})

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    client = AsyncClient("http://xdb", worker_url="http://worker:1/xdb", http_client=http)
    calls = [
        client.start_process(
            "p",
            ShopProcess,
            Order(item="tea"),
            ProcessStartOptions(
                global_attribute_pk_value="o-1",
                initial_global_attributes={"status": "new", "order": Order(item="tea")},
                initial_local_attributes={"attempts": 0},
                timeout=30,
                concurrency_key="customer-42",
                priority=1,
                fairness_key="tenant-7",
                fairness_weight=5,
            ),
        ),
        client.invoke_rpc("p", ShopProcess.cancel, "why"),
        client.publish_to_local_queue("p", "events", [1], dedup_id="d"),
        client.publish_messages(
            "p",
            [local_queue_message("events"), local_queue_message("events", 2, "d-2")],
            process_execution_id="0190e0a4-0000-7000-8000-000000000000",
            request_id="publish:0190e0a4.2_x",
        ),
        client.stop_process("p", reason="r"),
        client.stop_process(
            "p", process_execution_id="0190e0a4-0000-7000-8000-000000000000", request_id="s-1"
        ),
        client.describe_process("p", "0190e0a4-0000-7000-8000-000000000000"),
        client.list_processes(process_id="p", page_size=10, start_time_min_ms=0),
        client.count_processes(
            ProcessExecutionCountRequest.model_validate(
                {
                    "processType": "ShopProcess",
                    "where": {
                        "and": [
                            {"field": "status", "op": "IN", "values": ["RUNNING"]},
                            {"column": "status", "op": "PREFIX", "value": "n"},
                        ]
                    },
                    "groupBy": {"column": "status"},
                }
            )
        ),
        client.get_process_history("p"),
        client.get_process_history(
            "p", after_event_id=7, page_size=1000, event_types=["TIMER_FIRED", "STATE_FAILED"]
        ),
        client.wait_for_completion("p", 1),
        client.states("p", "0190e0a4-0000-7000-8000-000000000000"),
        client.retry_now("p", state_execution_id="Pay-1", reason="fixed", identity="ops"),
        client.give_up("p", process_execution_id="0190e0a4-0000-7000-8000-000000000000"),
        client.pause("p", reason="maintenance", identity="ops"),
        client.resume("p"),
        client.reprioritize(
            "p",
            priority=1,
            fairness_key="tenant-7",
            fairness_weight=5,
            process_execution_id="0190e0a4-0000-7000-8000-000000000000",
            reason="escalated",
            identity="ops",
        ),
        client.reprioritize("p", fairness_key=""),
        client.reset("p", "Pay", {"amount": 1}, reason="bad deploy", identity="ops"),
        client.register_definitions(
            WorkerDeployment(name="shop", version="1", worker_url="http://worker:1/xdb"),
            [ShopProcess, NoTableProcess, FairShopProcess],
        ),
        client.list_definitions(),
        client.describe_definition(ShopProcess, revision=2),
        client.list_deployments(),
        client.set_current_deployment("shop", "1", force=True),
        client.move_executions(
            ShopProcess,
            DeploymentRef(name="shop", version="2"),
            from_=DeploymentRef(name="shop", version="1"),
            process_ids=["p"],
        ),
        client.start_batch(
            BatchOperation.PUBLISH_TO_LOCAL_QUEUE,
            process_type=ShopProcess,
            where={
                "and": [
                    {"field": "status", "op": "=", "value": "RUNNING"},
                    {"column": "status", "op": "PREFIX", "value": "n"},
                ]
            },
            business_table=BusinessTableRef(table_name="shop.orders", primary_key_column="id"),
            rate_per_second=50,
            reason="tell them",
            identity="ops",
            messages=[local_queue_message("events", {"n": 1}, "batch-1")],
            request_id="batch-1",
        ),
        client.start_batch(
            "RESET",
            reset=BatchReset(state_id="Pay", state_input=encoding.encode("input", {"amount": 1})),
        ),
        client.start_batch(
            BatchOperation.MOVE_TO_DEPLOYMENT,
            process_type="ShopProcess",
            move_to=WorkerDeployment(name="shop", version="2", worker_url="http://worker:2/xdb"),
        ),
        client.start_batch(
            BatchOperation.REPRIORITIZE,
            process_type="ShopProcess",
            reprioritize=Reprioritization(fairness_weight=3),
        ),
        client.list_batches(status=BatchStatus.RUNNING, page_size=10, next_page_token="t"),
        client.describe_batch("0190e0a4-0000-7000-8000-000000000001"),
        client.cancel_batch("0190e0a4-0000-7000-8000-000000000001", reason="r", identity="ops"),
        client.create_schedule(
            ScheduleCreateRequest(
                schedule_id="nightly",
                spec=ScheduleSpec(cron=CronSpec(expression="0 3 * * *", time_zone="Europe/Paris")),
                start=ScheduleStartTemplate(process_type="ShopProcess"),
                overlap_policy=ScheduleOverlapPolicy.BUFFER_ONE,
                catchup_window_seconds=600,
            )
        ),
        client.update_schedule(
            ScheduleUpdateRequest(
                schedule_id="nightly",
                spec=ScheduleSpec(cron=CronSpec(expression="0 4 * * *")),
                start=ScheduleStartTemplate(process_type="ShopProcess", worker_url="http://w:1"),
            )
        ),
        client.pause_schedule("nightly", reason="maintenance"),
        client.resume_schedule("nightly"),
        client.trigger_schedule("nightly", overlap_policy="ALLOW_ALL"),
        client.backfill_schedule("nightly", 0, 86_400_000),
        client.delete_schedule("nightly", reason="gone"),
        client.list_schedules(process_type="ShopProcess", page_size=10, next_page_token="a"),
        client.describe_schedule("nightly"),
        client.schedule_history(schedule_id="nightly", page_size=10, next_page_token="a"),
        client.schedule_history(),
        client.set_flow_limits(
            "ShopProcess",
            FlowLimits(max_calls_per_second=0.5),
            state_id="Start",
            reason="payments slow",
        ),
        client.set_flow_limits("ShopProcess", FlowLimits()),
        client.set_flow_limits(
            "ShopProcess", FlowLimits(max_calls_per_second=2, max_concurrent_calls=8)
        ),
        client.set_flow_limits(
            "ShopProcess", FlowLimits(max_concurrent_calls=8, max_running_executions=2)
        ),
        client.set_flow_limits(
            "ShopProcess",
            FlowLimits(max_running_executions=2, concurrency_key_attribute="status"),
        ),
        client.set_flow_limits(
            "ShopProcess", FlowLimits(fairness_key_attribute="status", fairness_weight=5)
        ),
        client.set_flow_limits("ShopProcess", None),
        client.list_flow_limits(process_type="ShopProcess"),
        client.flow_limit_history(process_type="ShopProcess", page_size=10, next_page_token="a"),
    ]
    for coroutine in calls:
        with pytest.raises(Exception, match="offline"):
            await coroutine
    await client.aclose()
    assert len(sent) == len(calls)
    for path, body in sent:
        contract.check_request(path, body)
    service_paths = {p for p in contract.document["paths"] if "/service/" in p}
    assert {path for path, _ in sent} == service_paths


async def test_worker_answers_validate(contract: Contract) -> None:
    transport = httpx.ASGITransport(app=WorkerService(ShopProcess()))
    async with httpx.AsyncClient(transport=transport, base_url="http://w") as http:
        cases = [
            (protocol.WORKER_EXECUTE, execute_body()),
            (protocol.WORKER_WAIT_UNTIL, {**execute_body(state="Wait"), "stateInput": None}),
            (protocol.WORKER_EXECUTE, execute_body(item="boom")),
            (
                protocol.WORKER_RPC,
                {
                    "context": execute_body()["context"],
                    "processType": "ShopProcess",
                    "rpcName": "cancel",
                    "input": {"encoding": "json", "data": '"x"'},
                },
            ),
        ]
        for path, body in cases:
            contract.check_request(path, body)
            response = await http.post(path, json=body)
            contract.check_response(path, response.status_code, response.content)


def test_every_wire_model_field_is_in_the_document(contract: Contract) -> None:
    """A field the SDK sends or reads that the document does not know means drift."""
    schemas = contract.document["components"]["schemas"]
    renamed = {
        "CommandResultsWire": "CommandResults",
        "ProcessDefinitionWire": "ProcessDefinition",
        "StateDecisionWire": "StateDecision",
    }
    checked = 0
    for name in dir(protocol):
        model = getattr(protocol, name)
        if not (isinstance(model, type) and issubclass(model, WireModel)) or model is WireModel:
            continue
        schema = schemas.get(renamed.get(name, name))
        assert schema is not None, f"{name} is not in the document"
        wire_names = {f.alias or n for n, f in model.model_fields.items()}
        branches = [schema] + [
            schemas[b["$ref"].rsplit("/", 1)[-1]] if "$ref" in b else b
            for b in schema.get("oneOf", []) + schema.get("allOf", [])
        ]
        properties = {p for b in branches for p in b.get("properties", {})}
        assert wire_names <= properties, (name, wire_names - properties)
        required = set(schema.get("required", []))
        optional = {f.alias or n for n, f in model.model_fields.items() if not f.is_required()}
        assert not (required & optional), f"{name}: the document requires {required & optional}"
        checked += 1
    assert checked >= 40
