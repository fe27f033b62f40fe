"""Schemas of allocation bodies: PUT /allocations/{consumer_uuid} and
POST /allocations (the reshaper reuses the POST form).

How the body grew, version by version:

* 1.0: a list of ``{"resource_provider": {"uuid"}, "resources"}``;
* 1.8: ``project_id`` and ``user_id`` become required;
* 1.12: ``allocations`` is a dict keyed by provider uuid, mirroring
  GET /allocations/{consumer_uuid};
* 1.13: POST /allocations takes such bodies keyed by consumer uuid, and
  there an empty ``allocations`` clears the consumer;
* 1.28: ``consumer_generation`` (integer or null) is required, and PUT may
  clear too;
* 1.34: an optional ``mappings`` (request group suffix -> provider uuids),
  accepted and not stored;
* 1.38: ``consumer_type`` is required.
"""

from __future__ import annotations

from placement.schemas.common import RESOURCE_CLASS, UUID, Schema, obj, versioned

# Keys of dicts indexed by provider or consumer uuid.  A pattern rather than
# a format because keys can only be matched by pattern.
UUID_KEY = "^[0-9a-fA-F-]{36}$"
# Request group suffixes as microversion 1.33 allows them (unanchored, so
# any key holding such characters must map to a list of providers).
_GROUP_SUFFIX = "[a-zA-Z0-9_-]{1,64}"
# Consumer type names: upper case, digits and underscores.
CONSUMER_TYPE_NAME: Schema = {
    "type": "string", "pattern": "^[A-Z0-9_]+$", "minLength": 1, "maxLength": 255,
}
EXTERNAL_ID: Schema = {"type": "string", "minLength": 1, "maxLength": 255}
CONSUMER_GENERATION: Schema = {"type": ["integer", "null"]}

# {"VCPU": 2, ...}: at least one class, each amount at least 1.
RESOURCES: Schema = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {
        RESOURCE_CLASS["pattern"]: {"type": "integer", "minimum": 1},
    },
    "additionalProperties": False,
}

# A provider's part of a dict-form allocation.  ``generation`` is what GET
# shows; it may be sent back and is not checked.
_PROVIDER_ALLOCATION = obj(
    required=["resources"],
    generation={"type": "integer"},
    resources=RESOURCES,
)


def _allocations_by_provider(min_providers: int) -> Schema:
    return {
        "type": "object",
        "minProperties": min_providers,
        "patternProperties": {UUID_KEY: _PROVIDER_ALLOCATION},
        "additionalProperties": False,
    }


MAPPINGS: Schema = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {
        _GROUP_SUFFIX: {"type": "array", "minItems": 1, "items": UUID},
    },
}

_LIST_ITEM = obj(
    required=["resource_provider", "resources"],
    resource_provider=obj(required=["uuid"], uuid=UUID),
    resources=RESOURCES,
)
_ALLOCATION_LIST: Schema = {"type": "array", "minItems": 1, "items": _LIST_ITEM}

# One consumer's body in each version (PUT, and POST's per-consumer value).
PUT_1_0 = obj(required=["allocations"], allocations=_ALLOCATION_LIST)
PUT_1_8 = obj(
    required=["allocations", "project_id", "user_id"],
    allocations=_ALLOCATION_LIST, project_id=EXTERNAL_ID, user_id=EXTERNAL_ID,
)
PUT_1_12 = obj(
    required=["allocations", "project_id", "user_id"],
    allocations=_allocations_by_provider(1),
    project_id=EXTERNAL_ID, user_id=EXTERNAL_ID,
)
CONSUMER_1_13 = obj(
    required=["allocations", "project_id", "user_id"],
    allocations=_allocations_by_provider(0),
    project_id=EXTERNAL_ID, user_id=EXTERNAL_ID,
)
CONSUMER_1_28 = obj(
    required=["allocations", "project_id", "user_id", "consumer_generation"],
    allocations=_allocations_by_provider(0),
    project_id=EXTERNAL_ID, user_id=EXTERNAL_ID,
    consumer_generation=CONSUMER_GENERATION,
)
CONSUMER_1_34 = obj(
    required=["allocations", "project_id", "user_id", "consumer_generation"],
    allocations=_allocations_by_provider(0),
    project_id=EXTERNAL_ID, user_id=EXTERNAL_ID,
    consumer_generation=CONSUMER_GENERATION, mappings=MAPPINGS,
)
CONSUMER_1_38 = obj(
    required=["allocations", "project_id", "user_id", "consumer_generation",
              "consumer_type"],
    allocations=_allocations_by_provider(0),
    project_id=EXTERNAL_ID, user_id=EXTERNAL_ID,
    consumer_generation=CONSUMER_GENERATION, mappings=MAPPINGS,
    consumer_type=CONSUMER_TYPE_NAME,
)


def by_consumer(consumer: Schema, min_consumers: int = 1) -> Schema:
    """A dict of consumer bodies keyed by consumer uuid."""
    return {
        "type": "object",
        "minProperties": min_consumers,
        "patternProperties": {UUID_KEY: consumer},
        "additionalProperties": False,
    }


PUT_ALLOCATIONS = versioned({
    (1, 0): PUT_1_0,
    (1, 8): PUT_1_8,
    (1, 12): PUT_1_12,
    (1, 28): CONSUMER_1_28,
    (1, 34): CONSUMER_1_34,
    (1, 38): CONSUMER_1_38,
})

POST_ALLOCATIONS = versioned({
    (1, 13): by_consumer(CONSUMER_1_13),
    (1, 28): by_consumer(CONSUMER_1_28),
    (1, 34): by_consumer(CONSUMER_1_34),
    (1, 38): by_consumer(CONSUMER_1_38),
})
