"""Pulsar CDC mode of the local chart run: helm/xdb/ci/pulsar-values.yaml against the
local Apache Pulsar standalone (scripts/ensure-pulsar.sh).

The CI values stay as they are but for what names the run's own resources: the broker
and admin URLs (the local standalone), the topic prefix, the source, its replication
slot, publication and offsets topic (unique per run: the standalone is shared), the
connector's database (host, name, user) and the worker URL prefix. The Secrets those
values reference are the operator's, so the run creates them: the database URL and
password (`app-database`), an API token, a worker-signing secret.

The connector and the services log in as a role of the run's own whose password holds
quotes, slashes, `&`, `|` and spaces ([`PASSWORD`]); the server checks it (only
`postgres` is trusted on 127.0.0.1). The services read it percent-encoded in the URL,
the hook Job from the Secret as is: a hook that spliced it into text would hand the
connector another password (or a broken config), and no process would run.

The post-install hook Job runs its own script with `bin/pulsar-admin` from the image
`apachepulsar/pulsar-all:<version>`; here that image is a directory (`--pulsar-home`,
made by scripts/test-chart.sh) whose `bin/pulsar-admin` runs Pulsar's admin CLI
(`pulsar-client-tools` of the same version, from Maven Central) on the standalone's jars.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from check_chart import CHART, ROOT, load_values
from local_pods import ChartRunError, Image, Manifest

ADMIN_URL = "http://127.0.0.1:8080"
BROKER_URL = "pulsar://127.0.0.1:6650"

# The run's database password: what sed, shell quoting or a YAML/JSON splice would break.
PASSWORD = 'it\'s "quoted" a/b\\c & d|e  f'


def pulsar_version() -> str:
    pom = (ROOT / "pulsar-io" / "standalone" / "pom.xml").read_text()
    found = re.search(r"<pulsar.version>([^<]+)</pulsar.version>", pom)
    if found is None:
        raise ChartRunError("no <pulsar.version> in pulsar-io/standalone/pom.xml")
    return found.group(1)


class PulsarRun:
    """The values, Secrets and clean-up of one Pulsar-mode run."""

    def __init__(self, database: str, worker_url: str) -> None:
        self.prefix = f"xdbchart{secrets.token_hex(4)}"
        self.database = database
        self.role = f"{self.prefix}_cdc"
        database_url = (
            f"postgres://{self.role}:{urllib.parse.quote(PASSWORD, safe='')}"
            f"@127.0.0.1:5432/{database}"
        )
        self.slot = f"{self.prefix}_slot"
        self.source = f"{self.prefix}-debezium"
        self.token = secrets.token_hex(16)
        values = load_values(CHART / "ci" / "pulsar-values.yaml")
        configs = dict(values.get("pulsar", {}).get("debezium", {}).get("configs") or {})
        configs.update(
            {
                "database.hostname": "127.0.0.1",
                "database.port": "5432",
                "database.user": self.role,
                "database.dbname": database,
                "slot.name": self.slot,
                "publication.name": f"{self.prefix}_publication",
                "offset.storage.topic": f"{self.prefix}-offsets",
            }
        )
        self.overrides: dict[str, Any] = {
            "pulsar": {
                "serviceUrl": BROKER_URL,
                "adminUrl": ADMIN_URL,
                "topicPrefix": self.prefix,
                "subscription": f"{self.prefix}-async",
                "debezium": {"name": self.source, "configs": configs},
            },
            # The sample worker is addressed without a path (no trailing slash).
            "security": {"workerUrlPrefixes": [worker_url]},
        }
        self.values = values
        secret_names = {
            "database": values["database"]["existingSecret"],
            "tokens": values["security"]["apiTokensSecret"],
            "signing": values["security"]["workerSigningSecret"],
        }
        self.secrets: list[Manifest] = [
            secret(
                secret_names["database"],
                {values["database"]["existingSecretKey"]: database_url, "password": PASSWORD},
            ),
            secret(secret_names["tokens"], {"api-tokens": f'["{self.token}"]'}),
            secret(secret_names["signing"], {"worker-signing-secret": secrets.token_hex(32)}),
        ]
        # security.tokens: each token's secret from a Secret of the operator's; the
        # client calls with one that has the client role only, as an application would.
        role_tokens: dict[str, dict[str, str]] = {}
        for entry in values["security"].get("tokens") or []:
            token = secrets.token_hex(16)
            key = entry.get("secretKey") or entry["name"]
            role_tokens.setdefault(entry["secret"], {})[key] = token
            if entry["roles"] == ["client"]:
                self.token = token
        self.secrets += [secret(name, data) for name, data in role_tokens.items()]

    def image(self, reference: str, home: Path) -> Image:
        """`apachepulsar/pulsar-all:<version>` as the directory `home`."""
        version = pulsar_version()
        if reference != f"apachepulsar/pulsar-all:{version}":
            raise ChartRunError(
                f"image {reference!r} is not Pulsar {version}, the "
                "version the standalone runs (pulsar-io/standalone/pom.xml)"
            )
        if not (home / "bin" / "pulsar-admin").is_file():
            raise ChartRunError(f"{home}/bin/pulsar-admin is missing (scripts/test-chart.sh)")
        return Image(binaries={}, entrypoint=[], workdir=home)

    def create_role(self, run_sql: Callable[[str, str], list[list[str]]]) -> None:
        """The run's login role, with [`PASSWORD`]: a superuser, as Debezium creates the
        publication and reads the tables, and the schema hook installs them."""
        if not re.fullmatch(r"[a-z0-9_]+", self.role):
            raise ChartRunError(f"bad role name {self.role!r}")
        literal = "'" + PASSWORD.replace("'", "''") + "'"
        run_sql(
            f"CREATE ROLE {self.role} LOGIN SUPERUSER REPLICATION PASSWORD {literal}", "postgres"
        )

    def drop_role(self, run_sql: Callable[[str, str], list[list[str]]]) -> None:
        """Drops the run's role, once its database (holding the publication it owns) is
        gone."""
        run_sql(f"DROP ROLE IF EXISTS {self.role}", "postgres")

    @property
    def offsets_admin_path(self) -> str:
        """The admin API's path of the connector's offsets topic."""
        return f"{ADMIN_URL}/admin/v2/persistent/public/default/{self.prefix}-offsets"

    def check_publication(self, run_sql: Callable[[str, str], list[list[str]]]) -> str:
        """The schema Job made the source's publication, filtered to the task changes the
        async service acts on, before the connector could make one of every change.
        Returns what it found, for the log."""
        name = f"{self.prefix}_publication"
        rows = run_sql(
            "SELECT rowfilter FROM pg_publication_tables "
            f"WHERE pubname = '{name}' AND tablename = 'xdb_sys_tasks'",
            self.database,
        )
        if not rows or "lease_owner IS NULL" not in rows[0][0]:
            raise ChartRunError(f"publication {name} is not the filtered one: {rows}")
        return f"publication {name}: WHERE {rows[0][0]}"

    def check_offsets_retention(self) -> str:
        """The hook Job kept the connector's offsets (for ever, the newest 64 MB): without
        retention a broker restart loses them. Returns what it found, for the log."""
        with urllib.request.urlopen(f"{self.offsets_admin_path}/retention", timeout=60) as answer:
            found = json.load(answer)
        wanted = {"retentionTimeInMinutes": -1, "retentionSizeInMB": 64}
        if found != wanted:
            raise ChartRunError(f"the offsets topic's retention is {found}, not {wanted}")
        return f"the offsets topic's retention: {found}"

    def clean_up(self, run_sql: Callable[[str, str], list[list[str]]]) -> None:
        """Deletes the source, then its replication slot once the connector let it go
        (an active slot cannot be dropped, and one left behind keeps the database)."""
        path = f"{ADMIN_URL}/admin/v3/sources/public/default/{self.source}"
        try:
            urllib.request.urlopen(urllib.request.Request(path, method="DELETE"), timeout=60)
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise
        try:
            request = urllib.request.Request(
                f"{self.offsets_admin_path}?force=true", method="DELETE"
            )
            urllib.request.urlopen(request, timeout=60)
        except urllib.error.HTTPError as error:
            if error.code != 404:
                raise
        if not re.fullmatch(r"[a-z0-9_]+", self.slot):
            raise ChartRunError(f"bad slot name {self.slot!r}")
        slot = f"FROM pg_replication_slots WHERE slot_name = '{self.slot}'"
        deadline = time.monotonic() + 60
        while run_sql(f"SELECT 1 {slot}", "postgres"):
            run_sql(f"SELECT pg_drop_replication_slot(slot_name) {slot} AND NOT active", "postgres")
            if time.monotonic() > deadline:
                raise ChartRunError(
                    f"replication slot {self.slot} still active 60 s after its source was deleted"
                )
            time.sleep(0.2)


def secret(name: str, data: dict[str, str]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }
