"""The SDK's requests and answers, and XDB's worker calls, against the served OpenAPI document."""

from __future__ import annotations

import re
import time
import uuid

import httpx
import psycopg
import pytest

from samples.user_signup import Form, UserSignupProcess, process_id, start_signup
from tests.contract import Contract
from tests.integration.harness import (
    Database,
    Recording,
    ThreadedWorker,
    XdbServer,
    _mysql_connect,
    _pg_conninfo,
    await_until,
    running_worker,
)
from tests.integration.processes import (
    CALLS,
    EchoProcess,
    FlakyProcess,
    PlaceOrder,
    RegisteredOrderProcess,
    ShipOrder,
    StuckProcess,
)
from xdb import (
    AsyncClient,
    AsyncState,
    BatchNotFoundError,
    BatchOperation,
    BatchStatus,
    BusinessTableRef,
    CallPhase,
    ClaimOrder,
    CommandResults,
    Communication,
    Context,
    ControlNotApplicableError,
    DefinitionNotFoundError,
    FilterNode,
    FlowLimits,
    FlowLimitSource,
    HistoryEventType,
    InvalidRequestError,
    Persistence,
    PersistenceField,
    PersistenceSchema,
    Process,
    ProcessAlreadyStartedError,
    ProcessIdReusePolicy,
    ProcessNotFoundError,
    ProcessNotRunningError,
    ProcessStartOptions,
    ProcessStatus,
    Reprioritization,
    ReprioritizedDetails,
    ScheduleNotFoundError,
    StateApiName,
    StateDecision,
    StateExecutionStatus,
    StateSchema,
    WorkerDeployment,
    WorkerService,
)
from xdb.protocol import (
    LIST,
    OPENAPI,
    CountGroupBy,
    CronSpec,
    ExecutionField,
    FieldCondition,
    FilterAnd,
    FilterOp,
    GroupByField,
    GroupField,
    IntervalSpec,
    ProcessExecutionCountRequest,
    ScheduleChangeAction,
    ScheduleCreateRequest,
    ScheduleOverlapPolicy,
    ScheduleSpec,
    ScheduleStartTemplate,
    ScheduleUpdateRequest,
    StateExecutionInfo,
)


async def failed_and_waiting(client: AsyncClient, process_id: str, attempt: int) -> bool:
    """Whether the only state's ``attempt`` failed and the next waits out its backoff."""
    view = await client.states(process_id)
    if len(view.states) != 1:
        return False
    state = view.states[0]
    return (
        state.last_failure is not None
        and state.last_failure.attempt == attempt
        and state.pending_call is not None
        and state.pending_call.phase == CallPhase.SCHEDULED
    )


async def only_state(client: AsyncClient, process_id: str) -> StateExecutionInfo:
    (state,) = (await client.states(process_id)).states
    return state


async def exercise_the_operator_calls(client: AsyncClient, stuck: str) -> None:
    """Pause, resume, retry now and give up a state that keeps failing.

    Its retry waits out a 300 s backoff, so each control meets the execution as the test
    left it: nothing is called between two controls unless a control asks for it.
    """
    execution = await client.start_process(stuck, StuckProcess)
    with pytest.raises(ControlNotApplicableError, match="not paused"):
        await client.resume(stuck)
    await await_until("the first attempt to fail", lambda: failed_and_waiting(client, stuck, 1))
    state = await only_state(client, stuck)
    sid = state.state_execution_id
    assert (state.state_id, state.status) == ("FailAlways", StateExecutionStatus.EXECUTE_RUNNING)
    assert state.last_failure is not None
    assert state.last_failure.api == StateApiName.EXECUTE
    assert "the ledger is unreachable" in state.last_failure.error
    assert state.pending_call is not None
    assert (state.pending_call.api, state.pending_call.attempt) == (StateApiName.EXECUTE, 2)
    assert state.pending_call.due_timestamp_ms > state.last_failure.timestamp_ms + 200_000

    paused = await client.pause(stuck, reason="maintenance", identity="ops@example.com")
    assert paused.state_execution_ids == [sid]
    with pytest.raises(ControlNotApplicableError):
        await client.pause(stuck)
    with pytest.raises(ControlNotApplicableError):
        await client.retry_now(stuck)
    view = await client.states(stuck, execution)
    assert view.paused is not None
    assert (view.paused.reason, view.paused.identity) == ("maintenance", "ops@example.com")
    assert view.states[0].pending_call is not None
    assert view.states[0].pending_call.phase == CallPhase.PAUSED
    described = await client.describe_process(stuck)
    assert described.paused is not None
    assert described.parked_tasks == 0
    assert (await client.list_processes(process_id=stuck)).executions[0].paused

    assert (await client.resume(stuck, process_execution_id=execution)).state_execution_ids == [sid]
    view = await client.states(stuck)
    assert view.paused is None
    released = view.states[0].pending_call
    assert released is not None
    # Released at its own due time, still minutes away: nothing runs until retry-now.
    assert released.phase == CallPhase.SCHEDULED
    assert released.due_timestamp_ms == state.pending_call.due_timestamp_ms

    retried = await client.retry_now(
        stuck, state_execution_id=sid, reason="the ledger is back", identity="ops@example.com"
    )
    assert retried.state_execution_ids == [sid]
    await await_until("the retried attempt to fail", lambda: failed_and_waiting(client, stuck, 2))
    given_up = await client.give_up(stuck, state_execution_id=sid, reason="bad input")
    assert given_up.state_execution_ids == [sid]
    done = await client.wait_for_completion(stuck, 30)
    assert done.status == ProcessStatus.FAILED
    assert (await only_state(client, stuck)).status == StateExecutionStatus.FAILED
    with pytest.raises(ProcessNotRunningError):
        await client.retry_now(stuck)
    with pytest.raises(ProcessNotRunningError):
        await client.reprioritize(stuck, priority=1)

    controls = [
        HistoryEventType.PAUSED,
        HistoryEventType.RESUMED,
        HistoryEventType.RETRY_REQUESTED,
        HistoryEventType.GIVE_UP_REQUESTED,
    ]
    history = await client.get_process_history(stuck, execution, event_types=controls)
    assert [e.event_type for e in history.events] == controls
    assert all(e.details["stateExecutionIds"] == [sid] for e in history.events)
    assert history.events[2].details["reason"] == "the ledger is back"


