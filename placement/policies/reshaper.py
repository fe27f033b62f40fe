"""Policy rule for ``/reshaper``."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

RESHAPE = "placement:reshaper:reshape"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(RESHAPE,
                        "Move inventories and allocations between resource "
                        "providers in one atomic request.",
                        ("POST", "/reshaper")),
    ]
