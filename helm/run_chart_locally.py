"""Runs the Helm chart's pods as local processes and drives processes through them.

For each mode (database queue on PostgreSQL and on MariaDB: the default values with the
database URL pointing at a database of the run's own), this renders helm/xdb as
`helm install` would and installs it onto this machine (chart_release.py): the schema
hook Job first, then the Deployments' pods (two API, two async), each pod a set of local
processes with exactly the manifest's command, env, config file and probes
(local_pods.py says how, and which rewrites stand in for a container), then the
post-install hook Jobs. Then, with the sample worker (xdb-sample-worker, the user
sign-up process):

0. the definitions Job (definitions.register, with the sample worker's request
   helm/xdb/ci/signup-definitions.json, its workerUrl the local worker's) registered the
   sign-up through the API Service: the API's answer in its log names the type and the
   file's deployment, changed; run again as post-upgrade, it changes nothing; a request
   the API refuses fails its Job at the first attempt (podFailurePolicy); a start that
   names no worker URL reaches the registered worker;
1. a sign-up started through the API Service is waited for on the *other* API pod, and
   woken there when it completes (on MariaDB through the instance registry: every pod
   must have registered the pod address it advertises, and the waiting pod must be
   called on its internal API);
2. twenty sign-ups are running (reminder timers every second) when one async pod is
   deleted as Kubernetes deletes a pod (endpoints, preStop, SIGTERM, grace period): it
   must exit by itself within terminationGracePeriodSeconds and leave no lease behind,
   and every sign-up must still complete, each with exactly one welcome email;
3. every pod is deleted the same way at the end, and must exit cleanly in time.

Run by scripts/test-chart.sh (which builds the binaries and ensures the databases).
Usage: run_chart_locally.py [--mode postgres|mariadb ...] [--keep]
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chart_release import JOB_BACKOFF_SECONDS, Release, built_images, render
from check_chart import CHART, DOCKERFILES, ROOT, SIGNUP_DEFINITIONS, load_values
from local_pods import ChartRunError, Image, Pod
from pulsar_mode import PulsarRun

RELEASE, NAMESPACE = "xdb", "xdb"
WORKER_LISTEN = "127.0.2.1:8803"
SERVICE = "/api/v1/xdb/service/process-execution"
DRAIN_PROCESSES = 20
# Seconds between the sample's reminder emails: every sign-up has timer work due all the
# time, so an async pod always holds some when it is deleted.
REMINDER_SECONDS = 1
# A long poll open while its API pod is deleted: longer than the 30 s grace the chart
# once gave API pods, which cut such polls off; a deleted pod must answer it.
OPEN_WAIT_SECONDS = 35
# Per mode: how much longer than on the database queue waits may take (Pulsar: the
# connector's first snapshot and stream), and the client's headers (an API token).
SESSION: dict[str, Any] = {"patience": 1.0, "headers": {}}


def log(message: str) -> None:
    print(f"run-chart: {message}", flush=True)


@dataclass
class Database:
    """A database of the run's own on the local server of one dialect."""

    dialect: str  # postgres | mysql
    name: str

    @property
    def url(self) -> str:
        if self.dialect == "postgres":
            return f"postgres://postgres@127.0.0.1:5432/{self.name}"
        return f"mysql://root@127.0.0.1:3306/{self.name}"

    def client(self, database: str) -> list[str]:
        if self.dialect == "postgres":
            return [
                "psql",
                "-h",
                "127.0.0.1",
                "-U",
                "postgres",
                "-d",
                database,
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-At",
                "-F",
                "\t",
            ]
        return ["mysql", "-h", "127.0.0.1", "-uroot", "-N", "-B", database]

    def run(self, sql: str, database: str | None = None) -> list[list[str]]:
        """Runs fixed SQL text (never built from input); rows as lists of strings."""
        out = subprocess.run(
            self.client(database or self.name),
            input=sql,
            text=True,
            capture_output=True,
            check=False,
        )
        if out.returncode != 0:
            raise ChartRunError(f"{self.dialect}: {out.stderr.strip()}")
        return [line.split("\t") for line in out.stdout.splitlines() if line]

    def create(self) -> None:
        if not re.fullmatch(r"[a-z0-9_]+", self.name):
            raise ChartRunError(f"bad database name {self.name!r}")
        admin = "postgres" if self.dialect == "postgres" else "mysql"
        self.run(f"CREATE DATABASE {self.name}", admin)
        sample = ROOT / "samples" / "sql" / self.dialect / "user_signup.sql"
        self.run(sample.read_text())

    def drop(self) -> None:
        admin = "postgres" if self.dialect == "postgres" else "mysql"
        force = " WITH (FORCE)" if self.dialect == "postgres" else ""
        self.run(f"DROP DATABASE IF EXISTS {self.name}{force}", admin)

    def users(self) -> dict[str, tuple[str, str]]:
        table = '"user"' if self.dialect == "postgres" else "`user`"
        rows = self.run(f"SELECT user_id, status, source FROM {table}")
        return {r[0]: (r[1], r[2]) for r in rows}

    def lease_owners(self) -> dict[str, int]:
        rows = self.run(
            "SELECT lease_owner, COUNT(*) FROM xdb_sys_tasks "
            "WHERE lease_owner IS NOT NULL GROUP BY lease_owner"
        )
        return {r[0]: int(r[1]) for r in rows}

    def registry(self) -> set[tuple[str, str]]:
        rows = self.run("SELECT service, notify_url FROM xdb_sys_service_instances")
        return {(r[0], r[1]) for r in rows}


