"""Batch operations of both clients: one operation on every execution a filter selects.

A batch is a durable job the service drives at ``rate_per_second``: it walks the
executions its selection matches (``process_type``, the ``where`` tree of ``list`` and
``count``, ``business_table``), newest first, and applies its operation to each at most
once, resuming after any crash; executions started after it are not part of it. Preview
the selection with ``count_processes`` first. ``start_batch`` carries a request id like
the other writes, so it is sent again safely when its answer is lost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from xdb.call import Call
from xdb.process import Process, ProcessDefinition
from xdb.protocol import (
    BATCH_CANCEL,
    BATCH_DESCRIBE,
    BATCH_LIST,
    BATCH_START,
    BatchCancelRequest,
    BatchDescribeRequest,
    BatchDescribeResponse,
    BatchListRequest,
    BatchListResponse,
    BatchOperation,
    BatchReset,
    BatchStartRequest,
    BatchStartResponse,
    BatchStatus,
    BusinessTableRef,
    DeploymentRef,
    FilterNode,
    LocalQueueMessage,
    Reprioritization,
    WorkerDeployment,
)
from xdb.retries import request_id as checked_request_id

T = TypeVar("T")


def _filter(where: FilterNode | Mapping[str, Any] | None) -> FilterNode | None:
    if where is None or isinstance(where, FilterNode):
        return where
    return FilterNode.model_validate(where)


def _process_type(process_type: str | type[Process] | None) -> str | None:
    if isinstance(process_type, type):
        return ProcessDefinition.of(process_type).process_type
    return process_type


def _deployment(deployment: DeploymentRef | WorkerDeployment | None) -> DeploymentRef | None:
    if isinstance(deployment, WorkerDeployment):
        return DeploymentRef(name=deployment.name, version=deployment.version)
    return deployment


class _BatchRequests:
    """Builds the batch calls; each client sends them its own way."""

    request_timeout: float

    def _start_batch(
        self,
        operation: BatchOperation | str,
        process_type: str | type[Process] | None,
        where: FilterNode | Mapping[str, Any] | None,
        business_table: BusinessTableRef | None,
        rate_per_second: int | None,
        reason: str | None,
        identity: str | None,
        messages: Iterable[LocalQueueMessage],
        reset: BatchReset | None,
        move_to: DeploymentRef | WorkerDeployment | None,
        reprioritize: Reprioritization | None,
        request_id: str | None,
    ) -> Call[BatchStartResponse]:
        body = BatchStartRequest(
            request_id=checked_request_id(request_id),
            operation=BatchOperation(operation),
            process_type=_process_type(process_type),
            where=_filter(where),
            business_table=business_table,
            rate_per_second=rate_per_second,
            reason=reason,
            identity=identity,
            messages=list(messages),
            reset=reset,
            move_to=_deployment(move_to),
            reprioritize=reprioritize,
        )
        read = BatchStartResponse.model_validate_json
        return Call(
            BATCH_START, body, self.request_timeout, read, own_request_id=request_id is None
        )

    def _list_batches(
        self,
        status: BatchStatus | str | None,
        page_size: int | None,
        next_page_token: str | None,
    ) -> Call[BatchListResponse]:
        body = BatchListRequest(
            status=BatchStatus(status) if status is not None else None,
            page_size=page_size,
            next_page_token=next_page_token,
        )
        read = BatchListResponse.model_validate_json
        return Call(BATCH_LIST, body, self.request_timeout, read)

    def _describe_batch(self, batch_id: str) -> Call[BatchDescribeResponse]:
        body = BatchDescribeRequest(batch_id=batch_id)
        read = BatchDescribeResponse.model_validate_json
        return Call(BATCH_DESCRIBE, body, self.request_timeout, read)

    def _cancel_batch(
        self, batch_id: str, reason: str | None, identity: str | None
    ) -> Call[BatchDescribeResponse]:
        body = BatchCancelRequest(batch_id=batch_id, reason=reason, identity=identity)
        read = BatchDescribeResponse.model_validate_json
        return Call(BATCH_CANCEL, body, self.request_timeout, read)


class AsyncBatchCalls(_BatchRequests):
    """The batch calls of :class:`~xdb.AsyncClient`."""

    async def _send(self, call: Call[T]) -> T:
        raise NotImplementedError

    async def start_batch(
        self,
        operation: BatchOperation | str,
        *,
        process_type: str | type[Process] | None = None,
        where: FilterNode | Mapping[str, Any] | None = None,
        business_table: BusinessTableRef | None = None,
        rate_per_second: int | None = None,
        reason: str | None = None,
        identity: str | None = None,
        messages: Iterable[LocalQueueMessage] = (),
        reset: BatchReset | None = None,
        move_to: DeploymentRef | WorkerDeployment | None = None,
        reprioritize: Reprioritization | None = None,
        request_id: str | None = None,
    ) -> BatchStartResponse:
        """Starts a batch applying ``operation`` to every execution the selection matches.

        The selection: ``process_type`` (a name or a Process class; needed for ``column``
        conditions and ``MOVE_TO_DEPLOYMENT``), ``where`` (a filter tree, as
        ``count_processes`` takes it: a :class:`~xdb.protocol.FilterNode` or its JSON
        form), ``business_table`` (when no registered definition declares it); none of
        them: every execution. The operation's arguments: ``messages`` for
        ``PUBLISH_TO_LOCAL_QUEUE`` (see :func:`~xdb.local_queue_message`), ``reset`` for
        ``RESET``, ``move_to`` for ``MOVE_TO_DEPLOYMENT``, ``reprioritize`` for
        ``REPRIORITIZE`` (a :class:`~xdb.Reprioritization`: the new priority, fairness
        key or weight, as :meth:`~xdb.AsyncClient.reprioritize` takes them).
        ``rate_per_second``: default 100, at most 10000. ``reason`` and ``identity`` are
        kept in the batch and in each execution's history where the operation records
        them. Answers the batch id and how many executions the selection matched when it
        started.
        """
        return await self._send(
            self._start_batch(
                operation,
                process_type,
                where,
                business_table,
                rate_per_second,
                reason,
                identity,
                messages,
                reset,
                move_to,
                reprioritize,
                request_id,
            )
        )

    async def list_batches(
        self,
        *,
        status: BatchStatus | str | None = None,
        page_size: int | None = None,
        next_page_token: str | None = None,
    ) -> BatchListResponse:
        """A page of batches, newest first (``page_size`` default 50, at most 1000)."""
        return await self._send(self._list_batches(status, page_size, next_page_token))

    async def describe_batch(self, batch_id: str) -> BatchDescribeResponse:
        """A batch, its progress and the latest executions it skipped or failed on.

        Raises :class:`~xdb.errors.BatchNotFoundError` for an unknown id.
        """
        return await self._send(self._describe_batch(batch_id))

    async def cancel_batch(
        self, batch_id: str, *, reason: str | None = None, identity: str | None = None
    ) -> BatchDescribeResponse:
        """Stops a running batch after the execution in hand; what it did stays done.

        Answers the batch as :meth:`describe_batch` does.
        """
        return await self._send(self._cancel_batch(batch_id, reason, identity))


class BatchCalls(_BatchRequests):
    """The batch calls of :class:`~xdb.Client`, as :class:`AsyncBatchCalls`."""

    def _send(self, call: Call[T]) -> T:
        raise NotImplementedError

    def start_batch(
        self,
        operation: BatchOperation | str,
        *,
        process_type: str | type[Process] | None = None,
        where: FilterNode | Mapping[str, Any] | None = None,
        business_table: BusinessTableRef | None = None,
        rate_per_second: int | None = None,
        reason: str | None = None,
        identity: str | None = None,
        messages: Iterable[LocalQueueMessage] = (),
        reset: BatchReset | None = None,
        move_to: DeploymentRef | WorkerDeployment | None = None,
        reprioritize: Reprioritization | None = None,
        request_id: str | None = None,
    ) -> BatchStartResponse:
        """Starts a batch; see :meth:`AsyncBatchCalls.start_batch`."""
        return self._send(
            self._start_batch(
                operation,
                process_type,
                where,
                business_table,
                rate_per_second,
                reason,
                identity,
                messages,
                reset,
                move_to,
                reprioritize,
                request_id,
            )
        )

    def list_batches(
        self,
        *,
        status: BatchStatus | str | None = None,
        page_size: int | None = None,
        next_page_token: str | None = None,
    ) -> BatchListResponse:
        """A page of batches, newest first."""
        return self._send(self._list_batches(status, page_size, next_page_token))

    def describe_batch(self, batch_id: str) -> BatchDescribeResponse:
        """A batch, its progress and the latest executions it skipped or failed on."""
        return self._send(self._describe_batch(batch_id))

    def cancel_batch(
        self, batch_id: str, *, reason: str | None = None, identity: str | None = None
    ) -> BatchDescribeResponse:
        """Stops a running batch after the execution in hand; what it did stays done."""
        return self._send(self._cancel_batch(batch_id, reason, identity))
