"""Temporal's side of `xdb-bench --peers`: XDB's bench workloads as Temporal workflows.

One asyncio process runs a worker (Python SDK) of task queue ``xdb-bench`` on the dev
server at ``TEMPORAL_ADDRESS``, and serves on 127.0.0.1:PORT (HTTP/1.1, keep-alive):

- ``POST /two-step/<id>``: runs workflow ``<id>``: two activities returning at once;
- ``POST /sleep/<id>``: runs workflow ``<id>``: one durable 1-second timer;
- ``GET /health``: 200 once the worker runs.

Each answers 200 when the workflow has completed: the client starts it and awaits its
result, as the bench's XDB client starts a process and waits for its completion.
"""

import asyncio
import os
import sys
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import Worker

TASK_QUEUE = "xdb-bench"


@activity.defn
async def step_a() -> str:
    return "a"


@activity.defn
async def step_b() -> str:
    return "b"


@workflow.defn
class TwoStep:
    @workflow.run
    async def run(self) -> str:
        timeout = timedelta(seconds=30)
        await workflow.execute_activity(step_a, start_to_close_timeout=timeout)
        await workflow.execute_activity(step_b, start_to_close_timeout=timeout)
        return "done"


@workflow.defn
class Sleeper:
    @workflow.run
    async def run(self) -> str:
        await asyncio.sleep(1)  # a durable timer inside a workflow
        return "slept"


WORKFLOWS = {"two-step": TwoStep.run, "sleep": Sleeper.run}


async def answer(writer: asyncio.StreamWriter, status: int, body: bytes) -> None:
    reason = {200: "OK", 404: "Not Found", 500: "Internal Server Error"}[status]
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\n\r\n"
    writer.write(head.encode() + body)
    await writer.drain()


async def serve_connection(
    client: Client, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """A minimal HTTP/1.1 server: the bench sends bodiless requests on kept connections."""
    try:
        while request := await reader.readline():
            method, path, _ = request.decode().split(" ", 2)
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                name, _, value = line.decode().partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if length:
                await reader.readexactly(length)
            parts = path.strip("/").split("/")
            if method == "GET" and path == "/health":
                await answer(writer, 200, b"ok")
                continue
            run = (
                WORKFLOWS.get(parts[0])
                if method == "POST" and len(parts) == 2
                else None
            )
            if run is None:
                await answer(writer, 404, b"no such workflow")
                continue
            try:
                result = await client.execute_workflow(
                    run, id=parts[1], task_queue=TASK_QUEUE
                )
            except Exception as error:  # noqa: BLE001 - any failure is a failed call to the bench
                await answer(writer, 500, str(error).encode())
                continue
            await answer(writer, 200, result.encode())
    except (ConnectionError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def main() -> None:
    client = await Client.connect(os.environ["TEMPORAL_ADDRESS"], namespace="default")
    worker = Worker(
        client,
        task_queue=TASK_QUEUE,
        workflows=[TwoStep, Sleeper],
        activities=[step_a, step_b],
    )
    server = await asyncio.start_server(
        lambda r, w: serve_connection(client, r, w),
        "127.0.0.1",
        int(os.environ["PORT"]),
    )
    print(f"temporal bench app on {os.environ['PORT']}", file=sys.stderr, flush=True)
    async with server:
        await asyncio.gather(worker.run(), server.serve_forever())


if __name__ == "__main__":
    asyncio.run(main())
