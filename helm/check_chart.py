"""Lints and renders the XDB chart without a cluster, then validates every manifest.

For each scenario (the default values, Pulsar mode, TLS, registering definitions):
`helm lint --strict`, render as an install, validate every manifest against the
Kubernetes JSON schemas (strict: unknown fields are errors), and check what the schemas
cannot: the expected objects exist, the probes point at the services' real health paths,
the containers run binaries their image builds, the rendered config file only uses keys
the services know, and the definitions Job runs the CLI on the values' request with its
token from a Secret. Also checks that bad values fail the render with a clear message.

Run by scripts/check-helm.sh (which installs helm-python-sdk and kubernetes-validate).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import yaml

# A parsed YAML or JSON object: values, a manifest, a TOML table.
Json = dict[str, Any]

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm" / "xdb"
KUBERNETES_VERSIONS = ["1.29.0", "1.33.0"]
SCENARIOS = {
    "default": None,
    "pulsar": CHART / "ci" / "pulsar-values.yaml",
    "tls": CHART / "ci" / "tls-values.yaml",
    "definitions": CHART / "ci" / "definitions-values.yaml",
}
# Values a scenario takes from a file, as `helm --set-file key=path` gives them.
SET_FILES = {
    "definitions": {"definitions.requestJson": CHART / "ci" / "signup-definitions.json"},
}
# The sample worker's definitions registration request, beside the CI values.
SIGNUP_DEFINITIONS = CHART / "ci" / "signup-definitions.json"
# Where the definitions Job's container reads the request (the ConfigMap's mount).
DEFINITIONS_FILE = "/etc/xdb/definitions/request.json"
# Image name (values image.names) -> Dockerfile that builds it.
DOCKERFILES = {
    "api-service": ROOT / "deploy" / "api-service.Dockerfile",
    "async-service": ROOT / "deploy" / "async-service.Dockerfile",
}
HEALTH_SOURCES = [
    ROOT / "api-service" / "src" / "routes" / "mod.rs",
    ROOT / "async-service" / "src" / "http.rs",
]

failures: list[str] = []


def fail(message: str) -> None:
    failures.append(message)
    print(f"check-helm: FAIL {message}")


def image_binaries(dockerfile: Path) -> set[str]:
    """Binaries a Dockerfile copies into its runtime image."""
    text = dockerfile.read_text()
    copied = re.findall(r"^COPY --from=build (.+) /usr/local/bin/\s*$", text, re.M)
    return {Path(p).name for line in copied for p in line.split()}


def example_keys() -> set[str]:
    """`section.key` documented in deploy/xdb.example.toml (set or commented out)."""
    keys, section = set(), None
    for line in (ROOT / "deploy" / "xdb.example.toml").read_text().splitlines():
        if m := re.match(r"^\[(\w+)\]\s*$", line):
            section = m.group(1)
        elif section and (m := re.match(r"^#?\s?(\w+) = ", line)):
            keys.add(f"{section}.{m.group(1)}")
    return keys


def health_paths() -> set[str]:
    return {p for src in HEALTH_SOURCES for p in re.findall(r'"(/health/\w+)"', src.read_text())}


def load_values(path: Path | None) -> Json:
    return yaml.safe_load(path.read_text()) if path else {}


def set_file(values: Json, key: str, path: Path) -> Json:
    """`helm --set-file key=path`: the file's text as the value at the dotted key."""
    *parents, last = key.split(".")
    node = values
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = path.read_text()
    return values


def cli_exit_code(name: str) -> int:
    """An exit code of the `xdb` CLI by its name in cli/src/exit.rs (part of its interface)."""
    found = re.search(rf"^\s*{name} = (\d+),", (ROOT / "cli" / "src" / "exit.rs").read_text(), re.M)
    if found is None:
        raise SystemExit(f"cli/src/exit.rs has no exit code {name}")
    return int(found.group(1))


