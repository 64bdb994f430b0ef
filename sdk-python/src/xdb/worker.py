"""The worker: an ASGI app serving the worker API for the processes it hosts."""

from __future__ import annotations

import functools
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from xdb import context as _context
from xdb import encoding, signature
from xdb.command import CommandRequest, CommandResults
from xdb.communication import Communication
from xdb.context import TRACEPARENT, TRACESTATE, Context, TraceContext
from xdb.decision import StateDecision
from xdb.definitions import export_definition
from xdb.errors import EncodingError
from xdb.persistence import Persistence
from xdb.process import Process, ProcessDefinition
from xdb.protocol import (
    WORKER_EXECUTE,
    WORKER_RPC,
    WORKER_WAIT_UNTIL,
    AsyncStateExecuteRequest,
    AsyncStateExecuteResponse,
    AsyncStateWaitUntilRequest,
    AsyncStateWaitUntilResponse,
    LoadedAttributes,
    ProcessRpcWorkerRequest,
    ProcessRpcWorkerResponse,
    WireModel,
    WorkerErrorResponse,
)
from xdb.state import AsyncState

if TYPE_CHECKING:
    from xdb.client import AsyncClient
    from xdb.protocol import (
        ProcessDefinitionWire,
        RegisterDefinitionsResponse,
        WorkerDeployment,
    )

log = logging.getLogger("xdb.worker")

T = TypeVar("T")
Req = TypeVar("Req", bound=BaseModel)

# errorType values of the worker's error bodies (the protocol's WorkerErrorType). XDB
# parks a waitUntil or execute answered with one of the first five after one attempt (it
# can never succeed as the worker stands); the others are failed attempts, retried by the
# state's retry policy.
ERROR_UNKNOWN_PROCESS_TYPE = "UNKNOWN_PROCESS_TYPE"
ERROR_UNKNOWN_STATE = "UNKNOWN_STATE"
ERROR_UNKNOWN_RPC = "UNKNOWN_RPC"
ERROR_UNDECODABLE_INPUT = "UNDECODABLE_INPUT"
ERROR_NOT_IMPLEMENTED = "NOT_IMPLEMENTED"
ERROR_INVALID_REQUEST = "INVALID_REQUEST"
ERROR_USER_CODE = "USER_CODE_ERROR"
ERROR_UNAUTHORIZED = "UNAUTHORIZED"


