"""Worker-call signatures: XDB signs each call it makes to a worker with a shared secret.

The ``X-XDB-Signature`` header carries ``t=<unix seconds>,v1=<hex HMAC-SHA256>`` of
``"<t>.<body>"``; a signature further than the allowed skew from the worker's clock is
refused, which bounds replays. Pure functions: the clock is passed in.
"""

from __future__ import annotations

import hashlib
import hmac
import re

SIGNATURE_HEADER = "X-XDB-Signature"
DEFAULT_MAX_SKEW_SECONDS = 300

_DIGITS = re.compile(r"^[0-9]+$")
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})*$")


class SignatureError(Exception):
    """Why a call's signature was refused."""


def _mac(secret: bytes, timestamp: int, body: bytes) -> bytes:
    return hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).digest()


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """The header value signing ``body`` at ``timestamp`` (unix seconds)."""
    return f"t={timestamp},v1={_mac(secret, timestamp, body).hex()}"


def verify(
    secret: bytes,
    header: str | None,
    body: bytes,
    now: int,
    max_skew_seconds: int = DEFAULT_MAX_SKEW_SECONDS,
) -> None:
    """Raises :class:`SignatureError` unless ``header`` signs ``body`` with ``secret``."""
    if header is None:
        raise SignatureError(f"the request carries no {SIGNATURE_HEADER} header")
    timestamp: int | None = None
    tag: bytes | None = None
    for part in header.split(","):
        key, sep, value = part.strip().partition("=")
        if not sep:
            continue
        if key == "t":
            timestamp = int(value) if _DIGITS.match(value) else None
        elif key == "v1":
            tag = bytes.fromhex(value) if _HEX.match(value) else None
    if timestamp is None or tag is None:
        raise SignatureError(f"the {SIGNATURE_HEADER} header is not `t=<seconds>,v1=<hex>`")
    skew = abs(now - timestamp)
    if skew > max_skew_seconds:
        raise SignatureError(f"the signature's timestamp is {skew} s away from this worker's clock")
    if not hmac.compare_digest(_mac(secret, timestamp, body), tag):
        raise SignatureError(
            "the signature does not match: the secret differs or the body was changed"
        )
