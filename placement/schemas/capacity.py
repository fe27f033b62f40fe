"""Query string schema of ``GET /capacity`` (not in OpenStack Placement).

The request parameters are those of one allocation candidates group
(checked again, with ``resources`` then required, by
:data:`placement.schemas.allocation_candidate.SINGLE_GROUP`), plus
``provider``, part of a provider name to look for.
"""

from __future__ import annotations

from placement.schemas import allocation_candidate
from placement.schemas.common import Schema

QUERY: Schema = {
    "type": "object",
    "properties": {**allocation_candidate.SINGLE_GROUP["properties"],
                   "provider": {"type": "string", "minLength": 1,
                                "maxLength": 200}},
    "additionalProperties": False,
}
