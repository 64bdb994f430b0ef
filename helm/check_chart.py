"""Lints and renders the XDB chart without a cluster, then validates every manifest.

For each scenario (the default values, Pulsar mode): `helm lint --strict`, render as an
install, validate every manifest against the Kubernetes JSON schemas (strict: unknown
fields are errors), and check what the schemas cannot: the expected objects exist, the
probes point at the services' real health paths, the containers run binaries their image
builds, and the rendered config file only uses keys the services know. Also checks that
bad values fail the render with a clear message.

Run by scripts/check-helm.sh (which installs helm-python-sdk and kubernetes-validate).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import helm_python as helm
import kubernetes_validate
import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "helm" / "xdb"
KUBERNETES_VERSIONS = ["1.29.0", "1.33.0"]
SCENARIOS = {
    "default": None,
    "pulsar": CHART / "ci" / "pulsar-values.yaml",
    "tls": CHART / "ci" / "tls-values.yaml",
}
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


def load_values(path: Path | None) -> dict:
    return yaml.safe_load(path.read_text()) if path else {}


def check_scenario(name: str, values_file: Path | None) -> None:
    values = load_values(values_file)
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

    kinds: dict[str, list[dict]] = {}
    for _, doc in manifests:
        kinds.setdefault(doc["kind"], []).append(doc)
    expected = {"Deployment": 2, "Service": 2, "ConfigMap": 1, "Secret": 1, "Job": 1,
                "HorizontalPodAutoscaler": 1, "PodDisruptionBudget": 2, "ServiceAccount": 1}
    if name in ("pulsar", "tls"):
        expected.update({"Secret": 0, "ConfigMap": 2, "Job": 2})
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
    image_names = values.get("image", {}).get("names") or {"api": "api-service", "async": "async-service"}
    for _, doc in manifests:
        if doc["kind"] not in ("Deployment", "Job"):
            continue
        for container in doc["spec"]["template"]["spec"]["containers"]:
            image = container["image"]
            ours = [n for n in image_names.values() if f"/{n}:" in image]
            if ours:
                command = container.get("command", [None])[0]
                if command not in binaries[ours[0]]:
                    fail(f"[{name}] {doc['metadata']['name']} runs {command!r}, "
                         f"not built into {ours[0]} ({sorted(binaries[ours[0]])})")
            if ours and doc["kind"] == "Deployment":
                # Instances find each other by the URL they advertise (MySQL's wake-ups).
                env = {e["name"]: e for e in container.get("env", [])}
                section = "API" if command == "xdb-api-service" else "ASYNC"
                advertised = env.get(f"XDB_{section}_ADVERTISE_URL", {}).get("value", "")
                if "$(POD_IP)" not in advertised or "POD_IP" not in env:
                    fail(f"[{name}] {doc['metadata']['name']} advertises {advertised!r}, "
                         f"not its pod IP")
                if section == "API":
                    # The API's wake-ups arrive on its internal listener, never the
                    # public one that its Service exposes.
                    ports = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
                    if "internal" not in ports or f":{ports['internal']}" not in advertised:
                        fail(f"[{name}] {doc['metadata']['name']} advertises {advertised!r}, "
                             f"not its internal port ({ports})")
            for probe in ("livenessProbe", "readinessProbe"):
                if doc["kind"] == "Deployment":
                    path = container.get(probe, {}).get("httpGet", {}).get("path")
                    if path not in known_paths:
                        fail(f"[{name}] {doc['metadata']['name']} {probe} path {path!r} "
                             f"is not served ({sorted(known_paths)})")

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
        if parsed["queue"]["mode"] != ("database" if name == "default" else "pulsar"):
            fail(f"[{name}] xdb.toml has queue.mode {parsed['queue']['mode']}")
        check_tls_files(name, values, parsed, manifests)
    print(f"check-helm: [{name}] {len(manifests)} manifests rendered and validated "
          f"against Kubernetes {', '.join(KUBERNETES_VERSIONS)} -> {out / 'manifests.yaml'}")


def secret_mounts(pod_spec: dict, container: dict) -> dict[str, tuple[str, int]]:
    """Mount path -> (Secret, file mode) of a container's Secret volumes."""
    volumes = {v["name"]: v["secret"] for v in pod_spec.get("volumes", []) if "secret" in v}
    return {
        m["mountPath"]: (volumes[m["name"]]["secretName"], volumes[m["name"]].get("defaultMode", 0o644))
        for m in container.get("volumeMounts", [])
        if m["name"] in volumes and m.get("readOnly")
    }


def check_tls_files(name: str, values: dict, toml: dict, manifests: list[tuple[str, dict]]) -> None:
    """Every TLS file a setting names lies in a read-only Secret mount of the Secret the
    values name, in every pod that reads the setting; the schema Job mounts the
    database's. Without tls values, nothing is mounted and no setting is set."""
    tls = values.get("tls", {})
    workers, pulsar = tls.get("workers", {}), tls.get("pulsar", {})
    expected = {
        ("security", "worker_ca_file"): (workers.get("secret"), workers.get("caKey", "ca.crt")),
        ("security", "worker_client_cert_file"): (workers.get("secret"), workers.get("clientCertKey")),
        ("security", "worker_client_key_file"): (workers.get("secret"), workers.get("clientKeyKey")),
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
                fail(f"[{name}] {doc['metadata']['name']} does not mount Secret {secret} "
                     f"where {section}.{key} points ({path})")
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
            fail(f"[{name}] {doc['metadata']['name']} does not mount {database_secret} "
                 f"at /etc/xdb/tls/database")
        if not database_secret and database is not None:
            fail(f"[{name}] {doc['metadata']['name']} mounts a database Secret unasked")


def check_refusals() -> None:
    """Values that cannot work must fail the render, saying why."""
    chart = helm.Chart.load(str(CHART))
    cases = [
        ({"queue": {"mode": "kafka"}}, "queue.mode must be"),
        ({"queue": {"mode": "pulsar"}}, "pulsar.serviceUrl is required"),
        ({"database": {"url": ""}}, "set database.url or database.existingSecret"),
        ({"tls": {"workers": {"secret": "w", "clientCertKey": "tls.crt"}}},
         "tls.workers.clientCertKey and tls.workers.clientKeyKey go together"),
        ({"tls": {"pulsar": {"secret": "p"}}}, "tls.pulsar.secret is for a pulsar+ssl://"),
    ]
    for values, expected in cases:
        try:
            chart.render(values, name="xdb", namespace="xdb", is_install=True)
            fail(f"values {values} rendered; expected an error containing {expected!r}")
        except Exception as error:  # the binding raises its own HelmRenderError
            if expected not in str(error):
                fail(f"values {values}: error {error} lacks {expected!r}")


def main() -> int:
    for name, values_file in SCENARIOS.items():
        check_scenario(name, values_file)
    check_refusals()
    if failures:
        print(f"check-helm: {len(failures)} problem(s)")
        return 1
    print("check-helm: chart OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
