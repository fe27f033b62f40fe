"""Schema fragments shared by resources, and the versioned-table type."""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]
Version = tuple[int, int]

UUID: Schema = {"type": "string", "format": "uuid"}
NULLABLE_UUID: Schema = {"anyOf": [UUID, {"type": "null"}]}
# Resource class names: standard ones are upper case with underscores and
# digits; custom ones start with CUSTOM_.
RESOURCE_CLASS: Schema = {"type": "string", "pattern": "^[A-Z0-9_]+$"}
CUSTOM_RESOURCE_CLASS: Schema = {
    "type": "string", "pattern": "^CUSTOM_[A-Z0-9_]+$", "maxLength": 255,
}
TRAIT_NAME: Schema = {"type": "string", "pattern": "^[A-Z0-9_]+$", "maxLength": 255}
CUSTOM_TRAIT: Schema = {"type": "string", "pattern": "^CUSTOM_[A-Z0-9_]+$",
                        "maxLength": 255}
GENERATION: Schema = {"type": "integer"}
NON_NEGATIVE_INT: Schema = {"type": "integer", "minimum": 0}
# Integers as databases store them (signed 32 bit).
MAX_INT = 2147483647


def obj(required: list[str] | None = None, additional: bool = False,
        **properties: Schema) -> Schema:
    """An object schema with these properties."""
    # Key order matters: a validation error quotes the schema, and clients
    # see it in the same order as Placement's (required before
    # additionalProperties).
    schema: Schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = additional
    return schema


class Versioned:
    """Schemas by the microversion that introduced each form.

    ``Versioned({(1, 0): a, (1, 14): b}).at((1, 20))`` is ``b``.
    """

    def __init__(self, table: dict[Version, Schema]) -> None:
        self.table = dict(sorted(table.items()))

    def at(self, version: Version) -> Schema | None:
        chosen = None
        for since, schema in self.table.items():
            if since <= version:
                chosen = schema
        return chosen


def versioned(table: dict[Version, Schema]) -> Versioned:
    return Versioned(table)
