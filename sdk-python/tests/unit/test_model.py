from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.unit.sample_processes import NoTableProcess, Order, Recover, ShopProcess, Start, Wait
from xdb import (
    CommandRequest,
    CommandResults,
    Communication,
    CommunicationSchema,
    LocalQueueCommand,
    LocalQueueCommandStatus,
    LockType,
    NextState,
    Persistence,
    PersistenceField,
    PersistenceSchema,
    ProcessDefinition,
    ProcessIdReusePolicy,
    ProcessStartOptions,
    SchemaError,
    StateDecision,
    TimerCommand,
)
from xdb.client import build_start_request
from xdb.encoding import encode
from xdb.protocol import (
    CommandResultsWire,
    CommandWaitingType,
    GlobalAttributeValue,
    LoadedAttributes,
    LocalAttributeValue,
    LocalQueueMessage,
    LocalQueueResult,
    ThreadCloseType,
    TimerResult,
    TimerStatus,
)


def test_states_are_named_after_their_class_and_know_their_input_type() -> None:
    assert Start.get_state_id() == "Start"
    assert Start.input_type() is Order
    assert Wait.input_type() is type(None)
    assert Recover.input_type() is Any
    assert Wait.has_wait_until()
    assert not Start.has_wait_until()


def test_definition_reads_the_schemas_and_the_rpcs() -> None:
    d = ProcessDefinition.of(ShopProcess)
    assert ProcessDefinition.of(ShopProcess) is d, "cached per class"
    assert d.process_type == "ShopProcess"
    assert d.starting_state_id == "Start"
    assert list(d.states) == ["Start", "Wait", "Recover"]
    assert set(d.rpcs) == {"cancel", "peek"}
    assert d.rpc("cancel").input_type() is str
    assert d.rpc("cancel").output_type() == dict[str, str]
    assert d.rpc("peek").output_type() == Order | None
    assert ShopProcess.cancel.owner is ShopProcess
    with pytest.raises(SchemaError, match="no rpc 'nope'"):
        d.rpc("nope")


def test_state_config_fills_waituntil_flag_default_loading_and_recovery_config() -> None:
    d = ProcessDefinition.of(ShopProcess)
    config = d.state_config("Start")
    assert config.skip_wait_until
    assert config.execute_api_retry_policy is not None
    assert config.execute_api_retry_policy.maximum_attempts == 3
    assert config.global_attribute_loading is not None
    assert config.global_attribute_loading.columns == ["status", "order"]
    assert config.global_attribute_loading.lock_type == LockType.NO_LOCK
    assert config.local_attribute_loading is not None
    assert config.local_attribute_loading.keys == ["attempts"]
    recovery = config.state_failure_recovery_options
    assert recovery is not None
    assert recovery.state_failure_proceed_state_config is not None
    assert recovery.state_failure_proceed_state_config.skip_wait_until
    assert not d.state_config("Wait").skip_wait_until
    wire = config.to_wire()
    assert wire["skipWaitUntil"] is True
    assert "waitUntilApiRetryPolicy" not in wire, "unset fields are left out"


def test_duplicate_state_ids_and_inconsistent_schemas_are_refused() -> None:
    class Twice(ShopProcess):
        def get_state_schema(self) -> Any:
            from xdb import StateSchema

            return StateSchema.with_starting_state(Recover(), Recover())

    with pytest.raises(SchemaError, match="registered twice"):
        ProcessDefinition(Twice())
    with pytest.raises(SchemaError, match="need a table"):
        PersistenceSchema.create(PersistenceField.global_attribute_def("x"))
    with pytest.raises(SchemaError, match="go together"):
        PersistenceSchema.create(table_name="t")


