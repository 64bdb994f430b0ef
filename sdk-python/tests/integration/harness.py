"""Real services for the integration tests: databases, xdb-server, uvicorn-hosted workers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
import psycopg
import pymysql
import pymysql.cursors
import pytest
import uvicorn
from pymysql.constants import CLIENT
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.integration.gate import CallGate, GateMiddleware

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[3]
SQL_DIR = REPO / "samples" / "sql"
POSTGRES_URL = os.environ.get(
    "XDB_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"
)
MYSQL_URL = os.environ.get("XDB_TEST_MYSQL_URL", "mysql://root@127.0.0.1:3306/mysql")


def wait_until(
    what: str, check: Callable[[], T | None], timeout: float = 30.0, interval: float = 0.05
) -> T:
    """Polls ``check`` until it returns something truthy; fails naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


async def await_until(
    what: str,
    check: Callable[[], Awaitable[T | None]],
    timeout: float = 30.0,
    interval: float = 0.05,
) -> T:
    """Async :func:`wait_until`."""
    deadline = time.monotonic() + timeout
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(interval)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# ---- databases ----


@dataclass
class Database:
    """A fresh database on a real server, with the samples' business tables."""

    kind: str  # "postgres" or "mariadb"
    name: str
    url: str
    admin_url: str

    def row(self, table: str, key_column: str, key: str) -> dict[str, Any] | None:
        """One row as a dict (JSON columns decoded), or None."""
        if self.kind == "postgres":
            with psycopg.connect(_pg_conninfo(self.url), autocommit=True) as conn:
                cur = conn.execute(
                    f'SELECT * FROM "{table}" WHERE {key_column} = %s',  # test-only identifiers
                    (key,),
                )
                rec = cur.fetchone()
                if rec is None:
                    return None
                names = [d.name for d in cur.description or []]
                return dict(zip(names, rec, strict=True))
        with _mysql_connect(self.url) as my, my.cursor(pymysql.cursors.DictCursor) as dcur:
            dcur.execute(f"SELECT * FROM `{table}` WHERE {key_column} = %s", (key,))
            found: dict[str, Any] | None = dcur.fetchone()
            if found is not None:
                for k, v in found.items():
                    if isinstance(v, str) and v[:1] in "{[":
                        with contextlib.suppress(ValueError):
                            found[k] = json.loads(v)
            return found


def _pg_conninfo(url: str) -> str:
    return url.replace("postgres://", "postgresql://", 1)


