"""The design's sign-up walk-through against real services, on PostgreSQL and MariaDB."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import pytest

from samples.user_signup import Form, UserSignupProcess, VerifyMessage, process_id, start_signup
from tests.integration.conftest import Samples
from tests.integration.harness import Database, await_until
from xdb import (
    AsyncClient,
    HistoryEventType,
    ProcessAlreadyStartedError,
    ProcessClosedDuringRpcError,
    ProcessIdReusePolicy,
    ProcessNotRunningError,
    ProcessStartOptions,
    ProcessStatus,
    decode_payload,
)


def new_user() -> tuple[str, Form]:
    user = f"u-{uuid.uuid4().hex[:12]}"
    return user, Form(email=f"{user}@example.com", name="Ada")


async def test_signup_reminds_then_verifies_by_rpc(
    client: AsyncClient, database: Database, samples: Samples
) -> None:
    user, form = new_user()
    pid = process_id(user)
    execution_id = await start_signup(client, user, form)

    row = database.row("user", "user_id", user)
    assert row is not None, "the start writes the row in its transaction"
    assert row["status"] == "waiting"
    assert row["form"] == {"email": form.email, "name": "Ada"}

    # The verification email, then at least one reminder from the durable timer.
    async def reminded() -> bool:
        return "reminder" in samples.outbox.kinds(form.email)

    await await_until("a reminder email", reminded)
    assert samples.outbox.kinds(form.email)[0] == "verification"
    described = await client.describe_process(pid)
    assert described.status == ProcessStatus.RUNNING
    assert described.process_execution_id == execution_id

    # Two verifications at once: the RPC's exclusive lock lets exactly one say "done".
    outcomes = await asyncio.gather(
        client.invoke_rpc(pid, UserSignupProcess.verify, "email"),
        client.invoke_rpc(pid, UserSignupProcess.verify, "sms"),
        return_exceptions=True,
    )
    assert outcomes.count("done") == 1, outcomes
    other = next(o for o in outcomes if o != "done")
    # The loser waits for the winner's lock; by then the process may have completed.
    assert other == "already verified" or isinstance(
        other, ProcessNotRunningError | ProcessClosedDuringRpcError
    ), other

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
