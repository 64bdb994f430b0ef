"""The design's sign-up walk-through against real services, on PostgreSQL and MariaDB.

The RPC's message reaches ``VerifyState`` in both orders, each forced: queued before the
state's wait begins (the worker's gate holds the waitUntil call), and during the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from samples.user_signup import Form, UserSignupProcess, VerifyMessage, process_id, start_signup
from tests.integration.conftest import Samples
from tests.integration.gate import wait_until_of
from tests.integration.harness import (
    Database,
    ThreadedWorker,
    XdbServer,
    await_until,
    running_worker,
)
from xdb import (
    AsyncClient,
    HistoryEventType,
    ProcessAlreadyStartedError,
    ProcessIdReusePolicy,
    ProcessNotRunningError,
    ProcessStartOptions,
    ProcessStatus,
    StateExecutionStatus,
    WorkerService,
    decode_payload,
)


def new_user() -> tuple[str, Form]:
    user = f"u-{uuid.uuid4().hex[:12]}"
    return user, Form(email=f"{user}@example.com", name="Ada")


@pytest.fixture(scope="module")
def patient_worker(samples: Samples) -> Iterator[ThreadedWorker]:
    """A second worker whose reminder is an hour away: no timer ends its waits."""
    service = WorkerService(UserSignupProcess(samples.outbox, timedelta(hours=1)))
    with running_worker(service) as w:
        yield w


def as_json(events: Sequence[BaseModel]) -> list[dict[str, Any]]:
    """History events as the service sent them: their details read as plain JSON."""
    return [e.model_dump(mode="json", by_alias=True) for e in events]


def only_event(events: list[dict[str, Any]], event_type: str, **fields: Any) -> int:
    """The position of the only ``event_type`` event whose details have ``fields``."""
    found = [
        i
        for i, e in enumerate(events)
        if e["eventType"] == event_type
        and isinstance(e["details"], dict)
        and all(e["details"].get(k) == v for k, v in fields.items())
    ]
    listed = "\n".join(f"{e['eventType']} {e['details']}" for e in events)
    assert len(found) == 1, f"one {event_type} with {fields} in\n{listed}"
    return found[0]


def only_verify_consumed(events: list[dict[str, Any]], state_execution_id: str) -> int:
    """The position of the history's only consumption: one message of queue ``verify``."""
    at = only_event(events, "LOCAL_QUEUE_MESSAGES_CONSUMED")
    details = events[at]["details"]
    assert details.get("stateExecutionId") == state_execution_id, details
    assert details.get("queueName") == "verify", details
    messages = details.get("messages")
    assert isinstance(messages, list), details
    assert len(messages) == 1, details
    assert isinstance(messages[0].get("sequenceId"), int), details
    return at


