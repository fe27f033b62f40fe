"""Policy rules for trait URLs."""

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


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        policy.DocumentedRuleDefault(
            name=LIST,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="List traits.",
            operations=[{"method": "GET", "path": "/traits"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=SHOW,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Show a trait.",
            operations=[{"method": "GET", "path": "/traits/{name}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=UPDATE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Create a custom trait.",
            operations=[{"method": "PUT", "path": "/traits/{name}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=DELETE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Delete a custom trait.",
            operations=[{"method": "DELETE", "path": "/traits/{name}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=RP_TRAIT_LIST,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="List the traits of a provider.",
            operations=[{"method": "GET", "path": "/resource_providers/{uuid}/traits"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=RP_TRAIT_UPDATE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Replace the traits of a provider.",
            operations=[{"method": "PUT", "path": "/resource_providers/{uuid}/traits"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=RP_TRAIT_DELETE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Remove all traits of a provider.",
            operations=[{"method": "DELETE", "path": "/resource_providers/{uuid}/traits"}],
            scope_types=["project"],
        ),
    ]
