"""Checks deploy/ without a container engine: what can go wrong before an image builds.

- each Dockerfile builds workspace packages that exist, copies binaries those packages
  define, and its ENTRYPOINT is one of them;
- each docker-compose file parses; every service built here or using an image built
  here runs a binary that image contains; mounted host paths exist;
- every XDB_* variable the compose files set is a setting the services know
  (a key documented in deploy/xdb.example.toml) or a sample-worker flag.

Run by scripts/check-helm.sh. Needs `cargo metadata` (for the packages' binaries).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy"
COMPOSE_FILES = ["docker-compose.yml", "docker-compose.database-queue.yml"]

failures: list[str] = []


def fail(message: str) -> None:
    failures.append(message)
    print(f"check-deploy: FAIL {message}")


def workspace_binaries() -> dict[str, set[str]]:
    """Package name -> its binary targets."""
    out = subprocess.run(
        ["cargo", "metadata", "--no-deps", "--format-version", "1", "--offline"],
        cwd=ROOT, check=True, capture_output=True, text=True,
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
            program = entry[0] if entry else re.search(
                r'^ENTRYPOINT \["([\w-]+)"', (DEPLOY / dockerfile).read_text(), re.M
            ).group(1)
            if program not in binaries:
                fail(f"{name}: {service_name} runs {program}, not in {dockerfile} ({sorted(binaries)})")
        for dependency, condition in (service.get("depends_on") or {}).items():
            if dependency not in services:
                fail(f"{name}: {service_name} depends on unknown service {dependency}")
        for variable in (service.get("environment") or {}):
            if variable.startswith("XDB_") and variable not in variables:
                fail(f"{name}: {service_name} sets {variable}, which no service reads")
        for volume in service.get("volumes") or []:
            host = volume.split(":")[0]
            if host.startswith("."):
                if not (DEPLOY / host).exists():
                    fail(f"{name}: {service_name} mounts missing {host}")
        # Files a service's command reads from a mounted folder must exist.
        command = " ".join(service.get("command") or []) if isinstance(service.get("command"), list) else str(service.get("command") or "")
        for volume in service.get("volumes") or []:
            host, _, rest = volume.partition(":")
            mount = rest.split(":")[0]
            if host.startswith(".") and mount:
                for used in re.findall(re.escape(mount.rstrip("/")) + r"/([\w.-]+)", command):
                    if not (DEPLOY / host / used).exists():
                        fail(f"{name}: {service_name} reads {mount}/{used}, missing from {host}")
    print(f"check-deploy: {name}: {len(services)} services checked")


def main() -> int:
    packages = workspace_binaries()
    images = {
        path.name: check_dockerfile(path, packages)
        for path in sorted(DEPLOY.glob("*.Dockerfile"))
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
