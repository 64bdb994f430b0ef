from __future__ import annotations

import hashlib
import hmac

import pytest

from xdb.signature import SignatureError, sign, verify

SECRET = b"0123456789abcdef-secret"


def test_the_header_is_hmac_sha256_of_timestamp_dot_body() -> None:
    header = sign(SECRET, 1_700_000_000, b'{"a":1}')
    expected = hmac.new(SECRET, b'1700000000.{"a":1}', hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"
    verify(SECRET, header, b'{"a":1}', 1_700_000_010)


def test_another_secret_or_body_does_not_verify() -> None:
    header = sign(SECRET, 1_700_000_000, b'{"a":1}')
    with pytest.raises(SignatureError, match="does not match"):
        verify(b"another-secret-0123", header, b'{"a":1}', 1_700_000_000)
    with pytest.raises(SignatureError, match="does not match"):
        verify(SECRET, header, b'{"a":2}', 1_700_000_000)


def test_old_missing_and_malformed_signatures_are_refused() -> None:
    header = sign(SECRET, 1_700_000_000, b"x")
    with pytest.raises(SignatureError, match="301 s away"):
        verify(SECRET, header, b"x", 1_700_000_301)
    with pytest.raises(SignatureError, match="299 s away"):
        verify(SECRET, header, b"x", 1_700_000_299, 200)
    with pytest.raises(SignatureError, match="no X-XDB-Signature"):
        verify(SECRET, None, b"x", 1)
    for bad in ["", "t=1", "v1=00", "t=x,v1=00", "t=1,v1=zz", "t=-1,v1=00", "t=+1,v1=00"]:
        with pytest.raises(SignatureError, match="is not"):
            verify(SECRET, bad, b"x", 1)


def test_parts_are_read_by_name_and_unknown_ones_ignored() -> None:
    header = sign(SECRET, 50, b"x")
    t, v1 = header.split(",")
    verify(SECRET, f"v2=abcd, {v1}, {t}", b"x", 50)
