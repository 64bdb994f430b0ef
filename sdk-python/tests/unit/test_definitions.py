"""Registered definitions: the export of a process, and the client's definitions calls."""

from __future__ import annotations

import datetime
import enum
import json
from typing import Annotated, Any, Literal

import httpx
import jsonschema
import pytest

from tests.unit.sample_processes import NoTableProcess, Order, ShopProcess
from xdb import (
    ApiError,
    AsyncClient,
    Client,
    DefinitionIncompatibleError,
    DefinitionNotFoundError,
    DeploymentRef,
    ErrorSubType,
    ProcessDefinition,
    SchemaError,
    VersioningPolicy,
    WorkerDeployment,
    WorkerService,
    export_definition,
    state_execution_id_of,
    state_execution_ids_of,
)
from xdb.definitions import attribute_type, input_schema
from xdb.errors import error_from_response
from xdb.protocol import (
    DEFINITIONS_DESCRIBE,
    DEFINITIONS_LIST,
    DEFINITIONS_REGISTER,
    DEPLOYMENTS_LIST,
    DEPLOYMENTS_MOVE,
    DEPLOYMENTS_SET_CURRENT,
    START,
    AttributeType,
    HistoryEvent,
)

DEPLOYMENT = WorkerDeployment(name="shop", version="1.2.3", worker_url="http://worker:8000")

REVISION = {
    "processType": "ShopProcess",
    "revision": 1,
    "contentHash": "ab" * 32,
    "deployment": {"name": "shop", "version": "1.2.3", "workerUrl": "http://worker:8000"},
    "registeredAtMs": 1_700_000_000_000,
}


def test_a_process_exports_its_states_queues_rpcs_and_attributes() -> None:
    wire = export_definition(ShopProcess).to_wire()
    assert wire["processType"] == "ShopProcess"
    assert wire["startStates"] == []
    assert wire["localQueues"] == ["events"]

    states = {s["id"]: s for s in wire["states"]}
    assert list(states) == ["Start", "Wait", "Recover"]
    assert [s["hasWaitUntil"] for s in wire["states"]] == [False, True, False]
    # Each config is what the SDK sends for the state at a start or a move.
    definition = ProcessDefinition.of(ShopProcess)
    for state_id, state in states.items():
        assert state["config"] == definition.state_config(state_id).to_wire()
        assert state["config"]["skipWaitUntil"] is (state_id != "Wait")
    start = states["Start"]["config"]
    assert start["executeApiRetryPolicy"]["maximumAttempts"] == 3
    assert start["stateFailureRecoveryOptions"]["stateFailureProceedStateId"] == "Recover"
    assert start["globalAttributeLoading"] == {
        "columns": ["status", "order"],
        "lockType": "NO_LOCK",
    }

    # Inputs: the pydantic model's JSON Schema; none where any input (or none) is taken.
    order_schema = states["Start"]["inputSchema"]
    assert order_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(order_schema)
    validator = jsonschema.Draft202012Validator(order_schema)
    assert validator.is_valid({"item": "book", "quantity": 2})
    assert not validator.is_valid({"quantity": 2})
    assert "inputSchema" not in states["Wait"]  # AsyncState[None]
    assert "inputSchema" not in states["Recover"]  # AsyncState[Any]

    rpcs = {r["name"]: r for r in wire["rpcs"]}
    assert sorted(rpcs) == ["cancel", "peek"]
    assert rpcs["cancel"]["globalAttributeLoading"] == {
        "columns": ["status", "order"],
        "lockType": "EXCLUSIVE_LOCK",
    }
    assert rpcs["cancel"]["localAttributeLoading"] == {
        "keys": ["attempts"],
        "lockType": "EXCLUSIVE_LOCK",
    }
    assert rpcs["cancel"]["inputSchema"]["type"] == "string"
    assert "inputSchema" not in rpcs["peek"]
    assert rpcs["peek"]["globalAttributeLoading"]["lockType"] == "NO_LOCK"

    assert wire["globalAttributes"] == {
        "tableName": "shop.orders",
        "primaryKeyColumn": "order_id",
        "columns": [{"name": "status", "type": "STRING"}, {"name": "order", "type": "JSON"}],
    }
    assert wire["localAttributes"] == [{"name": "attempts", "type": "INTEGER"}]


