"""Runs rendered Kubernetes pod templates as local processes, the way a kubelet would.

What it takes from the manifest, unchanged: each container's command and args (or its
image's entrypoint), its env (`value` with `$(VAR)` expansion, `secretKeyRef`,
`configMapKeyRef`, `fieldRef`; `envFrom`), the Service links the kubelet injects
(unless `enableServiceLinks: false`), its ConfigMap/Secret/emptyDir volumes, its
httpGet probes (initialDelaySeconds, periodSeconds, timeoutSeconds, failureThreshold)
and its termination (endpoints dropped, preStop hook, SIGTERM,
terminationGracePeriodSeconds, SIGKILL). A reference to an object that does not exist,
or a field this runner cannot honour, fails loudly: it never guesses.

There are no containers here, so three documented rewrites stand in for the pod's own
filesystem, network namespace and cluster DNS; nothing else is changed:
- a volume's files are written under the pod's directory, and each `mountPath` named in
  the command, args or env (`XDB_CONFIG=/etc/xdb/xdb.toml`) becomes
  `<pod dir><mountPath>`;
- every pod has its own loopback address (127.0.0.2, 127.0.0.3, ...: Linux routes all of
  127/8 to lo), which is its `status.podIP`; a wildcard listen address `0.0.0.0:` in a
  mounted file, the env or the args (which inside a pod means the pod's own interfaces)
  becomes the pod's address, so every pod keeps the manifest's ports;
- a Service's DNS name as a URL's host in the command, args or env (`http://xdb-api:8801`,
  also `<name>.<namespace>`, `.svc`, `.svc.cluster.local`) becomes the address of that
  Service's proxy, as the cluster's DNS would resolve it to the Service's ClusterIP.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Manifest = dict[str, Any]
# The PATH of the Debian images the Dockerfiles build on.
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Kubernetes' defaults for fields a manifest leaves out.
DEFAULT_GRACE_SECONDS = 30
POD_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class ChartRunError(Exception):
    """The manifest cannot be run as written (a missing object, an unsupported field)."""


@dataclass
class Image:
    """What a container image provides here: binaries by name, entrypoint, workdir."""

    binaries: dict[str, Path]
    entrypoint: list[str]
    workdir: Path = Path("/")


@dataclass
class Cluster:
    """The objects pods resolve their references against (Secrets, ConfigMaps, ...)."""

    namespace: str
    objects: list[Manifest] = field(default_factory=list)

    def find(self, kind: str, name: str) -> Manifest:
        for obj in self.objects:
            if obj.get("kind") == kind and obj.get("metadata", {}).get("name") == name:
                return obj
        raise ChartRunError(f"{kind} {name!r} does not exist in namespace {self.namespace}")

    def data(self, kind: str, name: str) -> dict[str, str]:
        """A Secret's (decoded) or a ConfigMap's keys."""
        obj = self.find(kind, name)
        values = {k: str(v) for k, v in (obj.get("stringData") or {}).items()}
        for key, value in (obj.get("data") or {}).items():
            decoded = base64.b64decode(value).decode() if kind == "Secret" else str(value)
            values.setdefault(key, decoded)
        return values

    def key(self, kind: str, ref: Manifest) -> str | None:
        """One key of a Secret or ConfigMap; None when the reference is optional."""
        try:
            values = self.data(kind, ref["name"])
        except ChartRunError:
            if ref.get("optional"):
                return None
            raise
        if ref["key"] not in values:
            if ref.get("optional"):
                return None
            raise ChartRunError(f"{kind} {ref['name']!r} has no key {ref['key']!r}")
        return values[ref["key"]]


@dataclass
class ServiceLink:
    """A Service as the kubelet announces it to pods: its name, address and ports."""

    name: str
    host: str
    ports: list[Manifest]

    def env(self) -> dict[str, str]:
        """The `<NAME>_SERVICE_HOST`, `<NAME>_PORT_...` variables of a Docker link."""
        prefix = re.sub(r"[^A-Z0-9]", "_", self.name.upper())
        env = {f"{prefix}_SERVICE_HOST": self.host}
        for i, port in enumerate(self.ports):
            number, proto = port["port"], port.get("protocol", "TCP")
            if i == 0:
                env[f"{prefix}_SERVICE_PORT"] = str(number)
                env[f"{prefix}_PORT"] = f"{proto.lower()}://{self.host}:{number}"
            if port.get("name"):
                env[f"{prefix}_SERVICE_PORT_{port['name'].upper().replace('-', '_')}"] = str(number)
            link = f"{prefix}_PORT_{number}_{proto}"
            env[link] = f"{proto.lower()}://{self.host}:{number}"
            env[f"{link}_PROTO"] = proto.lower()
            env[f"{link}_PORT"] = str(number)
            env[f"{link}_ADDR"] = self.host
        return env


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion: defined names are replaced, `$$` is a `$`."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", one, value)


def pod_name(owner: str, template: Manifest) -> str:
    """`<owner>-<template hash>-<5 random>`, the shape a ReplicaSet gives its pods."""
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]
    suffix = "".join(secrets.choice(POD_NAME_ALPHABET) for _ in range(5))
    return f"{owner}-{digest}-{suffix}"


@dataclass
class ProbeState:
    """One probe's results: passed at least once, and the current failure streak."""

    kind: str
    passed: bool = False
    ok: bool = False
    streak: int = 0
    last_error: str = ""


