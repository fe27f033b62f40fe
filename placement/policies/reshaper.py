"""Policy rules for reshaper URLs."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

RESHAPE = "placement:reshaper:reshape"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        policy.DocumentedRuleDefault(
            name=RESHAPE,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="Move inventories and allocations in one transaction.",
            operations=[{"method": "POST", "path": "/reshaper"}],
            scope_types=["project"],
        ),
    ]
