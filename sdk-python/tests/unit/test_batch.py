"""The batch calls: their requests, and how their answers and refusals are read."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.unit.sample_processes import ShopProcess
from tests.unit.test_client import async_client, sent_body, sync_client
from xdb import (
    BatchItemOutcome,
    BatchNotFoundError,
    BatchOperation,
    BatchReset,
    BatchStatus,
    BusinessTableRef,
    DeploymentRef,
    FilterNode,
    Reprioritization,
    WorkerDeployment,
    encoding,
    local_queue_message,
)
from xdb.protocol import BATCH_CANCEL, BATCH_DESCRIBE, BATCH_LIST, BATCH_START

STARTED = {
    "operation": "PUBLISH_TO_LOCAL_QUEUE",
    "processType": "ShopProcess",
    "messages": [{"queueName": "events"}],
}
BATCH = {
    "batchId": "b-1",
    "operation": "PUBLISH_TO_LOCAL_QUEUE",
    "status": "RUNNING",
    "request": STARTED,
    "ratePerSecond": 50,
    "expected": 10,
    "matched": 4,
    "done": 2,
    "skipped": 1,
    "failed": 1,
    "createdTimestampMs": 1_700_000_000_000,
    "future": "ignored",
}
DESCRIBED = {
    "batch": BATCH,
    "notDone": [
        {"processExecutionId": "e-3", "outcome": "FAILED", "reason": "boom"},
        {"processExecutionId": "e-2", "outcome": "SKIPPED", "reason": "closed"},
    ],
}


def answers(seen: list[tuple[str, dict[str, Any]]]) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        if request.url.path == BATCH_START:
            return httpx.Response(200, json={"batchId": "b-1", "expected": 10})
        if request.url.path == BATCH_LIST:
            return httpx.Response(200, json={"batches": [BATCH], "nextPageToken": "n"})
        if request.url.path == BATCH_CANCEL:
            cancelled = {
                **BATCH,
                "status": "CANCELLED",
                "error": "cancelled by ops: enough",
                "closedTimestampMs": 1_700_000_000_500,
            }
            return httpx.Response(200, json={"batch": cancelled})
        if json.loads(request.content)["batchId"] == "nope":
            return httpx.Response(404, json={"subType": "BATCH_NOT_FOUND", "message": "no nope"})
        return httpx.Response(200, json=DESCRIBED)

    return handler


async def test_start_sends_the_selection_and_the_operations_arguments() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    client = async_client(answers(seen))
    started = await client.start_batch(
        BatchOperation.PUBLISH_TO_LOCAL_QUEUE,
        process_type=ShopProcess,
        where={"column": "status", "op": "=", "value": "new"},
        business_table=BusinessTableRef(table_name="orders", primary_key_column="order_id"),
        rate_per_second=50,
        reason="nudge",
        identity="ops",
        messages=[local_queue_message("events", {"n": 1}, "nudge-1")],
    )
    assert (started.batch_id, started.expected) == ("b-1", 10)
    where = FilterNode.model_validate({"field": "status", "op": "=", "value": "RUNNING"})
    await client.start_batch(
        "RESET",
        where=where,
        reset=BatchReset(state_id="Pay", state_input=encoding.encode("input", 1)),
    )
    await client.start_batch(
        BatchOperation.MOVE_TO_DEPLOYMENT,
        process_type="ShopProcess",
        move_to=WorkerDeployment(name="shop", version="2", worker_url="http://w"),
    )
    await client.start_batch(
        BatchOperation.REPRIORITIZE,
        where=where,
        reprioritize=Reprioritization(priority=1, fairness_key="vip"),
    )
    await client.start_batch("TERMINATE", move_to=DeploymentRef(name="shop", version="1"))
    await client.aclose()
    assert seen == [
        (
            BATCH_START,
            {
                "operation": "PUBLISH_TO_LOCAL_QUEUE",
                "processType": "ShopProcess",
                "where": {"column": "status", "op": "=", "value": "new"},
                "businessTable": {"tableName": "orders", "primaryKeyColumn": "order_id"},
                "ratePerSecond": 50,
                "reason": "nudge",
                "identity": "ops",
                "messages": [
                    {
                        "queueName": "events",
                        "dedupId": "nudge-1",
                        "payload": {"encoding": "json", "data": '{"n":1}'},
                    }
                ],
            },
        ),
        (
            BATCH_START,
            {
                "operation": "RESET",
                "where": {"field": "status", "op": "=", "value": "RUNNING"},
                "messages": [],
                "reset": {"stateId": "Pay", "stateInput": {"encoding": "json", "data": "1"}},
            },
        ),
        (
            BATCH_START,
            {
                "operation": "MOVE_TO_DEPLOYMENT",
                "processType": "ShopProcess",
                "messages": [],
                "moveTo": {"name": "shop", "version": "2"},
            },
        ),
        (
            BATCH_START,
            {
                "operation": "REPRIORITIZE",
                "where": {"field": "status", "op": "=", "value": "RUNNING"},
                "messages": [],
                "reprioritize": {"priority": 1, "fairnessKey": "vip"},
            },
        ),
        (
            BATCH_START,
            {"operation": "TERMINATE", "messages": [], "moveTo": {"name": "shop", "version": "1"}},
        ),
    ]


async def test_list_describe_and_cancel_read_the_batch() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    client = async_client(answers(seen))
    page = await client.list_batches(status=BatchStatus.RUNNING, page_size=5, next_page_token="t")
    assert page.next_page_token == "n"
    batch = page.batches[0]
    assert (batch.operation, batch.status) == (BatchOperation.PUBLISH_TO_LOCAL_QUEUE, "RUNNING")
    assert (batch.expected, batch.matched, batch.done, batch.skipped, batch.failed) == (
        10,
        4,
        2,
        1,
        1,
    )
    assert batch.request.messages[0].queue_name == "events"
    assert batch.closed_timestamp_ms is None
    described = await client.describe_batch("b-1")
    assert [(i.process_execution_id, i.outcome) for i in described.not_done] == [
        ("e-3", BatchItemOutcome.FAILED),
        ("e-2", BatchItemOutcome.SKIPPED),
    ]
    cancelled = await client.cancel_batch("b-1", reason="enough", identity="ops")
    assert cancelled.batch.status == BatchStatus.CANCELLED
    assert cancelled.batch.closed_timestamp_ms == 1_700_000_000_500
    assert cancelled.not_done == []
    with pytest.raises(BatchNotFoundError, match="no nope") as missing:
        await client.describe_batch("nope")
    assert missing.value.status == 404
    await client.list_batches()
    await client.aclose()
    assert seen == [
        (BATCH_LIST, {"status": "RUNNING", "pageSize": 5, "nextPageToken": "t"}),
        (BATCH_DESCRIBE, {"batchId": "b-1"}),
        (BATCH_CANCEL, {"batchId": "b-1", "reason": "enough", "identity": "ops"}),
        (BATCH_DESCRIBE, {"batchId": "nope"}),
        (BATCH_LIST, {}),
    ]


def test_the_sync_client_makes_the_same_calls() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    with sync_client(answers(seen)) as client:
        assert client.start_batch("PAUSE", reason="upgrade").batch_id == "b-1"
        assert client.list_batches(status="COMPLETED").batches[0].batch_id == "b-1"
        assert client.describe_batch("b-1").batch.rate_per_second == 50
        assert client.cancel_batch("b-1").batch.error == "cancelled by ops: enough"
        with pytest.raises(BatchNotFoundError):
            client.describe_batch("nope")
    assert [path for path, _ in seen] == [
        BATCH_START,
        BATCH_LIST,
        BATCH_DESCRIBE,
        BATCH_CANCEL,
        BATCH_DESCRIBE,
    ]
    assert seen[0][1] == {"operation": "PAUSE", "reason": "upgrade", "messages": []}
    assert seen[1][1] == {"status": "COMPLETED"}


async def test_an_unknown_operation_or_status_is_refused_before_sending() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    client = async_client(answers(seen))
    with pytest.raises(ValueError, match="EXPLODE"):
        await client.start_batch("EXPLODE")
    with pytest.raises(ValueError, match="DONE"):
        await client.list_batches(status="DONE")
    await client.aclose()
    assert seen == []