async def test_signup_reminds_then_verifies_by_rpc(
    client: AsyncClient, database: Database, samples: Samples, worker: ThreadedWorker
) -> None:
    user, form = new_user()
    pid = process_id(user)
    # VerifyState's second waitUntil is held until the RPCs have answered, so the RPC's
    # message is queued before that wait begins and the wait takes it at once.
    with worker.gate.holding(wait_until_of(pid, "VerifyState-2")) as gate:
        execution_id = await start_signup(client, user, form)

        row = database.row("user", "user_id", user)
        assert row is not None, "the start writes the row in its transaction"
        assert row["status"] == "waiting"
        assert row["form"] == {"email": form.email, "name": "Ada"}

        # The verification email, a reminder from the durable timer, then the next
        # VerifyState's waitUntil, held.
        async def held() -> bool:
            return gate.held > 0

        await await_until("VerifyState-2's waitUntil held by the gate", held)
        assert samples.outbox.kinds(form.email) == ["verification", "reminder"]
        states = (await client.states(pid)).states
        assert [(s.state_execution_id, s.status) for s in states] == [
            ("SubmitState-1", StateExecutionStatus.COMPLETED),
            ("VerifyState-1", StateExecutionStatus.COMPLETED),
            ("VerifyState-2", StateExecutionStatus.WAIT_UNTIL_RUNNING),
        ]
        described = await client.describe_process(pid)
        assert described.status == ProcessStatus.RUNNING
        assert described.process_execution_id == execution_id

        # Two verifications at once: the RPC's exclusive lock lets exactly one say "done";
        # the other waits for its lock, then sees "verified".
        outcomes = await asyncio.gather(
            client.invoke_rpc(pid, UserSignupProcess.verify, "email"),
            client.invoke_rpc(pid, UserSignupProcess.verify, "sms"),
        )
        assert sorted(outcomes) == ["already verified", "done"], outcomes

    done = await client.wait_for_completion(pid, timeout=30)
    assert done.status == ProcessStatus.COMPLETED
    assert decode_payload(done.result, str) == "done"
    kinds = samples.outbox.kinds(form.email)
    assert kinds.count("welcome") == 1
    assert kinds.count("verification") == 1

    row = database.row("user", "user_id", user)
    assert row is not None
    assert row["status"] == "verified"
    source = row["source"]
    assert source in ("email", "sms")
    assert outcomes[0 if source == "email" else 1] == "done"

    # A closed execution accepts no RPC; the id-reuse policy guards a second start.
    with pytest.raises(ProcessNotRunningError):
        await client.invoke_rpc(pid, UserSignupProcess.verify, "email")
    with pytest.raises(ProcessAlreadyStartedError) as refused:
        await client.start_process(
            pid,
            UserSignupProcess,
            options=ProcessStartOptions(
                global_attribute_pk_value=user,
                id_reuse_policy=ProcessIdReusePolicy.DISALLOW_REUSE,
            ),
        )
    assert refused.value.status == 409

    history = await client.get_process_history(pid)
    types = [e.event_type for e in history.events]
    assert types[0] == "PROCESS_STARTED", types
    assert "TIMER_FIRED" in types, types
    # A page at a time, and filtered by one type: the same events as the whole history.
    first = await client.get_process_history(pid, execution_id, page_size=1)
    assert first.events == history.events[:1]
    assert first.next_after_event_id == history.events[0].event_id
    paged = [e async for e in client.iter_process_history(pid, execution_id, page_size=1)]
    assert paged == history.events
    timers = [
        e
        async for e in client.iter_process_history(
            pid, page_size=1, event_types=[HistoryEventType.TIMER_FIRED]
        )
    ]
    assert timers == [e for e in history.events if e.event_type == "TIMER_FIRED"]
    listed = await client.list_processes(process_id=pid, process_type=UserSignupProcess)
    assert [e.process_execution_id for e in listed.executions] == [execution_id]

    # The winner's message was queued before VerifyState-2's wait began; the wait's answer
    # took it, and its consumption is recorded as one arriving during a wait is.
    events = as_json(history.events)
    rpc_done = only_event(events, "RPC_COMPLETED", rpcName="verify", published=1)
    queued = only_event(events, "LOCAL_QUEUE_MESSAGES_PUBLISHED", rpcName="verify", messages=1)
    second_wait = only_event(events, "WAIT_UNTIL_COMPLETED", stateExecutionId="VerifyState-2")
    consumed = only_verify_consumed(events, "VerifyState-2")
    assert rpc_done < queued < second_wait < consumed, types


async def test_signup_verified_while_waiting_records_the_consumption(
    server: XdbServer, patient_worker: ThreadedWorker, samples: Samples
) -> None:
    user, form = new_user()
    pid = process_id(user)
    async with AsyncClient(server.url, worker_url=patient_worker.url) as patient:
        execution_id = await start_signup(patient, user, form)

        async def waiting() -> bool:
            states = (await patient.states(pid)).states
            return any(
                s.state_execution_id == "VerifyState-1"
                and s.status == StateExecutionStatus.WAITING_COMMANDS
                for s in states
            )

        await await_until("VerifyState-1 waiting on its commands", waiting)
        assert await patient.invoke_rpc(pid, UserSignupProcess.verify, "email") == "done"
        done = await patient.wait_for_completion(pid, timeout=30)
        assert done.status == ProcessStatus.COMPLETED
        assert samples.outbox.kinds(form.email) == ["verification", "welcome"]
        events = as_json((await patient.get_process_history(pid, execution_id)).events)

    # The message arrived during the wait: the RPC's transaction handed it to the waiting
    # state, recording the consumption, then the publish that caused it.
    types = [e["eventType"] for e in events]
    first_wait = only_event(events, "WAIT_UNTIL_COMPLETED", stateExecutionId="VerifyState-1")
    rpc_done = only_event(events, "RPC_COMPLETED", rpcName="verify", published=1)
    consumed = only_verify_consumed(events, "VerifyState-1")
    queued = only_event(
        events, "LOCAL_QUEUE_MESSAGES_PUBLISHED", rpcName="verify", messages=1, duplicates=0
    )
    assert first_wait < rpc_done < consumed < queued, types
    assert "TIMER_FIRED" not in types, types


async def test_signup_verified_through_the_local_queue(
    client: AsyncClient, database: Database, samples: Samples
) -> None:
    user, form = new_user()
    pid = process_id(user)
    await start_signup(client, user, form)
    await client.publish_to_local_queue(pid, "verify", VerifyMessage(source="qr-code"), "m-1")
    # The duplicate is dropped, or refused when the first message completed the process.
    with contextlib.suppress(ProcessNotRunningError):
        await client.publish_to_local_queue(pid, "verify", VerifyMessage(source="dup"), "m-1")

    done = await client.wait_for_completion(pid, timeout=30)
    assert done.status == ProcessStatus.COMPLETED
    row = database.row("user", "user_id", user)
    assert row is not None
    assert (row["status"], row["source"]) == ("verified", "qr-code")
    assert samples.outbox.kinds(form.email)[-1] == "welcome"
