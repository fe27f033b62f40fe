"""Policy rule for ``/reshaper``.

Reshaping is what a service (nova's compute) does when it moves resources
between providers of a tree, so by default it is for services only, not
administrators.
"""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

RESHAPE = "placement:reshaper:reshape"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(RESHAPE,
                        "Move inventories and allocations between resource "
                        "providers in one atomic request.",
                        ("POST", "/reshaper"),
                        check_str=base.SERVICE_API),
    ]
