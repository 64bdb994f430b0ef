"""The base of the generated wire models (``xdb._wire``).

Field names are snake_case in Python and camelCase on the wire; a name the generator
suffixed with ``_`` because it is a Python keyword (``from_``) is the keyword on the
wire. Answers are read
leniently (unknown fields ignored) so that a newer service keeps working with this SDK.
An optional field left unset (``None``) is left out of what the SDK sends, as the Rust
SDK does: absent means the default the contract states, where ``null`` may not. So is a
list the service itself leaves out when empty (:data:`OMITTED_WHEN_EMPTY`), and a flag it
leaves out when false (:data:`OMITTED_WHEN_FALSE`), so that what the SDK sends without
it stays what it sent before the contract gained it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer
from pydantic.alias_generators import to_camel

# The lists left out of what the SDK sends when they are empty, by model and field name:
# those the service declares ``skip_serializing_if = "Vec::is_empty"`` and that were added
# to a model the SDK already sent (``ProcessDefinition.schedules``).
OMITTED_WHEN_EMPTY: dict[str, frozenset[str]] = {
    "ProcessDefinition": frozenset({"schedules"}),
}
# The flags left out of what the SDK sends when false: those the service declares
# ``skip_serializing_if = "Not::not"`` and that were added to a model the SDK already sent
# (``ProcessExecutionListRequest.explain``).
OMITTED_WHEN_FALSE: dict[str, frozenset[str]] = {
    "ProcessExecutionListRequest": frozenset({"explain"}),
}


def _wire_name(name: str) -> str:
    return to_camel(name.rstrip("_"))


class WireModel(BaseModel):
    """Base of every wire model: camelCase on the wire, unknown fields ignored."""

    model_config = ConfigDict(
        alias_generator=_wire_name,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="ignore",
    )

    @model_serializer(mode="wrap")
    def _leave_out_unset_optionals(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        omitted_when_empty = OMITTED_WHEN_EMPTY.get(type(self).__name__, frozenset())
        omitted_when_false = OMITTED_WHEN_FALSE.get(type(self).__name__, frozenset())
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if (name in omitted_when_empty and value == []) or (
                name in omitted_when_false and value is False
            ):
                for key in (field.alias, name):
                    if key is not None:
                        data.pop(key, None)
                continue
            if field.is_required() or value is not None:
                continue
            for key in (field.alias, name):
                if key is not None and key in data and data[key] is None:
                    del data[key]
        return data

    def to_wire(self) -> dict[str, Any]:
        """The JSON object sent over the wire."""
        return self.model_dump(mode="json")
