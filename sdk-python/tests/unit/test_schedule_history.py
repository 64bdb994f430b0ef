"""The schedules' audit history call: its request, its answer, and its retries as a read."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.unit.scripted_service import Answer, Drop, refusal
from tests.unit.scripted_service import scripted_service as serve
from tests.unit.test_client import async_client, sent_body, sync_client
from xdb import AsyncClient, InvalidRequestError
from xdb.protocol import SCHEDULE_HISTORY, ScheduleChangeAction

SCHEDULE = {
    "scheduleId": "nightly",
    "spec": {"cron": {"expression": "0 3 * * *", "timeZone": "Europe/Paris"}},
    "start": {"processType": "ShopProcess", "workerUrl": "http://worker"},
    "overlapPolicy": "SKIP",
    "catchupWindowSeconds": 60,
    "paused": False,
    "createdTimestampMs": 1_700_000_000_000,
    "updatedTimestampMs": 1_700_000_000_000,
}
PAUSED = {**SCHEDULE, "paused": True, "reason": "maintenance"}
CHANGES = {
    "changes": [
        {
            "changeId": 9,
            "scheduleId": "nightly",
            "action": "TRIGGERED",
            "before": PAUSED,
            "after": PAUSED,
            "detail": "process id nightly-1700000000000",
            "changedBy": "anonymous",
            "changedTimestampMs": 1_700_000_000_002,
            "future": "ignored",
        },
        {
            "changeId": 8,
            "scheduleId": "nightly",
            "action": "PAUSED",
            "before": SCHEDULE,
            "after": PAUSED,
            "changedBy": "ops",
            "reason": "maintenance",
            "changedTimestampMs": 1_700_000_000_001,
        },
    ],
    "nextPageToken": "n",
}


def answers(seen: list[tuple[str, dict[str, Any]]]) -> Any:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, sent_body(request)))
        return httpx.Response(200, json=CHANGES)

    return handler


async def test_history_sends_its_filters_and_reads_the_changes() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    client = async_client(answers(seen))
    history = await client.schedule_history(schedule_id="nightly", page_size=2)
    assert history.next_page_token == "n"
    assert [(c.action, c.changed_by) for c in history.changes] == [
        (ScheduleChangeAction.TRIGGERED, "anonymous"),
        (ScheduleChangeAction.PAUSED, "ops"),
    ]
    trigger, pause = history.changes
    assert trigger.detail == "process id nightly-1700000000000"
    assert pause.before is not None
    assert pause.after is not None
    assert (pause.before.paused, pause.after.paused, pause.reason) == (False, True, "maintenance")
    await client.schedule_history(next_page_token="n")
    await client.schedule_history()
    await client.aclose()
    assert seen == [
        (SCHEDULE_HISTORY, {"scheduleId": "nightly", "pageSize": 2}),
        (SCHEDULE_HISTORY, {"nextPageToken": "n"}),
        (SCHEDULE_HISTORY, {}),
    ]


def test_the_blocking_client_has_the_history_call() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []
    with sync_client(answers(seen)) as client:
        history = client.schedule_history(schedule_id="gone", next_page_token="n")
        assert history.changes[0].change_id == 9
    assert seen == [(SCHEDULE_HISTORY, {"scheduleId": "gone", "nextPageToken": "n"})]


async def test_history_is_sent_again_as_a_read_and_a_refusal_is_final() -> None:
    with serve(Drop(), refusal(503, "DATABASE_UNAVAILABLE", "0"), Answer(200, CHANGES)) as service:
        async with AsyncClient(service.url, max_retry_delay=0.05) as c:
            history = await c.schedule_history(schedule_id="nightly")
            assert len(history.changes) == 2
    assert [s.path for s in service.seen] == [SCHEDULE_HISTORY] * 3
    assert len({s.body for s in service.seen}) == 1, "the same bytes every time"
    assert "requestId" not in service.seen[0].json()
    bad = Answer(400, {"subType": "INVALID_REQUEST", "message": "pageSize: 1 to 1000, not 0"})
    with serve(bad) as service:
        async with AsyncClient(service.url, max_retry_delay=0.05) as c:
            with pytest.raises(InvalidRequestError, match="pageSize"):
                await c.schedule_history(page_size=0)
    assert len(service.seen) == 1
