"""Request schemas for inventories.

Only ranges are checked here; that reserved leaves a positive capacity is
checked by the handler, whose message depends on the microversion.
"""

from __future__ import annotations

from placement.schemas.common import GENERATION, MAX_INT, RESOURCE_CLASS, Schema

# The largest single precision float: allocation_ratio is stored as FLOAT.
FLOAT_MAX = 3.40282e+38


def _count(minimum: int) -> Schema:
    # Key order is visible: validation errors quote the schema, and
    # Placement's has the maximum first.
    return {"type": "integer", "maximum": MAX_INT, "minimum": minimum}


FIELDS: dict[str, Schema] = {
    "total": _count(1),
    "reserved": _count(0),
    "min_unit": _count(1),
    "max_unit": _count(1),
    "step_size": _count(1),
    "allocation_ratio": {"type": "number", "maximum": FLOAT_MAX},
}


def _record(required: list[str], **extra: Schema) -> Schema:
    return {
        "type": "object",
        "properties": {"resource_provider_generation": GENERATION,
                       **FIELDS, **extra},
        "required": required,
        "additionalProperties": False,
    }


# PUT /resource_providers/{uuid}/inventories/{resource_class}
UPDATE: Schema = _record(["total", "resource_provider_generation"])

# POST /resource_providers/{uuid}/inventories: the generation may be sent
# but is not required (nor compared).
CREATE: Schema = _record(["total", "resource_class"],
                         resource_class=RESOURCE_CLASS)

# PUT /resource_providers/{uuid}/inventories: one record per class.  Keys
# that do not look like class names are not validated here; they fail as
# unknown resource classes.
REPLACE: Schema = {
    "type": "object",
    "properties": {
        "resource_provider_generation": GENERATION,
        "inventories": {
            "type": "object",
            "patternProperties": {RESOURCE_CLASS["pattern"]: _record(["total"])},
        },
    },
    "required": ["resource_provider_generation", "inventories"],
    "additionalProperties": False,
}
