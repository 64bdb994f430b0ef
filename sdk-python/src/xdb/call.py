"""One call to the service, the same whichever client sends it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from xdb.protocol import WireModel

T = TypeVar("T")


@dataclass(frozen=True)
class Call(Generic[T]):
    """The request (``path``, ``body``, ``timeout``) and ``read``.

    ``read`` turns the body of a 2xx answer into what the client method returns.
    ``own_request_id`` says that the body's ``request_id`` is one the client made, not
    the caller's: the only id the client may leave out (see
    :func:`xdb.retries.predates_request_ids`).
    """

    path: str
    body: WireModel
    timeout: float
    read: Callable[[bytes], T]
    own_request_id: bool = False