def check_scenario(name: str, values_file: Path | None) -> None:
    values = load_values(values_file)
    for key, path in SET_FILES.get(name, {}).items():
        set_file(values, key, path)
    report = helm.lint(str(CHART), values, strict=True)
    for message in report.get("messages", []):
        if message.get("severity", 0) >= 2:
            fail(f"[{name}] helm lint: {message.get('path')}: {message.get('error')}")
    for error in report.get("errors") or []:
        fail(f"[{name}] helm lint: {error}")

    chart = helm.Chart.load(str(CHART))
    rendered = chart.render(values, name="xdb", namespace="xdb", is_install=True)
    out = ROOT / "target" / "helm-rendered" / name
    out.mkdir(parents=True, exist_ok=True)
    manifests = []
    for template, text in sorted(rendered.items()):
        if template.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                manifests.append((template, doc))
    (out / "manifests.yaml").write_text(
        yaml.safe_dump_all([doc for _, doc in manifests], sort_keys=False)
    )

    for template, doc in manifests:
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                where = "/".join(str(p) for p in error.path)
                fail(f"[{name}] {template} ({doc['kind']}) vs {version}: {where}: {error.message}")

    kinds: dict[str, list[Json]] = {}
    for _, doc in manifests:
        kinds.setdefault(doc["kind"], []).append(doc)
    expected = {
        "Deployment": 2,
        "Service": 2,
        "ConfigMap": 1,
        "Secret": 1,
        "Job": 1,
        "HorizontalPodAutoscaler": 1,
        "PodDisruptionBudget": 2,
        "ServiceAccount": 1,
    }
    if name in ("pulsar", "tls"):
        expected.update({"Secret": 0, "ConfigMap": 2, "Job": 2})
    if name == "definitions":
        expected.update({"ConfigMap": 2, "Job": 2})
    for kind, count in expected.items():
        if len(kinds.get(kind, [])) != count:
            fail(f"[{name}] expected {count} {kind}, rendered {len(kinds.get(kind, []))}")

    known_paths = health_paths()
    binaries = {image: image_binaries(path) for image, path in DOCKERFILES.items()}
    for _, doc in manifests:
        # The API's internal listener is for pods alone: no Service may route to it.
        if doc["kind"] == "Service":
            for port in doc["spec"].get("ports", []):
                if port.get("targetPort") == "internal":
                    fail(f"[{name}] Service {doc['metadata']['name']} exposes the internal port")
    image_names = values.get("image", {}).get("names") or {
        "api": "api-service",
        "async": "async-service",
    }
    for _, doc in manifests:
        if doc["kind"] not in ("Deployment", "Job"):
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            image = container["image"]
            ours = [n for n in image_names.values() if f"/{n}:" in image]
            if ours:
                command = container.get("command", [None])[0]
                if command not in binaries[ours[0]]:
                    fail(
                        f"[{name}] {doc['metadata']['name']} runs {command!r}, "
                        f"not built into {ours[0]} ({sorted(binaries[ours[0]])})"
                    )
            if ours and doc["kind"] == "Deployment":
                # Instances find each other by the URL they advertise (MySQL's wake-ups).
                env = {e["name"]: e for e in container.get("env", [])}
                section = "API" if command == "xdb-api-service" else "ASYNC"
                advertised = env.get(f"XDB_{section}_ADVERTISE_URL", {}).get("value", "")
                if "$(POD_IP)" not in advertised or "POD_IP" not in env:
                    fail(
                        f"[{name}] {doc['metadata']['name']} advertises {advertised!r}, "
                        f"not its pod IP"
                    )
                if section == "API":
                    # The API's wake-ups arrive on its internal listener, never the
                    # public one that its Service exposes.
                    ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
                    if "internal" not in ports or f":{ports['internal']}" not in advertised:
                        fail(
                            f"[{name}] {doc['metadata']['name']} advertises {advertised!r}, "
                            f"not its internal port ({ports})"
                        )
            for probe in ("livenessProbe", "readinessProbe"):
                if doc["kind"] == "Deployment":
                    path = container.get(probe, {}).get("httpGet", {}).get("path")
                    if path not in known_paths:
                        fail(
                            f"[{name}] {doc['metadata']['name']} {probe} path {path!r} "
                            f"is not served ({sorted(known_paths)})"
                        )

    allowed = example_keys()
    for config_map in kinds.get("ConfigMap", []):
        text = config_map.get("data", {}).get("xdb.toml")
        if text is None:
            continue
        try:
            parsed = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            fail(f"[{name}] xdb.toml does not parse: {error}")
            continue
        for section, table in parsed.items():
            for key in table:
                if f"{section}.{key}" not in allowed:
                    fail(f"[{name}] xdb.toml sets unknown key {section}.{key}")
        if parsed["queue"]["mode"] != (values.get("queue") or {}).get("mode", "database"):
            fail(f"[{name}] xdb.toml has queue.mode {parsed['queue']['mode']}")
        check_tls_files(name, values, parsed, manifests)
    check_definitions(name, values, manifests)
    print(
        f"check-helm: [{name}] {len(manifests)} manifests rendered and validated "
        f"against Kubernetes {', '.join(KUBERNETES_VERSIONS)} -> {out / 'manifests.yaml'}"
    )


