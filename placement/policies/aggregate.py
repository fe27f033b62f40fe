"""Policy rules for aggregate URLs."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:resource_providers:aggregates:list"
UPDATE = "placement:resource_providers:aggregates:update"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        policy.DocumentedRuleDefault(
            name=LIST,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="List the aggregates of a provider.",
            operations=[{"method": "GET", "path": "/resource_providers/{uuid}/aggregates"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=UPDATE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Replace the aggregates of a provider.",
            operations=[{"method": "PUT", "path": "/resource_providers/{uuid}/aggregates"}],
            scope_types=["project"],
        ),
    ]