def test_the_export_is_stable_and_leaves_out_what_a_process_lacks() -> None:
    # The service hashes the definition: the same process exports the same JSON.
    first = json.dumps(export_definition(ShopProcess()).to_wire())
    assert first == json.dumps(export_definition(ShopProcess()).to_wire())
    bare = export_definition(NoTableProcess).to_wire()
    assert "globalAttributes" not in bare
    assert (bare["localAttributes"], bare["localQueues"], bare["rpcs"]) == ([], [], [])


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@pytest.mark.parametrize(
    ("type_", "expected"),
    [
        (str, AttributeType.STRING),
        (str | None, AttributeType.STRING),
        (int, AttributeType.INTEGER),
        (bool, AttributeType.BOOLEAN),
        (float, AttributeType.NUMBER),
        (datetime.datetime, AttributeType.TIMESTAMP),
        (datetime.date, AttributeType.TIMESTAMP),
        (Order, AttributeType.JSON),
        (dict[str, int], AttributeType.JSON),
        (list[str], AttributeType.JSON),
        (Color, AttributeType.STRING),
        (Literal["a", "b"], AttributeType.STRING),
        (Annotated[int, "meta"], AttributeType.INTEGER),
        (int | str, AttributeType.ANY),
        (Any, AttributeType.ANY),
        (bytes, AttributeType.ANY),
    ],
)
def test_attribute_types_follow_the_declared_python_types(
    type_: Any, expected: AttributeType
) -> None:
    assert attribute_type(type_) is expected


def test_input_schemas_only_where_pydantic_describes_the_type() -> None:
    assert input_schema(Any) is None
    assert input_schema(None) is None
    assert input_schema(type(None)) is None
    assert input_schema(int) == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "integer",
    }
    assert input_schema(httpx.Client) is None  # not describable: any input


def handler_for(seen: list[tuple[str, Any]], answers: dict[str, httpx.Response]) -> Any:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, json.loads(request.content)))
        return answers[request.url.path]

    return handle


async def test_register_definitions_sends_the_deployment_and_the_exports() -> None:
    seen: list[tuple[str, Any]] = []
    answers = {
        DEFINITIONS_REGISTER: httpx.Response(
            200, json={"registered": [{"revision": REVISION, "changed": True}]}
        )
    }
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler_for(seen, answers)))
    async with AsyncClient("http://xdb", http_client=http, bearer_token="deploy-token") as client:
        answer = await client.register_definitions(DEPLOYMENT, [ShopProcess])
    assert answer.registered[0].changed is True
    assert answer.registered[0].revision.revision == 1
    assert answer.registered[0].revision.deployment == DEPLOYMENT
    [(path, body)] = seen
    assert path == DEFINITIONS_REGISTER
    assert body == {
        "deployment": {"name": "shop", "version": "1.2.3", "workerUrl": "http://worker:8000"},
        "definitions": [export_definition(ShopProcess).to_wire()],
        "force": False,
    }


def test_register_takes_processes_definitions_and_wire_definitions_and_force() -> None:
    seen: list[tuple[str, Any]] = []
    unchanged = {"revision": REVISION, "changed": False}
    answers = {
        DEFINITIONS_REGISTER: httpx.Response(200, json={"registered": [unchanged] * 3}),
    }
    http = httpx.Client(transport=httpx.MockTransport(handler_for(seen, answers)))
    with Client("http://xdb", http_client=http) as client:
        answer = client.register_definitions(
            DEPLOYMENT,
            [ShopProcess(), ProcessDefinition.of(NoTableProcess), export_definition(ShopProcess)],
            force=True,
        )
        with pytest.raises(SchemaError, match="at least one"):
            client.register_definitions(DEPLOYMENT, [])
    assert [r.changed for r in answer.registered] == [False, False, False]
    [(_, body)] = seen
    assert body["force"] is True
    assert [d["processType"] for d in body["definitions"]] == [
        "ShopProcess",
        "NoTableProcess",
        "ShopProcess",
    ]