def secret_mounts(pod_spec: Json, container: Json) -> dict[str, tuple[str, int]]:
    """Mount path -> (Secret, file mode) of a container's Secret volumes."""
    volumes = {v["name"]: v["secret"] for v in pod_spec.get("volumes", []) if "secret" in v}
    return {
        m["mountPath"]: (
            volumes[m["name"]]["secretName"],
            volumes[m["name"]].get("defaultMode", 0o644),
        )
        for m in container.get("volumeMounts", [])
        if m["name"] in volumes and m.get("readOnly")
    }


def check_tls_files(name: str, values: Json, toml: Json, manifests: list[tuple[str, Json]]) -> None:
    """Every TLS file a setting names lies in a read-only Secret mount of the Secret the
    values name, in every pod that reads the setting; the schema Job mounts the
    database's. Without tls values, nothing is mounted and no setting is set."""
    tls = values.get("tls", {})
    workers, pulsar = tls.get("workers", {}), tls.get("pulsar", {})
    expected = {
        ("security", "worker_ca_file"): (workers.get("secret"), workers.get("caKey", "ca.crt")),
        ("security", "worker_client_cert_file"): (
            workers.get("secret"),
            workers.get("clientCertKey"),
        ),
        ("security", "worker_client_key_file"): (
            workers.get("secret"),
            workers.get("clientKeyKey"),
        ),
        ("pulsar", "tls_ca_file"): (pulsar.get("secret"), pulsar.get("caKey", "ca.crt")),
    }
    for (section, key), (secret, file) in expected.items():
        path = toml.get(section, {}).get(key)
        if not (secret and file):
            if path is not None:
                fail(f"[{name}] xdb.toml sets {section}.{key} without tls values")
            continue
        if path is None or Path(path).name != file:
            fail(f"[{name}] xdb.toml {section}.{key} = {path!r}, expected the Secret's {file}")
            continue
        for _, doc in manifests:
            if doc["kind"] != "Deployment":
                continue
            spec = doc["spec"]["template"]["spec"]
            mounts = secret_mounts(spec, spec["containers"][0])
            mounted = mounts.get(str(Path(path).parent))
            if mounted is None or mounted[0] != secret:
                fail(
                    f"[{name}] {doc['metadata']['name']} does not mount Secret {secret} "
                    f"where {section}.{key} points ({path})"
                )
            elif mounted[1] & 0o222:
                fail(f"[{name}] {doc['metadata']['name']} mounts {secret} writable")
    database_secret = tls.get("databaseSecret")
    for _, doc in manifests:
        if doc["kind"] not in ("Deployment", "Job") or "xdb" not in doc["metadata"]["name"]:
            continue
        spec = doc["spec"]["template"]["spec"]
        mounts = secret_mounts(spec, spec["containers"][0])
        database = mounts.get("/etc/xdb/tls/database")
        if doc["kind"] == "Job" and "schema" not in doc["metadata"]["name"]:
            continue
        if database_secret and (database is None or database[0] != database_secret):
            fail(
                f"[{name}] {doc['metadata']['name']} does not mount {database_secret} "
                f"at /etc/xdb/tls/database"
            )
        if not database_secret and database is not None:
            fail(f"[{name}] {doc['metadata']['name']} mounts a database Secret unasked")


