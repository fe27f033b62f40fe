"""Policy rules for resource provider URLs."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:resource_providers:list"
CREATE = "placement:resource_providers:create"
SHOW = "placement:resource_providers:show"
UPDATE = "placement:resource_providers:update"
DELETE = "placement:resource_providers:delete"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        policy.DocumentedRuleDefault(
            name=LIST,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="List resource providers.",
            operations=[{"method": "GET", "path": "/resource_providers"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=CREATE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Create a resource provider.",
            operations=[{"method": "POST", "path": "/resource_providers"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=SHOW,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Show a resource provider.",
            operations=[{"method": "GET", "path": "/resource_providers/{uuid}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=UPDATE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Update a resource provider.",
            operations=[{"method": "PUT", "path": "/resource_providers/{uuid}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=DELETE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Delete a resource provider.",
            operations=[{"method": "DELETE", "path": "/resource_providers/{uuid}"}],
            scope_types=["project"],
        ),
    ]
