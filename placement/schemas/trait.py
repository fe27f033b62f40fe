"""Schemas of the trait URLs: the /traits query string, the custom trait
name of PUT /traits/{name} and the body of PUT
/resource_providers/{uuid}/traits.
"""

from __future__ import annotations

from placement.schemas.common import CUSTOM_TRAIT, GENERATION, Schema, obj, versioned

# Any trait name a provider may be given.  Unknown names are refused by the
# handler with "No such trait", so the schema only bounds the length.
_ANY_TRAIT: Schema = {"type": "string", "minLength": 1, "maxLength": 255}

# PUT /traits/{name} accepts custom names only.
CUSTOM_NAME: Schema = CUSTOM_TRAIT

# ?name=in:A,B|startswith:P and ?associated=true|false; the handler parses
# the values, the schema only refuses unknown parameters.
LIST_QUERY = versioned({
    (1, 6): obj(name={"type": "string"}, associated={"type": "string"}),
})

SET_PROVIDER_TRAITS = versioned({
    (1, 6): obj(
        required=["traits", "resource_provider_generation"],
        traits={"type": "array", "items": _ANY_TRAIT},
        resource_provider_generation=GENERATION,
    ),
})
