"""Policy rules for resource class URLs."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:resource_classes:list"
CREATE = "placement:resource_classes:create"
SHOW = "placement:resource_classes:show"
UPDATE = "placement:resource_classes:update"
DELETE = "placement:resource_classes:delete"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        policy.DocumentedRuleDefault(
            name=LIST,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="List resource classes.",
            operations=[{"method": "GET", "path": "/resource_classes"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=CREATE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Create a custom resource class.",
            operations=[{"method": "POST", "path": "/resource_classes"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=SHOW,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Show a resource class.",
            operations=[{"method": "GET", "path": "/resource_classes/{name}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=UPDATE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Create or rename a custom resource class.",
            operations=[{"method": "PUT", "path": "/resource_classes/{name}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=DELETE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Delete a custom resource class.",
            operations=[{"method": "DELETE", "path": "/resource_classes/{name}"}],
            scope_types=["project"],
        ),
    ]
