"""Registered process definitions: a process as the service's ``ProcessDefinition``.

A worker deployment registers the processes it hosts (``definitions/register``, role
``deploy``) so that the service checks starts, publishes and RPCs before writing anything,
and routes starts that name no worker URL to the deployment. :func:`export_definition`
builds the wire form of one process: its states (with the options the SDK sends for
them and a JSON Schema of their input type), its local queues, its RPCs with their
loading policies, and its global-attribute table and attribute types.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import logging
import types
import typing
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias, Union, get_args, get_origin

from pydantic import BaseModel

from xdb import encoding
from xdb.process import Process, ProcessDefinition
from xdb.protocol import (
    AttributeDefinition,
    AttributeType,
    GlobalAttributesDefinition,
    LockType,
    ProcessDefinitionWire,
    RpcDefinition,
    StateDefinition,
)

log = logging.getLogger("xdb.definitions")

# What ``register_definitions`` takes: processes (instances or classes), the SDK's
# definitions, or wire definitions as they are sent.
DefinitionSource: TypeAlias = Process | type[Process] | ProcessDefinition | ProcessDefinitionWire


def export_definition(
    process: Process | type[Process] | ProcessDefinition,
) -> ProcessDefinitionWire:
    """The wire ``ProcessDefinition`` of ``process``, as a worker registers it.

    - ``states``: each state's id, whether it implements ``wait_until``, its config as
      the SDK sends it at a start or a move (``skip_wait_until`` = no ``wait_until``,
      default loading filled in), and a JSON Schema of its input type where pydantic can
      derive one (none for an untyped or ``None`` input: any input is accepted);
    - ``start_states``: empty (a start may name any state);
    - ``local_queues``: the communication schema's queues;
    - ``rpcs``: name, the loading the client sends when the caller gives none, and the
      input's JSON Schema;
    - ``global_attributes``: the table, its key and the declared columns with their
      types; ``local_attributes``: the declared keys with theirs;
    - ``versioning_policy``: the process's ``versioning_policy``;
    - ``flow_limits``: the process's and each state's ``flow_limits`` (absent: none);
    - ``schedules``: the process's ``schedules`` as declared (absent when it declares none).
    """
    definition = (
        process if isinstance(process, ProcessDefinition) else ProcessDefinition.of(process)
    )
    schema = definition.persistence
    states = [
        StateDefinition(
            id=state_id,
            has_wait_until=state.has_wait_until(),
            config=definition.state_config(state_id),
            input_schema=input_schema(state.input_type()),
            flow_limits=definition.state_flow_limits[state_id],
        )
        for state_id, state in definition.states.items()
    ]
    rpcs = []
    for method in definition.rpcs.values():
        options = method.options
        lock = options.lock or LockType.NO_LOCK
        rpcs.append(
            RpcDefinition(
                name=method.name,
                global_attribute_loading=(
                    options.global_attribute_loading or definition.default_global_loading(lock)
                ),
                local_attribute_loading=(
                    options.local_attribute_loading or definition.default_local_loading(lock)
                ),
                input_schema=input_schema(method.input_type()),
            )
        )
    global_attributes = None
    if schema.table_name is not None and schema.primary_key is not None:
        global_attributes = GlobalAttributesDefinition(
            table_name=schema.table_name,
            primary_key_column=schema.primary_key,
            columns=_attributes(schema.global_attributes),
        )
    return ProcessDefinitionWire(
        process_type=definition.process_type,
        states=states,
        start_states=[],
        local_queues=list(definition.communication.local_queues),
        rpcs=rpcs,
        global_attributes=global_attributes,
        local_attributes=_attributes(schema.local_attributes),
        versioning_policy=definition.versioning_policy,
        flow_limits=definition.flow_limits,
        schedules=list(definition.schedules),
    )


def export_definitions(sources: Iterable[DefinitionSource]) -> list[ProcessDefinitionWire]:
    """The wire definitions of ``sources`` (wire definitions are taken as they are)."""
    return [s if isinstance(s, ProcessDefinitionWire) else export_definition(s) for s in sources]


def input_schema(type_: Any) -> dict[str, Any] | None:
    """A JSON Schema (draft 2020-12) of values of ``type_``; None when any value is fine.

    ``Any``, ``object`` and ``None`` (a state without input, sent as an absent payload)
    have none; nor has a type pydantic cannot describe (logged at debug level).
    """
    if type_ is Any or type_ is object or type_ is None or type_ is type(None):
        return None
    try:
        schema: dict[str, Any] = encoding.adapter(type_).json_schema()
    except Exception as e:  # pydantic raises several kinds for undescribable types
        log.debug("no JSON Schema for %r: %s", type_, e)
        return None
    schema.setdefault("$schema", "https://json-schema.org/draft/2020-12/schema")
    return schema


def attribute_type(type_: Any) -> AttributeType:
    """The declared attribute type of a Python type (``ANY`` when it does not say one)."""
    origin = get_origin(type_)
    if origin is typing.Annotated:
        return attribute_type(get_args(type_)[0])
    if origin is Union or origin is types.UnionType:
        kinds = {attribute_type(a) for a in get_args(type_) if a is not type(None)}
        return kinds.pop() if len(kinds) == 1 else AttributeType.ANY
    if origin is typing.Literal:
        kinds = {attribute_type(type(v)) for v in get_args(type_)}
        return kinds.pop() if len(kinds) == 1 else AttributeType.ANY
    if origin is not None:
        type_ = origin
    if not isinstance(type_, type):
        return AttributeType.ANY
    # bool before int: bool is a subclass of int. Enums by their value type.
    if issubclass(type_, bool):
        return AttributeType.BOOLEAN
    if issubclass(type_, enum.Enum):
        values = {attribute_type(type(m.value)) for m in type_}
        return values.pop() if len(values) == 1 else AttributeType.ANY
    if issubclass(type_, (str, uuid.UUID)):
        return AttributeType.STRING
    if issubclass(type_, int):
        return AttributeType.INTEGER
    if issubclass(type_, (float, decimal.Decimal)):
        return AttributeType.NUMBER
    if issubclass(type_, (datetime.datetime, datetime.date)):
        return AttributeType.TIMESTAMP
    if (
        issubclass(type_, (BaseModel, Mapping, list, tuple, set, frozenset))
        or dataclasses.is_dataclass(type_)
        or typing.is_typeddict(type_)
    ):
        return AttributeType.JSON
    if issubclass(type_, Sequence) and not issubclass(type_, (bytes, bytearray)):
        return AttributeType.JSON
    return AttributeType.ANY


def _attributes(declared: Mapping[str, Any]) -> list[AttributeDefinition]:
    return [AttributeDefinition(name=n, type=attribute_type(t)) for n, t in declared.items()]
