"""Payload encoding: the ``{"encoding": "json", "data": "<JSON text>"}`` objects of the protocol.

One convention for every SDK, so a Python client and a Rust or TypeScript worker
interoperate: ``data`` is the JSON text of the value, ``encoding`` is ``"json"``
(compared case-insensitively when read), and a ``None`` value is sent as an absent
payload rather than as ``"null"``; an absent payload reads as ``None``.

Global attributes are not payloads: they go over the wire as plain JSON values, which
the database converts to the column's type.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any, TypeVar, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_jsonable_python

from xdb.errors import EncodingError
from xdb.protocol import EncodedObject

T = TypeVar("T")

JSON_ENCODING = "json"


def to_json_value(what: str, value: object) -> Any:
    """``value`` as plain JSON data (dicts, lists, strings, numbers, booleans, None)."""
    try:
        return to_jsonable_python(value)
    except Exception as e:  # pydantic_core raises PydanticSerializationError
        raise EncodingError(f"cannot encode {what}: {e}") from e


def encode(what: str, value: object) -> EncodedObject:
    """``value`` as a JSON payload; ``what`` names it in errors."""
    data = json.dumps(to_json_value(what, value), separators=(",", ":"), ensure_ascii=False)
    return EncodedObject(encoding=JSON_ENCODING, data=data)


def encode_optional(what: str, value: object) -> EncodedObject | None:
    """Like :func:`encode`, but ``None`` (JSON null) becomes an absent payload."""
    if value is None:
        return None
    encoded = encode(what, value)
    return None if encoded.data == "null" else encoded


@lru_cache(maxsize=512)
def _adapter(type_: Any) -> TypeAdapter[Any]:
    return TypeAdapter(type_)


def adapter(type_: Any) -> TypeAdapter[Any]:
    """A cached pydantic adapter for ``type_`` (unhashable types get a fresh one)."""
    try:
        return _adapter(type_)
    except TypeError:
        return TypeAdapter(type_)


def from_json_value(what: str, value: Any, type_: type[T] | Any = Any) -> T:
    """Plain JSON data read as ``type_`` (pydantic models, dataclasses, builtins...)."""
    if type_ is Any or type_ is object:
        return cast(T, value)
    try:
        return cast(T, adapter(type_).validate_python(value))
    except ValidationError as e:
        raise EncodingError(f"cannot decode {what} as {_name(type_)}: {e}") from e


def decode(what: str, obj: EncodedObject | None, type_: type[T] | Any = Any) -> T:
    """A payload read as ``type_``; an absent payload reads as ``None``."""
    if obj is None:
        value: Any = None
    elif obj.encoding.lower() != JSON_ENCODING:
        raise EncodingError(
            f"unsupported encoding {obj.encoding!r} for {what} (only {JSON_ENCODING!r} is read)"
        )
    else:
        try:
            value = json.loads(obj.data)
        except json.JSONDecodeError as e:
            raise EncodingError(f"cannot decode {what}: its data is not JSON: {e}") from e
    decoded: T = from_json_value(what, value, type_)
    return decoded


def _name(type_: Any) -> str:
    return getattr(type_, "__name__", None) or repr(type_)
