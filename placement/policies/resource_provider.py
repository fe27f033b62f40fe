"""Policy rules for ``/resource_providers`` and ``/resource_providers/{uuid}``."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:resource_providers:list"
CREATE = "placement:resource_providers:create"
SHOW = "placement:resource_providers:show"
UPDATE = "placement:resource_providers:update"
DELETE = "placement:resource_providers:delete"

_ONE = "/resource_providers/{uuid}"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(LIST, "List and filter resource providers.",
                        ("GET", "/resource_providers")),
        base.documented(CREATE, "Create a resource provider.",
                        ("POST", "/resource_providers")),
        base.documented(SHOW, "Show one resource provider.", ("GET", _ONE)),
        base.documented(UPDATE,
                        "Rename a resource provider or change its parent.",
                        ("PUT", _ONE)),
        base.documented(DELETE, "Delete a resource provider.",
                        ("DELETE", _ONE)),
    ]
