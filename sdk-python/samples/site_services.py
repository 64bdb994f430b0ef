"""Stand-ins for the site-creation sample's external services, failing at random.

A file system service, a database service and the WordPress bootstrap API. Failures
come from a seeded generator, so a run is reproducible by seed; half of them happen
after the effect was applied (a lost reply), which is why calls carry idempotency keys.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

log = logging.getLogger("samples.site_services")


class Operation(StrEnum):
    """A side effect on an external service."""

    CREATE_FILE_SYSTEM = "CREATE_FILE_SYSTEM"
    CREATE_DATABASE = "CREATE_DATABASE"
    BOOTSTRAP = "BOOTSTRAP"
    DELETE_FILE_SYSTEM = "DELETE_FILE_SYSTEM"
    DROP_DATABASE = "DROP_DATABASE"


class ServiceError(Exception):
    """A failed call; ``applied`` tells whether the effect happened anyway."""

    def __init__(self, operation: Operation, site_id: str, applied: bool, reason: str) -> None:
        super().__init__(f"{operation} failed for site {site_id}: {reason}")
        self.applied = applied


@dataclass
class SiteResources:
    """What exists for one site, and how often each operation took effect."""

    file_system: bool = False
    database: bool = False
    bootstrapped: bool = False
    effects: Counter[Operation] = field(default_factory=Counter)


class SplitMix64:
    """A tiny generator whose sequence is fixed by its seed (as the Rust sample's)."""

    def __init__(self, seed: int) -> None:
        self.state = seed & 0xFFFFFFFFFFFFFFFF

    def next_u64(self) -> int:
        mask = 0xFFFFFFFFFFFFFFFF
        self.state = (self.state + 0x9E3779B97F4A7C15) & mask
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    def next_float(self) -> float:
        return (self.next_u64() >> 11) / float(1 << 53)


class ExternalServices:
    """The simulated services; each call fails with probability ``failure_rate``."""

    def __init__(self, failure_rate: float = 0.0, seed: int = 0) -> None:
        self._lock = threading.Lock()
        self._rate = min(max(failure_rate, 0.0), 1.0)
        self._rng = SplitMix64(seed)
        self._sites: dict[str, SiteResources] = {}
        self._applied: set[tuple[Operation, str]] = set()
        self._unavailable: set[str] = set()
        self.injected_failures = 0

    def set_unavailable(self, site_id: str, unavailable: bool = True) -> None:
        """Makes every creation call for ``site_id`` fail (without effect) until undone."""
        with self._lock:
            (self._unavailable.add if unavailable else self._unavailable.discard)(site_id)

    def call(self, operation: Operation, site_id: str, idempotency_key: str) -> bool:
        """Performs ``operation`` once per ``(operation, idempotency_key)``.

        Returns whether the effect happened now; raises :class:`ServiceError`.
        """
        with self._lock:
            if (operation, idempotency_key) in self._applied:
                return False
            site = self._sites.setdefault(site_id, SiteResources())
            creating = operation.name.startswith("CREATE") or operation == Operation.BOOTSTRAP
            if creating and site_id in self._unavailable:
                raise ServiceError(operation, site_id, False, "service unavailable")
            if operation == Operation.BOOTSTRAP and not site.database:
                raise ServiceError(operation, site_id, False, "no database to bootstrap")
            fault = self._rate > 0 and self._rng.next_float() < self._rate
            lose_reply = fault and self._rng.next_u64() & 1 == 1
            self.injected_failures += fault
            if fault and not lose_reply:
                raise ServiceError(operation, site_id, False, "service unavailable (injected)")
            self._apply(site, operation)
            self._applied.add((operation, idempotency_key))
            if lose_reply:
                raise ServiceError(operation, site_id, True, "reply lost (injected)")
            log.info("%s done for site %s", operation, site_id)
            return True

    def site(self, site_id: str) -> SiteResources:
        """A copy of what exists for ``site_id``."""
        with self._lock:
            s = self._sites.get(site_id, SiteResources())
            return SiteResources(s.file_system, s.database, s.bootstrapped, Counter(s.effects))

    @staticmethod
    def _apply(site: SiteResources, operation: Operation) -> None:
        if operation == Operation.CREATE_FILE_SYSTEM:
            site.file_system = True
        elif operation == Operation.CREATE_DATABASE:
            site.database = True
        elif operation == Operation.BOOTSTRAP:
            site.bootstrapped = True
        elif operation == Operation.DELETE_FILE_SYSTEM:
            site.file_system = False
        else:
            site.database = site.bootstrapped = False
        site.effects[operation] += 1