def test_decisions() -> None:
    d = ProcessDefinition.of(ShopProcess)
    single = d.state_decision(StateDecision.single_next_state(Start, Order(item="tea")))
    assert single.next_states[0].state_id == "Start"
    assert single.next_states[0].state_input == encode("i", {"item": "tea", "quantity": 1})
    parallel = d.state_decision(
        StateDecision.multiple_next_states(Wait, NextState.of("Recover", 7))
    )
    assert [m.state_id for m in parallel.next_states] == ["Wait", "Recover"]
    assert parallel.next_states[0].state_input is None
    assert parallel.next_states[1].state_config is not None
    done = d.state_decision(StateDecision.graceful_complete_process({"ok": True}))
    assert done.thread_close_decision is not None
    assert done.thread_close_decision.close_type == ThreadCloseType.GRACEFUL_COMPLETE_PROCESS
    assert done.to_wire() == {
        "nextStates": [],
        "threadCloseDecision": {
            "closeType": "GRACEFUL_COMPLETE_PROCESS",
            "output": {"encoding": "json", "data": '{"ok":true}'},
        },
    }
    dead = d.state_decision(StateDecision.dead_end()).to_wire()
    assert dead["threadCloseDecision"] == {"closeType": "DEAD_END"}
    assert StateDecision.force_fail_process("why").close_type == ThreadCloseType.FORCE_FAIL_PROCESS
    assert StateDecision.force_complete_process().output is None
    with pytest.raises(ValueError, match="dead_end"):
        StateDecision.multiple_next_states()
    with pytest.raises(SchemaError, match="not registered"):
        d.state_decision(StateDecision.single_next_state("Missing"))


def test_command_requests_split_by_kind_and_round_timers_up() -> None:
    request = CommandRequest.for_any_command_completed(
        TimerCommand.by_duration(timedelta(milliseconds=1500)),
        LocalQueueCommand.by_name("verify"),
        TimerCommand.by_seconds(60),
        LocalQueueCommand.by_name("batch", 3),
    ).to_wire()
    assert request.waiting_type == CommandWaitingType.ANY_OF_COMPLETION
    assert [t.delay_in_seconds for t in request.timer_commands] == [2, 60]
    assert [(q.queue_name, q.count) for q in request.local_queue_commands] == [
        ("verify", 1),
        ("batch", 3),
    ]
    assert (
        CommandRequest.for_all_commands_completed().to_wire().waiting_type
        == CommandWaitingType.ALL_OF_COMPLETION
    )
    assert CommandRequest.empty().to_wire().to_wire() == {
        "waitingType": "ALL_OF_COMPLETION",
        "timerCommands": [],
        "localQueueCommands": [],
    }
    with pytest.raises(ValueError, match="negative"):
        TimerCommand.by_seconds(-1)


def test_command_results_accessors() -> None:
    results = CommandResults(
        CommandResultsWire(
            timer_results=[TimerResult(status=TimerStatus.SKIPPED)],
            local_queue_results=[
                LocalQueueResult(
                    queue_name="verify",
                    status=LocalQueueCommandStatus.RECEIVED,
                    messages=[
                        LocalQueueMessage(queue_name="verify", payload=encode("m", {"item": "x"})),
                        LocalQueueMessage(queue_name="verify"),
                    ],
                )
            ],
        )
    )
    assert not results.timer_fired()
    assert not results.timer_fired(5)
    assert results.received_from_queue("verify")
    assert not results.received_from_queue("other")
    assert results.local_queue_commands[0].status == LocalQueueCommandStatus.RECEIVED
    assert results.timer_commands[0].status == TimerStatus.SKIPPED
    assert results.messages_from_queue("verify") == [{"item": "x"}, None]
    assert results.messages_from_queue("verify", Order | None) == [Order(item="x"), None]


def persistence() -> Persistence:
    d = ProcessDefinition.of(ShopProcess)
    return Persistence(
        d.process_type,
        d.persistence,
        LoadedAttributes(
            global_attributes=[
                GlobalAttributeValue(column="status", value="new"),
                GlobalAttributeValue(column="order", value={"item": "tea", "quantity": 2}),
            ],
            local_attributes=[LocalAttributeValue(key="attempts", value=encode("a", 2))],
        ),
    )


