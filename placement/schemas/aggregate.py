"""Schemas of PUT /resource_providers/{uuid}/aggregates.

1.1-1.18: the body is a bare list of aggregate uuids.
1.19+: an object carrying the list and the provider generation the client
last saw, so that concurrent updates can be detected.
"""

from __future__ import annotations

from placement.schemas.common import GENERATION, UUID, Schema, obj, versioned

_AGGREGATE_UUIDS: Schema = {"type": "array", "items": UUID, "uniqueItems": True}

SET_AGGREGATES = versioned({
    (1, 1): _AGGREGATE_UUIDS,
    (1, 19): obj(
        required=["aggregates", "resource_provider_generation"],
        aggregates=_AGGREGATE_UUIDS,
        resource_provider_generation=GENERATION,
    ),
})
