"""Schedules a process declares (``Process.schedules``): how registration sends them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from tests.contract import Contract
from tests.unit.sample_processes import NoTableProcess, Recover, ShopProcess, Start
from tests.unit.test_client import sync_client
from xdb import (
    AsyncClient,
    AsyncStateConfig,
    ScheduleDeclaration,
    ScheduleOverlapPolicy,
    SchemaError,
    StateSchema,
    WorkerDeployment,
    WorkerService,
    cron_spec,
    encoding,
    export_definition,
    interval_spec,
)
from xdb.protocol import DEFINITIONS_REGISTER, SCHEDULE_DESCRIBE

DOCUMENT = Path(__file__).resolve().parents[3] / "xdb-protocol" / "openapi.json"
DEPLOYMENT = WorkerDeployment(name="shop", version="1.2.3", worker_url="http://worker:8000")
REGISTERED = {
    "registered": [
        {
            "revision": {
                "processType": "Ticking",
                "revision": 1,
                "contentHash": "ab" * 32,
                "deployment": DEPLOYMENT.to_wire(),
                "registeredAtMs": 1_700_000_000_000,
            },
            "changed": True,
        }
    ]
}


class Ticking(ShopProcess):
    schedules = (
        ScheduleDeclaration(
            schedule_id="ticks",
            spec=interval_spec(60, jitter_seconds=5),
            start_state_id="Start",
            start_state_input=encoding.encode("input", {"item": "tea", "quantity": 1}),
            overlap_policy=ScheduleOverlapPolicy.ALLOW_ALL,
            catchup_window_seconds=120,
            note="declared in code",
        ),
        ScheduleDeclaration(
            schedule_id="nightly",
            spec=cron_spec("0 3 * * *", time_zone="Europe/Paris"),
            start_state_id="Recover",
            start_state_config=AsyncStateConfig(skip_wait_until=False),
        ),
        ScheduleDeclaration(schedule_id="bare", spec=cron_spec("*/5 * * * *")),
    )


def test_the_spec_helpers_write_the_wire_specs() -> None:
    assert cron_spec("0 3 * * *").to_wire() == {"cron": {"expression": "0 3 * * *"}}
    assert cron_spec("0 3 * * MON", time_zone="Europe/Paris").to_wire() == {
        "cron": {"expression": "0 3 * * MON", "timeZone": "Europe/Paris"}
    }
    assert interval_spec(60).to_wire() == {"interval": {"everySeconds": 60}}
    assert interval_spec(60, jitter_seconds=5).to_wire() == {
        "interval": {"everySeconds": 60, "jitterSeconds": 5}
    }


def test_declared_schedules_go_with_the_definition() -> None:
    wire = export_definition(Ticking()).to_wire()
    ticks, nightly, bare = wire["schedules"]
    assert ticks == {
        "scheduleId": "ticks",
        "spec": {"interval": {"everySeconds": 60, "jitterSeconds": 5}},
        "startStateId": "Start",
        "startStateInput": encoding.encode("input", {"item": "tea", "quantity": 1}).to_wire(),
        "overlapPolicy": "ALLOW_ALL",
        "catchupWindowSeconds": 120,
        "note": "declared in code",
    }
    assert nightly == {
        "scheduleId": "nightly",
        "spec": {"cron": {"expression": "0 3 * * *", "timeZone": "Europe/Paris"}},
        "startStateId": "Recover",
        "startStateConfig": {"skipWaitUntil": False},
    }
    assert bare == {"scheduleId": "bare", "spec": {"cron": {"expression": "*/5 * * * *"}}}
    body = {"deployment": DEPLOYMENT.to_wire(), "definitions": [wire], "force": False}
    Contract(json.loads(DOCUMENT.read_text())).check_request(DEFINITIONS_REGISTER, body)


def test_a_process_without_schedules_registers_as_before() -> None:
    assert "schedules" not in export_definition(ShopProcess).to_wire()
    assert export_definition(NoTableProcess).model_dump_json() == (
        '{"localAttributes":[],"localQueues":[],"processType":"NoTableProcess","rpcs":[],'
        '"startStates":[],"states":[{"config":{"skipWaitUntil":true},"hasWaitUntil":false,'
        '"id":"Recover"}],"versioningPolicy":"PINNED"}'
    )

    class Emptied(NoTableProcess):
        schedules = ()

    assert "schedules" not in export_definition(Emptied()).to_wire()


async def test_the_worker_registers_the_declared_schedules() -> None:
    seen: list[dict[str, Any]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == DEFINITIONS_REGISTER
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=REGISTERED)

    worker = WorkerService(Ticking(), NoTableProcess())
    http = httpx.AsyncClient(transport=httpx.MockTransport(handle))
    async with AsyncClient("http://xdb", http_client=http) as client:
        await worker.register_definitions(client, DEPLOYMENT)
    [body] = seen
    ticking, no_table = body["definitions"]
    assert ticking == export_definition(Ticking).to_wire()
    assert [s["scheduleId"] for s in ticking["schedules"]] == ["ticks", "nightly", "bare"]
    assert "schedules" not in no_table


def test_describe_schedule_reads_who_declared_it() -> None:
    answer = {
        "schedule": {
            "scheduleId": "ticks",
            "spec": {"interval": {"everySeconds": 60}},
            "start": {"processType": "Ticking", "workerUrl": "http://worker:8000"},
            "overlapPolicy": "ALLOW_ALL",
            "catchupWindowSeconds": 60,
            "paused": False,
            "createdTimestampMs": 1,
            "updatedTimestampMs": 1,
            "declaredBy": "Ticking",
        },
        "nextFireTimestampsMs": [],
    }

    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == SCHEDULE_DESCRIBE
        return httpx.Response(200, json=answer)

    with sync_client(handle) as client:
        assert client.describe_schedule("ticks").schedule.declared_by == "Ticking"


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        (ScheduleDeclaration(schedule_id="x", spec=cron_spec("0 3 * * *")), "not a list"),
        ({"scheduleId": "x"}, "not a list"),
        ([{"scheduleId": "x"}], "is not a ScheduleDeclaration"),
        (
            [
                ScheduleDeclaration(schedule_id="x", spec=interval_spec(1)),
                ScheduleDeclaration(schedule_id="x", spec=interval_spec(2)),
            ],
            "'x' is declared twice",
        ),
        (
            [ScheduleDeclaration(schedule_id="x", spec=interval_spec(1), start_state_id="Nope")],
            "state 'Nope', which is not registered",
        ),
    ],
)
def test_a_declaration_that_is_not_schedules_is_refused(declared: Any, message: str) -> None:
    class Wrong(NoTableProcess):
        schedules: ClassVar[Any] = declared

        def get_state_schema(self) -> StateSchema:
            return StateSchema.with_starting_state(Start(), Recover())

    with pytest.raises(SchemaError, match=rf"Wrong: .*{message}"):
        export_definition(Wrong())