async def test_list_and_describe_definitions() -> None:
    seen: list[tuple[str, Any]] = []
    definition = export_definition(ShopProcess).to_wire()
    answers = {
        DEFINITIONS_LIST: httpx.Response(200, json={"definitions": [REVISION]}),
        DEFINITIONS_DESCRIBE: httpx.Response(
            200,
            json={"revision": REVISION, "definition": definition, "revisions": [REVISION]},
        ),
    }
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler_for(seen, answers)))
    async with AsyncClient("http://xdb", http_client=http) as client:
        listed = await client.list_definitions()
        described = await client.describe_definition(ShopProcess, revision=1)
        await client.describe_definition("ShopProcess")
    assert [d.process_type for d in listed.definitions] == ["ShopProcess"]
    assert described.definition == export_definition(ShopProcess)
    assert seen == [
        (DEFINITIONS_LIST, {}),
        (DEFINITIONS_DESCRIBE, {"processType": "ShopProcess", "revision": 1}),
        (DEFINITIONS_DESCRIBE, {"processType": "ShopProcess"}),
    ]


@pytest.mark.parametrize(
    ("status", "sub_type", "cls"),
    [
        (404, "DEFINITION_NOT_FOUND", DefinitionNotFoundError),
        (409, "DEFINITION_INCOMPATIBLE", DefinitionIncompatibleError),
    ],
)
def test_definition_errors_map_to_typed_errors(
    status: int, sub_type: str, cls: type[ApiError]
) -> None:
    body = json.dumps({"subType": sub_type, "message": "why"}).encode()
    error = error_from_response(status, body)
    assert type(error) is cls
    assert isinstance(error, ApiError)
    assert (error.status, error.sub_type) == (status, ErrorSubType(sub_type))


async def test_the_worker_registers_what_it_hosts() -> None:
    seen: list[tuple[str, Any]] = []
    incompatible = {"subType": "DEFINITION_INCOMPATIBLE", "message": "2 executions wait in Wait"}
    responses = [
        httpx.Response(200, json={"registered": [{"revision": REVISION, "changed": True}] * 2}),
        httpx.Response(409, json=incompatible),
    ]

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, json.loads(request.content)))
        return responses.pop(0)

    worker = WorkerService(ShopProcess(), NoTableProcess())
    http = httpx.AsyncClient(transport=httpx.MockTransport(handle))
    async with AsyncClient("http://xdb", http_client=http) as client:
        answer = await worker.register_definitions(client, DEPLOYMENT)
        assert len(answer.registered) == 2
        with pytest.raises(DefinitionIncompatibleError, match="2 executions wait in Wait"):
            await worker.register_definitions(client, DEPLOYMENT)
        with pytest.raises(ValueError, match="hosts no process"):
            await WorkerService().register_definitions(client, DEPLOYMENT)
    assert [d["processType"] for d in seen[0][1]["definitions"]] == [
        "ShopProcess",
        "NoTableProcess",
    ]
    assert worker.process_definitions() == [
        export_definition(ShopProcess),
        export_definition(NoTableProcess),
    ]


async def test_a_start_without_a_worker_url_leaves_it_to_the_registered_deployment() -> None:
    seen: list[tuple[str, Any]] = []
    answers = {START: httpx.Response(200, json={"processExecutionId": "e-1"})}
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler_for(seen, answers)))
    async with AsyncClient("http://xdb", http_client=http) as client:
        await client.start_process("p", NoTableProcess)
    [(_, body)] = seen
    assert body.get("workerUrl", "") == ""


def test_history_events_name_their_state_execution() -> None:
    def event(details: dict[str, Any]) -> HistoryEvent:
        return HistoryEvent(
            event_id=1, event_timestamp_ms=0, event_type="STATE_API_FAILED", details=details
        )

    failed = event({"api": "execute", "attempt": 1, "error": "x", "stateExecutionId": "A-1"})
    assert state_execution_id_of(failed) == "A-1"
    assert state_execution_ids_of(failed) == ["A-1"]
    control = event({"stateExecutionIds": ["A-1", "B-2"]})
    assert state_execution_id_of(control) is None
    assert state_execution_ids_of(control) == ["A-1", "B-2"]
    assert state_execution_ids_of(event({"processType": "P"})) == []


