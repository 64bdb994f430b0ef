"""The operator's calls of both clients.

Why an execution is not progressing (``states``), the controls that unstick it
(``retry_now``, ``give_up``, ``pause``, ``resume``) or reorder it (``reprioritize``), and
``reset``, which restarts an execution from a named state. Each control is recorded in the
execution's history with its ``reason`` and ``identity``; one that does not apply to the
execution as it is now raises :class:`~xdb.errors.ControlNotApplicableError`, and one on
a closed execution :class:`~xdb.errors.ProcessNotRunningError`. The controls and reset carry
a request id (``request_id=``, else one the client makes per call), so that one whose
answer was lost is sent again without acting twice.
"""

from __future__ import annotations

from typing import TypeVar

from xdb import encoding
from xdb.call import Call
from xdb.protocol import (
    GIVE_UP,
    PAUSE,
    REPRIORITIZE,
    RESET,
    RESUME,
    RETRY_NOW,
    STATES,
    AsyncStateConfig,
    ProcessExecutionControlRequest,
    ProcessExecutionControlResponse,
    ProcessExecutionResetRequest,
    ProcessExecutionResetResponse,
    ProcessExecutionStatesRequest,
    ProcessExecutionStatesResponse,
    Reprioritization,
)
from xdb.retries import request_id as checked_request_id

T = TypeVar("T")


class _OperatorRequests:
    """Builds the operator's calls; each client sends them its own way."""

    request_timeout: float

    def _states(
        self, process_id: str, execution_id: str | None
    ) -> Call[ProcessExecutionStatesResponse]:
        body = ProcessExecutionStatesRequest(
            process_id=process_id, process_execution_id=execution_id
        )
        read = ProcessExecutionStatesResponse.model_validate_json
        return Call(STATES, body, self.request_timeout, read)

    def _control(
        self,
        path: str,
        process_id: str,
        execution_id: str | None,
        state_execution_id: str | None,
        reason: str | None,
        identity: str | None,
        request_id: str | None,
        reprioritize: Reprioritization | None = None,
    ) -> Call[ProcessExecutionControlResponse]:
        body = ProcessExecutionControlRequest(
            request_id=checked_request_id(request_id),
            process_id=process_id,
            process_execution_id=execution_id,
            state_execution_id=state_execution_id,
            reason=reason,
            identity=identity,
            reprioritize=reprioritize,
        )
        read = ProcessExecutionControlResponse.model_validate_json
        return Call(path, body, self.request_timeout, read, own_request_id=request_id is None)

    def _reprioritize(
        self,
        process_id: str,
        priority: int | None,
        fairness_key: str | None,
        fairness_weight: int | None,
        execution_id: str | None,
        reason: str | None,
        identity: str | None,
        request_id: str | None,
    ) -> Call[ProcessExecutionControlResponse]:
        change = Reprioritization(
            priority=priority, fairness_key=fairness_key, fairness_weight=fairness_weight
        )
        return self._control(
            REPRIORITIZE,
            process_id,
            execution_id,
            None,
            reason,
            identity,
            request_id,
            reprioritize=change,
        )

    def _reset(
        self,
        process_id: str,
        state_id: str,
        state_input: object,
        state_config: AsyncStateConfig | None,
        execution_id: str | None,
        reason: str | None,
        identity: str | None,
        request_id: str | None,
    ) -> Call[ProcessExecutionResetResponse]:
        body = ProcessExecutionResetRequest(
            request_id=checked_request_id(request_id),
            process_id=process_id,
            process_execution_id=execution_id,
            state_id=state_id,
            state_input=encoding.encode_optional("reset state input", state_input),
            state_config=state_config,
            reason=reason,
            identity=identity,
        )
        read = ProcessExecutionResetResponse.model_validate_json
        return Call(RESET, body, self.request_timeout, read, own_request_id=request_id is None)