class Container:
    """One running container: its process, log and probe states."""

    def __init__(self, pod: Pod, spec: Manifest) -> None:
        self.pod = pod
        self.spec = spec
        self.name: str = spec["name"]
        self.log_path = pod.directory / f"{self.name}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.probes: dict[str, ProbeState] = {}

    def argv(self) -> list[str]:
        image = self.pod.image_of(self.spec)
        command = [
            self.pod.rewrite(expand(a, self.pod.env[self.name]))
            for a in self.spec.get("command") or image.entrypoint
        ]
        args = [
            self.pod.rewrite(expand(a, self.pod.env[self.name]))
            for a in self.spec.get("args") or []
        ]
        if not command:
            raise ChartRunError(f"{self.pod.name}/{self.name}: no command and no entrypoint")
        return [str(self.pod.program(image, command[0])), *command[1:], *args]

    def start(self) -> None:
        image = self.pod.image_of(self.spec)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                self.argv(),
                env=self.pod.env[self.name],
                cwd=image.workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    def log_tail(self, lines: int = 25, matching: str = "") -> str:
        """The log's last lines (of those matching the pattern, if one is given)."""
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        kept = [line for line in text.splitlines() if re.search(matching, line)]
        return "\n".join(f"    | {line}" for line in kept[-lines:])

    def http_get(self, action: Manifest, timeout: float) -> tuple[bool, str]:
        port = self.pod.port_number(self.spec, action["port"])
        scheme = action.get("scheme", "HTTP").lower()
        host = action.get("host") or self.pod.ip
        url = f"{scheme}://{host}:{port}{action.get('path', '/')}"
        request = urllib.request.Request(url, headers={"User-Agent": "kube-probe/1.33"})
        for header in action.get("httpHeaders") or []:
            request.add_header(header["name"], header["value"])
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return 200 <= answer.status < 400, f"{url} -> {answer.status}"
        except urllib.error.HTTPError as error:
            return 200 <= error.code < 400, f"{url} -> {error.code}"
        except OSError as error:
            return False, f"{url} -> {error}"

    def probe_once(self, probe: Manifest) -> tuple[bool, str]:
        timeout = float(probe.get("timeoutSeconds", 1))
        if "httpGet" in probe:
            return self.http_get(probe["httpGet"], timeout)
        if "tcpSocket" in probe:
            port = self.pod.port_number(self.spec, probe["tcpSocket"]["port"])
            try:
                with socket.create_connection((self.pod.ip, port), timeout=timeout):
                    return True, f"tcp {self.pod.ip}:{port} open"
            except OSError as error:
                return False, f"tcp {self.pod.ip}:{port}: {error}"
        raise ChartRunError(f"{self.pod.name}/{self.name}: unsupported probe {sorted(probe)}")

    def probe_loop(self, kind: str, probe: Manifest, started: float) -> None:
        """Probes at initialDelaySeconds and then every periodSeconds, until stopped."""
        state = self.probes[kind]
        period = float(probe.get("periodSeconds", 10))
        due = started + float(probe.get("initialDelaySeconds", 0))
        threshold = int(probe.get("failureThreshold", 3))
        while not self.pod.stopped.wait(max(0.0, due - time.monotonic())):
            ok, detail = self.probe_once(probe)
            state.ok, state.last_error = ok, "" if ok else detail
            state.passed |= ok
            state.streak = 0 if ok else state.streak + 1
            if state.streak >= threshold and not self.pod.terminating:
                what = "never passed" if not state.passed else "failed"
                self.pod.fail(
                    f"{self.pod.name}/{self.name}: {kind} probe {what} "
                    f"{threshold} times in a row (the kubelet would "
                    f"{'restart it' if kind == 'liveness' else 'keep it unready'}):"
                    f" {detail}"
                )
            due += period


