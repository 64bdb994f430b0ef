"""Request ids against the real service: a write sent again with its id is answered as the
first was and not done twice; the id reused for another request is a conflict."""

from __future__ import annotations

import uuid

import pytest

from tests.integration.processes import EchoProcess
from xdb import (
    AsyncClient,
    HistoryEventType,
    ProcessNotRunningError,
    ProcessStatus,
    RequestIdConflictError,
)


async def test_a_start_sent_again_with_its_id_starts_once(client: AsyncClient) -> None:
    run = uuid.uuid4().hex[:10]
    pid = f"request-id-start-{run}"
    first = await client.start_process(pid, EchoProcess, {"n": 1}, request_id=f"start-{run}")
    # As after a lost answer: the same id and body answer the first start's execution,
    # where a new start would be refused (the execution is running).
    again = await client.start_process(pid, EchoProcess, {"n": 1}, request_id=f"start-{run}")
    assert again == first
    listed = await client.list_processes(process_id=pid)
    assert [e.process_execution_id for e in listed.executions] == [first]
    # The same id for another body, or another operation: refused, nothing done.
    with pytest.raises(RequestIdConflictError):
        await client.start_process(pid, EchoProcess, {"n": 2}, request_id=f"start-{run}")
    with pytest.raises(RequestIdConflictError):
        await client.pause(pid, request_id=f"start-{run}")
    assert (await client.describe_process(pid)).paused is None

    # Publish twice with one id: the messages are published once.
    await client.publish_to_local_queue(pid, "go", process_execution_id=first, request_id=run)
    await client.publish_to_local_queue(pid, "go", process_execution_id=first, request_id=run)
    done = await client.wait_for_completion(pid, 30)
    assert done.status == ProcessStatus.COMPLETED
    published = await client.get_process_history(
        pid, event_types=[HistoryEventType.LOCAL_QUEUE_MESSAGES_PUBLISHED]
    )
    assert len(published.events) == 1


async def test_a_stop_sent_again_with_its_id_is_answered_as_the_first(
    client: AsyncClient,
) -> None:
    run = uuid.uuid4().hex[:10]
    pid = f"request-id-stop-{run}"
    execution = await client.start_process(pid, EchoProcess)
    await client.stop_process(pid, reason="r", process_execution_id=execution, request_id=run)
    # The execution is closed now: the same stop is answered as before, a new one refused.
    await client.stop_process(pid, reason="r", process_execution_id=execution, request_id=run)
    with pytest.raises(ProcessNotRunningError):
        await client.stop_process(pid, reason="r", process_execution_id=execution)
    described = await client.describe_process(pid)
    assert described.status == ProcessStatus.TERMINATED
    closed = await client.get_process_history(pid, event_types=[HistoryEventType.PROCESS_CLOSED])
    assert len(closed.events) == 1
