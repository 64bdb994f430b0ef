"""A stand-in for an email API: sent emails are recorded and logged."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

log = logging.getLogger("samples.email")


@dataclass(frozen=True)
class Email:
    """One sent email; ``idempotency_key`` is the worker call that sent it."""

    to: str
    kind: str
    idempotency_key: str


class Outbox:
    """Every email the samples send, once per worker call and kind.

    XDB calls workers at least once; passing the call's idempotency key makes a retry a
    no-op, as a real email API with idempotency keys would.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sent: list[Email] = []

    def send(self, to: str, kind: str, idempotency_key: str) -> bool:
        """Sends an email unless this call already did; returns whether it was sent now."""
        with self._lock:
            if any(e.idempotency_key == idempotency_key and e.kind == kind for e in self._sent):
                return False
            log.info("sending %s email to %s", kind, to)
            self._sent.append(Email(to, kind, idempotency_key))
            return True

    def sent(self, to: str | None = None) -> list[Email]:
        """Emails sent so far (to ``to``, if given), oldest first."""
        with self._lock:
            return [e for e in self._sent if to is None or e.to == to]

    def kinds(self, to: str) -> list[str]:
        """The kinds of email sent to ``to``, oldest first."""
        return [e.kind for e in self.sent(to)]