class Pod:
    """A pod from a pod template: a directory, an address, its containers."""

    def __init__(
        self,
        *,
        name: str,
        ip: str,
        template: Manifest,
        cluster: Cluster,
        images: Callable[[str], Image],
        links: list[ServiceLink],
        root: Path,
        on_failure: Callable[[str], None],
    ) -> None:
        self.name, self.ip, self.cluster, self.images = name, ip, cluster, images
        self.labels: dict[str, str] = template.get("metadata", {}).get("labels") or {}
        self.spec: Manifest = template["spec"]
        self.directory = root / name
        self.directory.mkdir(parents=True)
        self.on_failure = on_failure
        self.stopped = threading.Event()
        self.terminating = False
        self.threads: list[threading.Thread] = []
        self.mounts: dict[str, Path] = {}
        self.links = [] if self.spec.get("enableServiceLinks") is False else links
        # Cluster DNS answers for every Service, Service links or not.
        self.services = list(links)
        self.containers = [Container(self, c) for c in self.spec["containers"]]
        self.env: dict[str, dict[str, str]] = {}
        # As in Kubernetes, before the rewrites: what the pod would advertise there.
        self.manifest_env: dict[str, dict[str, str]] = {}
        self.manifest_files: dict[Path, str] = {}
        for unsupported in ("initContainers", "hostNetwork", "shareProcessNamespace"):
            if self.spec.get(unsupported):
                raise ChartRunError(f"{name}: {unsupported} is not supported by this runner")

    def fail(self, message: str) -> None:
        self.on_failure(message)

    def image_of(self, container: Manifest) -> Image:
        return self.images(container["image"])

    def program(self, image: Image, command: str) -> Path:
        """The image's binary of that name, else the base system's (Debian, like here)."""
        if command in image.binaries:
            return image.binaries[command]
        if "/" in command:
            return Path(command)
        found = next(
            (Path(d) / command for d in IMAGE_PATH.split(":") if (Path(d) / command).is_file()),
            None,
        )
        if found is None:
            raise ChartRunError(
                f"{self.name}: {command!r} is neither built into the image "
                f"({sorted(image.binaries)}) nor a base-system program"
            )
        return found

    def port_number(self, container: Manifest, port: int | str) -> int:
        if isinstance(port, int):
            return port
        for declared in container.get("ports") or []:
            if declared.get("name") == port:
                return int(declared["containerPort"])
        raise ChartRunError(f"{self.name}/{container['name']}: no port named {port!r}")

    def rewrite(self, text: str) -> str:
        """The documented rewrites: mount paths, the wildcard listen address, Service names."""
        if self.mounts:
            # One pass, longest path first: a rewritten path is never rewritten again.
            paths = sorted((p.rstrip("/") for p in self.mounts), key=len, reverse=True)
            targets = {p.rstrip("/"): str(t) for p, t in self.mounts.items()}
            pattern = r"(?<![\w./-])(" + "|".join(map(re.escape, paths)) + r")(?=/|$|[\s\"'])"
            text = re.sub(pattern, lambda m: targets[m.group(1)], text)
        text = re.sub(r"\b0\.0\.0\.0(?=:\d)", self.ip, text)
        return self.resolve_services(text)

    def resolve_services(self, text: str) -> str:
        """Cluster DNS: a URL's host naming a Service becomes its proxy's address."""
        if not self.services:
            return text
        hosts = {link.name: link.host for link in self.services}
        names = "|".join(map(re.escape, sorted(hosts, key=len, reverse=True)))
        namespace = re.escape(self.cluster.namespace)
        pattern = rf"(?<=://)({names})(?:\.{namespace}(?:\.svc(?:\.cluster\.local)?)?)?(?=[:/]|$)"
        return re.sub(pattern, lambda m: hosts[m.group(1)], text)

    def field_ref(self, path: str) -> str:
        values = {
            "status.podIP": self.ip,
            "status.podIPs": self.ip,
            "status.hostIP": "127.0.0.1",
            "metadata.name": self.name,
            "metadata.namespace": self.cluster.namespace,
            "spec.nodeName": socket.gethostname(),
            "spec.serviceAccountName": str(self.spec.get("serviceAccountName", "default")),
        }
        label = re.fullmatch(r"metadata\.labels\['(.+)'\]", path)
        if label:
            return self.labels.get(label.group(1), "")
        if path not in values:
            raise ChartRunError(f"{self.name}: unsupported fieldRef {path!r}")
        return values[path]

    def write_volumes(self) -> None:
        volumes = {v["name"]: v for v in self.spec.get("volumes") or []}
        for container in self.spec["containers"]:
            for mount in container.get("volumeMounts") or []:
                if mount.get("subPath") or mount.get("subPathExpr"):
                    raise ChartRunError(f"{self.name}: subPath mounts are not supported")
                volume = volumes.get(mount["name"])
                if volume is None:
                    raise ChartRunError(f"{self.name}: mount of undeclared volume {mount['name']}")
                target = self.directory / "fs" / mount["mountPath"].lstrip("/")
                target.mkdir(parents=True, exist_ok=True)
                self.mounts[mount["mountPath"]] = target
                if "configMap" in volume or "secret" in volume:
                    kind = "ConfigMap" if "configMap" in volume else "Secret"
                    source = volume.get("configMap") or volume["secret"]
                    name = source.get("name") or source.get("secretName")
                    data = self.cluster.data(kind, name)
                    items = source.get("items") or [{"key": k, "path": k} for k in data]
                    for item in items:
                        if item["key"] not in data:
                            raise ChartRunError(f"{kind} {name!r} has no key {item['key']!r}")
                        path = target / item["path"]
                        path.parent.mkdir(parents=True, exist_ok=True)
                        self.manifest_files[path] = data[item["key"]]
                        path.write_text(re.sub(r"\b0\.0\.0\.0(?=:\d)", self.ip, data[item["key"]]))
                elif "emptyDir" not in volume:
                    raise ChartRunError(f"{self.name}: unsupported volume {sorted(volume)}")

    def resolve_env(self, container: Manifest, rewrite: bool = True) -> dict[str, str]:
        """The container's environment as the kubelet would build it (rewritten)."""
        env = {"PATH": IMAGE_PATH, "HOSTNAME": self.name, "HOME": "/"}
        for link in self.links:
            env.update(link.env())
        for source in container.get("envFrom") or []:
            prefix = source.get("prefix", "")
            ref = source.get("secretRef") or source.get("configMapRef")
            kind = "Secret" if "secretRef" in source else "ConfigMap"
            env.update({prefix + k: v for k, v in self.cluster.data(kind, ref["name"]).items()})
        for item in container.get("env") or []:
            if "value" in item:
                value: str | None = expand(str(item["value"]), env)
            elif "valueFrom" in item:
                ref = item["valueFrom"]
                if "secretKeyRef" in ref:
                    value = self.cluster.key("Secret", ref["secretKeyRef"])
                elif "configMapKeyRef" in ref:
                    value = self.cluster.key("ConfigMap", ref["configMapKeyRef"])
                elif "fieldRef" in ref:
                    value = self.field_ref(ref["fieldRef"]["fieldPath"])
                else:
                    raise ChartRunError(f"{self.name}: unsupported valueFrom {sorted(ref)}")
            else:
                value = ""
            if value is not None:
                env[item["name"]] = self.rewrite(value) if rewrite else value
        return env

    def start(self) -> None:
        """Writes the volumes, starts every container and its probes."""
        self.write_volumes()
        for container in self.containers:
            self.env[container.name] = self.resolve_env(container.spec)
            self.manifest_env[container.name] = self.resolve_env(container.spec, rewrite=False)
        for container in self.containers:
            container.start()
            started = time.monotonic()
            for kind in ("liveness", "readiness", "startup"):
                probe = container.spec.get(f"{kind}Probe")
                if probe is None:
                    continue
                if kind == "startup":
                    raise ChartRunError(f"{self.name}: startupProbe is not supported")
                container.probes[kind] = ProbeState(kind)
                thread = threading.Thread(
                    target=container.probe_loop, daemon=True, args=(kind, probe, started)
                )
                thread.start()
                self.threads.append(thread)

    def exited(self) -> Iterator[tuple[Container, int]]:
        for container in self.containers:
            if container.process is not None and container.process.poll() is not None:
                yield container, container.process.returncode

    def ready(self) -> bool:
        """Every container running and its readiness probe passing now."""
        return not self.terminating and all(
            c.process is not None
            and c.process.poll() is None
            and c.probes.get("readiness", ProbeState("readiness", ok=True)).ok
            for c in self.containers
        )

    def probes_passed(self) -> bool:
        return all(p.passed for c in self.containers for p in c.probes.values())

    def terminate(self) -> list[str]:
        """Deletes the pod as Kubernetes does; returns what went wrong (nothing if clean).

        Endpoints drop it first (the Service proxy stops sending to it), then each
        container's preStop hook runs, then SIGTERM; SIGKILL when the grace period is
        over (at least 2 s after a preStop hook that outlasted it, as the kubelet does).
        """
        self.terminating = True
        grace = float(self.spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))
        deadline = time.monotonic() + grace
        problems: list[str] = []
        for container in self.containers:
            hook = (container.spec.get("lifecycle") or {}).get("preStop")
            if hook and container.process and container.process.poll() is None:
                problems += self.run_hook(container, hook, deadline)
        deadline = max(deadline, time.monotonic() + 2) if problems else deadline
        for container in self.containers:
            if container.process and container.process.poll() is None:
                container.process.send_signal(signal.SIGTERM)
        for container in self.containers:
            if container.process is None:
                continue
            try:
                code = container.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                container.process.kill()
                container.process.wait()
                problems.append(
                    f"{self.name}/{container.name} was still running "
                    f"{grace:g} s (terminationGracePeriodSeconds) after "
                    f"termination began: SIGKILLed\n{container.log_tail()}"
                )
                continue
            if code != 0:
                problems.append(
                    f"{self.name}/{container.name} exited {code} on SIGTERM\n{container.log_tail()}"
                )
        self.stopped.set()
        return problems

    def run_hook(self, container: Container, hook: Manifest, deadline: float) -> list[str]:
        if "exec" in hook:
            image = self.image_of(container.spec)
            command = [self.rewrite(a) for a in hook["exec"]["command"]]
            argv = [str(self.program(image, command[0])), *command[1:]]
            try:
                subprocess.run(
                    argv,
                    env=self.env[container.name],
                    cwd=image.workdir,
                    timeout=max(0.1, deadline - time.monotonic()),
                    check=True,
                    capture_output=True,
                )
            except subprocess.TimeoutExpired:
                return [f"{self.name}/{container.name}: preStop outlasted the grace period"]
            except subprocess.CalledProcessError as error:
                return [f"{self.name}/{container.name}: preStop exited {error.returncode}"]
            return []
        if "httpGet" in hook:
            ok, detail = container.http_get(hook["httpGet"], max(0.1, deadline - time.monotonic()))
            return [] if ok else [f"{self.name}/{container.name}: preStop {detail}"]
        if "sleep" in hook:
            self.stopped.wait(min(float(hook["sleep"]["seconds"]), deadline - time.monotonic()))
            return []
        raise ChartRunError(f"{self.name}: unsupported preStop {sorted(hook)}")

    def kill(self) -> None:
        """Stops what is left at once (clean-up after a failure)."""
        self.stopped.set()
        for container in self.containers:
            if container.process and container.process.poll() is None:
                os.killpg(container.process.pid, signal.SIGKILL)
                container.process.wait()