class SlowShipOrder(ShipOrder):
    """``ShipOrder`` declaring a limit of its own."""

    flow_limits = FlowLimits(max_calls_per_second=0.5, max_concurrent_calls=4)

    @classmethod
    def get_state_id(cls) -> str:
        return "ShipOrder"


class LimitedOrderProcess(RegisteredOrderProcess):
    """An order type of its own name that declares flow limits; nothing starts it."""

    flow_limits = FlowLimits(max_calls_per_second=20)

    def __init__(self, process_type: str = "LimitedOrderProcess") -> None:
        self.process_type = process_type

    def get_process_type(self) -> str:
        return self.process_type

    def get_state_schema(self) -> StateSchema:
        return StateSchema.with_starting_state(PlaceOrder(), SlowShipOrder())


async def exercise_flow_limits(client: AsyncClient, run: str) -> None:
    """Declared at registration, overridden, refused, cleared, and their history."""
    process_type = f"LimitedOrder{run}"
    deployment = WorkerDeployment(
        name="contract-limits", version=run, worker_url=f"http://127.0.0.1:9/limits-{run}"
    )
    await client.register_definitions(deployment, [LimitedOrderProcess(process_type)])
    declared = await client.list_flow_limits(process_type=process_type)
    assert [(e.state_id, e.declared, e.override) for e in declared.limits] == [
        (None, FlowLimits(max_calls_per_second=20), None),
        ("ShipOrder", FlowLimits(max_calls_per_second=0.5, max_concurrent_calls=4), None),
    ]
    entry = await client.set_flow_limits(
        process_type,
        FlowLimits(max_calls_per_second=2.5, max_concurrent_calls=3),
        state_id="ShipOrder",
        reason="contract test",
    )
    assert entry.effective == FlowLimits(max_calls_per_second=2.5, max_concurrent_calls=3)
    assert entry.declared == FlowLimits(max_calls_per_second=0.5, max_concurrent_calls=4)
    unlimited = await client.set_flow_limits(process_type, FlowLimits())
    assert unlimited.effective.max_calls_per_second is None
    with pytest.raises(InvalidRequestError, match="maxCallsPerSecond"):
        await client.set_flow_limits(process_type, FlowLimits(max_calls_per_second=0))
    with pytest.raises(InvalidRequestError, match=r"override\.maxConcurrentCalls"):
        await client.set_flow_limits(
            process_type, FlowLimits(max_concurrent_calls=0), state_id="ShipOrder"
        )
    with pytest.raises(InvalidRequestError, match=r"override\.maxConcurrentCalls"):
        await client.set_flow_limits(process_type, FlowLimits(max_concurrent_calls=100_001))
    with pytest.raises(InvalidRequestError, match="stateId"):
        await client.set_flow_limits(
            process_type, FlowLimits(max_calls_per_second=1), state_id="NoSuchState"
        )
    cleared = await client.set_flow_limits(process_type, None)
    assert (cleared.override, cleared.effective) == (None, FlowLimits(max_calls_per_second=20))
    after = await client.list_flow_limits(process_type=process_type)
    assert [(e.state_id, e.effective) for e in after.limits] == [
        (None, FlowLimits(max_calls_per_second=20)),
        ("ShipOrder", FlowLimits(max_calls_per_second=2.5, max_concurrent_calls=3)),
    ], "the refused changes changed nothing"
    first = await client.flow_limit_history(process_type=process_type, page_size=3)
    assert [(c.source, c.state_id, c.after) for c in first.changes] == [
        (FlowLimitSource.OPERATOR, None, None),
        (FlowLimitSource.OPERATOR, None, FlowLimits()),
        (
            FlowLimitSource.OPERATOR,
            "ShipOrder",
            FlowLimits(max_calls_per_second=2.5, max_concurrent_calls=3),
        ),
    ]
    assert first.changes[2].reason == "contract test"
    assert first.next_page_token is not None
    rest = await client.flow_limit_history(
        process_type=process_type, next_page_token=first.next_page_token
    )
    assert {c.source for c in rest.changes} == {FlowLimitSource.DEFINITION}
    assert {c.state_id for c in rest.changes} == {None, "ShipOrder"}


