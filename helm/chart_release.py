"""One Helm release of the chart, installed onto this machine as an operator would.

Renders the chart as `helm install` does (check_chart.py's rendering), then follows
Helm's install order: pre-install hooks by weight (a hook Job runs to completion before
anything else exists), the release's objects, then post-install hooks. Deployments get
`spec.replicas` pods (or, when a HorizontalPodAutoscaler targets them, its
minReplicas); every ClusterIP Service gets a proxy (local_services.py). A Job's pods run
one after another as the Job controller runs them: a failed pod is replaced after a
back-off, up to `backoffLimit`, within `activeDeadlineSeconds`, and a `podFailurePolicy`
rule on the container's exit code ends the Job at once (`FailJob`) or does not count the
failure (`Ignore`); rules on pod conditions (disruptions) never match here. Images map to
the binaries cargo builds: values `image.names` -> the Dockerfile that builds the image
(check_chart.DOCKERFILES) -> the binaries it installs -> `$CARGO_TARGET_DIR/debug/<bin>`.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import helm_python as helm
import yaml
from check_chart import CHART, DOCKERFILES, image_binaries
from local_pods import POD_NAME_ALPHABET, ChartRunError, Cluster, Image, Manifest, Pod, pod_name
from local_services import ServiceProxy

# Job pods back off 10 s, 20 s, 40 s ... between failed attempts (the Job controller's).
JOB_BACKOFF_SECONDS = 10.0


def render(values: dict[str, Any], release: str, namespace: str) -> list[Manifest]:
    """The manifests `helm install` would apply (NOTES.txt left out)."""
    chart = helm.Chart.load(str(CHART))
    rendered = chart.render(values, name=release, namespace=namespace, is_install=True)
    return [
        doc
        for template, text in sorted(rendered.items())
        if not template.endswith("NOTES.txt")
        for doc in yaml.safe_load_all(text)
        if doc
    ]


def hook_phases(manifest: Manifest) -> set[str]:
    hooks = (manifest["metadata"].get("annotations") or {}).get("helm.sh/hook", "")
    return {h.strip() for h in hooks.split(",") if h.strip()}


def hook_weight(manifest: Manifest) -> int:
    annotations = manifest["metadata"].get("annotations") or {}
    return int(annotations.get("helm.sh/hook-weight", "0"))


def built_images(values: dict[str, Any], target: Path) -> dict[str, Image]:
    """Image name (values image.names) -> the binaries of its Dockerfile, built here."""
    names = {"api": "api-service", "async": "async-service"}
    names.update((values.get("image") or {}).get("names") or {})
    images = {}
    for name in names.values():
        dockerfile = DOCKERFILES.get(name)
        if dockerfile is None:
            raise ChartRunError(f"image {name!r}: no Dockerfile builds it ({sorted(DOCKERFILES)})")
        entry = re.search(r"^ENTRYPOINT \[(.*)\]", dockerfile.read_text(), re.M)
        entrypoint = yaml.safe_load(f"[{entry.group(1)}]") if entry else []
        binaries = {b: target / b for b in sorted(image_binaries(dockerfile))}
        for binary, path in binaries.items():
            if not path.is_file():
                raise ChartRunError(
                    f"{path} is missing: build {binary} first (scripts/test-chart.sh does)"
                )
        images[name] = Image(binaries=binaries, entrypoint=entrypoint)
    return images


class Release:
    """The release's objects, pods and Service proxies."""

    def __init__(
        self,
        *,
        name: str,
        namespace: str,
        manifests: list[Manifest],
        operator_objects: list[Manifest],
        images: Callable[[str], Image],
        root: Path,
        first_pod_address: int = 2,
    ) -> None:
        self.name, self.namespace, self.root = name, namespace, root
        self.manifests = manifests
        self.cluster = Cluster(namespace, list(operator_objects))
        self.images = images
        self.pods: list[Pod] = []
        self.proxies: dict[str, ServiceProxy] = {}
        self.next_address = first_pod_address
        self.failures: list[str] = []
        # Job name -> its last pod, once the Job ended (its log stays in the pod's directory).
        self.finished_jobs: dict[str, Pod] = {}
        self.lock = threading.Lock()

    def fail(self, message: str) -> None:
        with self.lock:
            self.failures.append(message)

    def check(self) -> None:
        """Raises at the first failure a probe reported, or a container that exited."""
        for pod in self.pods:
            if pod.terminating:
                continue
            for container, code in pod.exited():
                self.fail(
                    f"{pod.name}/{container.name} exited {code} (restartPolicy "
                    f"Always: the kubelet would restart it)\n{container.log_tail()}"
                )
        if self.failures:
            raise ChartRunError("\n".join(self.failures))

    def objects(self, kind: str) -> list[Manifest]:
        return [m for m in self.manifests if m["kind"] == kind and not hook_phases(m)]

    def new_pod(self, name: str, template: Manifest) -> Pod:
        ip = f"127.0.0.{self.next_address}"
        if self.next_address > 254:
            raise ChartRunError("out of loopback addresses for pods")
        self.next_address += 1
        links = [p.link() for p in self.proxies.values()]
        pod = Pod(
            name=name,
            ip=ip,
            template=template,
            cluster=self.cluster,
            images=self.images,
            links=links,
            root=self.root,
            on_failure=self.fail,
        )
        self.pods.append(pod)
        return pod

    def run_hooks(self, phase: str, log: Callable[[str], None]) -> None:
        """Applies `phase`'s hooks in weight order; a hook Job must complete."""
        hooks = sorted((m for m in self.manifests if phase in hook_phases(m)), key=hook_weight)
        for hook in hooks:
            self.cluster.objects.append(hook)
            if hook["kind"] == "Job":
                log(f"{phase} hook Job {hook['metadata']['name']}")
                self.run_job(hook, log)

    def run_job(self, job: Manifest, log: Callable[[str], None]) -> None:
        spec = job["spec"]
        deadline = time.monotonic() + float(spec.get("activeDeadlineSeconds", 3600))
        attempts = int(spec.get("backoffLimit", 6)) + 1
        attempt = failed = 0
        while attempt < attempts:
            suffix = "".join(secrets.choice(POD_NAME_ALPHABET) for _ in range(5))
            pod = self.new_pod(f"{job['metadata']['name']}-{suffix}", spec["template"])
            pod.start()
            container = pod.containers[0]
            assert container.process is not None
            remaining = max(0.0, deadline - time.monotonic())
            try:
                code = container.process.wait(timeout=remaining)
            except Exception:
                pod.kill()
                raise ChartRunError(
                    f"Job {job['metadata']['name']} exceeded its "
                    f"activeDeadlineSeconds\n{container.log_tail()}"
                ) from None
            pod.stopped.set()
            self.pods.remove(pod)
            self.finished_jobs[job["metadata"]["name"]] = pod
            if code == 0:
                log(f"  {pod.name} completed\n{container.log_tail(5)}")
                return
            log(
                f"  {pod.name} failed ({code}), attempt {attempt + 1} of {attempts}\n"
                f"{container.log_tail()}"
            )
            action = pod_failure_action(spec, container.name, code)
            if action == "FailJob":
                raise ChartRunError(
                    f"Job {job['metadata']['name']} failed: exit code {code} of "
                    f"{container.name} matches a FailJob rule of its podFailurePolicy"
                )
            if action != "Ignore":
                attempt += 1
            if attempt < attempts:
                pod.stopped.wait(
                    min(JOB_BACKOFF_SECONDS * 2**failed, max(0.0, deadline - time.monotonic()))
                )
            failed += 1
        raise ChartRunError(
            f"Job {job['metadata']['name']} failed {attempts} times "
            f"(backoffLimit {spec.get('backoffLimit', 6)})"
        )

    def job_log(self, name: str) -> str:
        """The log of the last pod of a Job that ended."""
        pod = self.finished_jobs.get(name)
        if pod is None:
            raise ChartRunError(f"Job {name} has not run")
        return pod.containers[0].log_path.read_text(errors="replace")

    def install(self, log: Callable[[str], None]) -> None:
        """Pre-install hooks, the release's objects and pods, post-install hooks."""
        self.run_hooks("pre-install", log)
        for manifest in self.manifests:
            if not hook_phases(manifest):
                self.cluster.objects.append(manifest)
        for number, service in enumerate(self.objects("Service"), start=1):
            if service["spec"].get("clusterIP") == "None":
                continue
            proxy = ServiceProxy(service, f"127.0.1.{number}", lambda: self.pods)
            proxy.start()
            self.proxies[proxy.name] = proxy
        scalers = {
            h["spec"]["scaleTargetRef"]["name"]: h for h in self.objects("HorizontalPodAutoscaler")
        }
        for deployment in self.objects("Deployment"):
            name = deployment["metadata"]["name"]
            replicas = deployment["spec"].get("replicas")
            if replicas is None:
                replicas = scalers[name]["spec"].get("minReplicas", 1) if name in scalers else 1
            template = deployment["spec"]["template"]
            for _ in range(int(replicas)):
                pod = self.new_pod(pod_name(name, template), template)
                pod.start()
                log(f"pod {pod.name} at {pod.ip}")
        self.wait_ready()
        self.run_hooks("post-install", log)

    def wait_ready(self) -> None:
        """Every pod's probes passed (each probe fails the run on its own threshold)."""
        windows = [
            float(p.get("initialDelaySeconds", 0))
            + float(p.get("periodSeconds", 10)) * int(p.get("failureThreshold", 3))
            + float(p.get("timeoutSeconds", 1))
            for pod in self.pods
            for c in pod.containers
            for p in (c.spec.get("readinessProbe"), c.spec.get("livenessProbe"))
            if p
        ]
        deadline = time.monotonic() + max(windows, default=30.0) + 1
        while not all(pod.ready() and pod.probes_passed() for pod in self.pods):
            self.check()
            if time.monotonic() > deadline:
                waiting = [pod for pod in self.pods if not (pod.ready() and pod.probes_passed())]
                raise ChartRunError(
                    "pods not ready: "
                    + ", ".join(f"{pod.name} ({unready(pod)})" for pod in waiting)
                )
            time.sleep(0.1)

    def pods_of(self, component: str) -> list[Pod]:
        """The running pods of one component (label app.kubernetes.io/component)."""
        return [
            p
            for p in self.pods
            if not p.terminating and p.labels.get("app.kubernetes.io/component") == component
        ]

    def uninstall(self) -> list[str]:
        """Deletes every pod as Kubernetes does (in parallel); what went wrong."""
        problems: list[str] = []
        threads = [
            threading.Thread(target=lambda p=pod: problems.extend(p.terminate()))
            for pod in self.pods
            if not pod.terminating
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.close()
        return problems

    def close(self) -> None:
        for pod in self.pods:
            pod.kill()
        for proxy in self.proxies.values():
            proxy.close()


def pod_failure_action(spec: Manifest, container: str, code: int) -> str:
    """The action of the first podFailurePolicy rule a container's exit code matches
    (FailJob, Ignore, Count), as the Job controller applies it; "Count" when none does."""
    for rule in (spec.get("podFailurePolicy") or {}).get("rules") or []:
        codes = rule.get("onExitCodes")
        if codes is None:
            continue  # onPodConditions: a disruption, which never happens here
        if codes.get("containerName") not in (None, container):
            continue
        if codes["operator"] not in ("In", "NotIn"):
            raise ChartRunError(f"podFailurePolicy operator {codes['operator']!r} is not known")
        if (code in codes["values"]) == (codes["operator"] == "In"):
            return str(rule["action"])
    return "Count"


def unready(pod: Pod) -> str:
    """Why a pod is not ready: its probes' last errors."""
    errors = [p.last_error for c in pod.containers for p in c.probes.values() if p.last_error]
    return "; ".join(errors) or "no probe has passed yet"
