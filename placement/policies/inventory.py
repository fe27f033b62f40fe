"""Policy rules for inventory URLs."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:resource_providers:inventories:list"
CREATE = "placement:resource_providers:inventories:create"
SHOW = "placement:resource_providers:inventories:show"
UPDATE = "placement:resource_providers:inventories:update"
DELETE = "placement:resource_providers:inventories:delete"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        policy.DocumentedRuleDefault(
            name=LIST,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="List the inventories of a provider.",
            operations=[{"method": "GET", "path": "/resource_providers/{uuid}/inventories"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=CREATE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Create one inventory of a provider.",
            operations=[{"method": "POST", "path": "/resource_providers/{uuid}/inventories"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=SHOW,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Show one inventory of a provider.",
            operations=[{"method": "GET", "path": "/resource_providers/{uuid}/inventories/{resource_class}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=UPDATE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Replace or update inventories of a provider.",
            operations=[{"method": "PUT", "path": "/resource_providers/{uuid}/inventories"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=DELETE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Delete inventories of a provider.",
            operations=[{"method": "DELETE", "path": "/resource_providers/{uuid}/inventories"}],
            scope_types=["project"],
        ),
    ]
