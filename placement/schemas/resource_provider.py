"""Request schemas for resource providers: bodies and list query strings.

Each table maps the microversion that introduced a form to the whole
schema at that version; forms share the fragments defined here.
"""

from __future__ import annotations

from placement.schemas.common import NULLABLE_UUID, UUID, Schema, obj, versioned

# Provider names are at most 200 characters; an empty name passes the
# schema and is refused when the provider is created.
NAME: Schema = {"type": "string", "maxLength": 200}

CREATE = versioned({
    (1, 0): obj(required=["name"], name=NAME, uuid=UUID),
    # 1.14: nested providers.
    (1, 14): obj(required=["name"], name=NAME, uuid=UUID,
                 parent_provider_uuid=NULLABLE_UUID),
})

UPDATE = versioned({
    (1, 0): obj(required=["name"], name=NAME),
    (1, 14): obj(required=["name"], name=NAME,
                 parent_provider_uuid=NULLABLE_UUID),
})

# Query parameters of GET /resource_providers.  Values other than uuids are
# plain strings here; querystring.py parses them and words its own errors.
_TEXT: Schema = {"type": "string"}
_LIST_1_0 = {"name": _TEXT, "uuid": UUID}
_LIST_1_3 = {**_LIST_1_0, "member_of": _TEXT}
_LIST_1_4 = {**_LIST_1_3, "resources": _TEXT}
_LIST_1_14 = {**_LIST_1_4, "in_tree": UUID}
_LIST_1_18 = {**_LIST_1_14, "required": _TEXT}



def _query(properties: dict[str, Schema]) -> Schema:
    # Built by hand rather than with obj(): one parameter is called
    # "required", which obj() takes as its own argument.
    return {"type": "object", "properties": properties,
            "additionalProperties": False}


LIST_QUERY = versioned({
    (1, 0): _query(_LIST_1_0),
    (1, 3): _query(_LIST_1_3),
    (1, 4): _query(_LIST_1_4),
    (1, 14): _query(_LIST_1_14),
    (1, 18): _query(_LIST_1_18),
})
