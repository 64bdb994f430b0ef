"""Errors raised by the SDK: typed service errors, and the SDK's own checks."""

from __future__ import annotations

from typing import ClassVar

from pydantic import ValidationError

from xdb.protocol import ApiErrorResponse, ErrorSubType


class XdbError(Exception):
    """Base of every error this SDK raises."""


class EncodingError(XdbError):
    """A value could not be encoded, or a payload could not be decoded as asked."""


class SchemaError(XdbError):
    """A name the process did not declare (attribute, queue, state, RPC), or a misuse."""


class ClientError(XdbError):
    """A service call that failed."""


class TransportError(ClientError):
    """The request got no answer (connection refused, reset, timeout, ...).

    Raised once the client's attempts are spent (see ``max_attempts`` of the clients).
    """


class InvalidResponseError(ClientError):
    """A 2xx answer whose body is not what the contract says."""


class HttpError(ClientError):
    """A non-2xx answer without the service's JSON error body (a proxy, a crash)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"XDB service answered HTTP {status}: {body[:500]}")
        self.status = status
        self.body = body


class ApiError(ClientError):
    """The service refused a request; ``sub_type`` says why, for programs to branch on.

    A sub-type this SDK does not know (a newer service) is kept as a plain string.
    """

    sub_type_of_class: ClassVar[ErrorSubType | None] = None

    def __init__(
        self, status: int, sub_type: ErrorSubType | str, message: str, worker_error: str | None
    ) -> None:
        text = f"XDB service answered HTTP {status} {sub_type}: {message}"
        if worker_error:
            text += f" (worker: {worker_error})"
        super().__init__(text)
        self.status = status
        self.sub_type = sub_type
        self.message = message
        self.worker_error = worker_error


class InvalidRequestError(ApiError):
    """400: the request is malformed or breaks a rule; nothing changed."""

    sub_type_of_class = ErrorSubType.INVALID_REQUEST


class UnauthorizedError(ApiError):
    """401: the service wants a valid bearer token."""

    sub_type_of_class = ErrorSubType.UNAUTHORIZED


class ForbiddenError(ApiError):
    """403: the token is accepted, but its roles do not cover this call.

    ``message`` names the role it needs (read, operate, client or deploy). Nothing changed; use
    another token.
    """

    sub_type_of_class = ErrorSubType.FORBIDDEN


class ProcessNotFoundError(ApiError):
    """404: no such process id or execution."""

    sub_type_of_class = ErrorSubType.PROCESS_NOT_FOUND


class DefinitionNotFoundError(ApiError):
    """404: no process type of this name is registered, or it has no such revision."""

    sub_type_of_class = ErrorSubType.DEFINITION_NOT_FOUND


class ProcessAlreadyStartedError(ApiError):
    """409: the id-reuse policy refused a new execution."""

    sub_type_of_class = ErrorSubType.PROCESS_ALREADY_STARTED


class ProcessNotRunningError(ApiError):
    """409: the execution is closed and accepts no more work."""

    sub_type_of_class = ErrorSubType.PROCESS_NOT_RUNNING


class ProcessClosedDuringRpcError(ApiError):
    """409: the RPC's worker answered, but the execution closed meanwhile.

    The RPC's writes and messages were discarded; effects outside XDB did happen.
    """

    sub_type_of_class = ErrorSubType.PROCESS_CLOSED_DURING_RPC


class ControlNotApplicableError(ApiError):
    """409: an operator's control does not apply to the execution as it is now."""

    sub_type_of_class = ErrorSubType.CONTROL_NOT_APPLICABLE


class DefinitionIncompatibleError(ApiError):
    """409: a registration would remove states that running executions wait in.

    ``message`` names the states and how many executions; nothing was registered. Let
    them finish first, or register with ``force=True``.
    """

    sub_type_of_class = ErrorSubType.DEFINITION_INCOMPATIBLE


