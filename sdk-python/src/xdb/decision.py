"""What ``execute`` returns: the next states, or how the thread closes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdb.protocol import ThreadCloseType
from xdb.state import AsyncState

StateRef = type[AsyncState[Any]] | str


def state_id_of(state: StateRef) -> str:
    """The id of a state given by class or by id."""
    return state if isinstance(state, str) else state.get_state_id()


@dataclass(frozen=True)
class NextState:
    """A state to move to, with its input; its config comes from its registration."""

    state_id: str
    input: Any = None

    @classmethod
    def of(cls, state: StateRef, input: Any = None) -> NextState:
        """Move to ``state`` (a state class, or a state id) with ``input``."""
        return cls(state_id_of(state), input)


@dataclass(frozen=True)
class StateDecision:
    """The outcome of ``execute``: next states (run as parallel threads) or a close."""

    next_states: tuple[NextState, ...] = ()
    close_type: ThreadCloseType | None = None
    output: Any = None

    def __post_init__(self) -> None:
        if not self.next_states and self.close_type is None:
            raise ValueError(
                "a decision needs next states or a close; use StateDecision.dead_end() "
                "to end only this thread"
            )
        if self.next_states and self.close_type is not None:
            raise ValueError("a decision has next states or a close, not both")

    @classmethod
    def single_next_state(cls, state: StateRef, input: Any = None) -> StateDecision:
        """Go on with ``state`` in this thread."""
        return cls((NextState.of(state, input),))

    @classmethod
    def multiple_next_states(cls, *states: NextState | StateRef) -> StateDecision:
        """Go on with several states, each a thread of its own, in parallel."""
        return cls(tuple(s if isinstance(s, NextState) else NextState.of(s) for s in states))

    @classmethod
    def graceful_complete_process(cls, output: Any = None) -> StateDecision:
        """Complete the process with ``output`` once no other thread runs."""
        return cls(close_type=ThreadCloseType.GRACEFUL_COMPLETE_PROCESS, output=output)

    @classmethod
    def force_complete_process(cls, output: Any = None) -> StateDecision:
        """Complete the process now with ``output``, ending every other thread."""
        return cls(close_type=ThreadCloseType.FORCE_COMPLETE_PROCESS, output=output)

    @classmethod
    def force_fail_process(cls, details: Any = None) -> StateDecision:
        """Fail the process now with ``details``, ending every other thread."""
        return cls(close_type=ThreadCloseType.FORCE_FAIL_PROCESS, output=details)

    @classmethod
    def dead_end(cls) -> StateDecision:
        """End this thread only; the process goes on while other threads run."""
        return cls(close_type=ThreadCloseType.DEAD_END)