async def test_requests_answers_and_worker_calls_match_the_served_document(
    client: AsyncClient,
    server: XdbServer,
    worker: ThreadedWorker,
    client_recording: Recording,
) -> None:
    async with httpx.AsyncClient() as http:
        contract = Contract((await http.get(server.url + OPENAPI, timeout=10)).json())
    run = uuid.uuid4().hex[:10]

    echo = f"contract-echo-{run}"
    await client.start_process(
        echo,
        EchoProcess,
        {"nested": [1, "two", None]},
        ProcessStartOptions(initial_local_attributes={"note": "from the start"}, timeout=600),
    )
    await client.describe_process(echo)
    await client.get_process_history(echo)
    await client.list_processes(process_type=EchoProcess, status=ProcessStatus.RUNNING)
    assert await client.invoke_rpc(echo, EchoProcess.echo, {"x": 1}) == {"x": 1}
    await client.publish_to_local_queue(echo, "go", None, dedup_id="go-1")
    assert (await client.wait_for_completion(echo, 30)).status == ProcessStatus.COMPLETED

    flaky = f"contract-flaky-{run}"
    await client.start_process(flaky, FlakyProcess)
    assert (await client.wait_for_completion(flaky, 30)).status == ProcessStatus.COMPLETED

    user = f"contract-{run}"
    await start_signup(client, user, Form(email=f"{user}@example.com"))
    assert await client.invoke_rpc(process_id(user), UserSignupProcess.verify, "email") == "done"
    await client.wait_for_completion(process_id(user), 30)
    stopped = f"contract-stop-{run}"
    await client.start_process(stopped, EchoProcess)
    await client.stop_process(stopped, reason="contract test")

    stuck = f"contract-stuck-{run}"
    await exercise_the_operator_calls(client, stuck)

    with pytest.raises(ProcessNotFoundError):
        await client.describe_process(f"no-such-process-{run}")
    with pytest.raises(ProcessNotFoundError):
        await client.pause(f"no-such-process-{run}")
    with pytest.raises(ProcessNotFoundError):
        await client.reset(f"no-such-process-{run}", "AnyState")
    with pytest.raises(ProcessAlreadyStartedError):
        await client.start_process(
            echo,
            EchoProcess,
            options=ProcessStartOptions(id_reuse_policy=ProcessIdReusePolicy.DISALLOW_REUSE),
        )

    # Registered definitions: a process type no other test starts, and a worker URL no
    # start names (a URL that registered types takes starts of those types only), so
    # that its checks change nothing for the other tests on this server.
    deployment = WorkerDeployment(
        name="contract", version=run, worker_url=f"http://127.0.0.1:9/contract-{run}"
    )
    registered = await client.register_definitions(deployment, [RegisteredOrderProcess])
    assert registered.registered[0].revision.process_type == "RegisteredOrderProcess"
    await client.list_definitions()
    await client.describe_definition(RegisteredOrderProcess)
    with pytest.raises(DefinitionNotFoundError):
        await client.describe_definition(f"NoSuchProcess{run}")
    # Deployments: the same deployment made current again, and a move of no execution.
    await client.list_deployments()
    await client.set_current_deployment("contract", run)
    moved = await client.move_executions(
        RegisteredOrderProcess, deployment, from_=deployment, process_ids=[f"none-{run}"]
    )
    assert moved.moved == 0
    # Counts (the filters' effects are the service's suite's): per status, and over the
    # registered type's table.
    by_status = await client.count_processes(
        ProcessExecutionCountRequest(
            process_type="EchoProcess", group_by=CountGroupBy(GroupByField(field=GroupField.STATUS))
        )
    )
    assert by_status.count >= 1
    await client.count_processes(
        ProcessExecutionCountRequest.model_validate(
            {
                "processType": "RegisteredOrderProcess",
                "where": {"field": "status", "op": "=", "value": "RUNNING"},
            }
        )
    )

    # Batches: one selecting no execution (a type nothing runs), read back and cancelled;
    # and a batch id no batch has.
    started = await client.start_batch(
        BatchOperation.PAUSE,
        process_type=f"NothingRuns{run}",
        where={"field": "status", "op": "=", "value": "RUNNING"},
        rate_per_second=10,
        reason="contract test",
        identity="tests",
    )
    assert started.expected == 0
    described = await client.describe_batch(started.batch_id)
    assert described.batch.operation == BatchOperation.PAUSE
    assert described.batch.request.process_type == f"NothingRuns{run}"
    listed = await client.list_batches(page_size=1000)
    assert started.batch_id in {b.batch_id for b in listed.batches}
    await client.cancel_batch(started.batch_id, reason="contract test", identity="tests")
    with pytest.raises(BatchNotFoundError):
        await client.describe_batch(str(uuid.uuid4()))

    # Schedules: one created paused (nothing fires on its own), changed, fired, backfilled
    # and deleted; and a schedule id no schedule has.
    schedule_id = f"contract-{run}"
    start = ScheduleStartTemplate(process_type=f"NothingRuns{run}", worker_url="http://127.0.0.1:1")
    created = await client.create_schedule(
        ScheduleCreateRequest(
            schedule_id=schedule_id,
            spec=ScheduleSpec(cron=CronSpec(expression="0 3 * * *", time_zone="Europe/Paris")),
            start=start,
            overlap_policy=ScheduleOverlapPolicy.BUFFER_ONE,
            paused=True,
        )
    )
    assert len(created.next_fire_timestamps_ms) == 10
    await client.update_schedule(
        ScheduleUpdateRequest(
            schedule_id=schedule_id,
            spec=ScheduleSpec(interval=IntervalSpec(every_seconds=3600, jitter_seconds=5)),
            start=start,
        )
    )
    await client.resume_schedule(schedule_id)
    await client.pause_schedule(schedule_id, reason="contract test")
    # Paused already: changes nothing, neither the reason nor the history.
    assert (await client.pause_schedule(schedule_id)).schedule.reason == "contract test"
    now_ms = int(time.time() * 1000)
    await client.backfill_schedule(schedule_id, now_ms - 7_200_000, now_ms - 3_600_000)
    fired = await client.trigger_schedule(schedule_id)
    assert fired.process_id.startswith(schedule_id)
    listed_schedules = await client.list_schedules(page_size=1000)
    assert schedule_id in {s.schedule_id for s in listed_schedules.schedules}
    assert (await client.describe_schedule(schedule_id)).schedule.paused
    await client.delete_schedule(schedule_id, reason="contract test")
    with pytest.raises(ScheduleNotFoundError):
        await client.describe_schedule(schedule_id)
    # Its history outlives it: every change above, newest first, by `anonymous` (the
    # server takes no token), with the schedule before and after and why.
    history = await client.schedule_history(schedule_id=schedule_id)
    assert [c.action for c in history.changes] == [
        ScheduleChangeAction.DELETED,
        ScheduleChangeAction.TRIGGERED,
        ScheduleChangeAction.BACKFILLED,
        ScheduleChangeAction.PAUSED,
        ScheduleChangeAction.RESUMED,
        ScheduleChangeAction.UPDATED,
        ScheduleChangeAction.CREATED,
    ]
    assert {c.changed_by for c in history.changes} == {"anonymous"}
    assert {c.schedule_id for c in history.changes} == {schedule_id}
    deleted, triggered, _, pause, _, updated, created_change = history.changes
    assert deleted.reason == "contract test"
    assert (deleted.before is not None, deleted.after) == (True, None)
    assert fired.process_id in (triggered.detail or "")
    assert pause.reason == "contract test"
    assert updated.before is not None
    assert updated.after is not None
    assert (updated.before.spec.interval, updated.after.spec.interval) == (
        None,
        IntervalSpec(every_seconds=3600, jitter_seconds=5),
    )
    assert (created_change.before, created_change.after is not None) == (None, True)
    assert history.next_page_token is None
    first = await client.schedule_history(schedule_id=schedule_id, page_size=3)
    assert [c.change_id for c in first.changes] == [c.change_id for c in history.changes[:3]]
    assert first.next_page_token is not None

    await exercise_flow_limits(client, run)

    sent = client_recording.all()
    assert {e.status for e in sent} >= {200, 404, 409}
    paths = set()
    for e in sent:
        contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)
        paths.add(e.path)
    service_paths = {p for p in contract.document["paths"] if "/service/" in p}
    assert service_paths <= paths, f"not exercised: {sorted(service_paths - paths)}"

    calls = [
        e
        for pid in (echo, flaky, process_id(user), stopped, stuck)
        for e in worker.recording.for_process(pid)
    ]
    assert {e.path.rsplit("/", 1)[-1] for e in calls} == {"wait-until", "execute", "rpc"}
    assert {e.status for e in calls} == {200, 500}
    for e in calls:
        contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)