def check_definitions(name: str, values: Json, manifests: list[tuple[str, Json]]) -> None:
    """With definitions.register, a release ConfigMap holds the values' request as given,
    and a post-install/post-upgrade hook Job runs `xdb definitions register` on it against
    the API Service, its token (if any) from the Secret the values name, retried only
    while the API cannot be reached; without it, neither exists."""
    where = f"[{name}] definitions"
    settings = values.get("definitions") or {}
    objects = [d for _, d in manifests if d["metadata"]["name"].endswith("-definitions")]
    if not settings.get("register"):
        if objects:
            fail(f"{where}: rendered {[o['kind'] for o in objects]} without definitions.register")
        return
    config_maps = [o for o in objects if o["kind"] == "ConfigMap"]
    jobs = [o for o in objects if o["kind"] == "Job"]
    if len(config_maps) != 1 or len(jobs) != 1:
        fail(
            f"{where}: expected one ConfigMap and one Job, rendered {[o['kind'] for o in objects]}"
        )
        return
    config_map, job = config_maps[0], jobs[0]
    if (config_map.get("data") or {}).get("request.json") != settings.get("requestJson"):
        fail(
            f"{where}: ConfigMap {config_map['metadata']['name']} request.json differs from "
            "definitions.requestJson"
        )
    if "helm.sh/hook" in (config_map["metadata"].get("annotations") or {}):
        fail(f"{where}: the ConfigMap is a hook; it must be a release object the Job finds")
    annotations = job["metadata"].get("annotations") or {}
    hooks = {h.strip() for h in annotations.get("helm.sh/hook", "").split(",")}
    if hooks != {"post-install", "post-upgrade"}:
        fail(f"{where}: Job hooks {sorted(hooks)}, expected post-install and post-upgrade")
    spec = job["spec"]
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    services = {d["metadata"]["name"]: d for _, d in manifests if d["kind"] == "Service"}
    api = next((s for n, s in services.items() if n.endswith("-api")), None)
    port = api["spec"]["ports"][0]["port"] if api else None
    url = f"http://{api['metadata']['name']}:{port}" if api else "(no API Service)"
    expected = [
        "xdb",
        "definitions",
        "register",
        "--file",
        DEFINITIONS_FILE,
        *(["--force"] if settings.get("force") else []),
        "--url",
        url,
        "--output",
        "json",
    ]
    if container.get("command") != expected or container.get("args"):
        fail(
            f"{where}: Job runs {container.get('command')} {container.get('args') or ''}, "
            f"expected {expected}"
        )
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounted = [
        m
        for m in container.get("volumeMounts", [])
        if m["mountPath"] == str(Path(DEFINITIONS_FILE).parent)
        and m.get("readOnly")
        and (volumes.get(m["name"], {}).get("configMap") or {}).get("name")
        == config_map["metadata"]["name"]
    ]
    if not mounted:
        fail(
            f"{where}: {DEFINITIONS_FILE} is not in a read-only mount of "
            f"{config_map['metadata']['name']}"
        )
    tokens = {t["name"]: t for t in (values.get("security") or {}).get("tokens") or []}
    if settings.get("tokenName"):
        entry = tokens[settings["tokenName"]]
        secret = (entry["secret"], entry.get("secretKey") or entry["name"])
    elif settings.get("tokenSecret"):
        secret = (settings["tokenSecret"], settings.get("tokenSecretKey", "token"))
    else:
        secret = None
    env = {e["name"]: e for e in container.get("env", [])}
    if secret is None and "XDB_TOKEN" in env:
        fail(f"{where}: XDB_TOKEN set without a token in the values")
    if secret is not None:
        ref = (env.get("XDB_TOKEN", {}).get("valueFrom") or {}).get("secretKeyRef") or {}
        if (ref.get("name"), ref.get("key")) != secret:
            fail(f"{where}: XDB_TOKEN is {env.get('XDB_TOKEN')}, not from Secret {secret}")
    if pod.get("restartPolicy") != "Never" or pod.get("enableServiceLinks") is not False:
        fail(f"{where}: the Job's pods need restartPolicy Never and no Service links")
    # The Job controller retries an attempt that could not reach the API (the CLI's
    # exit code for that); any other failure ends the Job at once.
    unreachable = cli_exit_code("Unreachable")
    rules = (spec.get("podFailurePolicy") or {}).get("rules") or []
    fail_job = [
        r
        for r in rules
        if r.get("action") == "FailJob"
        and (r.get("onExitCodes") or {}).get("operator") == "NotIn"
        and (r.get("onExitCodes") or {}).get("values") == [unreachable]
        and (r.get("onExitCodes") or {}).get("containerName") == container["name"]
    ]
    if len(rules) != 1 or not fail_job:
        fail(f"{where}: podFailurePolicy {rules}, expected FailJob unless exit code {unreachable}")
    for key in ("backoffLimit", "activeDeadlineSeconds"):
        if key in settings and spec.get(key) != settings[key]:
            fail(f"{where}: Job {key} {spec.get(key)}, values {settings[key]}")


