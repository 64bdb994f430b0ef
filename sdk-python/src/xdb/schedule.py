"""Schedules of both clients: a process type started on a cron expression or an interval.

Each firing's process id is the schedule id and its nominal time, so a firing never
starts twice. A cron spec reads wall-clock time in its zone: a local time the clocks skip
does not fire, one they repeat fires once. Every operator's change of a schedule (create,
update, pause, resume, trigger, backfill, delete) is kept in an audit history, which
outlives the schedule. See ``docs/schedules.md``.

A process type may also declare the schedules that start it (:attr:`xdb.Process.schedules`);
:func:`cron_spec` and :func:`interval_spec` write their specs.
"""

from __future__ import annotations

from typing import TypeVar

from xdb.call import Call
from xdb.protocol import (
    SCHEDULE_BACKFILL,
    SCHEDULE_CREATE,
    SCHEDULE_DELETE,
    SCHEDULE_DESCRIBE,
    SCHEDULE_HISTORY,
    SCHEDULE_LIST,
    SCHEDULE_PAUSE,
    SCHEDULE_RESUME,
    SCHEDULE_TRIGGER,
    SCHEDULE_UPDATE,
    CronSpec,
    EmptyResponse,
    IntervalSpec,
    ScheduleBackfillRequest,
    ScheduleBackfillResponse,
    ScheduleControlRequest,
    ScheduleCreateRequest,
    ScheduleDescribeRequest,
    ScheduleDescribeResponse,
    ScheduleHistoryRequest,
    ScheduleHistoryResponse,
    ScheduleListRequest,
    ScheduleListResponse,
    ScheduleOverlapPolicy,
    ScheduleSpec,
    ScheduleTriggerRequest,
    ScheduleTriggerResponse,
    ScheduleUpdateRequest,
)

T = TypeVar("T")


def cron_spec(expression: str, *, time_zone: str | None = None) -> ScheduleSpec:
    """A spec firing on a cron ``expression``, read in an IANA ``time_zone`` (default UTC).

    ``cron_spec("0 3 * * *", time_zone="Europe/Paris")`` fires at 03:00 Paris time every day.
    """
    return ScheduleSpec(cron=CronSpec(expression=expression, time_zone=time_zone))


def interval_spec(every_seconds: int, *, jitter_seconds: int | None = None) -> ScheduleSpec:
    """A spec firing every ``every_seconds``, on its multiples since the Unix epoch.

    With ``jitter_seconds`` (less than ``every_seconds``), each firing starts up to that many
    seconds after its nominal time.
    """
    return ScheduleSpec(
        interval=IntervalSpec(every_seconds=every_seconds, jitter_seconds=jitter_seconds)
    )


