"""DBOS Transact's side of `xdb-bench --peers`: XDB's bench workloads as DBOS workflows.

Serves, on 127.0.0.1:PORT (stdlib HTTP, a thread per request):

- ``POST /two-step/<id>``: runs workflow ``<id>``: two ``@DBOS.step()`` returning at once;
- ``POST /sleep/<id>``: runs workflow ``<id>``: one durable ``DBOS.sleep(1)``;
- ``GET /health``: 200 once DBOS has launched.

Each answers 200 when the workflow has completed. The system database is
``DBOS_SYSTEM_DATABASE_URL`` (the bench creates it fresh in its PostgreSQL server).
"""

import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from dbos import DBOS, DBOSConfig, SetWorkflowID


@DBOS.step()
def step_a() -> str:
    return "a"


@DBOS.step()
def step_b() -> str:
    return "b"


@DBOS.workflow()
def two_step() -> str:
    step_a()
    step_b()
    return "done"


@DBOS.workflow()
def sleeper() -> str:
    DBOS.sleep(1)
    return "slept"


WORKFLOWS = {"two-step": two_step, "sleep": sleeper}


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps the bench's connections open, as its clients do with the others.
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.answer(200 if self.path == "/health" else 404, b"ok")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        parts = self.path.strip("/").split("/")
        workflow = WORKFLOWS.get(parts[0]) if len(parts) == 2 else None
        if workflow is None:
            self.answer(404, b"no such workflow")
            return
        try:
            # Calling a workflow runs it to completion in this thread: start and await.
            with SetWorkflowID(parts[1]):
                result = workflow()
        except Exception as error:  # noqa: BLE001 - any failure is a failed call to the bench
            self.answer(500, str(error).encode())
            return
        self.answer(200, result.encode())

    def answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        # One line per request would cost the peer CPU the bench measures.
        pass


def main() -> None:
    config: DBOSConfig = {
        "name": "xdb-bench",
        "system_database_url": os.environ["DBOS_SYSTEM_DATABASE_URL"],
        "log_level": "WARNING",
        # One connection per request in flight (the bench runs 64) and some to spare.
        "sys_db_pool_size": int(os.environ.get("DBOS_POOL_SIZE", "80")),
    }
    DBOS(config=config)
    DBOS.launch()
    # The listen backlog is 5 by default: the bench's 500 timers connect at once.
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), Handler)
    server.daemon_threads = True
    print(f"dbos bench app on {server.server_address[1]}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    finally:
        DBOS.destroy()


if __name__ == "__main__":
    main()