def check_refusals() -> None:
    """Values that cannot work must fail the render, saying why."""
    chart = helm.Chart.load(str(CHART))
    signup = SIGNUP_DEFINITIONS.read_text()
    cases: list[tuple[Json, str]] = [
        ({"queue": {"mode": "kafka"}}, "queue.mode must be"),
        ({"queue": {"mode": "pulsar"}}, "pulsar.serviceUrl is required"),
        ({"database": {"url": ""}}, "set database.url or database.existingSecret"),
        (
            {"tls": {"workers": {"secret": "w", "clientCertKey": "tls.crt"}}},
            "tls.workers.clientCertKey and tls.workers.clientKeyKey go together",
        ),
        ({"tls": {"pulsar": {"secret": "p"}}}, "tls.pulsar.secret is for a pulsar+ssl://"),
        ({"definitions": {"register": True}}, "definitions.requestJson is empty"),
        (
            {"definitions": {"register": True, "requestJson": "{deployment"}},
            "definitions.requestJson is not a JSON object",
        ),
        (
            {"definitions": {"register": True, "requestJson": '{"definitions": [{}]}'}},
            "definitions.requestJson needs a deployment with name, version and workerUrl",
        ),
        (
            {
                "definitions": {
                    "register": True,
                    "requestJson": signup.replace(
                        '"definitions": [', '"definitions": [], "unused": ['
                    ),
                }
            },
            "definitions.requestJson needs at least one process definition",
        ),
        (
            {
                "definitions": {"register": True, "requestJson": signup},
                "security": {"apiTokensSecret": "t"},
            },
            "so the Job needs one with the deploy role",
        ),
        (
            {
                "definitions": {"register": True, "requestJson": signup, "tokenName": "ops"},
                "security": {
                    "tokens": [{"name": "ops", "roles": ["read", "operate"], "secret": "t"}]
                },
            },
            'security.tokens entry "ops" lacks the deploy role',
        ),
        (
            {"definitions": {"register": True, "requestJson": signup, "tokenName": "nobody"}},
            'no security.tokens entry is named "nobody"',
        ),
        (
            {
                "definitions": {
                    "register": True,
                    "requestJson": signup,
                    "tokenName": "a",
                    "tokenSecret": "b",
                }
            },
            "not both",
        ),
    ]
    for values, expected in cases:
        try:
            chart.render(values, name="xdb", namespace="xdb", is_install=True)
            fail(f"values {values} rendered; expected an error containing {expected!r}")
        except Exception as error:  # the binding raises its own HelmRenderError
            if expected not in str(error):
                fail(f"values {values}: error {error} lacks {expected!r}")


def check_definitions_variants() -> None:
    """The definitions Job's other shapes: the token from a Secret of the operator's,
    `force`, no token while the API checks none, and a release named otherwise."""
    chart = helm.Chart.load(str(CHART))
    signup = SIGNUP_DEFINITIONS.read_text()
    variants: list[tuple[str, Json]] = [
        ("no-token", {"definitions": {"register": True, "requestJson": signup}}),
        (
            "own-secret",
            {
                "definitions": {
                    "register": True,
                    "requestJson": signup,
                    "force": True,
                    "tokenSecret": "ops-deploy",
                    "tokenSecretKey": "bearer",
                },
                "security": {"apiTokensSecret": "xdb-api-tokens"},
                "api": {"service": {"port": 9901}},
            },
        ),
    ]
    for variant, values in variants:
        for release in ("xdb", "payments"):
            rendered = chart.render(values, name=release, namespace="apps", is_install=True)
            manifests = [
                (template, doc)
                for template, text in sorted(rendered.items())
                if not template.endswith("NOTES.txt")
                for doc in yaml.safe_load_all(text)
                if doc
            ]
            check_definitions(f"definitions/{variant}/{release}", values, manifests)
            for template, doc in manifests:
                if doc["metadata"]["name"].endswith("-definitions"):
                    for version in KUBERNETES_VERSIONS:
                        try:
                            kubernetes_validate.validate(doc, version, strict=True)
                        except kubernetes_validate.ValidationError as error:
                            fail(
                                f"[definitions/{variant}] {template} vs {version}: {error.message}"
                            )


def main() -> int:
    for name, values_file in SCENARIOS.items():
        check_scenario(name, values_file)
    check_refusals()
    check_definitions_variants()
    if failures:
        print(f"check-helm: {len(failures)} problem(s)")
        return 1
    print("check-helm: chart OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