def _mysql_params(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    return {
        "host": parts.hostname or "127.0.0.1",
        "port": parts.port or 3306,
        "user": parts.username or "root",
        "password": parts.password or "",
        "database": parts.path.lstrip("/") or None,
    }


def _mysql_connect(url: str, multi: bool = False) -> pymysql.connections.Connection[Any]:
    return pymysql.connect(
        **_mysql_params(url),
        autocommit=True,
        client_flag=CLIENT.MULTI_STATEMENTS if multi else 0,
    )


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return parts._replace(path=f"/{name}").geturl()


def create_database(kind: str) -> Database:
    """Creates a fresh database with the samples' tables; fails naming the script to run."""
    name = f"xdb_py_{uuid.uuid4().hex[:10]}"
    if kind == "postgres":
        try:
            with psycopg.connect(_pg_conninfo(POSTGRES_URL), autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {name}")
        except psycopg.OperationalError as e:
            pytest.fail(
                f"PostgreSQL is not reachable at {POSTGRES_URL} ({e}); "
                "start it with scripts/ensure-postgres.sh"
            )
        db = Database(kind, name, _with_database(POSTGRES_URL, name), POSTGRES_URL)
        with psycopg.connect(_pg_conninfo(db.url), autocommit=True) as conn:
            for script in ("user_signup.sql", "site_creation.sql"):
                conn.execute((SQL_DIR / "postgres" / script).read_text())
        return db
    try:
        with _mysql_connect(MYSQL_URL) as my, my.cursor() as cur:
            cur.execute(f"CREATE DATABASE {name}")
    except pymysql.err.OperationalError as e:
        pytest.fail(
            f"MariaDB is not reachable at {MYSQL_URL} ({e}); "
            "start it with scripts/ensure-mariadb.sh"
        )
    db = Database(kind, name, _with_database(MYSQL_URL, name), MYSQL_URL)
    with _mysql_connect(db.url, multi=True) as my, my.cursor() as cur:
        for script in ("user_signup.sql", "site_creation.sql"):
            cur.execute((SQL_DIR / "mysql" / script).read_text())
            while cur.nextset():
                pass
    return db


def drop_database(db: Database) -> None:
    with contextlib.suppress(Exception):
        if db.kind == "postgres":
            with psycopg.connect(_pg_conninfo(db.admin_url), autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {db.name} WITH (FORCE)")
        else:
            with _mysql_connect(db.admin_url) as my, my.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS {db.name}")


# ---- xdb-server ----


def binary(name: str, package: str, env: str | None = None) -> Path:
    """A binary built from this repository; fails naming the command that builds it."""
    explicit = os.environ.get(env) if env else None
    target = os.environ.get("CARGO_TARGET_DIR")
    candidates = [Path(explicit)] if explicit else []
    if target:
        candidates.append(Path(target) / "debug" / name)
    candidates += [
        REPO / "target" / "debug" / name,
        Path.home() / ".cache" / "xdb-ci-target" / "debug" / name,
    ]
    for path in candidates:
        if path.is_file():
            return path
    pytest.fail(
        f"{name} is not built (looked in "
        + ", ".join(str(c) for c in candidates)
        + f"); run scripts/test-sdk-python.sh, or `cargo build -p {package} --bins`"
    )


def server_binary() -> Path:
    return binary("xdb-server", "xdb-server", "XDB_SERVER_BIN")


@dataclass
class XdbServer:
    """An ``xdb-server`` process (API and async service) on a free port."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(db: Database, *settings: str) -> XdbServer:
    """Starts xdb-server on ``db`` with ``--set`` ``settings``; waits until it is ready."""
    binary = server_binary()
    for _ in range(3):  # a free port can be taken between choosing and binding it
        port = free_port()
        log_file = Path(tempfile.mkstemp(prefix="xdb-server-", suffix=".log")[1])
        args = [
            str(binary),
            "--database-url",
            db.url,
            "--install-schema",
            "--listen",
            f"127.0.0.1:{port}",
            "--max-wait-seconds",
            "60",
        ]
        for setting in settings:
            args += ["--set", setting]
        with log_file.open("wb") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        server = XdbServer(f"http://127.0.0.1:{port}", proc, log_file)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{server.url}/health/ready", timeout=2).status_code == 200:
                    return server
            time.sleep(0.05)
        server.stop()
        if "in use" not in server.log():
            pytest.fail(f"xdb-server did not become ready; its log:\n{server.log()[-4000:]}")
    pytest.fail("xdb-server found no free port in three tries")


# ---- workers ----


@dataclass
class Exchange:
    """One HTTP exchange seen by a recorder."""

    path: str
    headers: dict[str, str]
    request: bytes
    status: int = 0
    response: bytes = b""

    def request_json(self) -> Any:
        return json.loads(self.request)

    def response_json(self) -> Any:
        return json.loads(self.response) if self.response else None


@dataclass
class Recording:
    """A thread-safe list of exchanges."""

    exchanges: list[Exchange] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, exchange: Exchange) -> None:
        with self.lock:
            self.exchanges.append(exchange)

    def all(self) -> list[Exchange]:
        with self.lock:
            return list(self.exchanges)

    def for_process(self, process_id: str) -> list[Exchange]:
        out = []
        for e in self.all():
            try:
                if e.request_json()["context"]["processId"] == process_id:
                    out.append(e)
            except (ValueError, KeyError, TypeError):
                continue
        return out


class RecordingMiddleware:
    """Records every request and response body passing through an ASGI app."""

    def __init__(self, app: ASGIApp, recording: Recording) -> None:
        self.app = app
        self.recording = recording

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        exchange = Exchange(scope["path"], headers, b"")
        body: list[bytes] = []

        async def recv() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                exchange.request += message.get("body", b"")
            return message

        async def snd(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange.status = message["status"]
            elif message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                if not message.get("more_body"):
                    exchange.response = b"".join(body)
                    self.recording.add(exchange)
            await send(message)

        await self.app(scope, recv, snd)


class ThreadedWorker:
    """An ASGI app served by uvicorn from a thread of its own, on a free port.

    Its ``recording`` sees every call; its ``gate`` holds the calls a test picks.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.recording = Recording()
        self.gate = CallGate()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        config = uvicorn.Config(
            RecordingMiddleware(GateMiddleware(app, self.gate), self.recording),
            log_level="warning",
            lifespan="off",
            access_log=False,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def start(self) -> ThreadedWorker:
        self._thread.start()
        wait_until("the worker to serve", lambda: self._server.started, timeout=20)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=20)
        self._sock.close()


@contextlib.contextmanager
def running_worker(app: ASGIApp) -> Iterator[ThreadedWorker]:
    worker = ThreadedWorker(app).start()
    try:
        yield worker
    finally:
        worker.stop()


# ---- the TypeScript SDK's sample worker, on node ----

TS_SDK = REPO / "sdk-typescript"
TS_WORKER_MAIN = TS_SDK / "dist" / "samples" / "worker-main.js"
_TS_BUILD_HINT = (
    "run scripts/test-sdk-typescript.sh (it runs `npm ci` and the build), or "
    "`cd sdk-typescript && npm ci && npm run build`; scripts/test-sdk-python.sh builds it "
    "when it is missing"
)
_NODE_READY = re.compile(r"listening on (http://\S+)")


def typescript_worker_command() -> list[str]:
    """``node dist/samples/worker-main.js``; fails naming what to run when it cannot run."""
    node = shutil.which("node")
    if node is None:
        pytest.fail(
            "Node.js 20 or newer is needed to run the TypeScript SDK's sample worker and is "
            f"not on PATH; install it, then {_TS_BUILD_HINT}"
        )
    version = subprocess.run(
        [node, "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout.strip()
    found = re.match(r"v(\d+)\.", version)
    if found is None or int(found.group(1)) < 20:
        pytest.fail(f"Node.js 20 or newer is needed for the TypeScript SDK; {node} is {version!r}")
    for needed in (TS_WORKER_MAIN, TS_SDK / "dist" / "src" / "index.js", TS_SDK / "node_modules"):
        if not needed.exists():
            pytest.fail(f"the TypeScript SDK is not built: {needed} is missing; {_TS_BUILD_HINT}")
    return [node, str(TS_WORKER_MAIN)]


@dataclass
class NodeWorker:
    """The TypeScript SDK's sample worker (``samples/worker-main.ts``) served by node."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    async def emails(self, to: str) -> list[str]:
        """The kinds of email the worker's sign-up sent to ``to``, oldest first."""
        async with httpx.AsyncClient() as http:
            response = await http.get(f"{self.url}/sample/emails", timeout=10)
            response.raise_for_status()
        return [e["kind"] for e in response.json() if e["to"] == to]

    @contextlib.contextmanager
    def log_on_failure(self) -> Iterator[None]:
        """Prints the worker's log (shown by pytest) when the block fails."""
        try:
            yield
        except BaseException:
            print(f"--- TypeScript worker log ({self.log_path}) ---\n{self.log()[-8000:]}")
            raise

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s; removes the log."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log_path.unlink(missing_ok=True)


def start_typescript_worker(*args: str) -> NodeWorker:
    """Starts the TypeScript sample worker on a port of its choosing; waits until it serves."""
    command = [*typescript_worker_command(), "--host", "127.0.0.1", "--port", "0", *args]
    env = {k: v for k, v in os.environ.items() if k != "XDB_WORKER_SIGNING_SECRET"}
    fd, name = tempfile.mkstemp(prefix="xdb-ts-worker-", suffix=".log")
    log_path = Path(name)
    with os.fdopen(fd, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    worker = NodeWorker("", process, log_path)

    def listening() -> str | None:
        found = _NODE_READY.search(worker.log())
        if found is None and process.poll() is not None:
            pytest.fail(f"the TypeScript worker exited with {process.returncode}; its log is below")
        return found.group(1) if found else None

    try:
        worker.url = wait_until("the TypeScript worker to listen", listening, timeout=30)
        wait_until(
            "the TypeScript worker to answer /health",
            lambda: _answers(f"{worker.url}/health"),
            timeout=30,
        )
    except BaseException:
        print(f"--- TypeScript worker log ({' '.join(command)}) ---\n{worker.log()[-4000:]}")
        worker.stop()
        raise
    return worker


def _answers(url: str) -> bool:
    with contextlib.suppress(httpx.HTTPError):
        return httpx.get(url, timeout=2).status_code == 200
    return False
