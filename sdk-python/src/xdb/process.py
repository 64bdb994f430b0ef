"""``Process``: a process type's states, schemas and RPCs, and its resolved definition."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any, ClassVar

from xdb import encoding
from xdb.decision import NextState, StateDecision
from xdb.errors import SchemaError
from xdb.protocol import (
    AsyncStateConfig,
    FlowLimits,
    GlobalAttributeLoading,
    LocalAttributeLoading,
    LockType,
    ScheduleDeclaration,
    StateDecisionWire,
    StateMovement,
    ThreadCloseDecision,
    VersioningPolicy,
)
from xdb.rpc import RpcMethod
from xdb.schema import CommunicationSchema, PersistenceSchema, StateSchema
from xdb.state import AsyncState


class Process:
    """A process type, hosted by a worker and started by clients.

    Override the ``get_*`` methods; declare RPCs as methods decorated with :func:`xdb.rpc`.
    A client builds the definition from the class with no constructor arguments, so give
    constructor parameters defaults (or pass the instance to the client).

    ``versioning_policy`` says what happens to running executions when another
    deployment of the type becomes current: ``PINNED`` (they stay on the deployment they
    started on) or ``MOVE_TO_CURRENT`` (they move to it); see ``docs/definitions.md``.

    ``flow_limits`` limits the worker calls of all the type's states together, across all
    async instances: how many a second (``FlowLimits(max_calls_per_second=20)``), how
    many running at once (``FlowLimits(max_concurrent_calls=8)``), or both; each state
    may declare its own (:attr:`AsyncState.flow_limits`). Registration sends them; an operator may
    override them at run time (``set_flow_limits``). A type's limits (not a state's) may
    also cap its running executions per concurrency key
    (``FlowLimits(max_running_executions=2)``: at most two executions of a start's
    ``concurrency_key`` run at once; the others wait ``PENDING``, in start order), and
    name the global attribute whose value a start writes is its key when it names none
    (``FlowLimits(max_running_executions=2, concurrency_key_attribute="customer_id")``),
    and give the priority of its starts that name none (``FlowLimits(priority=2)``: 1,
    claimed first, to 5; a start's own ``priority`` wins). It may also name the global
    attribute whose value a start writes is its fairness key when it names none, and the
    weight of its keyed starts that name none
    (``FlowLimits(fairness_key_attribute="tenant_id", fairness_weight=5)``: 1 to 1,000; a
    start's own ``fairness_key`` and ``fairness_weight`` win; a start writing no value has
    no key). A ``priority`` outside 1 to 5, a ``fairness_weight`` outside 1 to 1,000, or an
    attribute that is not a column name (a SQL identifier) is a ``SchemaError``.

    ``schedules`` are schedules that start this type, owned by this code: each
    registration creates, changes and deletes them to match, and each firing starts the
    type at the registering deployment's worker URL. Operators may pause, resume and
    trigger them, not update or delete them. For example
    ``(ScheduleDeclaration(schedule_id="nightly-report", spec=cron_spec("0 3 * * *"),
    start_state_id="Report"),)``; see ``docs/schedules.md``.
    """

    versioning_policy: ClassVar[VersioningPolicy | str] = VersioningPolicy.PINNED
    flow_limits: ClassVar[FlowLimits | None] = None
    schedules: ClassVar[Sequence[ScheduleDeclaration]] = ()

    def get_process_type(self) -> str:
        """The process type, unique in a worker; the class name unless overridden."""
        return type(self).__name__

    def get_state_schema(self) -> StateSchema:
        """The states, and which one runs first."""
        return StateSchema.no_starting_state()

    def get_persistence_schema(self) -> PersistenceSchema:
        """The global-attribute table and columns, and the local attributes."""
        return PersistenceSchema()

    def get_communication_schema(self) -> CommunicationSchema:
        """The local queues."""
        return CommunicationSchema()


class ProcessDefinition:
    """A process with its schemas read once, as the worker and the client need it."""

    def __init__(self, process: Process) -> None:
        self.process = process
        self.process_type = process.get_process_type()
        schema = process.get_state_schema()
        self.states: dict[str, AsyncState[Any]] = {}
        for state in schema.states:
            state_id = state.get_state_id()
            if state_id in self.states:
                raise SchemaError(f"{self.process_type}: state id {state_id!r} is registered twice")
            self.states[state_id] = state
        self.starting_state_id = (
            schema.starting_state.get_state_id() if schema.starting_state is not None else None
        )
        self.persistence = process.get_persistence_schema()
        self.communication = process.get_communication_schema()
        try:
            self.versioning_policy = VersioningPolicy(process.versioning_policy)
        except ValueError:
            raise SchemaError(
                f"{self.process_type}: versioning_policy {process.versioning_policy!r} is "
                f"not one of {', '.join(p.value for p in VersioningPolicy)}"
            ) from None
        self.flow_limits = _flow_limits(self.process_type, process.flow_limits)
        self.state_flow_limits = {
            state_id: _state_flow_limits(f"{self.process_type}.{state_id}", state.flow_limits)
            for state_id, state in self.states.items()
        }
        self.schedules = _schedules(self.process_type, process.schedules, self.states)
        self.rpcs: dict[str, RpcMethod[Any, Any, Any]] = {}
        for klass in reversed(type(process).__mro__):
            for value in vars(klass).values():
                if isinstance(value, RpcMethod):
                    self.rpcs[value.name] = value

    @classmethod
    def of(cls, process: Process | type[Process]) -> ProcessDefinition:
        """The definition of an instance, or of a class built with no arguments (cached)."""
        if isinstance(process, Process):
            return cls(process)
        with _lock:
            definition = _by_class.get(process)
            if definition is None:
                try:
                    instance = process()
                except TypeError as e:
                    raise SchemaError(
                        f"cannot build {process.__name__}() without arguments ({e}); "
                        "pass an instance of the process instead"
                    ) from e
                definition = _by_class[process] = cls(instance)
            return definition

    def state(self, state_id: str) -> AsyncState[Any]:
        """The registered state ``state_id``."""
        state = self.states.get(state_id)
        if state is None:
            raise SchemaError(f"state {state_id!r} is not registered in {self.process_type}")
        return state

    def rpc(self, name: str) -> RpcMethod[Any, Any, Any]:
        """The registered RPC ``name``."""
        method = self.rpcs.get(name)
        if method is None:
            raise SchemaError(f"{self.process_type} has no rpc {name!r}")
        return method

    def default_global_loading(
        self, lock: LockType = LockType.NO_LOCK
    ) -> GlobalAttributeLoading | None:
        """Every declared column with ``lock``; None without global attributes."""
        columns = list(self.persistence.global_attributes)
        if self.persistence.table_name is None or not columns:
            return None
        return GlobalAttributeLoading(columns=columns, lock_type=lock)

    def default_local_loading(
        self, lock: LockType = LockType.NO_LOCK
    ) -> LocalAttributeLoading | None:
        """Every declared local attribute with ``lock``; None when there are none."""
        keys = list(self.persistence.local_attributes)
        return LocalAttributeLoading(keys=keys, lock_type=lock) if keys else None

    def _config_of(self, state: AsyncState[Any]) -> AsyncStateConfig:
        config = state.get_state_options().model_copy(deep=True)
        config.skip_wait_until = not state.has_wait_until()
        if config.global_attribute_loading is None:
            config.global_attribute_loading = self.default_global_loading()
        if config.local_attribute_loading is None:
            config.local_attribute_loading = self.default_local_loading()
        return config

    def state_config(self, state_id: str) -> AsyncStateConfig:
        """The config XDB gets for ``state_id``: its options, waitUntil flag, default loading.

        A recovery state named by the failure-recovery options gets its config filled in
        too, since XDB needs it to start that state.
        """
        config = self._config_of(self.state(state_id))
        recovery = config.state_failure_recovery_options
        if (
            recovery is not None
            and recovery.state_failure_proceed_state_id is not None
            and recovery.state_failure_proceed_state_config is None
        ):
            nested = self._config_of(self.state(recovery.state_failure_proceed_state_id))
            recovery.state_failure_proceed_state_config = nested
        return config

    def state_movement(self, next_state: NextState) -> StateMovement:
        """The wire form of a move to ``next_state``, checked and configured."""
        return StateMovement(
            state_id=next_state.state_id,
            state_config=self.state_config(next_state.state_id),
            state_input=encoding.encode_optional(
                f"input of state {next_state.state_id!r}", next_state.input
            ),
        )

    def state_decision(self, decision: StateDecision) -> StateDecisionWire:
        """The wire form of ``decision``."""
        if decision.close_type is None:
            return StateDecisionWire(
                next_states=[self.state_movement(s) for s in decision.next_states]
            )
        return StateDecisionWire(
            thread_close_decision=ThreadCloseDecision(
                close_type=decision.close_type,
                output=encoding.encode_optional("process output", decision.output),
            )
        )


_HIGHEST_PRIORITY = 1
"""The priority claimed first (``processStartConfig.priority``, ``FlowLimits.priority``)."""
_LOWEST_PRIORITY = 5
"""The priority claimed last."""
_MAX_FAIRNESS_WEIGHT = 1000
"""The largest weight (``processStartConfig.fairnessWeight``, ``FlowLimits.fairnessWeight``)."""
_COLUMN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
"""A column name as the service accepts one: an unquoted SQL identifier of at most 63."""

_lock = threading.Lock()
_by_class: dict[type[Process], ProcessDefinition] = {}


def _flow_limits(owner: str, declared: object) -> FlowLimits | None:
    """``declared`` when it is limits (or none); a ``SchemaError`` naming ``owner`` if not.

    A ``concurrency_key_attribute`` keys ``max_running_executions``, so it needs it; it
    and a ``fairness_key_attribute`` are column names; a ``priority`` is 1 (claimed first)
    to 5 and a ``fairness_weight`` 1 to 1,000 (the service refuses all of them at
    registration too).
    """
    if declared is None:
        return None
    if not isinstance(declared, FlowLimits):
        raise SchemaError(
            f"{owner}: flow_limits {declared!r} is not a FlowLimits "
            "(e.g. FlowLimits(max_calls_per_second=20))"
        )
    for name in ("concurrency_key_attribute", "fairness_key_attribute"):
        attribute: object = getattr(declared, name)
        if attribute is not None and not (
            isinstance(attribute, str) and _COLUMN_NAME.fullmatch(attribute)
        ):
            raise SchemaError(
                f"{owner}: flow_limits.{name} {attribute!r} is not a column name (letters, "
                "digits and _, at most 63, not starting with a digit)"
            )
    if declared.concurrency_key_attribute is not None and declared.max_running_executions is None:
        raise SchemaError(
            f"{owner}: flow_limits.concurrency_key_attribute keys the running-executions "
            "limit: declare max_running_executions with it"
        )
    priority: object = declared.priority
    if priority is not None and not (
        isinstance(priority, int) and _HIGHEST_PRIORITY <= priority <= _LOWEST_PRIORITY
    ):
        raise SchemaError(
            f"{owner}: flow_limits.priority must be {_HIGHEST_PRIORITY} (claimed first) "
            f"to {_LOWEST_PRIORITY}, not {priority!r}"
        )
    weight: object = declared.fairness_weight
    if weight is not None and not (isinstance(weight, int) and 1 <= weight <= _MAX_FAIRNESS_WEIGHT):
        raise SchemaError(
            f"{owner}: flow_limits.fairness_weight must be 1 to {_MAX_FAIRNESS_WEIGHT}, "
            f"not {weight!r}"
        )
    return declared


def _state_flow_limits(owner: str, declared: object) -> FlowLimits | None:
    """:func:`_flow_limits` of a state, which cannot carry the type's own limits.

    Those are its running executions' limit and key, and the priority and fairness key and
    weight of its starts (the service refuses them on a state at registration too).
    """
    if isinstance(declared, FlowLimits):
        for name, what in (
            ("max_running_executions", "limits a process type's running executions"),
            ("concurrency_key_attribute", "keys the limit of a process type's running executions"),
            ("priority", "is the priority of a process type's starts"),
            ("fairness_key_attribute", "keys a process type's starts"),
            ("fairness_weight", "weighs a process type's starts"),
        ):
            if getattr(declared, name) is not None:
                raise SchemaError(
                    f"{owner}: flow_limits.{name} {what}: declare it in the process's "
                    "flow_limits, not a state's"
                )
    return _flow_limits(owner, declared)


def _schedules(
    owner: str, declared: object, states: dict[str, AsyncState[Any]]
) -> list[ScheduleDeclaration]:
    """``declared`` as a list; a ``SchemaError`` naming ``owner`` if it is not one.

    Each item must be a ``ScheduleDeclaration`` with an id of its own, starting no state or
    one of ``states``.
    """
    if isinstance(declared, (str, bytes)) or not isinstance(declared, Sequence):
        raise SchemaError(
            f"{owner}: schedules {declared!r} is not a list of ScheduleDeclaration "
            '(e.g. [ScheduleDeclaration(schedule_id="nightly", spec=cron_spec("0 3 * * *"))])'
        )
    out: list[ScheduleDeclaration] = []
    for declaration in declared:
        if not isinstance(declaration, ScheduleDeclaration):
            raise SchemaError(f"{owner}: schedules: {declaration!r} is not a ScheduleDeclaration")
        if any(d.schedule_id == declaration.schedule_id for d in out):
            raise SchemaError(f"{owner}: schedule id {declaration.schedule_id!r} is declared twice")
        state_id = declaration.start_state_id
        if state_id is not None and state_id not in states:
            raise SchemaError(
                f"{owner}: schedule {declaration.schedule_id!r} starts state {state_id!r}, "
                "which is not registered"
            )
        out.append(declaration)
    return out
