"""The site-creation process: a status-driven, task-based workflow.

Save the site's metadata, then create its file system and its database in parallel,
then bootstrap WordPress into the database. The site's row in table ``site`` is the
"site status object": ``status`` moves from ``creating`` to ``created``, and each step
records itself in its own ``*_status`` column. Every state reads ``status`` first, so a
deletion (``status = deleting``) stops a creation in flight::

    start -> SaveMetadata -+-> CreateFs -- publishes "fs-ready", dead end
                           +-> CreateDb -> Bootstrap -> MarkCreated (waits for "fs-ready")
    RPC delete: status = deleting, starts DeleteSite -> (grace timer) clean up, deleted

The branches join on local queue ``fs-ready``: a message commits with the transition
that sends it, so the join sees every branch exactly once. A failing service call fails
the state API and XDB retries it, forever; calls pass the call's idempotency key, the
same for every attempt, so a retry does not create anything twice.
"""

from __future__ import annotations

from abc import abstractmethod
from datetime import timedelta
from typing import ClassVar, TypeVar

from pydantic import BaseModel

from samples.site_services import ExternalServices, Operation
from xdb import (
    AsyncClient,
    AsyncState,
    AsyncStateConfig,
    CommandRequest,
    CommandResults,
    Communication,
    CommunicationMethod,
    CommunicationSchema,
    Context,
    LocalQueueCommand,
    LockType,
    Persistence,
    PersistenceField,
    PersistenceSchema,
    Process,
    ProcessStartOptions,
    RetryPolicy,
    StateDecision,
    StateSchema,
    TimerCommand,
    rpc,
)

STEP_COLUMNS = ("metadata_status", "fs_status", "db_status", "bootstrap_status")
COLUMNS = ("site_id", "name", "status", *STEP_COLUMNS)
# Retry every 0.05 s, doubling up to 0.5 s, forever: "retry until success", test-sized.
RETRY = RetryPolicy(initial_interval_seconds=0.05, maximum_interval_seconds=0.5)
InputT = TypeVar("InputT")


class SiteMetadata(BaseModel):
    """The input of the starting state."""

    name: str


class SiteState(AsyncState[InputT]):
    """A step of the site's life: the services, the retry policy and the status gate."""

    def __init__(self, process: SiteCreationProcess) -> None:
        self.services = process.services
        self.grace = process.deletion_grace

    def get_state_options(self) -> AsyncStateConfig:
        return AsyncStateConfig(wait_until_api_retry_policy=RETRY, execute_api_retry_policy=RETRY)

    @staticmethod
    def gate(persistence: Persistence) -> tuple[str, StateDecision | None]:
        """The site id, and the decision to stop with unless the site is ``creating``."""
        site_id = persistence.get_global_attribute("site_id", str)
        if site_id is None:
            raise RuntimeError("the site row is missing")
        status = persistence.get_global_attribute("status")
        if status == "creating":
            return site_id, None
        if status == "deleting":  # DeleteSite owns the end of the process
            return site_id, StateDecision.dead_end()
        return site_id, StateDecision.force_fail_process(f"site {site_id} is {status!r}")


