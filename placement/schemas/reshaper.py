"""Schema of the POST /reshaper body (1.30).

``inventories`` maps provider uuids to what PUT
/resource_providers/{uuid}/inventories takes (at least one provider);
``allocations`` maps consumer uuids to what POST /allocations takes for one
consumer at the same microversion, and may be empty.
"""

from __future__ import annotations

from placement.schemas import allocation, inventory
from placement.schemas.common import Schema, obj, versioned

_INVENTORIES: Schema = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {allocation.UUID_KEY: inventory.REPLACE},
    "additionalProperties": False,
}


def _body(consumer: Schema) -> Schema:
    return obj(required=["inventories", "allocations"],
               inventories=_INVENTORIES,
               allocations=allocation.by_consumer(consumer, min_consumers=0))


RESHAPE = versioned({
    (1, 30): _body(allocation.CONSUMER_1_28),
    (1, 34): _body(allocation.CONSUMER_1_34),
    (1, 38): _body(allocation.CONSUMER_1_38),
})