def test_persistence_reads_declared_types_and_collects_writes() -> None:
    p = persistence()
    assert p.get_global_attribute("status") == "new"
    assert p.get_global_attribute("order") == Order(item="tea", quantity=2)
    assert p.get_global_attribute("order", dict) == {"item": "tea", "quantity": 2}
    assert p.get_global_attribute("order_id") is None, "the key column may be read if loaded"
    assert p.get_local_attribute("attempts") == 2
    p.set_global_attribute("status", "paid")
    p.set_global_attribute("order", Order(item="coffee"))
    p.set_global_attribute("status", "shipped")
    p.set_local_attribute("attempts", 3)
    assert p.get_global_attribute("status") == "shipped"
    assert p.get_local_attribute("attempts") == 3
    writes = p.writes().to_wire()
    assert writes["globalAttributes"] == [
        {"column": "status", "value": "shipped"},
        {"column": "order", "value": {"item": "coffee", "quantity": 1}},
    ]
    assert writes["localAttributes"] == [
        {"key": "attempts", "value": {"encoding": "json", "data": "3"}}
    ]
    p.set_global_attribute("status", None)
    assert p.writes().to_wire()["globalAttributes"][0] == {"column": "status", "value": None}


def test_persistence_refuses_undeclared_names() -> None:
    p = persistence()
    with pytest.raises(SchemaError, match="'stauts' is not declared"):
        p.set_global_attribute("stauts", "x")
    with pytest.raises(SchemaError, match="not declared"):
        p.get_global_attribute("stauts")
    with pytest.raises(SchemaError, match="local attribute 'nope'"):
        p.set_local_attribute("nope", 1)
    assert p.writes().global_attributes == []


def test_communication_checks_queues_and_keeps_state_movements_for_rpcs() -> None:
    c = Communication("P", CommunicationSchema.create(), in_rpc=False)
    with pytest.raises(SchemaError, match="local queue 'q'"):
        c.publish_to_local_queue("q")
    with pytest.raises(SchemaError, match="for RPCs"):
        c.trigger_state_movement(Recover)
    d = ProcessDefinition.of(ShopProcess)
    c = Communication("P", d.communication, in_rpc=True)
    c.publish_to_local_queue("events")
    c.publish_to_local_queue("events", [1], dedup_id="d")
    c.trigger_state_movement(Recover, 5)
    assert [m.to_wire() for m in c.messages] == [
        {"queueName": "events"},
        {"queueName": "events", "dedupId": "d", "payload": {"encoding": "json", "data": "[1]"}},
    ]
    assert c.state_movements == [NextState("Recover", 5)]


def test_start_request_carries_type_state_config_and_the_row() -> None:
    request = build_start_request(
        ProcessDefinition.of(ShopProcess),
        "order-1",
        "http://worker:8803",
        Order(item="tea"),
        ProcessStartOptions(
            global_attribute_pk_value=42,
            initial_global_attributes={"status": "new", "order_id": 42},
            initial_local_attributes={"attempts": 0},
            id_reuse_policy=ProcessIdReusePolicy.TERMINATE_IF_RUNNING,
            timeout=timedelta(seconds=9.5),
        ),
    ).to_wire()
    assert request["processType"] == "ShopProcess"
    assert request["startStateId"] == "Start"
    assert request["startStateInput"] == {"encoding": "json", "data": '{"item":"tea","quantity":1}'}
    assert request["startStateConfig"]["skipWaitUntil"] is True
    config = request["processStartConfig"]
    assert config["timeoutSeconds"] == 10
    assert config["idReusePolicy"] == "TERMINATE_IF_RUNNING"
    assert config["globalAttributeConfig"] == {
        "tableName": "shop.orders",
        "primaryKey": {"column": "order_id", "value": 42},
        "initialWrite": [
            {"column": "status", "value": "new"},
            {"column": "order_id", "value": 42},
        ],
    }
    assert config["localAttributeInitialWrite"] == [
        {"key": "attempts", "value": {"encoding": "json", "data": "0"}}
    ]


def test_start_request_carries_the_concurrency_key_only_when_given() -> None:
    plain = ProcessDefinition.of(NoTableProcess)
    keyed = build_start_request(
        plain, "p", "http://w", None, ProcessStartOptions(concurrency_key="customer-42")
    ).to_wire()
    assert keyed["processStartConfig"] == {
        "concurrencyKey": "customer-42",
        "localAttributeInitialWrite": [],
    }
    # An empty key is a key the service refuses (1 to 255 characters), not "none": sent.
    empty = build_start_request(
        plain, "p", "http://w", None, ProcessStartOptions(concurrency_key="")
    ).to_wire()
    assert empty["processStartConfig"]["concurrencyKey"] == ""
    unkeyed = build_start_request(plain, "p", "http://w", None, ProcessStartOptions()).to_wire()
    assert "concurrencyKey" not in unkeyed["processStartConfig"]