class _ScheduleRequests:
    """Builds the schedule calls; each client sends them its own way."""

    request_timeout: float

    def _create_schedule_call(
        self, request: ScheduleCreateRequest
    ) -> Call[ScheduleDescribeResponse]:
        return Call(
            SCHEDULE_CREATE,
            request,
            self.request_timeout,
            ScheduleDescribeResponse.model_validate_json,
        )

    def _update_schedule_call(
        self, request: ScheduleUpdateRequest
    ) -> Call[ScheduleDescribeResponse]:
        return Call(
            SCHEDULE_UPDATE,
            request,
            self.request_timeout,
            ScheduleDescribeResponse.model_validate_json,
        )

    def _control_schedule_call(
        self, path: str, schedule_id: str, reason: str | None
    ) -> Call[ScheduleDescribeResponse]:
        body = ScheduleControlRequest(schedule_id=schedule_id, reason=reason)
        return Call(path, body, self.request_timeout, ScheduleDescribeResponse.model_validate_json)

    def _trigger_schedule_call(
        self, schedule_id: str, overlap_policy: ScheduleOverlapPolicy | str | None
    ) -> Call[ScheduleTriggerResponse]:
        policy = ScheduleOverlapPolicy(overlap_policy) if overlap_policy is not None else None
        body = ScheduleTriggerRequest(schedule_id=schedule_id, overlap_policy=policy)
        return Call(
            SCHEDULE_TRIGGER,
            body,
            self.request_timeout,
            ScheduleTriggerResponse.model_validate_json,
        )

    def _backfill_schedule_call(
        self,
        schedule_id: str,
        start_timestamp_ms: int,
        end_timestamp_ms: int,
        overlap_policy: ScheduleOverlapPolicy | str | None,
    ) -> Call[ScheduleBackfillResponse]:
        policy = ScheduleOverlapPolicy(overlap_policy) if overlap_policy is not None else None
        body = ScheduleBackfillRequest(
            schedule_id=schedule_id,
            start_timestamp_ms=start_timestamp_ms,
            end_timestamp_ms=end_timestamp_ms,
            overlap_policy=policy,
        )
        return Call(
            SCHEDULE_BACKFILL,
            body,
            self.request_timeout,
            ScheduleBackfillResponse.model_validate_json,
        )

    def _delete_schedule_call(self, schedule_id: str, reason: str | None) -> Call[EmptyResponse]:
        body = ScheduleControlRequest(schedule_id=schedule_id, reason=reason)
        return Call(SCHEDULE_DELETE, body, self.request_timeout, EmptyResponse.model_validate_json)

    def _list_schedule_call(
        self, process_type: str | None, page_size: int | None, next_page_token: str | None
    ) -> Call[ScheduleListResponse]:
        body = ScheduleListRequest(
            process_type=process_type, page_size=page_size, next_page_token=next_page_token
        )
        return Call(
            SCHEDULE_LIST, body, self.request_timeout, ScheduleListResponse.model_validate_json
        )

    def _describe_schedule_call(self, schedule_id: str) -> Call[ScheduleDescribeResponse]:
        body = ScheduleDescribeRequest(schedule_id=schedule_id)
        return Call(
            SCHEDULE_DESCRIBE,
            body,
            self.request_timeout,
            ScheduleDescribeResponse.model_validate_json,
        )

    def _schedule_history_call(
        self, schedule_id: str | None, page_size: int | None, next_page_token: str | None
    ) -> Call[ScheduleHistoryResponse]:
        body = ScheduleHistoryRequest(
            schedule_id=schedule_id, page_size=page_size, next_page_token=next_page_token
        )
        return Call(
            SCHEDULE_HISTORY,
            body,
            self.request_timeout,
            ScheduleHistoryResponse.model_validate_json,
        )


class AsyncScheduleCalls(_ScheduleRequests):
    """The schedule calls of :class:`~xdb.AsyncClient`."""

    async def _send(self, call: Call[T]) -> T:
        raise NotImplementedError

    async def create_schedule(self, request: ScheduleCreateRequest) -> ScheduleDescribeResponse:
        """Creates a schedule; a bad spec raises ``InvalidRequestError`` naming the field."""
        return await self._send(self._create_schedule_call(request))

    async def update_schedule(self, request: ScheduleUpdateRequest) -> ScheduleDescribeResponse:
        """Replaces a schedule's spec, template and policies; it fires anew from now."""
        return await self._send(self._update_schedule_call(request))

    async def pause_schedule(
        self, schedule_id: str, *, reason: str | None = None
    ) -> ScheduleDescribeResponse:
        """Pauses a schedule: nothing fires until it is resumed."""
        return await self._send(self._control_schedule_call(SCHEDULE_PAUSE, schedule_id, reason))

    async def resume_schedule(
        self, schedule_id: str, *, reason: str | None = None
    ) -> ScheduleDescribeResponse:
        """Resumes a schedule; missed firings within its catch-up window run."""
        return await self._send(self._control_schedule_call(SCHEDULE_RESUME, schedule_id, reason))

    async def trigger_schedule(
        self, schedule_id: str, *, overlap_policy: ScheduleOverlapPolicy | str | None = None
    ) -> ScheduleTriggerResponse:
        """Fires a schedule now, whatever its spec and paused flag say."""
        return await self._send(self._trigger_schedule_call(schedule_id, overlap_policy))

    async def backfill_schedule(
        self,
        schedule_id: str,
        start_timestamp_ms: int,
        end_timestamp_ms: int,
        *,
        overlap_policy: ScheduleOverlapPolicy | str | None = None,
    ) -> ScheduleBackfillResponse:
        """Runs the firings the spec had in ``[start, end)``; each is recorded once."""
        return await self._send(
            self._backfill_schedule_call(
                schedule_id, start_timestamp_ms, end_timestamp_ms, overlap_policy
            )
        )

    async def delete_schedule(self, schedule_id: str, *, reason: str | None = None) -> None:
        """Deletes a schedule; the executions it started run on."""
        await self._send(self._delete_schedule_call(schedule_id, reason))

    async def list_schedules(
        self,
        *,
        process_type: str | None = None,
        page_size: int | None = None,
        next_page_token: str | None = None,
    ) -> ScheduleListResponse:
        """A page of schedules, by id."""
        return await self._send(self._list_schedule_call(process_type, page_size, next_page_token))

    async def describe_schedule(self, schedule_id: str) -> ScheduleDescribeResponse:
        """A schedule, its next 10 fire times and its latest firings."""
        return await self._send(self._describe_schedule_call(schedule_id))

    async def schedule_history(
        self,
        *,
        schedule_id: str | None = None,
        page_size: int | None = None,
        next_page_token: str | None = None,
    ) -> ScheduleHistoryResponse:
        """A page of operators' changes of schedules, newest first.

        Each names the action, who made it (the token's name, ``anonymous`` without
        tokens), the schedule before and after, and why. ``schedule_id`` need not exist any
        more: a deleted schedule's history is kept.
        """
        return await self._send(
            self._schedule_history_call(schedule_id, page_size, next_page_token)
        )


