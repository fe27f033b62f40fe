"""Policy rules for allocation URLs."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

ALLOC_LIST = "placement:allocations:list"
ALLOC_MANAGE = "placement:allocations:manage"
ALLOC_UPDATE = "placement:allocations:update"
ALLOC_DELETE = "placement:allocations:delete"
RP_ALLOC_LIST = "placement:resource_providers:allocations:list"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        policy.DocumentedRuleDefault(
            name=ALLOC_LIST,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="List the allocations of a consumer.",
            operations=[{"method": "GET", "path": "/allocations/{consumer_uuid}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=ALLOC_MANAGE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Set allocations of several consumers.",
            operations=[{"method": "POST", "path": "/allocations"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=ALLOC_UPDATE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Set the allocations of a consumer.",
            operations=[{"method": "PUT", "path": "/allocations/{consumer_uuid}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=ALLOC_DELETE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Delete the allocations of a consumer.",
            operations=[{"method": "DELETE", "path": "/allocations/{consumer_uuid}"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=RP_ALLOC_LIST,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="List the allocations against a provider.",
            operations=[{"method": "GET", "path": "/resource_providers/{uuid}/allocations"}],
            scope_types=["project"],
        ),
    ]
