"""What ``start_process`` sends: its options, and the start request built from them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from xdb import encoding
from xdb.errors import SchemaError
from xdb.process import ProcessDefinition
from xdb.protocol import (
    GlobalAttributeConfig,
    GlobalAttributeValue,
    LocalAttributeValue,
    ProcessExecutionStartRequest,
    ProcessIdReusePolicy,
    ProcessStartConfig,
)


@dataclass(frozen=True)
class ProcessStartOptions:
    """Options of ``start_process``.

    ``global_attribute_pk_value`` picks the execution's row in the process's table
    (required when the process has one); ``initial_global_attributes`` are upserted into
    that row, and ``initial_local_attributes`` written, in the start transaction.

    ``concurrency_key`` is the key the type's ``max_running_executions`` counts the
    execution under (a customer's id, say; 1 to 255 characters, no control characters):
    at most that many executions of a key run at once, and a start over the limit waits
    ``PENDING`` until one of its key closes, in start order. Absent: the value the start
    writes for the limits' ``concurrency_key_attribute`` (in
    ``initial_global_attributes``, or as ``global_attribute_pk_value`` when it is the
    primary key) when they name one, and the service refuses the start
    (``InvalidRequestError`` naming ``processStartConfig.concurrencyKey``) if it writes
    none; else the key every start without one shares. Ignored by a type without that
    limit.

    ``priority`` is how soon the execution's tasks are claimed when tasks wait: 1 (first)
    to 5 (last); absent, the type's (its flow limits' ``priority``), else 3. Every task of
    the execution has it, and so does the execution a reset starts from it. The service
    refuses another value (``InvalidRequestError`` naming ``processStartConfig.priority``)
    and starts nothing.

    ``fairness_key`` shares the execution's priority with other keys' executions (a
    tenant, a customer's id; 1 to 255 characters, no control characters): when tasks of
    several keys wait at one priority, claims serve each key in turn, each taking up to
    its ``fairness_weight`` of tasks a turn (1 to 1,000; absent, the type's flow limits'
    ``fairness_weight``, else 1), so one key's backlog never starves another's next task.
    Absent: the value the start writes for the limits' ``fairness_key_attribute`` (as for
    ``concurrency_key``) when they name one, no key if it writes none; else the key every
    start without one shares. Every task of the execution has the key, and so does the
    execution a reset starts from it. The service refuses an empty key, a longer one or
    one with a control character (``InvalidRequestError`` naming
    ``processStartConfig.fairnessKey``), and a weight out of range or without a key
    (naming ``processStartConfig.fairnessWeight``), and starts nothing.
    """

    global_attribute_pk_value: Any = None
    initial_global_attributes: Mapping[str, Any] | None = None
    initial_local_attributes: Mapping[str, Any] | None = None
    id_reuse_policy: ProcessIdReusePolicy | None = None
    timeout: timedelta | float | None = None
    worker_url: str | None = None
    """The worker hosting the process; default the client's. Neither: the URL of the
    deployment that registered the process type (the service answers 400 if none did)."""
    concurrency_key: str | None = None
    """The key the type's ``max_running_executions`` counts the execution under."""
    priority: int | None = None
    """How soon the execution's tasks are claimed when tasks wait: 1 (first) to 5 (last);
    absent, the type's flow limits' ``priority``, else 3."""
    fairness_key: str | None = None
    """The key claims share the execution's priority by, each key served in turn; absent,
    the value the start writes for the type's flow limits' ``fairness_key_attribute``."""
    fairness_weight: int | None = None
    """Tasks the fairness key takes in each turn: 1 to 1,000; absent, the type's flow
    limits' ``fairness_weight``, else 1. Needs the key."""


def build_start_request(
    definition: ProcessDefinition,
    process_id: str,
    worker_url: str,
    input: Any,
    options: ProcessStartOptions,
) -> ProcessExecutionStartRequest:
    """The start request for ``definition``, checked against its schema.

    Mistakes (an undeclared column, a missing primary-key value) fail here, not in
    the service.
    """
    schema = definition.persistence
    for column in options.initial_global_attributes or {}:
        if column not in schema.global_attributes and column != schema.primary_key:
            raise SchemaError(
                f"global attribute {column!r} is not declared in {definition.process_type}"
            )
    for key in options.initial_local_attributes or {}:
        if key not in schema.local_attributes:
            raise SchemaError(
                f"local attribute {key!r} is not declared in {definition.process_type}"
            )
    global_config: GlobalAttributeConfig | None = None
    if schema.table_name is not None and schema.primary_key is not None:
        if options.global_attribute_pk_value is None:
            raise SchemaError(
                f"{definition.process_type} keeps global attributes in table "
                f"{schema.table_name!r}: global_attribute_pk_value is required"
            )
        global_config = GlobalAttributeConfig(
            table_name=schema.table_name,
            primary_key=GlobalAttributeValue(
                column=schema.primary_key,
                value=encoding.to_json_value(
                    "global attribute primary key value", options.global_attribute_pk_value
                ),
            ),
            initial_write=[
                GlobalAttributeValue(
                    column=c, value=encoding.to_json_value(f"global attribute {c!r}", v)
                )
                for c, v in (options.initial_global_attributes or {}).items()
            ],
        )
    elif options.global_attribute_pk_value is not None or options.initial_global_attributes:
        raise SchemaError(f"{definition.process_type} declares no global attribute table")
    start_input = encoding.encode_optional("start state input", input)
    if definition.starting_state_id is None and start_input is not None:
        raise SchemaError(f"{definition.process_type} has no starting state to take an input")
    timeout = options.timeout
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    return ProcessExecutionStartRequest(
        process_id=process_id,
        process_type=definition.process_type,
        worker_url=worker_url,
        start_state_id=definition.starting_state_id,
        start_state_input=start_input,
        start_state_config=(
            definition.state_config(definition.starting_state_id)
            if definition.starting_state_id is not None
            else None
        ),
        process_start_config=ProcessStartConfig(
            timeout_seconds=math.ceil(seconds) if seconds is not None else None,
            id_reuse_policy=options.id_reuse_policy,
            concurrency_key=options.concurrency_key,
            priority=options.priority,
            fairness_key=options.fairness_key,
            fairness_weight=options.fairness_weight,
            global_attribute_config=global_config,
            local_attribute_initial_write=[
                LocalAttributeValue(key=k, value=encoding.encode(f"local attribute {k!r}", v))
                for k, v in (options.initial_local_attributes or {}).items()
            ],
        ),
    )
