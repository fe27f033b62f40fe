"""Policy rules for the aggregates of a resource provider."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

LIST = "placement:resource_providers:aggregates:list"
UPDATE = "placement:resource_providers:aggregates:update"

_PATH = "/resource_providers/{uuid}/aggregates"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(LIST,
                        "List the aggregates a resource provider belongs to.",
                        ("GET", _PATH)),
        base.documented(UPDATE,
                        "Replace the aggregates a resource provider belongs "
                        "to.",
                        ("PUT", _PATH)),
    ]