class HeldEchoProcess(EchoProcess):
    """``EchoProcess`` under a type of its own: its state waits for a message on ``go``."""

    def __init__(self, process_type: str = "HeldEchoProcess") -> None:
        self.process_type = process_type

    def get_process_type(self) -> str:
        return self.process_type


async def test_starts_over_a_keys_running_limit_wait_pending_until_one_closes(
    client: AsyncClient, server: XdbServer, client_recording: Recording
) -> None:
    async with httpx.AsyncClient() as http:
        contract = Contract((await http.get(server.url + OPENAPI, timeout=10)).json())
    run = uuid.uuid4().hex[:10]
    # A type of this test's own, so that its limit holds no other test's starts.
    process = HeldEchoProcess(f"HeldEcho{run}")
    key = f"customer-{run}"

    entry = await client.set_flow_limits(
        process.process_type, FlowLimits(max_running_executions=1), reason="contract test"
    )
    assert entry.effective == FlowLimits(max_running_executions=1)
    with pytest.raises(InvalidRequestError, match=r"override\.maxRunningExecutions"):
        await client.set_flow_limits(
            process.process_type, FlowLimits(max_running_executions=1), state_id="Echo"
        )
    with pytest.raises(InvalidRequestError, match=r"override\.maxRunningExecutions"):
        await client.set_flow_limits(process.process_type, FlowLimits(max_running_executions=0))
    with pytest.raises(InvalidRequestError, match=r"processStartConfig\.concurrencyKey"):
        await client.start_process(
            f"held-{run}-bad-key", process, options=ProcessStartOptions(concurrency_key="")
        )

    with running_worker(WorkerService(process)) as held_worker:
        started: list[str] = []

        async def start(name: str, concurrency_key: str | None) -> str:
            pid = f"held-{run}-{name}"
            options = ProcessStartOptions(
                worker_url=held_worker.url, concurrency_key=concurrency_key
            )
            await client.start_process(pid, process, options=options)
            started.append(pid)
            return pid

        # A service instance reads the limits at most once a second: start on a key of
        # their own until a start waits, so that the limit is in force for what follows.
        probes = iter(range(1_000))

        async def a_probe_waits() -> bool:
            probe = await start(f"probe-{next(probes)}", f"probe-{run}")
            return (await client.describe_process(probe)).paused is not None

        await await_until("the limit to hold a start", a_probe_waits, interval=0.2)

        # Another key has a slot of its own; the second start of it waits for it.
        first = await start("first", key)
        second = await start("second", key)
        assert (await client.describe_process(first)).paused is None
        held = (await client.describe_process(second)).paused
        assert held is not None
        assert (held.pending_on_key, held.identity) == (key, "maxRunningExecutions")
        assert (held.reason or "").startswith("PENDING: waiting for a running slot"), held
        listed = await client.list_processes(process_type=process.process_type)
        summaries = {e.process_id: e for e in listed.executions}
        assert (summaries[first].pending, summaries[first].paused) == (False, False)
        assert (summaries[second].pending, summaries[second].paused) == (True, True)
        assert summaries[second].status == ProcessStatus.RUNNING
        with pytest.raises(ControlNotApplicableError, match="PENDING"):
            await client.resume(second)
        # Starts without a key share one, named "" where they wait.
        await start("unkeyed-1", None)
        unkeyed = await start("unkeyed-2", None)
        unkeyed_hold = (await client.describe_process(unkeyed)).paused
        assert unkeyed_hold is not None
        assert unkeyed_hold.pending_on_key == ""

        await await_until("the first to run its state", lambda: called(first), interval=0.05)
        await client.stop_process(first, reason="contract test")

        async def admitted() -> bool:
            return (await client.describe_process(second)).paused is None

        await await_until("the second to take the freed slot", admitted)
        assert not (await client.list_processes(process_id=second)).executions[0].pending
        await await_until("the second to run its state", lambda: called(second))
        resumed = await client.get_process_history(second, event_types=[HistoryEventType.RESUMED])
        assert [e.details.get("identity") for e in resumed.events] == ["maxRunningExecutions"]

        for pid in started:
            if pid != first:
                await client.stop_process(pid, reason="contract test")
    await client.set_flow_limits(process.process_type, None, reason="contract test")

    for e in client_recording.all():
        contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)


async def called(process_id: str) -> bool:
    """Whether the worker has run the state's ``wait_until`` for ``process_id``."""
    return bool(CALLS.of(process_id, "Echo.wait_until"))


EXPORTS_TABLE = "contract_exports"


class PrioritizedEchoProcess(HeldEchoProcess):
    """``HeldEchoProcess`` whose definition declares the priority of its starts: 2."""

    flow_limits = FlowLimits(priority=2)


async def exercise_a_types_priority(client: AsyncClient, run: str) -> None:
    """A type's priority: declared by its definition, overridden by an operator.

    Its starts that name none have it, a start's own wins; the override shows in the
    answer and in the history, refused on a state or out of range on its field.
    """
    process = PrioritizedEchoProcess(f"PriorityEcho{run}")
    process_type = process.process_type
    with running_worker(WorkerService(process)) as typed_worker:
        deployment = WorkerDeployment(
            name="contract-priority", version=run, worker_url=typed_worker.url
        )
        await client.register_definitions(deployment, [process])
        declared = await client.list_flow_limits(process_type=process_type)
        assert [(e.state_id, e.declared, e.override, e.effective) for e in declared.limits] == [
            (None, FlowLimits(priority=2), None, FlowLimits(priority=2))
        ]

        started: list[str] = []

        async def start(name: str, priority: int | None = None) -> int:
            pid = f"typed-{run}-{name}"
            options = ProcessStartOptions(worker_url=typed_worker.url, priority=priority)
            await client.start_process(pid, process, options=options)
            started.append(pid)
            return (await client.describe_process(pid)).priority

        # The registering instance applies the declared priority at once.
        assert await start("declared") == 2, "a start naming none has the type's"
        assert await start("own", priority=4) == 4, "a start's own wins"

        entry = await client.set_flow_limits(
            process_type, FlowLimits(priority=1), reason="launch day"
        )
        assert (entry.declared, entry.override) == (FlowLimits(priority=2), FlowLimits(priority=1))
        assert entry.effective.priority == 1
        assert await start("overridden") == 1
        assert await start("own-after", priority=4) == 4
        refusals: list[tuple[FlowLimits, str | None]] = [
            (FlowLimits(priority=1), "Echo"),
            (FlowLimits(priority=0), None),
            (FlowLimits(priority=6), None),
        ]
        for bad, state_id in refusals:
            with pytest.raises(InvalidRequestError, match=r"override\.priority") as refused:
                await client.set_flow_limits(process_type, bad, state_id=state_id)
            assert refused.value.status == 400

        history = await client.flow_limit_history(process_type=process_type)
        assert [(c.source, c.state_id, c.before, c.after) for c in history.changes] == [
            (FlowLimitSource.OPERATOR, None, None, FlowLimits(priority=1)),
            (FlowLimitSource.DEFINITION, None, None, FlowLimits(priority=2)),
        ], "the refusals are not among the changes"
        assert history.changes[0].reason == "launch day"

        for pid in started:
            await client.stop_process(pid, reason="contract test")
    await client.set_flow_limits(process_type, None, reason="contract test")


