"""Policy rules for allocation candidate URLs."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:allocation_candidates:list"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        policy.DocumentedRuleDefault(
            name=LIST,
            check_str=base.ADMIN_OR_SERVICE_API,
            description="List allocation candidates.",
            operations=[{"method": "GET", "path": "/allocation_candidates"}],
            scope_types=["project"],
        ),
    ]