class AsyncOperatorCalls(_OperatorRequests):
    """The operator's calls of :class:`~xdb.AsyncClient`."""

    async def _send(self, call: Call[T]) -> T:
        raise NotImplementedError

    async def states(
        self, process_id: str, process_execution_id: str | None = None
    ) -> ProcessExecutionStatesResponse:
        """The state executions of the current (or a given) execution of ``process_id``.

        For each: its status, the waitUntil or execute call it waits on (scheduled,
        running, parked or paused), its last failed attempt, what its commands wait for.
        """
        return await self._send(self._states(process_id, process_execution_id))

    async def retry_now(
        self,
        process_id: str,
        *,
        process_execution_id: str | None = None,
        state_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionControlResponse:
        """Makes a parked task, or a call waiting out its retry backoff, due at once.

        Attempt counts are kept. ``state_execution_id`` (``stateId-number``) limits it to
        one state execution; the answer names those acted on.
        """
        return await self._send(
            self._control(
                RETRY_NOW,
                process_id,
                process_execution_id,
                state_execution_id,
                reason,
                identity,
                request_id,
            )
        )

    async def give_up(
        self,
        process_id: str,
        *,
        process_execution_id: str | None = None,
        state_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionControlResponse:
        """Fails a state's pending call for good: its failure-recovery policy applies.

        ``state_execution_id`` limits it to one state execution; absent, every failing
        state is given up on.
        """
        return await self._send(
            self._control(
                GIVE_UP,
                process_id,
                process_execution_id,
                state_execution_id,
                reason,
                identity,
                request_id,
            )
        )

    async def pause(
        self,
        process_id: str,
        *,
        process_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionControlResponse:
        """Pauses the execution: nothing of it is called until :meth:`resume`.

        A call already running finishes; the answer names the states whose calls are held.
        """
        return await self._send(
            self._control(
                PAUSE, process_id, process_execution_id, None, reason, identity, request_id
            )
        )

    async def resume(
        self,
        process_id: str,
        *,
        process_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionControlResponse:
        """Resumes a paused execution: what fell due meanwhile runs now."""
        return await self._send(
            self._control(
                RESUME, process_id, process_execution_id, None, reason, identity, request_id
            )
        )

    async def reprioritize(
        self,
        process_id: str,
        *,
        priority: int | None = None,
        fairness_key: str | None = None,
        fairness_weight: int | None = None,
        process_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionControlResponse:
        """Changes the running execution's priority or fairness key, and its waiting tasks'.

        Its waiting tasks, and those it writes later, are claimed in the new order.
        ``priority``: 1 (claimed first) to 5; ``fairness_key``: the new key, ``""``
        removes it (and its weight); ``fairness_weight``: 1 to 1,000, weighing the new
        key or the one the execution has (a new key without one keeps the execution's
        weight). What is left out stays; at least one must be given. The service refuses
        a value out of range naming its field (:class:`~xdb.errors.InvalidRequestError`),
        and a weight for an execution without a key
        (:class:`~xdb.errors.ControlNotApplicableError`). The answer names the state
        executions whose waiting calls were reordered; the history records
        ``REPRIORITIZED`` with the order before and after
        (:class:`~xdb.protocol.ReprioritizedDetails`).
        """
        return await self._send(
            self._reprioritize(
                process_id,
                priority,
                fairness_key,
                fairness_weight,
                process_execution_id,
                reason,
                identity,
                request_id,
            )
        )

    async def reset(
        self,
        process_id: str,
        state_id: str,
        state_input: object = None,
        *,
        state_config: AsyncStateConfig | None = None,
        process_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionResetResponse:
        """Restarts the execution from ``state_id`` with ``state_input``.

        A running execution's open states are aborted (their calls, timers and waits
        cancelled); a closed one is continued by a new execution of the process id,
        linked to it. The answer names the execution that continues. Without
        ``state_config``, the state's registered options apply, else the defaults.
        """
        return await self._send(
            self._reset(
                process_id,
                state_id,
                state_input,
                state_config,
                process_execution_id,
                reason,
                identity,
                request_id,
            )
        )


class OperatorCalls(_OperatorRequests):
    """The operator's calls of :class:`~xdb.Client`, as :class:`AsyncOperatorCalls`."""

    def _send(self, call: Call[T]) -> T:
        raise NotImplementedError

    def states(
        self, process_id: str, process_execution_id: str | None = None
    ) -> ProcessExecutionStatesResponse:
        """The state executions of the current (or a given) execution of ``process_id``."""
        return self._send(self._states(process_id, process_execution_id))

    def retry_now(
        self,
        process_id: str,
        *,
        process_execution_id: str | None = None,
        state_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionControlResponse:
        """Makes a parked task, or a call waiting out its retry backoff, due at once."""
        return self._send(
            self._control(
                RETRY_NOW,
                process_id,
                process_execution_id,
                state_execution_id,
                reason,
                identity,
                request_id,
            )
        )

    def give_up(
        self,
        process_id: str,
        *,
        process_execution_id: str | None = None,
        state_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionControlResponse:
        """Fails a state's pending call for good: its failure-recovery policy applies."""
        return self._send(
            self._control(
                GIVE_UP,
                process_id,
                process_execution_id,
                state_execution_id,
                reason,
                identity,
                request_id,
            )
        )

    def pause(
        self,
        process_id: str,
        *,
        process_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionControlResponse:
        """Pauses the execution: nothing of it is called until :meth:`resume`."""
        return self._send(
            self._control(
                PAUSE, process_id, process_execution_id, None, reason, identity, request_id
            )
        )

    def resume(
        self,
        process_id: str,
        *,
        process_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionControlResponse:
        """Resumes a paused execution: what fell due meanwhile runs now."""
        return self._send(
            self._control(
                RESUME, process_id, process_execution_id, None, reason, identity, request_id
            )
        )

    def reprioritize(
        self,
        process_id: str,
        *,
        priority: int | None = None,
        fairness_key: str | None = None,
        fairness_weight: int | None = None,
        process_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionControlResponse:
        """Changes the execution's priority or fairness key, and its waiting tasks'."""
        return self._send(
            self._reprioritize(
                process_id,
                priority,
                fairness_key,
                fairness_weight,
                process_execution_id,
                reason,
                identity,
                request_id,
            )
        )

    def reset(
        self,
        process_id: str,
        state_id: str,
        state_input: object = None,
        *,
        state_config: AsyncStateConfig | None = None,
        process_execution_id: str | None = None,
        reason: str | None = None,
        identity: str | None = None,
        request_id: str | None = None,
    ) -> ProcessExecutionResetResponse:
        """Restarts the execution from ``state_id``, as :meth:`AsyncOperatorCalls.reset`."""
        return self._send(
            self._reset(
                process_id,
                state_id,
                state_input,
                state_config,
                process_execution_id,
                reason,
                identity,
                request_id,
            )
        )
