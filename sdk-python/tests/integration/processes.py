"""Small processes the integration tests drive besides the samples."""

from __future__ import annotations

import threading
from typing import Any

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
    LocalQueueCommand,
    Persistence,
    PersistenceField,
    PersistenceSchema,
    Process,
    RetryPolicy,
    StateDecision,
    StateSchema,
    rpc,
)


class Calls:
    """The contexts user code saw, by process id; shared with the worker's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[tuple[str, Context]] = []

    def add(self, what: str, ctx: Context) -> None:
        with self._lock:
            self._calls.append((what, ctx))

    def of(self, process_id: str, what: str | None = None) -> list[Context]:
        with self._lock:
            return [c for w, c in self._calls if c.process_id == process_id and what in (None, w)]


CALLS = Calls()


class Echo(AsyncState[Any]):
    """Waits for a message on ``go``, then completes with its input and attribute ``note``."""

    def wait_until(
        self, ctx: Context, input: Any, persistence: Persistence, communication: Communication
    ) -> CommandRequest:
        CALLS.add("Echo.wait_until", ctx)
        return CommandRequest.for_all_commands_completed(LocalQueueCommand.by_name("go"))

    async def execute(
        self,
        ctx: Context,
        input: Any,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        CALLS.add("Echo", ctx)
        return StateDecision.graceful_complete_process(
            {"input": input, "note": persistence.get_local_attribute("note")}
        )


class EchoProcess(Process):
    """One state echoing its input, and an RPC echoing its own."""

    def get_state_schema(self) -> StateSchema:
        return StateSchema.with_starting_state(Echo())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.create(PersistenceField.local_attribute_def("note", str))

    def get_communication_schema(self) -> CommunicationSchema:
        return CommunicationSchema.create(CommunicationMethod.local_queue_def("go"))

    @rpc()
    def echo(
        self, ctx: Context, input: Any, persistence: Persistence, communication: Communication
    ) -> Any:
        CALLS.add("echo", ctx)
        persistence.set_local_attribute("note", "rpc was here")
        return input


class FailOnce(AsyncState[None]):
    """Fails its first execute attempt, then completes."""

    def get_state_options(self) -> AsyncStateConfig:
        return AsyncStateConfig(execute_api_retry_policy=RetryPolicy(initial_interval_seconds=0.1))

    async def execute(
        self,
        ctx: Context,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        CALLS.add("FailOnce", ctx)
        if ctx.attempt == 1:
            raise RuntimeError("the payment service is down (first attempt fails on purpose)")
        return StateDecision.graceful_complete_process("recovered")


class FlakyProcess(Process):
    """A state that fails once and is retried by XDB."""

    def get_state_schema(self) -> StateSchema:
        return StateSchema.with_starting_state(FailOnce())


class FailAlways(AsyncState[None]):
    """Every execute attempt fails; the next one waits out a 300 s backoff."""

    def get_state_options(self) -> AsyncStateConfig:
        return AsyncStateConfig(
            execute_api_retry_policy=RetryPolicy(
                initial_interval_seconds=300, backoff_coefficient=1, maximum_attempts=1000
            )
        )

    async def execute(
        self,
        ctx: Context,
        input: None,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        CALLS.add("FailAlways", ctx)
        raise RuntimeError(f"the ledger is unreachable (attempt {ctx.attempt} fails on purpose)")


class StuckProcess(Process):
    """A state that never succeeds on its own: for the operator's controls."""

    def get_state_schema(self) -> StateSchema:
        return StateSchema.with_starting_state(FailAlways())


class Order(BaseModel):
    """The input of an order: its JSON Schema is in the registered definition."""

    item: str
    quantity: int = 1


class PlaceOrder(AsyncState[Order]):
    """Records the quantity, then ships the item."""

    def get_state_options(self) -> AsyncStateConfig:
        return AsyncStateConfig(execute_api_retry_policy=RetryPolicy(maximum_attempts=5))

    async def execute(
        self,
        ctx: Context,
        input: Order,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        persistence.set_local_attribute("quantity", input.quantity)
        return StateDecision.single_next_state(ShipOrder, input.item)


class ShipOrder(AsyncState[str]):
    """Completes with what it shipped."""

    async def execute(
        self,
        ctx: Context,
        input: str,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision:
        quantity = persistence.get_local_attribute("quantity", int)
        return StateDecision.graceful_complete_process(f"shipped {quantity} x {input}")


class RegisteredOrderProcess(Process):
    """A process whose worker registers its definition; its starts name no worker URL."""

    def get_state_schema(self) -> StateSchema:
        return StateSchema.with_starting_state(PlaceOrder(), ShipOrder())

    def get_persistence_schema(self) -> PersistenceSchema:
        return PersistenceSchema.create(PersistenceField.local_attribute_def("quantity", int))

    def get_communication_schema(self) -> CommunicationSchema:
        return CommunicationSchema.create(CommunicationMethod.local_queue_def("cancel"))

    @rpc()
    def quantity(
        self, ctx: Context, input: None, persistence: Persistence, communication: Communication
    ) -> int | None:
        return persistence.get_local_attribute("quantity", int)