async def test_a_starts_priority_is_kept_listed_filtered_and_counted(
    client: AsyncClient, server: XdbServer, client_recording: Recording
) -> None:
    async with httpx.AsyncClient() as http:
        contract = Contract((await http.get(server.url + OPENAPI, timeout=10)).json())
    run = uuid.uuid4().hex[:10]
    urgent, plain, refused = (f"priority-{run}-{name}" for name in ("2", "none", "9"))

    await client.start_process(urgent, EchoProcess, options=ProcessStartOptions(priority=2))
    assert (await client.describe_process(urgent)).priority == 2
    await client.start_process(plain, EchoProcess)
    assert (await client.describe_process(plain)).priority == 3

    with pytest.raises(InvalidRequestError, match=r"processStartConfig\.priority") as bad:
        await client.start_process(refused, EchoProcess, options=ProcessStartOptions(priority=9))
    assert bad.value.status == 400
    with pytest.raises(ProcessNotFoundError):
        await client.describe_process(refused)

    # This run's executions only: other tests start EchoProcess on the same server.
    this_run = FilterNode(
        FieldCondition(
            field=ExecutionField.PROCESS_ID, op=FilterOp.PREFIX, value=f"priority-{run}-"
        )
    )
    listed = await client.list_processes(process_type=EchoProcess, where=this_run)
    assert {e.process_id: e.priority for e in listed.executions} == {urgent: 2, plain: 3}

    # A filter on the priority finds the execution started with it, and only that one.
    second = FilterNode(FieldCondition(field=ExecutionField.PRIORITY, op=FilterOp.EQ, value=2))
    found = await client.list_processes(where=FilterNode(FilterAnd(and_=[this_run, second])))
    assert [(e.process_id, e.priority) for e in found.executions] == [(urgent, 2)]

    # Grouped by priority, the groups' values are the numbers themselves.
    counted = await client.count_processes(
        ProcessExecutionCountRequest(
            where=this_run, group_by=CountGroupBy(GroupByField(field=GroupField.PRIORITY))
        )
    )
    assert counted.count == 2
    assert sorted((g.value, g.count) for g in counted.groups) == [(2, 1), (3, 1)]
    assert all(type(g.value) is int for g in counted.groups), counted.groups

    # A priority that does not exist is refused on the filter's value, for list and count.
    nine = {"field": "priority", "op": "=", "value": 9}
    with pytest.raises(InvalidRequestError, match=r"where\.value.*priority 9") as listing:
        await client.list_processes(where=nine)
    assert listing.value.status == 400
    with pytest.raises(InvalidRequestError, match=r"where\.value.*priority 9") as counting:
        await client.count_processes(ProcessExecutionCountRequest.model_validate({"where": nine}))
    assert counting.value.status == 400

    for pid in (urgent, plain):
        await client.stop_process(pid, reason="contract test")

    await exercise_a_types_priority(client, run)

    for e in client_recording.all():
        if e.status != 400:  # a refused request may break the document on purpose
            contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)


async def test_a_starts_fairness_key_and_weight_are_kept_and_bad_ones_start_nothing(
    client: AsyncClient, server: XdbServer, client_recording: Recording
) -> None:
    async with httpx.AsyncClient() as http:
        contract = Contract((await http.get(server.url + OPENAPI, timeout=10)).json())
    run = uuid.uuid4().hex[:10]
    tenant = f"tenant-{run}"

    def pid(name: str) -> str:
        return f"fairness-{run}-{name}"

    async def fairness(name: str) -> tuple[str | None, int | None]:
        described = await client.describe_process(pid(name))
        return described.fairness_key, described.fairness_weight

    await client.start_process(
        pid("weighed"),
        EchoProcess,
        options=ProcessStartOptions(fairness_key=tenant, fairness_weight=5),
    )
    assert await fairness("weighed") == (tenant, 5)
    await client.start_process(
        pid("keyed"), EchoProcess, options=ProcessStartOptions(fairness_key=tenant)
    )
    assert await fairness("keyed") == (tenant, 1), "a key without a weight weighs 1"
    await client.start_process(pid("plain"), EchoProcess)
    assert await fairness("plain") == (None, None)

    weight, key = "processStartConfig.fairnessWeight", "processStartConfig.fairnessKey"
    refusals = [
        ("weight-0", ProcessStartOptions(fairness_key=tenant, fairness_weight=0), weight),
        ("weight-1001", ProcessStartOptions(fairness_key=tenant, fairness_weight=1001), weight),
        ("weight-alone", ProcessStartOptions(fairness_weight=5), weight),
        ("key-empty", ProcessStartOptions(fairness_key=""), key),
    ]
    for name, options, field in refusals:
        with pytest.raises(InvalidRequestError, match=re.escape(field)) as bad:
            await client.start_process(pid(name), EchoProcess, options=options)
        assert bad.value.status == 400, name
        with pytest.raises(ProcessNotFoundError):
            await client.describe_process(pid(name))

    for name in ("weighed", "keyed", "plain"):
        await client.stop_process(pid(name), reason="contract test")
    for e in client_recording.all():
        if e.status != 400:  # a refused request may break the document on purpose
            contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)


