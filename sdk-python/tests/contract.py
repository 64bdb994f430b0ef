"""Checks HTTP exchanges against an OpenAPI 3.1 document's JSON schemas."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

ROOT = "urn:xdb-openapi"


def _pointer(*parts: str) -> str:
    return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


class Contract:
    """The operations of one OpenAPI document, to validate requests and responses with."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        resource = Resource.from_contents(document, default_specification=DRAFT202012)
        self.registry: Registry[Any] = Registry().with_resource(ROOT, resource)

    def _validate(self, pointer: str, instance: Any, what: str) -> None:
        validator = Draft202012Validator({"$ref": f"{ROOT}#/{pointer}"}, registry=self.registry)
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.path))
        if errors:
            details = "; ".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
            raise AssertionError(f"{what} breaks the contract: {details}\n{json.dumps(instance)}")

    def operation(self, path: str) -> dict[str, Any]:
        op = self.document["paths"].get(path, {}).get("post")
        assert op is not None, f"the document has no POST {path}"
        return dict(op)

    def check_request(self, path: str, body: Any) -> None:
        """Validates a request body against the operation's request schema."""
        self.operation(path)
        pointer = _pointer(
            "paths", path, "post", "requestBody", "content", "application/json", "schema"
        )
        self._validate(pointer, body, f"request to {path}")

    def check_response(self, path: str, status: int, body: bytes) -> None:
        """Validates a response against the schema documented for its status."""
        responses = self.operation(path)["responses"]
        key = str(status) if str(status) in responses else "default"
        assert key in responses, f"{path} answered {status}, which the document does not list"
        content = responses[key].get("content", {}).get("application/json")
        if content is None:
            return
        assert body, f"{path} answered {status} with no body; the document gives one"
        pointer = _pointer(
            "paths", path, "post", "responses", key, "content", "application/json", "schema"
        )
        self._validate(pointer, json.loads(body), f"{status} answer of {path}")
