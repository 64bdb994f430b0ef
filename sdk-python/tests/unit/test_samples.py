"""The samples' decisions, driven through the worker without a service."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx

from samples.email import Outbox
from samples.worker_app import create_app
from xdb.encoding import encode
from xdb.protocol import WORKER_EXECUTE, WORKER_RPC, WORKER_WAIT_UNTIL

FORM = {"email": "ada@example.com", "name": "Ada"}


def context(state: str | None, api: str) -> dict[str, Any]:
    return {
        "processId": "user-signup-ada",
        "processExecutionId": "e-1",
        "processType": "UserSignupProcess",
        "stateExecutionId": state,
        "attempt": 1,
        "firstAttemptTimestampMs": 1,
        "processStartedTimestampMs": 1,
        "idempotencyKey": f"e-1/{state}/{api}",
    }


def row(status: str) -> dict[str, Any]:
    return {
        "globalAttributes": [
            {"column": "form", "value": FORM},
            {"column": "status", "value": status},
            {"column": "source", "value": None},
        ]
    }


def queue_results(*messages: Any) -> dict[str, Any]:
    return {
        "timerResults": [{"status": "SKIPPED"}],
        "localQueueResults": [
            {
                "queueName": "verify",
                "status": "RECEIVED",
                "messages": [
                    {"queueName": "verify", "payload": encode("m", m).to_wire()} for m in messages
                ],
            }
        ],
    }


async def test_the_sign_up_sample_through_the_mounted_worker() -> None:
    outbox = Outbox()
    app = create_app(outbox, timedelta(seconds=2))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://w") as http:
        assert (await http.get("/health")).text == "ok"

        async def post(path: str, body: dict[str, Any]) -> Any:
            response = await http.post("/xdb" + path, json=body)
            assert response.status_code == 200, response.text
            return response.json()

        base = {"processType": "UserSignupProcess", "attributes": row("waiting")}
        submitted = await post(
            WORKER_EXECUTE,
            {**base, "context": context("SubmitState-1", "execute"), "stateId": "SubmitState"},
        )
        assert submitted["stateDecision"]["nextStates"][0]["stateId"] == "VerifyState"

        waits = await post(
            WORKER_WAIT_UNTIL,
            {**base, "context": context("VerifyState-1", "waitUntil"), "stateId": "VerifyState"},
        )
        assert waits["commandRequest"]["timerCommands"] == [{"delayInSeconds": 2}]

        reminded = await post(
            WORKER_EXECUTE,
            {
                **base,
                "context": context("VerifyState-1", "execute"),
                "stateId": "VerifyState",
                "commandResults": {"timerResults": [{"status": "FIRED"}]},
            },
        )
        assert reminded["stateDecision"]["nextStates"][0]["stateId"] == "VerifyState"

        # Verified by a message published straight to the queue: the state records it.
        welcomed = await post(
            WORKER_EXECUTE,
            {
                **base,
                "context": context("VerifyState-2", "execute"),
                "stateId": "VerifyState",
                "commandResults": queue_results({"source": "qr"}),
            },
        )
        assert welcomed["stateDecision"]["threadCloseDecision"]["closeType"] == (
            "GRACEFUL_COMPLETE_PROCESS"
        )
        assert welcomed["writes"]["globalAttributes"] == [
            {"column": "status", "value": "verified"},
            {"column": "source", "value": "qr"},
        ]

        rpc = {
            "processType": "UserSignupProcess",
            "context": context(None, "rpc"),
            "rpcName": "verify",
            "input": encode("i", "email").to_wire(),
        }
        done = await post(WORKER_RPC, {**rpc, "attributes": row("waiting")})
        assert done["output"]["data"] == '"done"'
        assert done["publishToLocalQueue"][0]["queueName"] == "verify"
        again = await post(WORKER_RPC, {**rpc, "attributes": row("verified")})
        assert again["output"]["data"] == '"already verified"'
        assert again["writes"]["globalAttributes"] == []
    assert outbox.kinds("ada@example.com") == ["verification", "reminder", "welcome"]