def post(base: str, path: str, body: dict[str, Any], timeout: float = 30) -> Any:
    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **SESSION["headers"]},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return json.loads(answer.read() or b"null")
    except urllib.error.HTTPError as error:
        raise ChartRunError(f"POST {base}{path}: {error.code} {error.read().decode()}") from None


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    return json.loads(text) if answer.headers.get_content_type() == "application/json" else text


def wait_until(what: str, condition: Callable[[], bool], seconds: float, release: Release) -> None:
    """Polls `condition` until it holds; fails at the deadline or at a pod's failure."""
    seconds *= SESSION["patience"]
    deadline = time.monotonic() + seconds
    while not condition():
        release.check()
        if time.monotonic() > deadline:
            raise ChartRunError(f"timed out after {seconds:g} s waiting for {what}")
        time.sleep(0.1)


def start_body(user: str, worker_url: str) -> dict[str, Any]:
    """The start request the Rust SDK sends for the sample's UserSignupProcess."""
    return {
        "processId": f"user-signup-{user}",
        "processType": "UserSignupProcess",
        "workerUrl": worker_url,
        "startStateId": "SubmitState",
        "startStateConfig": {
            "skipWaitUntil": True,
            "globalAttributeLoading": {
                "columns": ["form", "status", "source"],
                "lockType": "NO_LOCK",
            },
        },
        "processStartConfig": {
            "globalAttributeConfig": {
                "tableName": "user",
                "primaryKey": {"column": "user_id", "value": user},
                "initialWrite": [
                    {"column": "form", "value": {"email": f"{user}@example.com", "name": user}},
                    {"column": "status", "value": "waiting"},
                ],
            }
        },
    }


def verify_body(user: str) -> dict[str, Any]:
    payload = {"encoding": "json", "data": json.dumps({"source": "chart-check"})}
    return {
        "processId": f"user-signup-{user}",
        "messages": [{"queueName": "verify", "payload": payload}],
    }


def pod_url(pod: Pod) -> str:
    port = pod.containers[0].spec["ports"][0]["containerPort"]
    return f"http://{pod.ip}:{port}"


def internal_url(pod: Pod) -> str:
    """Where other pods call this one: the API's internal port, the async pod's only one."""
    for port in pod.containers[0].spec["ports"]:
        if port.get("name") == "internal":
            return f"http://{pod.ip}:{port['containerPort']}"
    return pod_url(pod)


def internal_notifies(pod: Pod) -> int:
    """Requests this API pod answered on its internal notify path (its wake-ups)."""
    text = str(get(pod_url(pod) + "/metrics"))
    return sum(
        int(float(m))
        for m in re.findall(
            r'^xdb_api_requests_total\{[^}]*route="/api/v1/xdb/internal/notify"[^}]*\} (\S+)$',
            text,
            re.M,
        )
    )