SUMMARY = {
    "deployment": {"name": "shop", "version": "2", "workerUrl": "http://worker-2:8000"},
    "processTypes": ["ShopProcess"],
    "currentFor": ["ShopProcess"],
    "runningExecutions": 3,
    "drained": False,
}


async def test_deployments_calls_send_their_requests() -> None:
    seen: list[tuple[str, Any]] = []
    answers = {
        DEPLOYMENTS_LIST: httpx.Response(200, json={"deployments": [SUMMARY]}),
        DEPLOYMENTS_SET_CURRENT: httpx.Response(
            200, json={"registered": [{"revision": REVISION, "changed": True}]}
        ),
        DEPLOYMENTS_MOVE: httpx.Response(200, json={"moved": 2}),
    }
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler_for(seen, answers)))
    async with AsyncClient("http://xdb", http_client=http) as client:
        listed = await client.list_deployments()
        rolled_back = await client.set_current_deployment("shop", "1.2.3")
        moved = await client.move_executions(
            ShopProcess, DeploymentRef(name="shop", version="2"), from_=DEPLOYMENT
        )
        await client.move_executions("ShopProcess", DEPLOYMENT, process_ids=["p-1", "p-2"])
    [summary] = listed.deployments
    assert (summary.deployment.version, summary.current_for, summary.running_executions) == (
        "2",
        ["ShopProcess"],
        3,
    )
    assert summary.drained is False
    assert rolled_back.registered[0].changed is True
    assert moved.moved == 2
    shop_2 = {"name": "shop", "version": "2"}
    shop_1 = {"name": "shop", "version": "1.2.3"}
    assert seen == [
        (DEPLOYMENTS_LIST, {}),
        (DEPLOYMENTS_SET_CURRENT, {"deployment": shop_1, "force": False}),
        (
            DEPLOYMENTS_MOVE,
            {"processType": "ShopProcess", "to": shop_2, "from": shop_1, "processIds": []},
        ),
        (
            DEPLOYMENTS_MOVE,
            {"processType": "ShopProcess", "to": shop_1, "processIds": ["p-1", "p-2"]},
        ),
    ]


def test_the_blocking_client_has_the_deployments_calls() -> None:
    seen: list[tuple[str, Any]] = []
    answers = {
        DEPLOYMENTS_LIST: httpx.Response(200, json={"deployments": []}),
        DEPLOYMENTS_SET_CURRENT: httpx.Response(
            404, json={"subType": "DEFINITION_NOT_FOUND", "message": "no deployment shop@9"}
        ),
        DEPLOYMENTS_MOVE: httpx.Response(200, json={"moved": 0}),
    }
    http = httpx.Client(transport=httpx.MockTransport(handler_for(seen, answers)))
    with Client("http://xdb", http_client=http) as client:
        assert client.list_deployments().deployments == []
        with pytest.raises(DefinitionNotFoundError, match="shop@9"):
            client.set_current_deployment("shop", "9", force=True)
        assert client.move_executions("ShopProcess", DEPLOYMENT).moved == 0
    assert seen[1] == (
        DEPLOYMENTS_SET_CURRENT,
        {"deployment": {"name": "shop", "version": "9"}, "force": True},
    )


def test_a_process_declares_its_versioning_policy() -> None:
    class Moving(NoTableProcess):
        versioning_policy = "MOVE_TO_CURRENT"

    class Unknown(NoTableProcess):
        versioning_policy = "SOMETIMES"

    assert export_definition(NoTableProcess).versioning_policy is VersioningPolicy.PINNED
    assert export_definition(Moving()).to_wire()["versioningPolicy"] == "MOVE_TO_CURRENT"
    with pytest.raises(SchemaError, match="SOMETIMES"):
        export_definition(Unknown())
