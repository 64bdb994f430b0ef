"""RPCs: process methods a client calls synchronously while an execution runs."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, get_type_hints, overload

from xdb.protocol import GlobalAttributeLoading, LocalAttributeLoading, LockType

if TYPE_CHECKING:
    from xdb.communication import Communication
    from xdb.context import Context
    from xdb.persistence import Persistence

ProcessT = TypeVar("ProcessT")
InT = TypeVar("InT")
OutT = TypeVar("OutT")


@dataclass(frozen=True)
class RpcOptions:
    """How clients invoke an RPC: worker timeout and the attributes loaded for it.

    ``lock`` loads every declared attribute under that lock, which serializes
    read-modify-write RPCs on one row; explicit loading policies win over it.
    """

    timeout_seconds: int | None = None
    lock: LockType | None = None
    global_attribute_loading: GlobalAttributeLoading | None = None
    local_attribute_loading: LocalAttributeLoading | None = None


class RpcMethod(Generic[ProcessT, InT, OutT]):
    """A process method registered as an RPC by :func:`rpc`.

    Pass it to ``client.invoke_rpc`` (e.g. ``UserSignupProcess.verify``): the client
    takes the RPC's name, options, input and output types from it.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None,
        options: RpcOptions,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        self.options = options
        self.owner: type[Any] | None = None
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __set_name__(self, owner: type[Any], attr: str) -> None:
        self.owner = owner

    def __get__(
        self, instance: object, owner: type[Any] | None = None
    ) -> RpcMethod[ProcessT, InT, OutT]:
        return self

    def is_async(self) -> bool:
        """Whether the method is ``async def`` (else it runs in a worker thread)."""
        return inspect.iscoroutinefunction(self.fn)

    def input_type(self) -> Any:
        """The annotated type of the input parameter (the one after ``ctx``)."""
        params = list(inspect.signature(self.fn).parameters)
        if len(params) < 3:
            return Any
        return self._hints().get(params[2], Any)

    def output_type(self) -> Any:
        """The annotated return type."""
        hint = self._hints().get("return", Any)
        return type(None) if hint is None else hint

    def _hints(self) -> dict[str, Any]:
        try:
            return get_type_hints(self.fn)
        except Exception:  # unresolvable annotations: read values untyped
            return {}

    def call(
        self,
        process: ProcessT,
        ctx: Context,
        input: InT,
        persistence: Persistence,
        communication: Communication,
    ) -> OutT | Awaitable[OutT]:
        """Runs the method on ``process``."""
        result: OutT | Awaitable[OutT] = self.fn(process, ctx, input, persistence, communication)
        return result


class _RpcDecorator:
    def __init__(self, name: str | None, options: RpcOptions) -> None:
        self._name = name
        self._options = options

    @overload
    def __call__(
        self,
        fn: Callable[[ProcessT, Context, InT, Persistence, Communication], Awaitable[OutT]],
    ) -> RpcMethod[ProcessT, InT, OutT]: ...
    @overload
    def __call__(
        self, fn: Callable[[ProcessT, Context, InT, Persistence, Communication], OutT]
    ) -> RpcMethod[ProcessT, InT, OutT]: ...
    def __call__(self, fn: Callable[..., Any]) -> RpcMethod[Any, Any, Any]:
        return RpcMethod(fn, self._name, self._options)


def rpc(
    *,
    name: str | None = None,
    timeout_seconds: int | None = None,
    lock: LockType | None = None,
    global_attribute_loading: GlobalAttributeLoading | None = None,
    local_attribute_loading: LocalAttributeLoading | None = None,
) -> _RpcDecorator:
    """Registers a process method ``(self, ctx, input, persistence, communication)`` as an RPC.

    The RPC is named after the method unless ``name`` is given. Its attributes are
    loaded per the loading policies, by default every declared one, locked with ``lock``.
    """
    return _RpcDecorator(
        name,
        RpcOptions(
            timeout_seconds=timeout_seconds,
            lock=lock,
            global_attribute_loading=global_attribute_loading,
            local_attribute_loading=local_attribute_loading,
        ),
    )
