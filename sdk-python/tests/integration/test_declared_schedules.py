"""A schedule a process declares, against the real service: the worker's registration
creates it as the process type's, and its firings start and complete executions of the
type on the registering worker. On a database and server of its own.
"""

from __future__ import annotations

from tests.integration.harness import (
    Database,
    await_until,
    create_database,
    drop_database,
    running_worker,
    start_server,
)
from xdb import (
    AsyncClient,
    AsyncState,
    CommandResults,
    Communication,
    Context,
    Persistence,
    Process,
    ProcessStatus,
    ScheduleDeclaration,
    ScheduleOverlapPolicy,
    StateDecision,
    StateSchema,
    WorkerDeployment,
    WorkerService,
    decode_payload,
    interval_spec,
)
from xdb.protocol import ScheduleFiringOutcome


class Tick(AsyncState[None]):
    async def execute(
        self,
        ctx: Context,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        return StateDecision.graceful_complete_process("ticked")


class DeclaredTicker(Process):
    schedules = (
        ScheduleDeclaration(
            schedule_id="py-ticks",
            spec=interval_spec(1),
            start_state_id="Tick",
            overlap_policy=ScheduleOverlapPolicy.ALLOW_ALL,
        ),
    )

    def get_state_schema(self) -> StateSchema:
        return StateSchema.with_starting_state(Tick())


async def test_a_declared_schedule_is_created_and_starts_the_type(database: Database) -> None:
    own = create_database(database.kind)
    server = start_server(own)
    service = WorkerService(DeclaredTicker())
    try:
        with running_worker(service) as worker:
            async with AsyncClient(server.url) as client:
                deployment = WorkerDeployment(name="ticker", version="1", worker_url=worker.url)
                await service.register_definitions(client, deployment)
                schedule = (await client.describe_schedule("py-ticks")).schedule
                assert schedule.declared_by == "DeclaredTicker"
                assert schedule.start.worker_url == worker.url

                async def started() -> str | None:
                    described = await client.describe_schedule("py-ticks")
                    return next(
                        (
                            f.process_id
                            for f in described.recent_firings
                            if f.outcome == ScheduleFiringOutcome.STARTED
                        ),
                        None,
                    )

                process_id = await await_until("a declared firing to start", started)
                done = await client.wait_for_completion(process_id, 30)
                assert done.status == ProcessStatus.COMPLETED
                assert decode_payload(done.result, str) == "ticked"
                assert (await client.describe_process(process_id)).process_type == "DeclaredTicker"
    finally:
        server.stop()
        drop_database(own)