async def test_an_operator_reprioritizes_a_running_execution_and_a_batch_its_selection(
    client: AsyncClient, server: XdbServer, client_recording: Recording
) -> None:
    async with httpx.AsyncClient() as http:
        contract = Contract((await http.get(server.url + OPENAPI, timeout=10)).json())
    run = uuid.uuid4().hex[:10]
    tenant = f"tenant-{run}"

    async def order_of(pid: str) -> ClaimOrder:
        described = await client.describe_process(pid)
        return ClaimOrder(
            priority=described.priority,
            fairness_key=described.fairness_key,
            fairness_weight=described.fairness_weight,
        )

    # A state that keeps failing waits out a 300 s backoff: a waiting call to reorder,
    # and an execution that stays running while the test changes it.
    stuck = f"reprioritize-{run}-stuck"
    execution = await client.start_process(stuck, StuckProcess)
    await await_until("the first attempt to fail", lambda: failed_and_waiting(client, stuck, 1))
    sid = (await only_state(client, stuck)).state_execution_id
    assert await order_of(stuck) == ClaimOrder(priority=3)

    # Refused, and nothing changes: a weight with no key to weigh, values out of range,
    # a change of nothing.
    with pytest.raises(ControlNotApplicableError, match="no fairness key") as keyless:
        await client.reprioritize(stuck, fairness_weight=5)
    assert keyless.value.status == 409
    # Each refusal names the field it is about ("field: problem").
    refusals: list[tuple[int | None, str | None, int | None, str]] = [
        (0, None, None, r"reprioritize\.priority: "),
        (6, None, None, r"reprioritize\.priority: "),
        (None, tenant, 1001, r"reprioritize\.fairnessWeight: "),
        (None, "", 2, r"reprioritize\.fairnessWeight: "),
        (None, None, None, r"reprioritize: "),
    ]
    for priority, key, weight, field in refusals:
        with pytest.raises(InvalidRequestError, match=field) as bad:
            await client.reprioritize(
                stuck, priority=priority, fairness_key=key, fairness_weight=weight
            )
        assert bad.value.status == 400, (priority, key, weight)
    assert await order_of(stuck) == ClaimOrder(priority=3)

    # Sent twice with one request id, as after a lost answer: changed and recorded once.
    for _ in range(2):
        answer = await client.reprioritize(
            stuck,
            priority=1,
            fairness_key=tenant,
            process_execution_id=execution,
            reason="the customer escalated",
            identity="on-call",
            request_id=f"reprioritize-{run}",
        )
        assert answer.state_execution_ids == [sid]
    assert await order_of(stuck) == ClaimOrder(priority=1, fairness_key=tenant, fairness_weight=1)
    assert (await client.list_processes(process_id=stuck)).executions[0].priority == 1
    # The key it has now takes a weight; the call stays where its backoff put it.
    await client.reprioritize(stuck, fairness_weight=4)
    assert await order_of(stuck) == ClaimOrder(priority=1, fairness_key=tenant, fairness_weight=4)
    pending = (await only_state(client, stuck)).pending_call
    assert pending is not None
    assert pending.phase == CallPhase.SCHEDULED

    history = await client.get_process_history(
        stuck, execution, event_types=[HistoryEventType.REPRIORITIZED]
    )
    first, weighed = (ReprioritizedDetails.model_validate(e.details) for e in history.events)
    assert (first.before, first.after) == (
        ClaimOrder(priority=3),
        ClaimOrder(priority=1, fairness_key=tenant, fairness_weight=1),
    )
    assert (first.reason, first.identity, first.state_execution_ids) == (
        "the customer escalated",
        "on-call",
        [sid],
    )
    assert (weighed.before, weighed.after) == (
        first.after,
        ClaimOrder(priority=1, fairness_key=tenant, fairness_weight=4),
    )
    await client.stop_process(stuck, reason="contract test")
    with pytest.raises(ProcessNotRunningError):
        await client.reprioritize(stuck, priority=2)

    # A batch over a filter: the executions it selects change, another does not.
    def pid(name: str) -> str:
        return f"reprioritize-{run}-{name}"

    selected = [pid(f"batch-{i}") for i in range(3)]
    for p in [*selected, pid("other")]:
        await client.start_process(p, EchoProcess)
    batch_only = FilterNode(
        FieldCondition(field=ExecutionField.PROCESS_ID, op=FilterOp.PREFIX, value=pid("batch-"))
    )
    vip = Reprioritization(priority=2, fairness_key=f"vip-{run}", fairness_weight=3)
    started = await client.start_batch(
        BatchOperation.REPRIORITIZE,
        process_type=EchoProcess,
        where=batch_only,
        reprioritize=vip,
        reason="launch day",
        identity="ops",
    )
    assert started.expected == len(selected)

    async def batch_done() -> bool:
        batch = (await client.describe_batch(started.batch_id)).batch
        return batch.status == BatchStatus.COMPLETED

    await await_until("the batch to complete", batch_done)
    described = await client.describe_batch(started.batch_id)
    assert (described.batch.done, described.batch.skipped, described.batch.failed) == (3, 0, 0)
    assert described.batch.request.reprioritize == vip
    after = ClaimOrder(priority=2, fairness_key=f"vip-{run}", fairness_weight=3)
    assert [await order_of(p) for p in selected] == [after] * len(selected)
    assert await order_of(pid("other")) == ClaimOrder(priority=3)
    changed = await client.get_process_history(
        selected[0], event_types=[HistoryEventType.REPRIORITIZED]
    )
    (event,) = changed.events
    details = ReprioritizedDetails.model_validate(event.details)
    assert (details.before, details.after) == (ClaimOrder(priority=3), after)
    assert (details.reason, details.identity) == ("launch day", "ops")
    # Without its change, a REPRIORITIZE batch is refused before it starts.
    with pytest.raises(InvalidRequestError, match="reprioritize: "):
        await client.start_batch(BatchOperation.REPRIORITIZE, where=batch_only)

    for p in [*selected, pid("other")]:
        await client.stop_process(p, reason="contract test")
    for e in client_recording.all():
        if e.status != 400:  # a refused request may break the document on purpose
            contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)


class KeyedEchoProcess(HeldEchoProcess):
    """``HeldEchoProcess`` with a row in ``contract_exports``: an integer ``customer_id``."""

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.create(
            PersistenceField.local_attribute_def("note", str),
            PersistenceField.global_attribute_def("customer_id", int),
            table_name=EXPORTS_TABLE,
            primary_key="id",
        )


