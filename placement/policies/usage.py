"""Policy rules for usage URLs."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

PROVIDER_USAGES = "placement:resource_providers:usages"
TOTAL_USAGES = "placement:usages"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        policy.DocumentedRuleDefault(
            name=PROVIDER_USAGES,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Show the usages of a provider.",
            operations=[{"method": "GET", "path": "/resource_providers/{uuid}/usages"}],
            scope_types=["project"],
        ),
        policy.DocumentedRuleDefault(
            name=TOTAL_USAGES,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Show the usages of a project (and user).",
            operations=[{"method": "GET", "path": "/usages"}],
            scope_types=["project"],
        ),
    ]
