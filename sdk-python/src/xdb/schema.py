"""What a process declares: its states, its attributes and its local queues.

Declaring names lets the SDK load every declared attribute by default and refuse
writes to undeclared ones, which catches typos before they reach the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xdb.errors import SchemaError

if TYPE_CHECKING:
    from xdb.state import AsyncState


@dataclass(frozen=True)
class PersistenceField:
    """A declared attribute: a global-attribute column or a local-attribute key."""

    name: str
    type: Any
    is_global: bool

    @classmethod
    def global_attribute_def(cls, col_name: str, type_: Any = Any) -> PersistenceField:
        """A column of the process's row, read as ``type_``."""
        return cls(col_name, type_, True)

    @classmethod
    def local_attribute_def(cls, key: str, type_: Any = Any) -> PersistenceField:
        """A key/value kept by XDB per execution, read as ``type_``."""
        return cls(key, type_, False)


@dataclass(frozen=True)
class PersistenceSchema:
    """Where global attributes live (one row of a user table) and which attributes exist."""

    table_name: str | None = None
    primary_key: str | None = None
    global_attributes: dict[str, Any] = field(default_factory=dict)
    local_attributes: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        *fields: PersistenceField,
        table_name: str | None = None,
        primary_key: str | None = None,
    ) -> PersistenceSchema:
        """A schema of ``fields``; global attributes need ``table_name`` and ``primary_key``."""
        if (table_name is None) != (primary_key is None):
            raise SchemaError("table_name and primary_key go together")
        globals_ = {f.name: f.type for f in fields if f.is_global}
        if globals_ and table_name is None:
            raise SchemaError(
                f"global attributes {sorted(globals_)} need a table: "
                "pass table_name and primary_key"
            )
        return cls(
            table_name=table_name,
            primary_key=primary_key,
            global_attributes=globals_,
            local_attributes={f.name: f.type for f in fields if not f.is_global},
        )


@dataclass(frozen=True)
class CommunicationMethod:
    """A declared local queue, whose messages read as ``type``."""

    queue_name: str
    type: Any = Any

    @classmethod
    def local_queue_def(cls, queue_name: str, type_: Any = Any) -> CommunicationMethod:
        """Declares local queue ``queue_name``."""
        return cls(queue_name, type_)


@dataclass(frozen=True)
class CommunicationSchema:
    """The local queues a process uses."""

    local_queues: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def create(cls, *methods: CommunicationMethod) -> CommunicationSchema:
        """A schema declaring ``methods``."""
        return cls({m.queue_name: m.type for m in methods})


@dataclass(frozen=True)
class StateSchema:
    """The states of a process, and the one (if any) that runs when it starts."""

    states: tuple[AsyncState[Any], ...]
    starting_state: AsyncState[Any] | None

    @classmethod
    def with_starting_state(
        cls, starting_state: AsyncState[Any], *states: AsyncState[Any]
    ) -> StateSchema:
        """``starting_state`` runs first; ``states`` are reached by decisions and RPCs."""
        return cls((starting_state, *states), starting_state)

    @classmethod
    def no_starting_state(cls, *states: AsyncState[Any]) -> StateSchema:
        """A process that starts with nothing running (work begins with RPCs)."""
        return cls(tuple(states), None)
