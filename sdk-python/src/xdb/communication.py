"""Local-queue messages and (in RPCs) new threads, made by one call of user code."""

from __future__ import annotations

from typing import Any

from xdb import encoding
from xdb.decision import NextState, StateRef
from xdb.errors import SchemaError
from xdb.protocol import LocalQueueMessage
from xdb.schema import CommunicationSchema


class Communication:
    """Publishes to local queues, and starts states from RPCs.

    Like attribute writes, these go back in the answer and take effect in the
    transaction that records it.
    """

    def __init__(self, process_type: str, schema: CommunicationSchema, in_rpc: bool) -> None:
        self._process_type = process_type
        self._schema = schema
        self._in_rpc = in_rpc
        self.messages: list[LocalQueueMessage] = []
        self.state_movements: list[NextState] = []

    def publish_to_local_queue(
        self, queue_name: str, payload: Any = None, dedup_id: str | None = None
    ) -> None:
        """Publishes ``payload`` to this execution's declared queue ``queue_name``.

        XDB drops a second message with the same ``dedup_id`` on the same queue.
        """
        self.check_queue(queue_name)
        self.messages.append(
            LocalQueueMessage(
                queue_name=queue_name,
                dedup_id=dedup_id,
                payload=encoding.encode_optional(f"message to local queue {queue_name!r}", payload),
            )
        )

    def trigger_state_movement(self, state: StateRef, input: Any = None) -> None:
        """Starts ``state`` as a new thread of the execution; RPCs only."""
        if not self._in_rpc:
            raise SchemaError(
                "trigger_state_movement is for RPCs; a state moves on through its decision"
            )
        self.state_movements.append(NextState.of(state, input))

    def check_queue(self, queue_name: str) -> None:
        """Raises unless ``queue_name`` is declared."""
        if queue_name not in self._schema.local_queues:
            raise SchemaError(
                f"local queue {queue_name!r} is not declared in the communication schema "
                f"of {self._process_type}"
            )