class ScheduleCalls(_ScheduleRequests):
    """The schedule calls of :class:`~xdb.Client`, as :class:`AsyncScheduleCalls`."""

    def _send(self, call: Call[T]) -> T:
        raise NotImplementedError

    def create_schedule(self, request: ScheduleCreateRequest) -> ScheduleDescribeResponse:
        """Creates a schedule; a bad spec raises ``InvalidRequestError`` naming the field."""
        return self._send(self._create_schedule_call(request))

    def update_schedule(self, request: ScheduleUpdateRequest) -> ScheduleDescribeResponse:
        """Replaces a schedule's spec, template and policies; it fires anew from now."""
        return self._send(self._update_schedule_call(request))

    def pause_schedule(
        self, schedule_id: str, *, reason: str | None = None
    ) -> ScheduleDescribeResponse:
        """Pauses a schedule: nothing fires until it is resumed."""
        return self._send(self._control_schedule_call(SCHEDULE_PAUSE, schedule_id, reason))

    def resume_schedule(
        self, schedule_id: str, *, reason: str | None = None
    ) -> ScheduleDescribeResponse:
        """Resumes a schedule; missed firings within its catch-up window run."""
        return self._send(self._control_schedule_call(SCHEDULE_RESUME, schedule_id, reason))

    def trigger_schedule(
        self, schedule_id: str, *, overlap_policy: ScheduleOverlapPolicy | str | None = None
    ) -> ScheduleTriggerResponse:
        """Fires a schedule now, whatever its spec and paused flag say."""
        return self._send(self._trigger_schedule_call(schedule_id, overlap_policy))

    def backfill_schedule(
        self,
        schedule_id: str,
        start_timestamp_ms: int,
        end_timestamp_ms: int,
        *,
        overlap_policy: ScheduleOverlapPolicy | str | None = None,
    ) -> ScheduleBackfillResponse:
        """Runs the firings the spec had in ``[start, end)``; each is recorded once."""
        return self._send(
            self._backfill_schedule_call(
                schedule_id, start_timestamp_ms, end_timestamp_ms, overlap_policy
            )
        )

    def delete_schedule(self, schedule_id: str, *, reason: str | None = None) -> None:
        """Deletes a schedule; the executions it started run on."""
        self._send(self._delete_schedule_call(schedule_id, reason))

    def list_schedules(
        self,
        *,
        process_type: str | None = None,
        page_size: int | None = None,
        next_page_token: str | None = None,
    ) -> ScheduleListResponse:
        """A page of schedules, by id."""
        return self._send(self._list_schedule_call(process_type, page_size, next_page_token))

    def describe_schedule(self, schedule_id: str) -> ScheduleDescribeResponse:
        """A schedule, its next 10 fire times and its latest firings."""
        return self._send(self._describe_schedule_call(schedule_id))

    def schedule_history(
        self,
        *,
        schedule_id: str | None = None,
        page_size: int | None = None,
        next_page_token: str | None = None,
    ) -> ScheduleHistoryResponse:
        """A page of operators' changes of schedules, newest first.

        As :meth:`AsyncScheduleCalls.schedule_history`.
        """
        return self._send(self._schedule_history_call(schedule_id, page_size, next_page_token))