def create_exports_table(database: Database) -> None:
    """The keyed process's table: its rows' ``customer_id`` keys the running limit."""
    if database.kind == "postgres":
        with psycopg.connect(_pg_conninfo(database.url), autocommit=True) as conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {EXPORTS_TABLE} "
                "(id TEXT PRIMARY KEY, customer_id INTEGER)"
            )
        return
    with _mysql_connect(database.url) as my, my.cursor() as cur:
        cur.execute(
            f"CREATE TABLE IF NOT EXISTS {EXPORTS_TABLE} "
            "(id VARCHAR(255) NOT NULL PRIMARY KEY, customer_id INT) ENGINE = InnoDB"
        )


async def test_a_running_limit_keyed_by_a_global_attribute_counts_starts_by_its_value(
    client: AsyncClient, database: Database, server: XdbServer, client_recording: Recording
) -> None:
    async with httpx.AsyncClient() as http:
        contract = Contract((await http.get(server.url + OPENAPI, timeout=10)).json())
    create_exports_table(database)
    run = uuid.uuid4().hex[:10]
    process = KeyedEchoProcess(f"KeyedEcho{run}")
    keyed = FlowLimits(max_running_executions=1, concurrency_key_attribute="customer_id")

    # The attribute alone, not an identifier, or on a state: refused on its field.
    refused_overrides: list[tuple[FlowLimits, str | None]] = [
        (FlowLimits(concurrency_key_attribute="customer_id"), None),
        (FlowLimits(max_running_executions=1, concurrency_key_attribute="customer id"), None),
        (FlowLimits(concurrency_key_attribute="customer_id"), "Echo"),
    ]
    for bad, state_id in refused_overrides:
        with pytest.raises(InvalidRequestError, match=r"override\.concurrencyKeyAttribute"):
            await client.set_flow_limits(process.process_type, bad, state_id=state_id)
    assert (await client.list_flow_limits(process_type=process.process_type)).limits == []

    entry = await client.set_flow_limits(process.process_type, keyed, reason="contract test")
    assert entry.effective == keyed

    with running_worker(WorkerService(process)) as keyed_worker:
        started: list[str] = []

        def pid_of(name: str) -> str:
            return f"keyed-{run}-{name}"

        async def start(
            name: str, customer_id: int | None, concurrency_key: str | None = None
        ) -> str:
            pid = pid_of(name)
            options = ProcessStartOptions(
                worker_url=keyed_worker.url,
                global_attribute_pk_value=pid,
                initial_global_attributes=(
                    {"customer_id": customer_id} if customer_id is not None else None
                ),
                concurrency_key=concurrency_key,
            )
            await client.start_process(pid, process, options=options)
            started.append(pid)
            return pid

        async def pending_on(pid: str) -> str | None:
            paused = (await client.describe_process(pid)).paused
            return None if paused is None else paused.pending_on_key

        # Two starts writing customer 42: the second waits on the key "42", the value's text.
        first = await start("first", 42)
        second = await start("second", 42)
        assert await pending_on(first) is None
        held = (await client.describe_process(second)).paused
        assert held is not None
        assert (held.pending_on_key, held.identity) == ("42", "maxRunningExecutions")
        listed = await client.list_processes(process_type=process.process_type)
        summaries = {e.process_id: e for e in listed.executions}
        assert (summaries[first].pending, summaries[second].pending) == (False, True)
        row = database.row(EXPORTS_TABLE, "id", second)
        assert row is not None
        assert row["customer_id"] == 42, row
        # Another customer has a slot of its own; a named key wins over the attribute.
        assert await pending_on(await start("other", 43)) is None
        assert await pending_on(await start("named", 42, concurrency_key=f"named-{run}")) is None

        # No key and no value for customer_id: refused naming the key, nothing written.
        with pytest.raises(
            InvalidRequestError, match=r"processStartConfig\.concurrencyKey"
        ) as refused:
            await start("unkeyed", None)
        assert refused.value.status == 400
        assert "customer_id" in str(refused.value)
        with pytest.raises(ProcessNotFoundError):
            await client.describe_process(pid_of("unkeyed"))
        assert database.row(EXPORTS_TABLE, "id", pid_of("unkeyed")) is None

        await await_until("the first to run its state", lambda: called(first), interval=0.05)
        await client.stop_process(first, reason="contract test")

        async def admitted() -> bool:
            return await pending_on(second) is None

        await await_until("the second to take customer 42's freed slot", admitted)
        await await_until("the second to run its state", lambda: called(second))

        for pid in started:
            if pid != first:
                await client.stop_process(pid, reason="contract test")
    await client.set_flow_limits(process.process_type, None, reason="contract test")

    for e in client_recording.all():
        contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)


class FairEchoProcess(KeyedEchoProcess):
    """``KeyedEchoProcess`` whose definition keys its starts by ``customer_id``, weighing 3."""

    flow_limits = FlowLimits(fairness_key_attribute="customer_id", fairness_weight=3)


