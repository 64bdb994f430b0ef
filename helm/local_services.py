"""A ClusterIP Service as kube-proxy makes it: an address whose connections go, round
robin, to the ready pods its selector matches (the endpoints controller's view: a pod
that is not ready, or is terminating, gets no new connections).

Each Service listens on an address of its own (127.0.1.1, 127.0.1.2, ...) with the
manifest's ports; `targetPort` is resolved by name or number on the chosen pod. A
headless Service (`clusterIP: None`) has no address and nothing to proxy: clients reach
its pods at their own addresses.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

from local_pods import Manifest, Pod, ServiceLink


class ServiceProxy:
    """Proxies one Service's ports to its ready endpoints."""

    def __init__(self, service: Manifest, ip: str, pods: Callable[[], list[Pod]]) -> None:
        self.name: str = service["metadata"]["name"]
        self.ip = ip
        self.spec: Manifest = service["spec"]
        self.selector: dict[str, str] = self.spec.get("selector") or {}
        self.pods = pods
        self.lock = threading.Lock()
        self.turn = 0
        self.last_backend: Pod | None = None
        self.listeners: list[socket.socket] = []
        self.closed = threading.Event()

    def link(self) -> ServiceLink:
        return ServiceLink(self.name, self.ip, list(self.spec["ports"]))

    def url(self, port_name: str = "http") -> str:
        port = next(p["port"] for p in self.spec["ports"] if p.get("name") == port_name)
        return f"http://{self.ip}:{port}"

    def endpoints(self) -> list[Pod]:
        return [
            p
            for p in self.pods()
            if self.selector
            and all(p.labels.get(k) == v for k, v in self.selector.items())
            and p.ready()
        ]

    def start(self) -> None:
        for port in self.spec["ports"]:
            listener = socket.create_server((self.ip, int(port["port"])))
            self.listeners.append(listener)
            threading.Thread(target=self.accept, args=(listener, port), daemon=True).start()

    def accept(self, listener: socket.socket, port: Manifest) -> None:
        while not self.closed.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self.forward, args=(client, port), daemon=True).start()

    def choose(self) -> Pod | None:
        with self.lock:
            ready = self.endpoints()
            if not ready:
                return None
            self.turn += 1
            self.last_backend = ready[self.turn % len(ready)]
            return self.last_backend

    def forward(self, client: socket.socket, port: Manifest) -> None:
        pod = self.choose()
        if pod is None:
            client.close()  # no endpoints: the connection is refused
            return
        target: int | str = port["targetPort"] if "targetPort" in port else port["port"]
        number = next(
            (
                pod.port_number(c.spec, target)
                for c in pod.containers
                if isinstance(target, int)
                or any(p.get("name") == target for p in c.spec.get("ports") or [])
            ),
            None,
        )
        if number is None:
            client.close()
            return
        try:
            upstream = socket.create_connection((pod.ip, number), timeout=5)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        back = threading.Thread(target=pipe, args=(upstream, client), daemon=True)
        back.start()
        pipe(client, upstream)
        back.join()
        client.close()
        upstream.close()

    def close(self) -> None:
        self.closed.set()
        for listener in self.listeners:
            # Wakes the thread blocked in accept(), which otherwise keeps the port bound.
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()


def pipe(source: socket.socket, sink: socket.socket) -> None:
    """Copies until the source's end of stream, then ends the sink's writing side."""
    try:
        while chunk := source.recv(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass
