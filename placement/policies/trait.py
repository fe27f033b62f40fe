"""Policy rules for ``/traits`` and for the traits of a resource provider."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:traits:list"
SHOW = "placement:traits:show"
UPDATE = "placement:traits:update"
DELETE = "placement:traits:delete"
RP_TRAIT_LIST = "placement:resource_providers:traits:list"
RP_TRAIT_UPDATE = "placement:resource_providers:traits:update"
RP_TRAIT_DELETE = "placement:resource_providers:traits:delete"

_ONE = "/traits/{name}"
_PROVIDER = "/resource_providers/{uuid}/traits"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(LIST, "List standard and custom traits.",
                        ("GET", "/traits")),
        base.documented(SHOW, "Check that a trait exists.", ("GET", _ONE)),
        base.documented(UPDATE, "Create a custom trait.", ("PUT", _ONE)),
        base.documented(DELETE, "Delete an unused custom trait.",
                        ("DELETE", _ONE)),
        base.documented(RP_TRAIT_LIST,
                        "List the traits of a resource provider.",
                        ("GET", _PROVIDER)),
        base.documented(RP_TRAIT_UPDATE,
                        "Replace the traits of a resource provider.",
                        ("PUT", _PROVIDER)),
        base.documented(RP_TRAIT_DELETE,
                        "Remove every trait from a resource provider.",
                        ("DELETE", _PROVIDER)),
    ]
