"""``AsyncState``: one step of a process."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, get_args, get_origin

from xdb.protocol import AsyncStateConfig, FlowLimits

if TYPE_CHECKING:
    from xdb.command import CommandRequest, CommandResults
    from xdb.communication import Communication
    from xdb.context import Context
    from xdb.decision import StateDecision
    from xdb.persistence import Persistence

InputT = TypeVar("InputT")


class AsyncState(ABC, Generic[InputT]):
    """A step of a process; ``InputT`` is its input type (``None`` for none).

    XDB calls ``wait_until`` when the state overrides it, waits for the commands it
    returns, then calls ``execute``, which decides what follows. Both may be plain or
    ``async`` methods: plain ones run in a worker thread so they cannot block the loop.
    Attribute writes and messages take effect only if XDB records the call's answer.

    ``flow_limits`` limits this state's worker calls across all async instances
    (``FlowLimits(max_calls_per_second=0.5)``: one call every two seconds;
    ``FlowLimits(max_concurrent_calls=4)``: at most four running at once; both may be
    given); registration sends it, and an operator may override it at run time.
    ``max_running_executions``, ``concurrency_key_attribute``, ``priority``,
    ``fairness_key_attribute`` and ``fairness_weight`` are the process type's alone: a
    state declaring any of them is a ``SchemaError``.
    """

    flow_limits: ClassVar[FlowLimits | None] = None

    @classmethod
    def get_state_id(cls) -> str:
        """The state id, unique in its process; the class name unless overridden."""
        return cls.__name__

    def get_state_options(self) -> AsyncStateConfig:
        """Timeouts, retries, failure recovery and loading policies of this state.

        Loading policies left unset load every declared attribute without a lock.
        """
        return AsyncStateConfig()

    def wait_until(
        self,
        ctx: Context,
        input: InputT,
        persistence: Persistence,
        communication: Communication,
    ) -> CommandRequest | Awaitable[CommandRequest]:
        """Returns what XDB waits for before ``execute``; override to wait."""
        raise NotImplementedError

    @abstractmethod
    def execute(
        self,
        ctx: Context,
        input: InputT,
        command_results: CommandResults,
        persistence: Persistence,
        communication: Communication,
    ) -> StateDecision | Awaitable[StateDecision]:
        """Decides what follows: next states, or how this thread (or the process) ends."""

    @classmethod
    def has_wait_until(cls) -> bool:
        """Whether the state overrides ``wait_until`` (else XDB goes straight to execute)."""
        return cls.wait_until is not AsyncState.wait_until

    @classmethod
    def input_type(cls) -> Any:
        """The ``InputT`` the class was declared with; ``Any`` when not parametrized."""
        for klass in cls.__mro__:
            for base in getattr(klass, "__orig_bases__", ()):
                origin = get_origin(base)
                if isinstance(origin, type) and issubclass(origin, AsyncState):
                    args = get_args(base)
                    if args and not isinstance(args[0], TypeVar):
                        return type(None) if args[0] is None else args[0]
        return Any
