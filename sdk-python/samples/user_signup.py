"""The user sign-up process of the XDB design: verify by email, remind until verified.

The user's row in table ``user`` (``user_id``, ``form``, ``status``, ``source``) holds
the process's data, so the business table and the process change together.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel

from samples.email import Outbox
from xdb import (
    AsyncClient,
    AsyncState,
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
    StateDecision,
    StateSchema,
    TimerCommand,
    rpc,
)


class Form(BaseModel):
    """The sign-up form, kept in the ``form`` column."""

    email: str
    name: str | None = None


class VerifyMessage(BaseModel):
    """A message on local queue ``verify``."""

    source: str | None = None


class SubmitState(AsyncState[None]):
    """Sends the verification email."""

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox

    async def execute(
        self,
        ctx: Context,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        form = persistence.get_global_attribute("form", Form)  # set by the start, atomically
        assert form is not None
        self.outbox.send(form.email, "verification", ctx.idempotency_key)
        return StateDecision.single_next_state(VerifyState)


class VerifyState(AsyncState[None]):
    """Waits for verification or the reminder timer; welcomes or reminds."""

    def __init__(self, outbox: Outbox, reminder: timedelta) -> None:
        self.outbox = outbox
        self.reminder = reminder

    async def wait_until(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> CommandRequest:
        return CommandRequest.for_any_command_completed(
            TimerCommand.by_duration(self.reminder),
            LocalQueueCommand.by_name("verify"),
        )

    async def execute(
        self,
        ctx: Context,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        form = persistence.get_global_attribute("form", Form)
        assert form is not None
        if not command_results.received_from_queue("verify"):
            self.outbox.send(form.email, "reminder", ctx.idempotency_key)
            return StateDecision.single_next_state(VerifyState)
        if persistence.get_global_attribute("status") != "verified":  # published, not the RPC
            message = command_results.messages_from_queue("verify", VerifyMessage)[0]
            persistence.set_global_attribute("status", "verified")
            persistence.set_global_attribute("source", message.source or "local-queue")
        self.outbox.send(form.email, "welcome", ctx.idempotency_key)
        return StateDecision.graceful_complete_process("done")


class UserSignupProcess(Process):
    """Emails a verification link, reminds until the user verifies, then welcomes."""

    def __init__(self, outbox: Outbox | None = None, reminder: timedelta = timedelta(hours=24)):
        self.outbox = outbox or Outbox()
        self.reminder = reminder

    def get_state_schema(self) -> StateSchema:
        return StateSchema.with_starting_state(
            SubmitState(self.outbox), VerifyState(self.outbox, self.reminder)
        )

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.create(
            PersistenceField.global_attribute_def("form", Form),
            PersistenceField.global_attribute_def("status", str),
            PersistenceField.global_attribute_def("source", str),
            table_name="user",
            primary_key="user_id",
        )

    def get_communication_schema(self) -> CommunicationSchema:
        return CommunicationSchema.create(CommunicationMethod.local_queue_def("verify"))

    @rpc(lock=LockType.EXCLUSIVE_LOCK)  # two verifications cannot both see "waiting"
    async def verify(
        self, ctx: Context, source: str, persistence: Persistence, communication: Communication
    ) -> str:
        """Marks the user verified by ``source`` and wakes ``VerifyState``."""
        if persistence.get_global_attribute("status") == "verified":
            return "already verified"
        persistence.set_global_attribute("status", "verified")
        persistence.set_global_attribute("source", source)
        communication.publish_to_local_queue("verify", VerifyMessage(source=source))
        return "done"


def process_id(user_id: str) -> str:
    """The process id of ``user_id``'s sign-up."""
    return f"user-signup-{user_id}"


async def start_signup(client: AsyncClient, user_id: str, form: Form) -> str:
    """Starts ``user_id``'s sign-up; its row gets the form and status ``waiting`` atomically."""
    return await client.start_process(
        process_id(user_id),
        UserSignupProcess,
        options=ProcessStartOptions(
            global_attribute_pk_value=user_id,
            initial_global_attributes={"form": form, "status": "waiting"},
        ),
    )
