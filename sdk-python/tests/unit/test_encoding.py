from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from pydantic import BaseModel

from xdb import EncodingError
from xdb.encoding import decode, encode, encode_optional, from_json_value, to_json_value
from xdb.protocol import EncodedObject


class Form(BaseModel):
    email: str
    name: str | None = None


@dataclass
class Point:
    x: int
    y: int


def test_data_is_compact_json_text_like_the_rust_sdk() -> None:
    assert encode("x", [1, 2]) == EncodedObject(encoding="json", data="[1,2]")
    assert encode("x", "hi").data == '"hi"'
    assert encode("x", {"a": {"b": None}}).data == '{"a":{"b":null}}'
    assert encode("x", "café ✓").data == '"café ✓"'  # UTF-8, not \\u escapes
    assert encode("x", Form(email="a@b.c")).data == '{"email":"a@b.c","name":null}'
    assert encode("x", Point(1, 2)).data == '{"x":1,"y":2}'
    when = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert encode("x", when).data == '"2024-01-02T03:04:05Z"'


def test_none_is_an_absent_payload_and_absent_reads_as_none() -> None:
    assert encode_optional("x", None) is None
    assert encode_optional("x", 0) == EncodedObject(encoding="json", data="0")
    assert encode_optional("x", "") == EncodedObject(encoding="json", data='""')
    assert decode("x", None) is None
    assert decode("x", None, type(None)) is None
    with pytest.raises(EncodingError, match="cannot decode x as Form"):
        decode("x", None, Form)


def test_decodes_into_the_requested_type() -> None:
    obj = EncodedObject(encoding="JSON", data='{"email":"a@b.c"}')  # case-insensitive
    assert decode("x", obj, Form) == Form(email="a@b.c")
    assert decode("x", obj) == {"email": "a@b.c"}
    assert decode("x", EncodedObject(encoding="json", data="[1,2]"), list[int]) == [1, 2]
    assert decode("x", EncodedObject(encoding="json", data='{"x":1,"y":2}'), Point) == Point(1, 2)
    with pytest.raises(EncodingError, match="as int"):
        decode("x", EncodedObject(encoding="json", data='"nope"'), int)


def test_foreign_encodings_and_bad_json_are_refused() -> None:
    with pytest.raises(EncodingError, match="unsupported encoding 'protobuf' for input"):
        decode("input", EncodedObject(encoding="protobuf", data="??"))
    with pytest.raises(EncodingError, match="not JSON"):
        decode("input", EncodedObject(encoding="json", data="{oops"))


def test_global_attributes_are_plain_json_values() -> None:
    assert to_json_value("f", Form(email="a@b.c")) == {"email": "a@b.c", "name": None}
    assert from_json_value("f", {"email": "a@b.c"}, Form) == Form(email="a@b.c")
    assert from_json_value("f", "raw") == "raw"
    with pytest.raises(EncodingError):
        to_json_value("f", object())