async def test_a_types_fairness_attribute_keys_its_starts_by_the_value_they_write(
    client: AsyncClient, database: Database, server: XdbServer, client_recording: Recording
) -> None:
    async with httpx.AsyncClient() as http:
        contract = Contract((await http.get(server.url + OPENAPI, timeout=10)).json())
    create_exports_table(database)
    run = uuid.uuid4().hex[:10]
    process = FairEchoProcess(f"FairEcho{run}")
    process_type = process.process_type
    declared = FairEchoProcess.flow_limits
    tenant = f"tenant-{run}"

    with running_worker(WorkerService(process)) as fair_worker:
        deployment = WorkerDeployment(
            name="contract-fairness", version=run, worker_url=fair_worker.url
        )
        await client.register_definitions(deployment, [process])
        listed = await client.list_flow_limits(process_type=process_type)
        assert [(e.state_id, e.declared, e.override, e.effective) for e in listed.limits] == [
            (None, declared, None, declared)
        ]
        started: list[str] = []

        async def start(
            name: str,
            customer_id: int | None,
            fairness_key: str | None = None,
            fairness_weight: int | None = None,
        ) -> tuple[str | None, int | None]:
            pid = f"fair-{run}-{name}"
            options = ProcessStartOptions(
                worker_url=fair_worker.url,
                global_attribute_pk_value=pid,
                initial_global_attributes=(
                    {"customer_id": customer_id} if customer_id is not None else None
                ),
                fairness_key=fairness_key,
                fairness_weight=fairness_weight,
            )
            await client.start_process(pid, process, options=options)
            started.append(pid)
            described = await client.describe_process(pid)
            return described.fairness_key, described.fairness_weight

        # The registering instance applies the declared fairness at once; the key is the
        # written value's text.
        assert await start("written", 42) == ("42", 3)
        assert await start("named", 42, tenant, 9) == (tenant, 9), "a start's own wins"
        assert await start("key-only", 42, tenant) == (tenant, 3), "the type's weight"
        assert await start("unwritten", None) == (None, None), "no value: no key, started"

        refusals: list[tuple[FlowLimits, str | None, str]] = [
            (FlowLimits(fairness_key_attribute="customer id"), None, "fairnessKeyAttribute"),
            (FlowLimits(fairness_key_attribute="customer_id"), "Echo", "fairnessKeyAttribute"),
            (FlowLimits(fairness_weight=0), None, "fairnessWeight"),
            (FlowLimits(fairness_weight=1001), None, "fairnessWeight"),
            (FlowLimits(fairness_weight=2), "Echo", "fairnessWeight"),
        ]
        for bad, state_id, field in refusals:
            with pytest.raises(InvalidRequestError, match=rf"override\.{field}") as refused:
                await client.set_flow_limits(process_type, bad, state_id=state_id)
            assert refused.value.status == 400

        # An override replaces the declared limits whole: a weight alone keys nothing.
        weighed = FlowLimits(fairness_weight=5)
        entry = await client.set_flow_limits(process_type, weighed, reason="contract test")
        assert (entry.declared, entry.override, entry.effective) == (declared, weighed, weighed)
        assert await start("after-override", 42) == (None, None)
        assert await start("key-after-override", 42, tenant) == (tenant, 5)

        history = await client.flow_limit_history(process_type=process_type)
        assert [(c.source, c.state_id, c.before, c.after) for c in history.changes] == [
            (FlowLimitSource.OPERATOR, None, None, weighed),
            (FlowLimitSource.DEFINITION, None, None, declared),
        ], "the refusals are not among the changes"

        for pid in started:
            await client.stop_process(pid, reason="contract test")
    await client.set_flow_limits(process_type, None, reason="contract test")

    for e in client_recording.all():
        if e.status != 400:  # a refused request may break the document on purpose
            contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)


SCORES_TABLE = "contract_scores"


class Scored(AsyncState[None]):
    """Completes at once: the execution's row holds its score."""

    async def execute(
        self,
        ctx: Context,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        return StateDecision.graceful_complete_process(persistence.get_global_attribute("score"))


class ScoredProcess(Process):
    """A process whose row has an integer column, ``score``, that no index serves."""

    def get_state_schema(self) -> StateSchema:
        return StateSchema.with_starting_state(Scored())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.create(
            PersistenceField.global_attribute_def("score", int),
            table_name=SCORES_TABLE,
            primary_key="id",
        )


def create_scores_table(database: Database) -> None:
    """The scored process's table: ``score`` is an integer, indexed by nothing."""
    if database.kind == "postgres":
        with psycopg.connect(_pg_conninfo(database.url), autocommit=True) as conn:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {SCORES_TABLE} (id TEXT PRIMARY KEY, score INTEGER)"
            )
        return
    with _mysql_connect(database.url) as my, my.cursor() as cur:
        cur.execute(
            f"CREATE TABLE IF NOT EXISTS {SCORES_TABLE} "
            "(id VARCHAR(255) NOT NULL PRIMARY KEY, score INT) ENGINE = InnoDB"
        )


async def test_a_filtered_list_finds_rows_by_column_and_explains_the_index_it_lacks(
    client: AsyncClient, database: Database, server: XdbServer, client_recording: Recording
) -> None:
    async with httpx.AsyncClient() as http:
        contract = Contract((await http.get(server.url + OPENAPI, timeout=10)).json())
    create_scores_table(database)
    run = uuid.uuid4().hex[:10]
    with running_worker(WorkerService(ScoredProcess())) as scored_worker:
        for score in (5, 50, 500):
            pid = f"scored-{run}-{score}"
            options = ProcessStartOptions(
                worker_url=scored_worker.url,
                global_attribute_pk_value=pid,
                initial_global_attributes={"score": score},
            )
            await client.start_process(pid, ScoredProcess, options=options)
            assert (await client.wait_for_completion(pid, 30)).status == ProcessStatus.COMPLETED

    # No registered definition declares the table: the request names it. The integer
    # goes out as an integer (an integer column refuses 50.0), through the model too.
    table = BusinessTableRef(table_name=SCORES_TABLE, primary_key_column="id")
    where = {
        "and": [
            {"column": "score", "op": ">=", "value": 50},
            {"field": "processId", "op": "PREFIX", "value": f"scored-{run}-"},
        ]
    }
    listed = await client.list_processes(
        process_type=ScoredProcess, where=where, business_table=table
    )
    assert [e.process_id for e in listed.executions] == [f"scored-{run}-500", f"scored-{run}-50"]
    assert listed.plan is None

    explained = await client.list_processes(
        process_type=ScoredProcess,
        where=FilterNode.model_validate(where),
        business_table=table,
        explain=True,
    )
    assert explained.executions == []
    assert explained.plan is not None
    # Quoted as the dialect quotes (`"` or a backtick), the index named.
    q = '["`]'
    index = re.compile(
        rf"CREATE INDEX {q}{SCORES_TABLE}_score{q} ON {q}{SCORES_TABLE}{q} \({q}score{q}\)"
    )
    assert any(index.search(advice) for advice in explained.plan.advice), explained.plan
    assert isinstance(explained.plan.plan, dict | list), explained.plan

    with pytest.raises(InvalidRequestError, match="explain") as refused:
        await client.list_processes(process_type=ScoredProcess, explain=True)
    assert refused.value.status == 400

    lists = [e for e in client_recording.all() if e.path == LIST]
    assert [e.status for e in lists] == [200, 200, 400]
    # `explain` is sent only when true, as the Rust SDK sends it.
    assert [e.request_json().get("explain") for e in lists] == [None, True, True]
    for e in lists:
        contract.check_request(e.path, e.request_json())
        contract.check_response(e.path, e.status, e.response)
