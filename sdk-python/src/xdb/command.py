"""What a state's ``wait_until`` asks XDB to wait for, and what ``execute`` gets back."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar, overload

from xdb import encoding
from xdb.protocol import (
    CommandRequest as WireCommandRequest,
)
from xdb.protocol import (
    CommandResultsWire,
    CommandWaitingType,
    LocalQueueCommandStatus,
    LocalQueueResult,
    TimerResult,
    TimerStatus,
)
from xdb.protocol import (
    LocalQueueCommand as WireLocalQueueCommand,
)
from xdb.protocol import (
    TimerCommand as WireTimerCommand,
)

T = TypeVar("T")


@dataclass(frozen=True)
class TimerCommand:
    """A durable timer; it fires after ``delay_seconds``, never before."""

    delay_seconds: int

    @classmethod
    def by_duration(cls, delay: timedelta) -> TimerCommand:
        """A timer firing after ``delay``, rounded up to whole seconds."""
        return cls.by_seconds(delay.total_seconds())

    @classmethod
    def by_seconds(cls, seconds: float) -> TimerCommand:
        """A timer firing after ``seconds``, rounded up: a timer may be late, not early."""
        if seconds < 0:
            raise ValueError("a timer's delay cannot be negative")
        return cls(math.ceil(seconds))


@dataclass(frozen=True)
class LocalQueueCommand:
    """Wait for ``count`` messages on a declared local queue."""

    queue_name: str
    count: int = 1

    @classmethod
    def by_name(cls, queue_name: str, count: int = 1) -> LocalQueueCommand:
        """Wait for ``count`` messages on ``queue_name``."""
        return cls(queue_name, count)


Command = TimerCommand | LocalQueueCommand


@dataclass(frozen=True)
class CommandRequest:
    """The commands a state waits for, and whether any or all must complete.

    Timers and queue commands go over the wire in two lists, and their results come back
    in the same order: the second timer is ``command_results.timer_commands[1]`` whatever
    queue commands sit between.
    """

    waiting_type: CommandWaitingType
    commands: tuple[Command, ...]

    @classmethod
    def for_any_command_completed(cls, *commands: Command) -> CommandRequest:
        """Go on when any one command completes."""
        return cls(CommandWaitingType.ANY_OF_COMPLETION, commands)

    @classmethod
    def for_all_commands_completed(cls, *commands: Command) -> CommandRequest:
        """Go on once every command completed."""
        return cls(CommandWaitingType.ALL_OF_COMPLETION, commands)

    @classmethod
    def empty(cls) -> CommandRequest:
        """Wait for nothing: ``execute`` is called at once."""
        return cls(CommandWaitingType.ALL_OF_COMPLETION, ())

    def queue_names(self) -> list[str]:
        """The local queues this request waits on."""
        return [c.queue_name for c in self.commands if isinstance(c, LocalQueueCommand)]

    def to_wire(self) -> WireCommandRequest:
        """The wire form."""
        return WireCommandRequest(
            waiting_type=self.waiting_type,
            timer_commands=[
                WireTimerCommand(delay_in_seconds=c.delay_seconds)
                for c in self.commands
                if isinstance(c, TimerCommand)
            ],
            local_queue_commands=[
                WireLocalQueueCommand(queue_name=c.queue_name, count=c.count)
                for c in self.commands
                if isinstance(c, LocalQueueCommand)
            ],
        )


class CommandResults:
    """The outcome of a state's commands, handed to ``execute``."""

    def __init__(self, wire: CommandResultsWire | None = None) -> None:
        self.raw = wire or CommandResultsWire()

    @property
    def timer_commands(self) -> Sequence[TimerResult]:
        """Results of the timer commands, in request order."""
        return self.raw.timer_results

    @property
    def local_queue_commands(self) -> Sequence[LocalQueueResult]:
        """Results of the local-queue commands, in request order."""
        return self.raw.local_queue_results

    def timer_fired(self, index: int = 0) -> bool:
        """Whether the ``index``-th timer command fired."""
        timers = self.raw.timer_results
        return index < len(timers) and timers[index].status == TimerStatus.FIRED

    def received_from_queue(self, queue_name: str) -> bool:
        """Whether any command on ``queue_name`` received its messages."""
        return any(
            r.queue_name == queue_name and r.status == LocalQueueCommandStatus.RECEIVED
            for r in self.raw.local_queue_results
        )

    @overload
    def messages_from_queue(self, queue_name: str) -> list[Any]: ...
    @overload
    def messages_from_queue(self, queue_name: str, type_: type[T]) -> list[T]: ...
    @overload
    def messages_from_queue(self, queue_name: str, type_: Any) -> list[Any]: ...
    def messages_from_queue(self, queue_name: str, type_: Any = Any) -> list[Any]:
        """The payloads consumed from ``queue_name``, decoded as ``type_``, oldest first."""
        return [
            encoding.decode(f"message of local queue {queue_name!r}", m.payload, type_)
            for r in self.raw.local_queue_results
            if r.queue_name == queue_name
            for m in r.messages
        ]
