"""Query string schemas of ``GET /allocation_candidates``.

The schema sees the last value of every key and only decides which keys may
appear at a microversion and the shape of ``limit`` and ``group_policy``;
:mod:`placement.request_groups` parses the values and words its own errors.
"""

from __future__ import annotations

from placement.schemas.common import Schema, versioned

_TEXT: Schema = {"type": "string"}
# Some parameters are written as a list of types.  The schema is quoted in
# the detail of a 400, which clients compare with Placement's, so each
# fragment is spelt as Placement spells it, down to the order of its keys.
_LISTED_TEXT: Schema = {"type": ["string"]}
LIMIT: Schema = {"type": ["integer", "string"], "pattern": "^[1-9][0-9]*$",
                 "minimum": 1, "minLength": 1}
GROUP_POLICY: Schema = {"type": "string", "enum": ["none", "isolate"]}

# Group suffixes: numbers from 1.25, strings of 1-64 characters from 1.33.
_NUMBERED = "([1-9][0-9]*)?$"
_STRING = "([a-zA-Z0-9_-]{1,64})?$"


def _ungrouped(**properties: Schema) -> Schema:
    """Before 1.25: one group, and ``resources`` is mandatory."""
    return {"type": "object", "properties": {"resources": _TEXT, **properties},
            "required": ["resources"], "additionalProperties": False}


def _grouped(suffix: str, keys: tuple[str, ...], **properties: Schema) -> Schema:
    """From 1.25: the group parameters ``keys`` with any ``suffix``."""
    return {
        "type": "object",
        "properties": {"limit": LIMIT, "group_policy": GROUP_POLICY,
                       **properties},
        "additionalProperties": False,
        "patternProperties": {"^%s%s" % (key, suffix): _TEXT for key in keys},
    }


# One group of resources, required and member_of, without limit: what
# GET /capacity (not Placement's) takes, checked as at 1.21.
SINGLE_GROUP = _ungrouped(required=_LISTED_TEXT, member_of=_LISTED_TEXT)

_GROUP_KEYS = ("resources", "required", "member_of")
_GROUP_KEYS_IN_TREE = _GROUP_KEYS + ("in_tree",)

QUERY = versioned({
    (1, 10): _ungrouped(),
    (1, 16): _ungrouped(limit=LIMIT),
    (1, 17): _ungrouped(limit=LIMIT, required=_LISTED_TEXT),
    (1, 21): _ungrouped(limit=LIMIT, required=_LISTED_TEXT,
                        member_of=_LISTED_TEXT),
    (1, 25): _grouped(_NUMBERED, _GROUP_KEYS),
    (1, 31): _grouped(_NUMBERED, _GROUP_KEYS_IN_TREE),
    (1, 33): _grouped(_STRING, _GROUP_KEYS_IN_TREE),
    (1, 35): _grouped(_STRING, _GROUP_KEYS_IN_TREE, root_required=_LISTED_TEXT),
    (1, 36): _grouped(_STRING, _GROUP_KEYS_IN_TREE, root_required=_LISTED_TEXT,
                      same_subtree=_LISTED_TEXT),
})