class Worker:
    """The sample worker, as the user's own service beside the chart."""

    def __init__(self, binary: Path, directory: Path) -> None:
        self.url = f"http://{WORKER_LISTEN}"
        self.log_path = directory / "worker.log"
        with self.log_path.open("wb") as out:
            self.process = subprocess.Popen(
                [
                    str(binary),
                    "--listen",
                    WORKER_LISTEN,
                    "--reminder-interval-seconds",
                    str(REMINDER_SECONDS),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def emails(self) -> list[dict[str, str]]:
        emails: list[dict[str, str]] = get(self.url + "/sample/emails")
        return emails

    def kinds(self, user: str) -> list[str]:
        return [e["kind"] for e in self.emails() if e["to"] == f"{user}@example.com"]

    def healthy(self) -> bool:
        if self.process.poll() is not None:
            raise ChartRunError(f"the sample worker exited: {self.log_path.read_text()[-2000:]}")
        try:
            return bool(get(self.url + "/health") == "ok")
        except OSError:
            return False

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)


def advertised(pod: Pod, section: str) -> str:
    """The URL a pod advertises, as the manifest gives it (env over the config file).

    Here a wildcard listen address became the pod's address, so a service that fell back
    to its listen address would register a reachable URL; in Kubernetes it would register
    http://0.0.0.0:<port>. So the registry is checked against what the manifest says.
    """
    variable = f"XDB_{section.upper()}_ADVERTISE_URL"
    value = pod.manifest_env[pod.containers[0].name].get(variable)
    if value is None:
        config = pod.manifest_env[pod.containers[0].name].get("XDB_CONFIG")
        text = pod.manifest_files.get(Path(pod.rewrite(config))) if config else None
        if text is not None:
            value = tomllib.loads(text).get(section, {}).get("advertise_url")
    if not value or "0.0.0.0" in value:
        raise ChartRunError(
            f"{pod.name} advertises {value!r} (neither {variable} nor "
            f"{section}.advertise_url): in Kubernetes it would register its "
            "listen address, which other pods cannot reach"
        )
    return str(value)


def check_registry(release: Release, db: Database) -> None:
    """MySQL: each pod registered the address it advertises, which is its own."""
    expected = {("API", advertised(p, "api")) for p in release.pods_of("api")}
    expected |= {("ASYNC", advertised(p, "async")) for p in release.pods_of("async")}
    reachable = {("API", internal_url(p)) for p in release.pods_of("api")}
    reachable |= {("ASYNC", internal_url(p)) for p in release.pods_of("async")}
    if expected != reachable:
        raise ChartRunError(f"pods advertise {sorted(expected)}, not their own addresses")
    wait_until(
        "every pod in xdb_sys_service_instances", lambda: db.registry() == expected, 10, release
    )
    log(f"registry: {sorted(url for _, url in expected)}")


def definitions_values(worker_url: str, token_name: str | None) -> dict[str, Any]:
    """definitions.* of the run: the sample worker's request file, given as an operator
    gives it (--set-file), with the local worker's URL; a token where the API checks them."""
    request = json.loads(SIGNUP_DEFINITIONS.read_text())
    request["deployment"]["workerUrl"] = worker_url
    settings: dict[str, Any] = {"register": True, "requestJson": json.dumps(request, indent=2)}
    if token_name:
        settings["tokenName"] = token_name
    return {"definitions": settings}


def job_answer(release: Release, job: str) -> dict[str, Any]:
    """The API's JSON answer the CLI printed (--output json) in a Job's last pod's log."""
    text = release.job_log(job)
    try:
        answer: dict[str, Any] = json.loads(text[text.index("{") :])
    except ValueError:
        raise ChartRunError(f"Job {job} printed no JSON answer:\n{text[-2000:]}") from None
    return answer


def check_definitions(release: Release, worker: Worker, log: Callable[[str], None]) -> None:
    """The post-install definitions Job registered the sample's definitions (step 0)."""
    job_name = f"{release.name}-definitions"
    job = next(
        m for m in release.manifests if m["kind"] == "Job" and m["metadata"]["name"] == job_name
    )
    config_map = next(
        m
        for m in release.manifests
        if m["kind"] == "ConfigMap" and m["metadata"]["name"] == job_name
    )
    request = json.loads(config_map["data"]["request.json"])
    types = [d["processType"] for d in request["definitions"]]
    answer = job_answer(release, job_name)
    registered = answer.get("registered") or []
    revisions = [r["revision"] for r in registered]
    if (
        [r["processType"] for r in revisions] != types
        or any(r["deployment"] != request["deployment"] for r in revisions)
        or not all(r["changed"] for r in registered)
    ):
        raise ChartRunError(f"the post-install registration answered {answer}, not {types} changed")
    log(f"definitions Job: 200, registered {types} revision {[r['revision'] for r in revisions]}")

    # post-upgrade with the same values: the same request, nothing written.
    release.run_job(job, log)
    again = job_answer(release, job_name).get("registered") or []
    if any(r["changed"] for r in again) or [r["revision"] for r in again] != revisions:
        raise ChartRunError(f"registering the same definitions again answered {again}")
    log("definitions Job again (post-upgrade, same values): 200, unchanged")

    # A request the API refuses ends the Job at its first attempt (podFailurePolicy):
    # retrying cannot help. Its own ConfigMap and Job, as another release's would be.
    refused = copy.deepcopy(request)
    refused["definitions"][0]["globalAttributes"]["tableName"] = "no_such_table"
    bad_map = copy.deepcopy(config_map)
    bad_map["metadata"]["name"] = f"{job_name}-refused"
    bad_map["data"] = {"request.json": json.dumps(refused)}
    release.cluster.objects.append(bad_map)
    bad_job = copy.deepcopy(job)
    bad_job["metadata"]["name"] = f"{job_name}-refused"
    for volume in bad_job["spec"]["template"]["spec"]["volumes"]:
        if volume.get("configMap", {}).get("name") == job_name:
            volume["configMap"]["name"] = bad_map["metadata"]["name"]
    started = time.monotonic()
    try:
        release.run_job(bad_job, log)
        raise ChartRunError("a registration of a table that does not exist completed")
    except ChartRunError as error:
        if "FailJob" not in str(error):
            raise
    if time.monotonic() - started > JOB_BACKOFF_SECONDS:
        raise ChartRunError("the refused registration was tried more than once")
    said = release.job_log(bad_job["metadata"]["name"]).strip().splitlines()[-1]
    log(f"a refused registration failed its Job at once: {said}")

    # The registration is in effect: a start that names no worker URL goes to the
    # registered deployment. Other API pods read definitions at most once a second, and
    # a refused start writes nothing, so it is sent again until one is accepted.
    service = release.proxies[f"{release.name}-api"]
    user = f"routed-{uuid.uuid4().hex[:8]}"
    body = start_body(user, worker.url)
    del body["workerUrl"]
    deadline = time.monotonic() + 5
    while True:
        try:
            post(service.url(), f"{SERVICE}/start", body)
            break
        except ChartRunError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    wait_until(
        f"the worker to remind {user}", lambda: "REMINDER" in worker.kinds(user), 30, release
    )
    log(f"a start naming no worker URL reached the registered worker ({worker.url})")


def check_wake_across_replicas(release: Release, db: Database, worker: Worker) -> None:
    service = release.proxies[f"{release.name}-api"]
    user = f"wake-{uuid.uuid4().hex[:8]}"
    post(service.url(), f"{SERVICE}/start", start_body(user, worker.url))
    first = service.last_backend
    other = next(p for p in release.pods_of("api") if p is not first)
    notified = internal_notifies(other) if db.dialect == "mysql" else 0
    answer: dict[str, Any] = {}

    def wait() -> None:
        body = {"processId": f"user-signup-{user}", "timeoutSeconds": 60}
        answer.update(post(pod_url(other), f"{SERVICE}/wait-for-completion", body, 70))
        answer["at"] = time.monotonic()

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    wait_until(f"a reminder for {user}", lambda: "REMINDER" in worker.kinds(user), 30, release)
    post(service.url(), f"{SERVICE}/publish-to-local-queue", verify_body(user))
    verified = time.monotonic()
    wait_until(f"the wait on {other.name} to answer", lambda: not waiter.is_alive(), 70, release)
    if answer.get("status") != "COMPLETED" or answer.get("timedOut"):
        raise ChartRunError(f"wait-for-completion on the other API pod answered {answer}")
    if db.users().get(user) != ("verified", "chart-check"):
        raise ChartRunError(f"business row of {user}: {db.users().get(user)}")
    woken = ""
    if db.dialect == "mysql":
        calls = internal_notifies(other) - notified
        if calls < 1:
            raise ChartRunError(
                f"{other.name} was never called on its internal API: "
                "async pods cannot reach the address it advertises"
            )
        woken = f"; {calls} wake-up call(s) reached it"
    log(
        f"started on {first.name if first else '?'}, waited on {other.name}: COMPLETED "
        f"{(answer['at'] - verified) * 1000:.0f} ms after the verification{woken}"
    )


def check_async_pod_deletion(release: Release, db: Database, worker: Worker) -> None:
    service = release.proxies[f"{release.name}-api"]
    run = uuid.uuid4().hex[:6]
    users = [f"drain-{run}-{i:02}" for i in range(DRAIN_PROCESSES)]
    for user in users:
        post(service.url(), f"{SERVICE}/start", start_body(user, worker.url))
    wait_until(
        "a reminder to every sign-up",
        lambda: all("REMINDER" in worker.kinds(u) for u in users),
        60,
        release,
    )
    victim = release.pods_of("async")[0]
    held = db.lease_owners().get(victim.name, 0)
    started = time.monotonic()
    problems = victim.terminate()
    if problems:
        raise ChartRunError("\n".join(problems))
    log(
        f"deleted {victim.name} holding {held} lease(s): exited 0 after "
        f"{time.monotonic() - started:.1f} s (grace "
        f"{victim.spec.get('terminationGracePeriodSeconds', 30)} s)"
    )
    left = db.lease_owners().get(victim.name, 0)
    if left:
        raise ChartRunError(f"{victim.name} exited holding {left} lease(s)")
    if db.dialect == "mysql" and any(url == pod_url(victim) for _, url in db.registry()):
        raise ChartRunError(f"{victim.name} is still in xdb_sys_service_instances")
    before = {u: worker.kinds(u).count("REMINDER") for u in users}
    wait_until(
        "a reminder to every sign-up after the deletion",
        lambda: all(worker.kinds(u).count("REMINDER") > before[u] for u in users),
        30,
        release,
    )
    for user in users:
        post(service.url(), f"{SERVICE}/publish-to-local-queue", verify_body(user))
    apis = release.pods_of("api")
    for i, user in enumerate(users):
        body = {"processId": f"user-signup-{user}", "timeoutSeconds": 60}
        done = post(pod_url(apis[i % len(apis)]), f"{SERVICE}/wait-for-completion", body, 70)
        if done["status"] != "COMPLETED":
            raise ChartRunError(f"{user}: {done}")
    rows = db.users()
    wrong = {u: rows.get(u) for u in users if rows.get(u) != ("verified", "chart-check")}
    if wrong:
        raise ChartRunError(f"business rows not verified: {wrong}")
    for user in users:
        kinds = worker.kinds(user)
        if kinds.count("VERIFICATION") != 1 or kinds.count("WELCOME") != 1:
            raise ChartRunError(f"{user}'s emails: {kinds}")
    log(
        f"all {len(users)} sign-ups completed on the remaining pods; each row verified, "
        "one welcome email each"
    )


def open_waits(release: Release, worker: Worker) -> list[Callable[[], str]]:
    """A wait-for-completion long poll open on every API pod, on a process that will not
    complete: a pod being deleted must still answer it (timed out) and exit in time.
    Returns, per wait, a call that joins it and says what went wrong."""
    service = release.proxies[f"{release.name}-api"]
    user = f"linger-{uuid.uuid4().hex[:8]}"
    post(service.url(), f"{SERVICE}/start", start_body(user, worker.url))
    results: list[Callable[[], str]] = []
    for pod in release.pods_of("api"):
        outcome: dict[str, str] = {}

        def wait(pod: Pod = pod, outcome: dict[str, str] = outcome) -> None:
            body = {"processId": f"user-signup-{user}", "timeoutSeconds": OPEN_WAIT_SECONDS}
            try:
                answer = post(pod_url(pod), f"{SERVICE}/wait-for-completion", body, 130)
                if not answer.get("timedOut"):
                    raise ChartRunError(f"the wait answered {answer}")
                outcome["answer"] = json.dumps(answer)
            except (OSError, ChartRunError) as error:
                outcome["error"] = f"{pod.name}: an open wait-for-completion got {error}"

        thread = threading.Thread(target=wait, daemon=True)
        thread.start()

        def joined(thread: threading.Thread = thread, outcome: dict[str, str] = outcome) -> str:
            thread.join(timeout=5)
            return outcome.get("error", "")

        results.append(joined)
    return results


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


MODES = {"postgres": "postgres", "mariadb": "mysql", "pulsar": "postgres"}


def cargo_packages() -> list[str]:
    """The packages the chart's images build (their Dockerfiles), and the sample worker."""
    packages = {
        p
        for dockerfile in DOCKERFILES.values()
        for p in re.findall(r"-p ([\w-]+)", dockerfile.read_text())
    }
    return sorted(packages | {"xdb-samples"})


def run_mode(mode: str, target: Path, keep: bool, pulsar_home: Path | None) -> None:
    db = Database(MODES[mode], f"xdb_chart_{mode}_{uuid.uuid4().hex[:8]}")
    root = Path(tempfile.mkdtemp(prefix=f"xdb-chart-{mode}-"))
    worker_url = f"http://{WORKER_LISTEN}"
    pulsar = PulsarRun(db.name, worker_url) if mode == "pulsar" else None
    if pulsar is None:
        values = merge(load_values(None), {"database": {"url": db.url}})
        values = merge(values, definitions_values(worker_url, None))
        SESSION.update(patience=1.0, headers={})
    else:
        if pulsar_home is None:
            raise ChartRunError("Pulsar mode needs --pulsar-home (scripts/test-chart.sh)")
        values = merge(pulsar.values, pulsar.overrides)
        values = merge(values, definitions_values(worker_url, "deployer"))
        SESSION.update(patience=6.0, headers={"Authorization": f"Bearer {pulsar.token}"})
    images = built_images(values, target)

    def image(reference: str) -> Image:
        for name, built in images.items():
            if f"/{name}:" in reference:
                return built
        if pulsar is not None and pulsar_home is not None and reference.startswith("apache"):
            return pulsar.image(reference, pulsar_home)
        raise ChartRunError(f"image {reference!r} is not built in this workspace")

    log(f"[{mode}] database {db.url}, pods under {root}")
    db.create()
    if pulsar is not None:
        pulsar.create_role(db.run)
    release = Release(
        name=RELEASE,
        namespace=NAMESPACE,
        images=image,
        root=root,
        manifests=render(values, RELEASE, NAMESPACE),
        operator_objects=pulsar.secrets if pulsar else [],
    )
    worker = Worker(target / "xdb-sample-worker", root)
    try:
        wait_until("the sample worker", worker.healthy, 30, release)
        release.install(lambda m: log(f"[{mode}] {m}"))
        log(f"[{mode}] {len(release.pods)} pods ready; every probe passed")
        if db.dialect == "mysql":
            check_registry(release, db)
        if pulsar is not None:
            log(f"[{mode}] {pulsar.check_publication(db.run)}")
            log(f"[{mode}] {pulsar.check_offsets_retention()}")
        check_definitions(release, worker, lambda m: log(f"[{mode}] {m}"))
        check_wake_across_replicas(release, db, worker)
        check_async_pod_deletion(release, db, worker)
        waiters = open_waits(release, worker)
        problems = release.uninstall()
        problems += [w for w in (t() for t in waiters) if w]
        if problems:
            raise ChartRunError("\n".join(problems))
        release.check()
        log(
            f"[{mode}] every pod deleted (preStop, SIGTERM) exited 0 within its grace period; "
            f"the long polls open on the API pods were answered"
        )
    except (ChartRunError, OSError):
        # What the services said is the first thing a failure needs.
        for pod in release.pods:
            for container in pod.containers:
                errors = container.log_tail(400, r'"level":"(WARN|ERROR)"|panicked|error')
                if errors:
                    log(f"[{mode}] {pod.name}/{container.name} warnings and errors:\n{errors}")
        raise
    finally:
        release.close()
        worker.stop()
        if pulsar is not None:
            pulsar.clean_up(db.run)
        if not keep:
            db.drop()
            shutil.rmtree(root, ignore_errors=True)
            if pulsar is not None:
                pulsar.drop_role(db.run)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--mode", action="append", choices=sorted(MODES), help="run only these modes (default: all)"
    )
    parser.add_argument(
        "--target", type=Path, help="the cargo profile directory with the binaries (.../debug)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep each mode's database and pod directories"
    )
    parser.add_argument(
        "--pulsar-home",
        type=Path,
        help="the image apachepulsar/pulsar-all as a directory (bin/pulsar-admin)",
    )
    parser.add_argument(
        "--print-packages",
        action="store_true",
        help="print the cargo packages the images and the worker need",
    )
    args = parser.parse_args()
    if args.print_packages:
        print(" ".join(cargo_packages()))
        return 0
    if args.target is None:
        parser.error("--target is required")
    failed = []
    for mode in args.mode or list(MODES):
        try:
            run_mode(mode, args.target, args.keep, args.pulsar_home)
        except (ChartRunError, OSError) as error:
            failed.append(mode)
            log(f"[{mode}] FAIL {error}")
    if failed:
        log(f"FAILED: {', '.join(failed)}")
        return 1
    log(f"chart OK as local pods ({CHART.name}: {', '.join(args.mode or MODES)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
