"""A service hosting both sample processes: the worker mounted in a Starlette app.

``python -m samples.worker_app --port 8803`` serves the worker API under ``/xdb`` (worker
URL ``http://127.0.0.1:8803/xdb``), ``GET /health`` and ``GET /sample/emails``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from datetime import timedelta

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Mount, Route

from samples.email import Outbox
from samples.site_creation import SiteCreationProcess
from samples.site_services import ExternalServices
from samples.user_signup import UserSignupProcess
from xdb import WorkerService


def create_app(outbox: Outbox, reminder: timedelta, signing_secret: str | None = None) -> Starlette:
    """Your own service, with the XDB worker mounted at ``/xdb``."""
    worker = WorkerService(
        UserSignupProcess(outbox, reminder),
        SiteCreationProcess(ExternalServices()),
        signing_secret=signing_secret,
    )

    async def health(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def emails(request: Request) -> JSONResponse:
        return JSONResponse([dataclasses.asdict(e) for e in outbox.sent()])

    return Starlette(
        routes=[
            Route("/health", health),
            Route("/sample/emails", emails),
            Mount("/xdb", app=worker),
        ]
    )


def main() -> None:
    """Serves the sample worker until interrupted."""
    parser = argparse.ArgumentParser(description="XDB sample worker (Python)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8803)
    parser.add_argument("--reminder-interval-seconds", type=float, default=24 * 3600)
    args = parser.parse_args()
    app = create_app(
        Outbox(),
        timedelta(seconds=args.reminder_interval_seconds),
        os.environ.get("XDB_WORKER_SIGNING_SECRET"),
    )
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