class SaveMetadata(SiteState[SiteMetadata]):
    """Records the site's name, then starts both creation branches."""

    async def execute(
        self,
        ctx: Context,
        input: SiteMetadata,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        _, stop = self.gate(persistence)
        if stop:
            return stop
        persistence.set_global_attribute("name", input.name)
        persistence.set_global_attribute("metadata_status", "done")
        return StateDecision.multiple_next_states(CreateFs, CreateDb)


class ServiceStep(SiteState[None]):
    """A task worker of the design: one service call, recorded in its ``*_status`` column.

    Each step names its call and its column, and says what follows in ``then``.
    """

    operation: ClassVar[Operation]
    status_column: ClassVar[str]

    def execute(
        self,
        ctx: Context,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        site_id, stop = self.gate(persistence)
        if stop:
            return stop
        self.services.call(self.operation, site_id, ctx.idempotency_key)
        persistence.set_global_attribute(self.status_column, "done")
        return self.then(communication)

    @abstractmethod
    def then(self, communication: Communication) -> StateDecision:
        """What follows once the call is done and recorded."""


class CreateFs(ServiceStep):
    """Creates the file system, tells ``MarkCreated`` and ends its thread."""

    operation = Operation.CREATE_FILE_SYSTEM
    status_column = "fs_status"

    def then(self, communication: Communication) -> StateDecision:
        communication.publish_to_local_queue("fs-ready")
        return StateDecision.dead_end()


class CreateDb(ServiceStep):
    """Creates the database, then bootstraps it."""

    operation = Operation.CREATE_DATABASE
    status_column = "db_status"

    def then(self, communication: Communication) -> StateDecision:
        return StateDecision.single_next_state(Bootstrap)


class Bootstrap(ServiceStep):
    """Bootstraps WordPress into the site's database."""

    operation = Operation.BOOTSTRAP
    status_column = "bootstrap_status"

    def then(self, communication: Communication) -> StateDecision:
        return StateDecision.single_next_state(MarkCreated)


class MarkCreated(SiteState[None]):
    """Waits for the file-system branch, then marks the site ``created``."""

    def wait_until(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> CommandRequest:
        return CommandRequest.for_all_commands_completed(LocalQueueCommand.by_name("fs-ready"))

    def execute(
        self,
        ctx: Context,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        site_id, stop = self.gate(persistence)
        if stop:
            return stop
        missing = [c for c in STEP_COLUMNS if persistence.get_global_attribute(c) != "done"]
        if missing:  # every branch wrote its column before getting here: a bug, not a race
            return StateDecision.force_fail_process(f"site {site_id}: {missing} not done")
        persistence.set_global_attribute("status", "created")
        return StateDecision.graceful_complete_process("created")


class DeleteSite(SiteState[None]):
    """Started by RPC ``delete``: after a grace period, cleans up and ends as ``deleted``.

    The grace lets creation calls already in flight finish; XDB refuses their outcome
    once the process is complete, but their external effect may still land.
    """

    def wait_until(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> CommandRequest:
        if not self.grace:
            return CommandRequest.empty()
        return CommandRequest.for_all_commands_completed(TimerCommand.by_duration(self.grace))

    def execute(
        self,
        ctx: Context,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        site_id = persistence.get_global_attribute("site_id", str)
        assert site_id is not None
        # One key covers both calls; the services dedupe per operation.
        self.services.call(Operation.DELETE_FILE_SYSTEM, site_id, ctx.idempotency_key)
        self.services.call(Operation.DROP_DATABASE, site_id, ctx.idempotency_key)
        persistence.set_global_attribute("status", "deleted")
        return StateDecision.force_complete_process("deleted")


class SiteCreationProcess(Process):
    """Creates a site step by step, retrying each step until it succeeds."""

    def __init__(
        self,
        services: ExternalServices | None = None,
        deletion_grace: timedelta = timedelta(seconds=3),
    ) -> None:
        self.services = services or ExternalServices()
        self.deletion_grace = deletion_grace

    def get_state_schema(self) -> StateSchema:
        states = (SaveMetadata, CreateFs, CreateDb, Bootstrap, MarkCreated, DeleteSite)
        first, *rest = (state(self) for state in states)
        return StateSchema.with_starting_state(first, *rest)

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.create(
            *(PersistenceField.global_attribute_def(c, str) for c in COLUMNS),
            table_name="site",
            primary_key="site_id",
        )

    def get_communication_schema(self) -> CommunicationSchema:
        return CommunicationSchema.create(CommunicationMethod.local_queue_def("fs-ready"))

    @rpc(lock=LockType.EXCLUSIVE_LOCK)  # two deletions cannot both start DeleteSite
    def delete(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> str:
        """Marks the site ``deleting`` and starts ``DeleteSite``."""
        if persistence.get_global_attribute("status") in ("deleting", "deleted"):
            return "already deleting"
        persistence.set_global_attribute("status", "deleting")
        communication.trigger_state_movement(DeleteSite)
        return "deleting"


def process_id(site_id: str) -> str:
    """The process id of ``site_id``'s creation."""
    return f"site-creation-{site_id}"


async def start_site_creation(client: AsyncClient, site_id: str, name: str) -> str:
    """Starts creating ``site_id``: its row is written with status ``creating`` at once."""
    return await client.start_process(
        process_id(site_id),
        SiteCreationProcess,
        SiteMetadata(name=name),
        ProcessStartOptions(
            global_attribute_pk_value=site_id, initial_global_attributes={"status": "creating"}
        ),
    )


async def delete_site(client: AsyncClient, site_id: str) -> str:
    """Deletes ``site_id`` while its creation runs, through RPC ``delete``."""
    return await client.invoke_rpc(process_id(site_id), SiteCreationProcess.delete)
