"""The wire schemas the SDKs' types are generated from: xdb-protocol/openapi.json as a
reader of the service's answers and worker calls sees it.

Reads the document on stdin and writes, on stdout, its component schemas with these
changes, each so that an SDK keeps working against a service it was not built with:

- validation keywords are left out (lengths, patterns, bounds, item counts, integer
  formats): the service judges requests by the limits it is configured with, which may
  differ from the defaults the document states, and refuses a bad one with
  `INVALID_REQUEST` naming the field; an SDK that checked them itself would refuse what
  such a service accepts, with errors of its own;
- `additionalProperties: false` is left out: fields a newer service adds are ignored;
- `HistoryEvent` is its common shape (`eventType` a string, `details` a JSON object)
  instead of one schema per event type, so that event types added later still read; the
  `<Type>Event` schemas go, the `<Type>Details` ones stay;
- `ApiErrorResponse.subType` is a string: a client treats a sub-type it does not know by
  the answer's status, as the document says.

The standard library only, so that it runs wherever the generators do.
"""

import json
import sys
from typing import Any

VALIDATION_KEYWORDS = {
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
}
INTEGER_FORMATS = {"int32", "int64"}


def lenient(schema: Any) -> Any:
    """`schema` without validation keywords, integer formats and closed objects."""
    if isinstance(schema, list):
        return [lenient(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if len(schema.get("oneOf", [])) == 1:
        # A `$ref` with a default is written `{"default": …, "oneOf": [{"$ref": …}]}`:
        # the same schema as the reference itself, which generators name better.
        (only,) = schema["oneOf"]
        schema = {**only, **{k: v for k, v in schema.items() if k != "oneOf"}}
    kept = {}
    for key, value in schema.items():
        if key in VALIDATION_KEYWORDS or key == "example":
            continue
        if key == "format" and value in INTEGER_FORMATS:
            continue
        if key == "additionalProperties" and value is False:
            continue
        kept[key] = lenient(value)
    return kept


def history_event(typed: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """The envelope every `<Type>Event` branch of `typed` shares, with any event type."""
    first = typed["oneOf"][0]["$ref"].rsplit("/", 1)[-1]
    envelope = schemas[first]
    properties = dict(envelope["properties"])
    properties["eventType"] = {
        "type": "string",
        "description": "A `HistoryEventType`, as text: a type added after this SDK still reads.",
    }
    properties["details"] = {
        "type": "object",
        "additionalProperties": True,
        "description": "The event's details: the schema `HistoryEventType` names for it.",
    }
    return {
        "type": "object",
        "description": typed.get("description", ""),
        "required": envelope["required"],
        "properties": properties,
    }


def wire_schemas(document: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI document holding only the wire schemas of `document`."""
    schemas = lenient(document["components"]["schemas"])
    typed = schemas["HistoryEvent"]
    schemas["HistoryEvent"] = history_event(typed, schemas)
    for branch in typed["oneOf"]:
        del schemas[branch["$ref"].rsplit("/", 1)[-1]]
    schemas["ApiErrorResponse"]["properties"]["subType"] = {
        "type": "string",
        "description": "An `ErrorSubType`, as text: one added after this SDK still reads.",
    }
    return {
        "openapi": document["openapi"],
        "info": document["info"],
        "paths": {},
        "components": {"schemas": schemas},
    }


if __name__ == "__main__":
    json.dump(wire_schemas(json.load(sys.stdin)), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
