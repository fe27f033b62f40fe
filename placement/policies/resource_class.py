"""Policy rules for ``/resource_classes`` and ``/resource_classes/{name}``."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:resource_classes:list"
CREATE = "placement:resource_classes:create"
SHOW = "placement:resource_classes:show"
UPDATE = "placement:resource_classes:update"
DELETE = "placement:resource_classes:delete"

_ONE = "/resource_classes/{name}"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(LIST, "List standard and custom resource classes.",
                        ("GET", "/resource_classes")),
        base.documented(CREATE, "Create a custom resource class.",
                        ("POST", "/resource_classes")),
        base.documented(SHOW, "Show one resource class.", ("GET", _ONE)),
        base.documented(UPDATE,
                        "Create (from 1.7) or rename a custom resource class.",
                        ("PUT", _ONE)),
        base.documented(DELETE, "Delete an unused custom resource class.",
                        ("DELETE", _ONE)),
    ]