class RequestIdConflictError(ApiError):
    """409: the request's ``request_id`` was used before for a different request.

    Within the service's retention window (24 hours by default), for another body or
    another operation; ``message`` names the first. Nothing changed: a new request needs a
    new id.
    """

    sub_type_of_class = ErrorSubType.REQUEST_ID_CONFLICT


class BatchNotFoundError(ApiError):
    """404: no batch has this id."""

    sub_type_of_class = ErrorSubType.BATCH_NOT_FOUND


class ScheduleNotFoundError(ApiError):
    """404: no schedule has this id."""

    sub_type_of_class = ErrorSubType.SCHEDULE_NOT_FOUND


class ScheduleAlreadyExistsError(ApiError):
    """409: a schedule with this id exists; nothing was created."""

    sub_type_of_class = ErrorSubType.SCHEDULE_ALREADY_EXISTS


class PayloadTooLargeError(ApiError):
    """413: a payload or field is over its limit."""

    sub_type_of_class = ErrorSubType.PAYLOAD_TOO_LARGE


class WorkerApiError(ApiError):
    """424: the worker failed, timed out or answered garbage (see ``worker_error``)."""

    sub_type_of_class = ErrorSubType.WORKER_API_ERROR


class AppDatabaseError(ApiError):
    """424: your database refused an attribute read or write (a missing table or column)."""

    sub_type_of_class = ErrorSubType.APP_DATABASE_ERROR


class InternalServiceError(ApiError):
    """500: the service failed; details are in its log."""

    sub_type_of_class = ErrorSubType.INTERNAL_ERROR


class OverloadedError(ApiError):
    """503: the service is at its limit; nothing changed, try again later.

    The clients send the call again themselves (after ``Retry-After``, a bounded number of
    times): this is raised once those attempts are spent.
    """

    sub_type_of_class = ErrorSubType.OVERLOADED


class DatabaseUnavailableError(ApiError):
    """503: the service lost its database connection.

    The write may or may not have taken effect (the connection can drop while the
    database commits). The clients send reads, and writes that carry a request id (start,
    stop, publish, the controls, reset, batch start), again themselves with the same id, so
    that a write that did commit is answered as it was, not done twice: this is raised once
    those attempts are spent. Other writes (an RPC, a registration, a move) are not sent
    again: read before sending one again.
    """

    sub_type_of_class = ErrorSubType.DATABASE_UNAVAILABLE


_BY_SUB_TYPE: dict[str, type[ApiError]] = {
    cls.sub_type_of_class.value: cls
    for cls in (
        InvalidRequestError,
        UnauthorizedError,
        ForbiddenError,
        ProcessNotFoundError,
        DefinitionNotFoundError,
        ProcessAlreadyStartedError,
        ProcessNotRunningError,
        ProcessClosedDuringRpcError,
        ControlNotApplicableError,
        DefinitionIncompatibleError,
        RequestIdConflictError,
        BatchNotFoundError,
        ScheduleNotFoundError,
        ScheduleAlreadyExistsError,
        PayloadTooLargeError,
        WorkerApiError,
        AppDatabaseError,
        InternalServiceError,
        OverloadedError,
        DatabaseUnavailableError,
    )
    if cls.sub_type_of_class is not None
}


def error_from_response(status: int, body: bytes) -> ClientError:
    """The typed error of a non-2xx answer: by the body's ``subType`` when it has one."""
    try:
        parsed = ApiErrorResponse.model_validate_json(body)
    except ValidationError:
        return HttpError(status, body.decode("utf-8", errors="replace"))
    cls = _BY_SUB_TYPE.get(parsed.sub_type, ApiError)
    sub_type: ErrorSubType | str = (
        ErrorSubType(parsed.sub_type) if parsed.sub_type in _BY_SUB_TYPE else parsed.sub_type
    )
    return cls(status, sub_type, parsed.message, parsed.worker_error)
