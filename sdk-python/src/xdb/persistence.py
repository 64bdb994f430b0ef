"""Attribute reads and writes for one call of user code."""

from __future__ import annotations

from typing import Any, TypeVar, overload

from xdb import encoding
from xdb.errors import SchemaError
from xdb.protocol import (
    AttributeWrites,
    EncodedObject,
    GlobalAttributeValue,
    LoadedAttributes,
    LocalAttributeValue,
)
from xdb.schema import PersistenceSchema

T = TypeVar("T")


class Persistence:
    """The attributes XDB loaded for a call, and the writes the call makes.

    Reads see the call's own earlier writes. Writes go back in the answer and XDB
    applies them in the transaction that records it, so they happen only if it does.
    """

    def __init__(
        self, process_type: str, schema: PersistenceSchema, loaded: LoadedAttributes
    ) -> None:
        self._process_type = process_type
        self._schema = schema
        self._globals: dict[str, Any] = {a.column: a.value for a in loaded.global_attributes}
        self._locals: dict[str, EncodedObject] = {a.key: a.value for a in loaded.local_attributes}
        self._global_writes: dict[str, Any] = {}
        self._local_writes: dict[str, EncodedObject] = {}

    @overload
    def get_global_attribute(self, column: str) -> Any: ...
    @overload
    def get_global_attribute(self, column: str, type_: type[T]) -> T | None: ...
    @overload
    def get_global_attribute(self, column: str, type_: Any) -> Any: ...
    def get_global_attribute(self, column: str, type_: Any = None) -> Any:
        """Column ``column`` of the process's row, read as ``type_`` or its declared type.

        ``None`` when the column is SQL NULL, or was not loaded.
        """
        declared = self._schema.global_attributes.get(column, Any)
        if column not in self._globals:
            if column not in self._schema.global_attributes and column != self._schema.primary_key:
                raise self._undeclared("global attribute", column)
            return None
        value = self._globals[column]
        if value is None:
            return None
        return encoding.from_json_value(
            f"global attribute {column!r}", value, type_ if type_ is not None else declared
        )

    def set_global_attribute(self, column: str, value: Any) -> None:
        """Writes ``value`` to declared column ``column`` (converted by the database)."""
        if column not in self._schema.global_attributes:
            raise self._undeclared("global attribute", column)
        json_value = encoding.to_json_value(f"global attribute {column!r}", value)
        self._globals[column] = json_value
        self._global_writes[column] = json_value

    @overload
    def get_local_attribute(self, key: str) -> Any: ...
    @overload
    def get_local_attribute(self, key: str, type_: type[T]) -> T | None: ...
    @overload
    def get_local_attribute(self, key: str, type_: Any) -> Any: ...
    def get_local_attribute(self, key: str, type_: Any = None) -> Any:
        """Local attribute ``key``, read as ``type_`` or its declared type; None if unset."""
        if key not in self._schema.local_attributes:
            raise self._undeclared("local attribute", key)
        obj = self._locals.get(key)
        if obj is None:
            return None
        declared = self._schema.local_attributes[key]
        return encoding.decode(
            f"local attribute {key!r}", obj, type_ if type_ is not None else declared
        )

    def set_local_attribute(self, key: str, value: Any) -> None:
        """Writes ``value`` to declared local attribute ``key``."""
        if key not in self._schema.local_attributes:
            raise self._undeclared("local attribute", key)
        obj = encoding.encode(f"local attribute {key!r}", value)
        self._locals[key] = obj
        self._local_writes[key] = obj

    def writes(self) -> AttributeWrites:
        """The writes made so far: one per name, last value winning, first-write order."""
        return AttributeWrites(
            global_attributes=[
                GlobalAttributeValue(column=c, value=v) for c, v in self._global_writes.items()
            ],
            local_attributes=[
                LocalAttributeValue(key=k, value=v) for k, v in self._local_writes.items()
            ],
        )

    def _undeclared(self, kind: str, name: str) -> SchemaError:
        return SchemaError(
            f"{kind} {name!r} is not declared in the persistence schema of {self._process_type}"
        )
