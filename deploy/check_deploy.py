"""Checks deploy/ without a container engine: what can go wrong before an image builds.

- each Dockerfile builds workspace packages that exist, copies binaries those packages
  define, and its ENTRYPOINT is one of them;
- each docker-compose file parses; every service built here or using an image built
  here runs a binary that image contains; mounted host paths exist;
- every XDB_* variable the compose files set is a setting the services know
  (a key documented in deploy/xdb.example.toml) or a sample-worker flag;
- Pulsar CDC mode: every apachepulsar/* image is the Pulsar version the tests run
  (pulsar-io/standalone/pom.xml); the source is registered from its committed config
  file alone (`--source-config-file`, no flags the file replaces), whose
  database.server.name is the services' XDB_PULSAR_TOPIC_PREFIX and whose database
  host and name are the compose stack's.

Run by scripts/check-helm.sh. Needs `cargo metadata` (for the packages' binaries).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
COMPOSE_FILES = ["docker-compose.yml", "docker-compose.database-queue.yml"]

failures: list[str] = []


def matched(pattern: str, text: str, where: str, flags: int = 0) -> str:
    """The first group of `pattern` in `text`; a file without it is a broken checkout."""
    match = re.search(pattern, text, flags)
    if match is None:
        sys.exit(f"check-deploy: {where} has no match for {pattern!r}")
    return match.group(1)


def fail(message: str) -> None:
    failures.append(message)
    print(f"check-deploy: FAIL {message}")


def workspace_binaries() -> dict[str, set[str]]:
    """Package name -> its binary targets."""
    out = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {
        p["name"]: {t["name"] for t in p["targets"] if "bin" in t["kind"]}
        for p in json.loads(out)["packages"]
    }


def check_dockerfile(path: Path, packages: dict[str, set[str]]) -> set[str]:
    """The binaries the image holds; reports inconsistencies."""
    text = path.read_text()
    built = re.findall(r"-p ([\w-]+)", text)
    binaries_built: set[str] = set()
    for package in built:
        if package not in packages:
            fail(f"{path.name}: builds unknown package {package}")
        else:
            binaries_built |= packages[package]
    copied = set(re.findall(r"target/release/([\w-]+)", text))
    for binary in copied - binaries_built:
        fail(f"{path.name}: copies {binary}, which no built package ({built}) defines")
    installed = {
        Path(p).name
        for line in re.findall(r"^COPY --from=build (.+) /usr/local/bin/\s*$", text, re.M)
        for p in line.split()
    }
    if installed != copied:
        fail(f"{path.name}: installs {sorted(installed)} but builds {sorted(copied)}")
    entry = re.search(r'^ENTRYPOINT \["([\w-]+)"', text, re.M)
    if not entry or entry.group(1) not in installed:
        fail(f"{path.name}: ENTRYPOINT is not one of {sorted(installed)}")
    if not re.search(r"^USER \d+", text, re.M):
        fail(f"{path.name}: runs as root")
    return installed


def known_variables() -> set[str]:
    keys, section = set(), None
    for line in (DEPLOY / "xdb.example.toml").read_text().splitlines():
        if m := re.match(r"^\[(\w+)\]\s*$", line):
            section = m.group(1)
        elif section and (m := re.match(r"^#?\s?(\w+) = ", line)):
            keys.add(f"XDB_{section}_{m.group(1)}".upper())
    worker = (ROOT / "samples" / "src" / "bin" / "sample-worker.rs").read_text()
    keys |= set(re.findall(r'env = "(XDB_[A-Z_]+)"', worker))
    return keys | {"XDB_CONFIG"}


def check_compose(name: str, images: dict[str, set[str]]) -> None:
    data = yaml.safe_load((DEPLOY / name).read_text())
    services = data.get("services") or {}
    if not services:
        fail(f"{name}: no services")
    variables = known_variables()
    built_images = {}
    for service in services.values():
        build = service.get("build")
        if build:
            dockerfile = (DEPLOY / build["context"] / build["dockerfile"]).resolve()
            if not dockerfile.is_file():
                fail(f"{name}: missing {dockerfile}")
            built_images[service["image"]] = dockerfile.name
    for service_name, service in services.items():
        dockerfile = built_images.get(service.get("image", ""))
        if dockerfile:
            binaries = images[dockerfile]
            entry = service.get("entrypoint")
            program = (
                entry[0]
                if entry
                else matched(
                    r'^ENTRYPOINT \["([\w-]+)"',
                    (DEPLOY / dockerfile).read_text(),
                    dockerfile,
                    re.M,
                )
            )
            if program not in binaries:
                fail(
                    f"{name}: {service_name} runs {program}, "
                    f"not in {dockerfile} ({sorted(binaries)})"
                )
        for dependency in service.get("depends_on") or {}:
            if dependency not in services:
                fail(f"{name}: {service_name} depends on unknown service {dependency}")
        for variable in service.get("environment") or {}:
            if variable.startswith("XDB_") and variable not in variables:
                fail(f"{name}: {service_name} sets {variable}, which no service reads")
        for volume in service.get("volumes") or []:
            host = volume.split(":")[0]
            if host.startswith("."):
                if not (DEPLOY / host).exists():
                    fail(f"{name}: {service_name} mounts missing {host}")
        # Files a service's command reads from a mounted folder must exist.
        command = (
            " ".join(service.get("command") or [])
            if isinstance(service.get("command"), list)
            else str(service.get("command") or "")
        )
        for volume in service.get("volumes") or []:
            host, _, rest = volume.partition(":")
            mount = rest.split(":")[0]
            if host.startswith(".") and mount:
                for used in re.findall(re.escape(mount.rstrip("/")) + r"/([\w.-]+)", command):
                    if not (DEPLOY / host / used).exists():
                        fail(f"{name}: {service_name} reads {mount}/{used}, missing from {host}")
    check_pulsar(name, services)
    print(f"check-deploy: {name}: {len(services)} services checked")


def pulsar_version() -> str:
    pom = (ROOT / "pulsar-io" / "standalone" / "pom.xml").read_text()
    return matched(r"<pulsar.version>([^<]+)</pulsar.version>", pom, "pulsar-io/standalone/pom.xml")


# The broker settings of the tests' standalone that timers depend on: a broker that is
# not strict delivers a delayed message up to a tick early.
DELAYED_DELIVERY_KEYS = ("isDelayedDeliveryDeliverAtTimeStrict", "delayedDeliveryTickTimeMillis")


def standalone_setting(key: str) -> str:
    conf = (ROOT / "pulsar-io" / "standalone" / "standalone.conf").read_text()
    return matched(rf"^{key}=(.*)$", conf, "standalone.conf", re.MULTILINE).strip()


def check_delayed_delivery(name: str, services: dict[str, Any]) -> None:
    """A Pulsar standalone gets the tests' delayed-delivery settings written into its conf."""
    for service_name, service in services.items():
        command = service.get("command")
        command = " ".join(command) if isinstance(command, list) else str(command or "")
        if "pulsar standalone" not in command:
            continue
        if "apply-config-from-env.py conf/standalone.conf" not in command:
            fail(
                f"{name}: {service_name} starts the standalone without "
                "bin/apply-config-from-env.py conf/standalone.conf: its settings are not set"
            )
        env = service.get("environment") or {}
        for key in DELAYED_DELIVERY_KEYS:
            wanted = standalone_setting(key)
            given = env.get(f"PULSAR_PREFIX_{key}")
            if given != wanted:
                fail(
                    f"{name}: {service_name} sets PULSAR_PREFIX_{key}={given!r}, "
                    f"not {wanted!r} as pulsar-io/standalone/standalone.conf does"
                )


