"""Schema of the GET /usages query string.

``project_id`` is required and ``user_id`` narrows it (1.9); from 1.38
``consumer_type`` filters by consumer type, where ``all`` sums every type
and ``unknown`` selects consumers written before types existed.
"""

from __future__ import annotations

from placement.schemas.common import Schema, obj, versioned

_EXTERNAL_ID: Schema = {"type": "string", "minLength": 1, "maxLength": 255}
# As upstream, only "unknown" is anchored at both ends: "allx" passes and
# matches no type.
_CONSUMER_TYPE_FILTER: Schema = {
    "type": "string",
    "pattern": "^[A-Z0-9_]+$|^all|^unknown$",
    "minLength": 1,
    "maxLength": 255,
}

TOTAL_USAGES_QUERY = versioned({
    (1, 9): obj(required=["project_id"], project_id=_EXTERNAL_ID,
                user_id=_EXTERNAL_ID),
    (1, 38): obj(required=["project_id"], project_id=_EXTERNAL_ID,
                 user_id=_EXTERNAL_ID, consumer_type=_CONSUMER_TYPE_FILTER),
})
