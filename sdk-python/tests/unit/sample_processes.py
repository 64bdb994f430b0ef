"""Processes for the unit tests."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from xdb import (
    AsyncState,
    AsyncStateConfig,
    CommandRequest,
    CommandResults,
    Communication,
    CommunicationMethod,
    CommunicationSchema,
    Context,
    FailureRecoveryPolicy,
    LocalQueueCommand,
    LockType,
    Persistence,
    PersistenceField,
    PersistenceSchema,
    Process,
    RetryPolicy,
    StateDecision,
    StateFailureRecoveryOptions,
    StateSchema,
    TimerCommand,
    current_trace_context,
    rpc,
)


class Order(BaseModel):
    item: str
    quantity: int = 1


class Start(AsyncState[Order]):
    def get_state_options(self) -> AsyncStateConfig:
        return AsyncStateConfig(
            execute_api_retry_policy=RetryPolicy(maximum_attempts=3),
            state_failure_recovery_options=StateFailureRecoveryOptions(
                policy=FailureRecoveryPolicy.PROCEED_TO_CONFIGURED_STATE,
                state_failure_proceed_state_id="Recover",
            ),
        )

    async def execute(
        self,
        ctx: Context,
        input: Order,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        if input.item == "boom":
            raise RuntimeError("boom")
        if input.item == "bad-queue":
            communication.publish_to_local_queue("nope")
        persistence.set_global_attribute("status", f"ordered {input.quantity} {input.item}")
        persistence.set_local_attribute("attempts", ctx.attempt)
        communication.publish_to_local_queue("events", {"ordered": input.item}, dedup_id="o-1")
        return StateDecision.multiple_next_states(Wait, Recover)


class Wait(AsyncState[None]):
    """Sync methods: run in a worker thread."""

    seen_trace: ClassVar[list[str | None]] = []

    def wait_until(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> CommandRequest:
        trace = current_trace_context()
        Wait.seen_trace.append(trace.traceparent if trace else None)
        return CommandRequest.for_any_command_completed(
            TimerCommand.by_seconds(1.5), LocalQueueCommand.by_name("events", 2)
        )

    def execute(
        self,
        ctx: Context,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        if command_results.timer_fired():
            return StateDecision.single_next_state(Wait)
        return StateDecision.graceful_complete_process(
            command_results.messages_from_queue("events")
        )


class Recover(AsyncState[Any]):
    async def execute(
        self,
        ctx: Context,
        input: Any,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        return StateDecision.dead_end()


class ShopProcess(Process):
    def get_state_schema(self) -> StateSchema:
        return StateSchema.with_starting_state(Start(), Wait(), Recover())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.create(
            PersistenceField.global_attribute_def("status", str),
            PersistenceField.global_attribute_def("order", Order),
            PersistenceField.local_attribute_def("attempts", int),
            table_name="shop.orders",
            primary_key="order_id",
        )

    def get_communication_schema(self) -> CommunicationSchema:
        return CommunicationSchema.create(CommunicationMethod.local_queue_def("events"))

    @rpc(lock=LockType.EXCLUSIVE_LOCK, timeout_seconds=5)
    async def cancel(
        self, ctx: Context, reason: str, persistence: Persistence, communication: Communication
    ) -> dict[str, str]:
        if reason == "boom":
            raise ValueError("cannot cancel")
        previous = persistence.get_global_attribute("status", str)
        persistence.set_global_attribute("status", "cancelled")
        communication.trigger_state_movement(Recover, {"why": reason})
        return {"previous": previous or "", "reason": reason}

    @rpc(name="peek")
    def peek_order(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> Order | None:
        return persistence.get_global_attribute("order", Order)


class NoTableProcess(Process):
    def get_state_schema(self) -> StateSchema:
        return StateSchema.no_starting_state(Recover())
