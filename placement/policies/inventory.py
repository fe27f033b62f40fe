"""Policy rules for the inventories of a resource provider."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:resource_providers:inventories:list"
CREATE = "placement:resource_providers:inventories:create"
SHOW = "placement:resource_providers:inventories:show"
UPDATE = "placement:resource_providers:inventories:update"
DELETE = "placement:resource_providers:inventories:delete"

_ALL = "/resource_providers/{uuid}/inventories"
_ONE = _ALL + "/{resource_class}"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(LIST, "List every inventory of a resource provider.",
                        ("GET", _ALL)),
        base.documented(CREATE,
                        "Add the inventory of one resource class to a "
                        "resource provider.",
                        ("POST", _ALL)),
        base.documented(SHOW,
                        "Show the inventory of one resource class of a "
                        "resource provider.",
                        ("GET", _ONE)),
        base.documented(UPDATE,
                        "Replace all inventories of a resource provider, or "
                        "the inventory of one resource class.",
                        ("PUT", _ALL), ("PUT", _ONE)),
        base.documented(DELETE,
                        "Delete all inventories of a resource provider, or "
                        "the inventory of one resource class.",
                        ("DELETE", _ALL), ("DELETE", _ONE)),
    ]
