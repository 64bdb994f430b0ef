"""Reading history events: which state execution an event is about."""

from __future__ import annotations

from xdb.protocol import HistoryEvent


def state_execution_id_of(event: HistoryEvent) -> str | None:
    """The state execution (``stateId-number``) ``event`` is about, where it has one.

    Set for ``WAIT_UNTIL_COMPLETED``, ``EXECUTE_COMPLETED``, ``STATE_API_FAILED``,
    ``STATE_FAILED``, ``TIMER_FIRED`` and ``LOCAL_QUEUE_MESSAGES_CONSUMED``; for
    ``LOCAL_QUEUE_MESSAGES_PUBLISHED`` when a state published; for ``TASK_PARKED`` unless
    the task was the process timeout. None for the others (an operator's control names
    the state executions it acted on: :func:`state_execution_ids_of`).
    """
    value = event.details.get("stateExecutionId")
    return value if isinstance(value, str) else None


def state_execution_ids_of(event: HistoryEvent) -> list[str]:
    """Every state execution ``event`` is about: its own, or those a control acted on."""
    single = state_execution_id_of(event)
    if single is not None:
        return [single]
    many = event.details.get("stateExecutionIds")
    return [v for v in many if isinstance(v, str)] if isinstance(many, list) else []