class WorkerCallError(Exception):
    """A failed worker call: the HTTP status and error body the worker answers with.

    4xx means the call itself is wrong (unknown state, undecodable input, no waitUntil):
    XDB parks it for an operator; 5xx means user code failed, and XDB retries per the
    state's retry policy.
    """

    def __init__(self, status: int, error_type: str, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.body = WorkerErrorResponse(detail=detail, error_type=error_type)


class WorkerService:
    """The processes one worker hosts; itself an ASGI app serving the three worker paths.

    Mount it in your own service (``app.mount("/xdb", worker)``) and start processes
    with that base URL as the worker URL (``http://host:port/xdb``).
    """

    def __init__(
        self,
        *processes: Process,
        signing_secret: str | bytes | None = None,
        max_signature_skew_seconds: int = signature.DEFAULT_MAX_SKEW_SECONDS,
    ) -> None:
        self._definitions: dict[str, ProcessDefinition] = {}
        if isinstance(signing_secret, str):
            signing_secret = signing_secret.encode()
        self._secret = signing_secret
        self._max_skew = max_signature_skew_seconds
        for process in processes:
            self.register(process)
        self._app = Starlette(routes=self.routes())

    def register(self, process: Process) -> WorkerService:
        """Hosts ``process``; a process type may be registered once."""
        definition = ProcessDefinition(process)
        if definition.process_type in self._definitions:
            raise ValueError(f"process type {definition.process_type!r} is registered twice")
        self._definitions[definition.process_type] = definition
        return self

    def definition(self, process_type: str) -> ProcessDefinition | None:
        """The definition of a hosted process type."""
        return self._definitions.get(process_type)

    def process_definitions(self) -> list[ProcessDefinitionWire]:
        """The wire definitions of the hosted processes, as they are registered."""
        return [export_definition(d) for d in self._definitions.values()]

    async def register_definitions(
        self, client: AsyncClient, deployment: WorkerDeployment, *, force: bool = False
    ) -> RegisterDefinitionsResponse:
        """Registers the hosted processes with XDB as deployed by ``deployment``.

        Call it when the worker starts serving (e.g. in your app's lifespan), with
        ``deployment.worker_url`` the URL XDB reaches this worker at: starts that name no
        worker URL then go there, and XDB checks starts, publishes and RPCs against the
        definitions. Idempotent (unchanged definitions answer ``changed=False``). Raises
        the client's errors: :class:`~xdb.errors.ForbiddenError` without role ``deploy``,
        :class:`~xdb.errors.DefinitionIncompatibleError`,
        :class:`~xdb.errors.InvalidRequestError` for a definition the database does not
        fit. A worker that never registers keeps working, with starts naming its URL.
        """
        if not self._definitions:
            raise ValueError("the worker hosts no process to register")
        return await client.register_definitions(
            deployment, self.process_definitions(), force=force
        )

    def routes(self) -> list[Route]:
        """Starlette routes for the worker paths, to add to your own app's routes."""
        return [
            Route(WORKER_WAIT_UNTIL, self._wait_until_endpoint, methods=["POST"]),
            Route(WORKER_EXECUTE, self._execute_endpoint, methods=["POST"]),
            Route(WORKER_RPC, self._rpc_endpoint, methods=["POST"]),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serves the worker API as an ASGI app."""
        await self._app(scope, receive, send)

    # ---- the three calls, without HTTP ----

    async def wait_until(
        self, req: AsyncStateWaitUntilRequest, trace: TraceContext | None = None
    ) -> AsyncStateWaitUntilResponse:
        """Serves one waitUntil call; raises :class:`WorkerCallError`."""
        definition = self._process(req.process_type)
        state = self._state(definition, req.state_id)
        if not state.has_wait_until():
            raise WorkerCallError(
                400, ERROR_NOT_IMPLEMENTED, f"state {req.state_id!r} does not implement waitUntil"
            )
        value = _decode_input(f"input of state {req.state_id!r}", req, state.input_type())
        ctx = Context.from_wire(req.context, trace)
        persistence, communication = _scope(definition, req.attributes, in_rpc=False)
        request = await _run_user(
            trace, state.wait_until, ctx, value, persistence, communication, expect=CommandRequest
        )
        try:
            for queue in request.queue_names():
                communication.check_queue(queue)
        except Exception as e:
            raise _user_error(e) from e
        return AsyncStateWaitUntilResponse(
            command_request=request.to_wire(),
            writes=persistence.writes(),
            publish_to_local_queue=communication.messages,
        )

    async def execute(
        self, req: AsyncStateExecuteRequest, trace: TraceContext | None = None
    ) -> AsyncStateExecuteResponse:
        """Serves one execute call; raises :class:`WorkerCallError`."""
        definition = self._process(req.process_type)
        state = self._state(definition, req.state_id)
        value = _decode_input(f"input of state {req.state_id!r}", req, state.input_type())
        ctx = Context.from_wire(req.context, trace)
        persistence, communication = _scope(definition, req.attributes, in_rpc=False)
        results = CommandResults(req.command_results)
        decision = await _run_user(
            trace,
            state.execute,
            ctx,
            value,
            results,
            persistence,
            communication,
            expect=StateDecision,
        )
        try:
            wire_decision = definition.state_decision(decision)
        except Exception as e:
            raise _user_error(e) from e
        return AsyncStateExecuteResponse(
            state_decision=wire_decision,
            writes=persistence.writes(),
            publish_to_local_queue=communication.messages,
        )

    async def rpc(
        self, req: ProcessRpcWorkerRequest, trace: TraceContext | None = None
    ) -> ProcessRpcWorkerResponse:
        """Serves one RPC call; raises :class:`WorkerCallError`."""
        definition = self._process(req.process_type)
        method = definition.rpcs.get(req.rpc_name)
        if method is None:
            raise WorkerCallError(
                400,
                ERROR_UNKNOWN_RPC,
                f"process {definition.process_type!r} has no rpc {req.rpc_name!r}",
            )
        value = _decode_input(f"input of rpc {req.rpc_name!r}", req, method.input_type())
        ctx = Context.from_wire(req.context, trace)
        persistence, communication = _scope(definition, req.attributes, in_rpc=True)
        output = await _run_user(
            trace,
            functools.partial(method.call, definition.process),
            ctx,
            value,
            persistence,
            communication,
            expect=object,
            is_async=method.is_async(),
        )
        try:
            return ProcessRpcWorkerResponse(
                output=encoding.encode_optional(f"output of rpc {req.rpc_name!r}", output),
                writes=persistence.writes(),
                publish_to_local_queue=communication.messages,
                append_next_states=[
                    definition.state_movement(m) for m in communication.state_movements
                ],
            )
        except Exception as e:
            raise _user_error(e) from e

    # ---- HTTP ----

    async def _wait_until_endpoint(self, request: Request) -> Response:
        return await self._serve(request, AsyncStateWaitUntilRequest, self.wait_until)

    async def _execute_endpoint(self, request: Request) -> Response:
        return await self._serve(request, AsyncStateExecuteRequest, self.execute)

    async def _rpc_endpoint(self, request: Request) -> Response:
        return await self._serve(request, ProcessRpcWorkerRequest, self.rpc)

    async def _serve(
        self,
        request: Request,
        model: type[Req],
        handler: Callable[[Req, TraceContext | None], Awaitable[WireModel]],
    ) -> Response:
        body = await request.body()
        try:
            if self._secret is not None:
                try:
                    signature.verify(
                        self._secret,
                        request.headers.get(signature.SIGNATURE_HEADER),
                        body,
                        int(time.time()),
                        self._max_skew,
                    )
                except signature.SignatureError as e:
                    log.warning("refused an unsigned worker call to %s: %s", request.url.path, e)
                    raise WorkerCallError(401, ERROR_UNAUTHORIZED, str(e)) from e
            try:
                parsed = model.model_validate_json(body)
            except ValidationError as e:
                raise WorkerCallError(
                    400, ERROR_INVALID_REQUEST, f"malformed request body: {e}"
                ) from e
            traceparent = request.headers.get(TRACEPARENT)
            trace = (
                TraceContext(traceparent, request.headers.get(TRACESTATE)) if traceparent else None
            )
            answer = await handler(parsed, trace)
        except WorkerCallError as e:
            if e.status >= 500:
                log.warning("worker call %s failed: %s", request.url.path, e)
            return JSONResponse(e.body.to_wire(), status_code=e.status)
        return JSONResponse(answer.to_wire())

    def _process(self, process_type: str) -> ProcessDefinition:
        definition = self._definitions.get(process_type)
        if definition is None:
            raise WorkerCallError(
                400,
                ERROR_UNKNOWN_PROCESS_TYPE,
                f"this worker hosts no process type {process_type!r}",
            )
        return definition

    @staticmethod
    def _state(definition: ProcessDefinition, state_id: str) -> AsyncState[Any]:
        state = definition.states.get(state_id)
        if state is None:
            raise WorkerCallError(
                400,
                ERROR_UNKNOWN_STATE,
                f"process {definition.process_type!r} has no state {state_id!r}",
            )
        return state


def _scope(
    definition: ProcessDefinition, attributes: LoadedAttributes, in_rpc: bool
) -> tuple[Persistence, Communication]:
    return (
        Persistence(definition.process_type, definition.persistence, attributes),
        Communication(definition.process_type, definition.communication, in_rpc),
    )


def _decode_input(what: str, req: Any, type_: Any) -> Any:
    obj = req.state_input if hasattr(req, "state_input") else req.input
    try:
        return encoding.decode(what, obj, type_)
    except EncodingError as e:
        raise WorkerCallError(400, ERROR_UNDECODABLE_INPUT, str(e)) from e


def _user_error(e: BaseException) -> WorkerCallError:
    log.error("user code failed: %s", e, exc_info=e)
    return WorkerCallError(500, ERROR_USER_CODE, f"{type(e).__name__}: {e}")


async def _run_user(
    trace: TraceContext | None,
    fn: Callable[..., Any],
    *args: Any,
    expect: type[T],
    is_async: bool | None = None,
) -> T:
    """Runs user code with the call's trace context current; plain functions in a thread."""
    token = _context._set_trace(trace)
    try:
        if is_async is None:
            is_async = inspect.iscoroutinefunction(fn)
        if is_async:
            result = await fn(*args)
        else:
            result = await anyio.to_thread.run_sync(functools.partial(fn, *args))
            if inspect.isawaitable(result):
                result = await result
    except WorkerCallError:
        raise
    except Exception as e:
        raise _user_error(e) from e
    finally:
        _context._reset_trace(token)
    if not isinstance(result, expect):
        raise _user_error(
            TypeError(
                f"{getattr(fn, '__qualname__', fn)} returned {result!r}, not {expect.__name__}"
            )
        )
    return result
