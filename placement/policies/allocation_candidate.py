"""Policy rule for ``/allocation_candidates``."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:allocation_candidates:list"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(LIST,
                        "Search for providers that can satisfy a request for "
                        "resources and traits.",
                        ("GET", "/allocation_candidates")),
    ]
