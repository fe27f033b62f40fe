"""Bodies and query strings of the bare-metal allocation API (Ironic's).

The field types are Ironic's, so a bad body is refused with the same
jsonschema sentence.  ``owner`` is in every form of the body: below 1.60
Ironic refuses it with 406, not as an unknown field, and the handler does
the same.
"""

from __future__ import annotations

import os_traits

from placement.schemas.common import CUSTOM_TRAIT, Schema, obj, versioned

_NULLABLE_STRING: Schema = {"type": ["string", "null"]}

# A trait is a standard one or CUSTOM_ and upper case, as Ironic checks it.
TRAIT: Schema = {
    "type": "string", "minLength": 1, "maxLength": 255,
    "anyOf": [{"pattern": CUSTOM_TRAIT["pattern"]},
              {"enum": sorted(os_traits.get_traits())}],
}

_CREATE_FIELDS: dict[str, Schema] = {
    "candidate_nodes": {"type": ["array", "null"], "items": {"type": "string"}},
    "extra": {"type": ["object", "null"]},
    "name": _NULLABLE_STRING,
    "owner": _NULLABLE_STRING,
    "resource_class": {"type": ["string", "null"], "maxLength": 80},
    "traits": {"type": ["array", "null"], "items": TRAIT},
    "uuid": _NULLABLE_STRING,
}

CREATE = versioned({
    (1, 52): {"type": "object", "properties": _CREATE_FIELDS,
              "additionalProperties": False},
    # Backfilling: the node the allocation is for.
    (1, 58): {"type": "object",
              "properties": {**_CREATE_FIELDS, "node": _NULLABLE_STRING},
              "additionalProperties": False},
})

# A JSON patch (RFC 6902); which paths it may touch is the handler's check.
PATCH: Schema = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "op": {"type": "string", "enum": ["add", "replace", "remove"]},
            "path": {"type": "string", "pattern": "^/.+"},
            "value": {},
        },
        "required": ["op", "path"],
        "additionalProperties": False,
    },
}

# What an allocation shows, by the version that added the field; a
# ``fields`` selection must name some of these.
FIELDS_BEFORE_OWNER = ("candidate_nodes", "created_at", "extra", "last_error",
                       "links", "name", "node_uuid", "resource_class", "state",
                       "traits", "updated_at", "uuid")
FIELDS = versioned({
    (1, 52): {"type": "string", "enum": list(FIELDS_BEFORE_OWNER)},
    (1, 60): {"type": "string", "enum": [*FIELDS_BEFORE_OWNER, "owner"]},
})

SORT_DIR: Schema = {"type": "string", "enum": ["asc", "desc"]}
MARKER: Schema = {"type": "string", "format": "uuid"}

# What a patched allocation's name and extra must still be.
PATCHED: Schema = obj(name=_NULLABLE_STRING, extra={"type": ["object", "null"]})