def check_pulsar(name: str, services: dict[str, Any]) -> None:
    """The Pulsar CDC stack uses the tests' Pulsar and the committed source config."""
    version = pulsar_version()
    for service_name, service in services.items():
        image = service.get("image", "")
        if image.startswith("apachepulsar/") and image.rpartition(":")[2] != version:
            fail(
                f"{name}: {service_name} runs {image}, "
                f"not Pulsar {version} (pulsar-io/standalone/pom.xml)"
            )
    check_delayed_delivery(name, services)
    prefixes = {
        service["environment"]["XDB_PULSAR_TOPIC_PREFIX"]
        for service in services.values()
        if isinstance(service.get("environment"), dict)
        and "XDB_PULSAR_TOPIC_PREFIX" in service["environment"]
    }
    for service_name, service in services.items():
        command = service.get("command")
        command = " ".join(command) if isinstance(command, list) else str(command or "")
        if "sources create" not in command:
            continue
        for flag in (
            "--source-type",
            "--destination-topic-name",
            "--name",
            "--tenant",
            "--namespace",
        ):
            if re.search(re.escape(flag) + r"\b", command):
                fail(f"{name}: {service_name} passes {flag}; the source config file says it")
        if "--source-config-file" not in command:
            fail(f"{name}: {service_name} registers the source without --source-config-file")
        for volume in service.get("volumes") or []:
            host, _, rest = volume.partition(":")
            mount = rest.split(":")[0].rstrip("/")
            for used in re.findall(re.escape(mount) + r"/([\w.-]+\.yaml)", command):
                path = DEPLOY / host / used
                if not path.is_file():
                    continue  # reported by check_compose
                source = yaml.safe_load(path.read_text())
                configs = source.get("configs") or {}
                for key in ("archive", "topicName", "name"):
                    if not source.get(key):
                        fail(f"{name}: {used} has no {key}")
                server = configs.get("database.server.name")
                if prefixes != {server}:
                    fail(
                        f"{name}: XDB_PULSAR_TOPIC_PREFIX {sorted(prefixes)} is not "
                        f"{used}'s database.server.name {server!r}"
                    )
                host_name = configs.get("database.hostname")
                database = services.get(host_name) if isinstance(host_name, str) else None
                if database is None:
                    fail(f"{name}: {used}'s database.hostname {host_name!r} is no service")
                    continue
                env = database.get("environment") or {}
                dbname = (
                    env.get("POSTGRES_DB")
                    or env.get("MYSQL_DATABASE")
                    or env.get("MARIADB_DATABASE")
                )
                if dbname and configs.get("database.dbname", dbname) != dbname:
                    fail(
                        f"{name}: {used}'s database.dbname {configs.get('database.dbname')!r} "
                        f"is not {host_name}'s database {dbname!r}"
                    )


def main() -> int:
    packages = workspace_binaries()
    images = {
        path.name: check_dockerfile(path, packages) for path in sorted(DEPLOY.glob("*.Dockerfile"))
    }
    if len(images) != 3:
        fail(f"expected 3 Dockerfiles, found {sorted(images)}")
    for name in COMPOSE_FILES:
        check_compose(name, images)
    if failures:
        print(f"check-deploy: {len(failures)} problem(s)")
        return 1
    print("check-deploy: Dockerfiles and compose files OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