def test_start_request_carries_the_priority_only_when_given() -> None:
    plain = ProcessDefinition.of(NoTableProcess)
    first = build_start_request(
        plain, "p", "http://w", None, ProcessStartOptions(priority=1)
    ).to_wire()
    assert first["processStartConfig"] == {"priority": 1, "localAttributeInitialWrite": []}
    # The service checks the range (1 to 5) and names the field; sent as given.
    out_of_range = build_start_request(
        plain, "p", "http://w", None, ProcessStartOptions(priority=9)
    ).to_wire()
    assert out_of_range["processStartConfig"]["priority"] == 9
    default = build_start_request(plain, "p", "http://w", None, ProcessStartOptions()).to_wire()
    assert "priority" not in default["processStartConfig"]


def test_start_request_carries_the_fairness_key_and_weight_only_when_given() -> None:
    plain = ProcessDefinition.of(NoTableProcess)

    def config(options: ProcessStartOptions) -> dict[str, Any]:
        wire = build_start_request(plain, "p", "http://w", None, options).to_wire()
        start_config: dict[str, Any] = wire["processStartConfig"]
        return start_config

    assert config(ProcessStartOptions(fairness_key="tenant-7", fairness_weight=5)) == {
        "fairnessKey": "tenant-7",
        "fairnessWeight": 5,
        "localAttributeInitialWrite": [],
    }
    keyed = config(ProcessStartOptions(fairness_key="tenant-7"))
    assert keyed == {"fairnessKey": "tenant-7", "localAttributeInitialWrite": []}
    # The service checks the key (1 to 255 characters), the weight (1 to 1,000) and that a
    # weight has a key, naming the field; all sent as given.
    assert config(ProcessStartOptions(fairness_key=""))["fairnessKey"] == ""
    assert config(ProcessStartOptions(fairness_key="t", fairness_weight=0))["fairnessWeight"] == 0
    assert config(ProcessStartOptions(fairness_weight=1001)) == {
        "fairnessWeight": 1001,
        "localAttributeInitialWrite": [],
    }
    default = config(ProcessStartOptions())
    assert "fairnessKey" not in default
    assert "fairnessWeight" not in default


def test_start_request_mistakes_fail_before_the_service() -> None:
    shop = ProcessDefinition.of(ShopProcess)
    with pytest.raises(SchemaError, match="global_attribute_pk_value is required"):
        build_start_request(shop, "p", "http://w", None, ProcessStartOptions())
    with pytest.raises(SchemaError, match="'stauts' is not declared"):
        build_start_request(
            shop,
            "p",
            "http://w",
            None,
            ProcessStartOptions(
                global_attribute_pk_value=1, initial_global_attributes={"stauts": 1}
            ),
        )
    plain = ProcessDefinition.of(NoTableProcess)
    with pytest.raises(SchemaError, match="no starting state"):
        build_start_request(plain, "p", "http://w", "input", ProcessStartOptions())
    with pytest.raises(SchemaError, match="no global attribute table"):
        build_start_request(
            plain, "p", "http://w", None, ProcessStartOptions(global_attribute_pk_value=1)
        )
    request = build_start_request(plain, "p", "http://w", None, ProcessStartOptions()).to_wire()
    assert "startStateId" not in request
    assert request["processStartConfig"] == {"localAttributeInitialWrite": []}


def test_a_process_needing_constructor_arguments_must_be_passed_as_an_instance() -> None:
    class Needs(ShopProcess):
        def __init__(self, dependency: object) -> None:
            self.dependency = dependency

    with pytest.raises(SchemaError, match="pass an instance"):
        ProcessDefinition.of(Needs)
    assert ProcessDefinition.of(Needs(object())).process_type == "Needs"
