"""Policy rules for allocations: of consumers, and against a provider."""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import base

ALLOC_LIST = "placement:allocations:list"
ALLOC_MANAGE = "placement:allocations:manage"
ALLOC_UPDATE = "placement:allocations:update"
ALLOC_DELETE = "placement:allocations:delete"
RP_ALLOC_LIST = "placement:resource_providers:allocations:list"

_CONSUMER = "/allocations/{consumer_uuid}"


def rules() -> list[policy.DocumentedRuleDefault]:
    return [
        base.documented(ALLOC_MANAGE,
                        "Write the allocations of several consumers at once.",
                        ("POST", "/allocations")),
        base.documented(ALLOC_LIST, "Show the allocations of a consumer.",
                        ("GET", _CONSUMER)),
        base.documented(ALLOC_UPDATE,
                        "Replace the allocations of a consumer.",
                        ("PUT", _CONSUMER)),
        base.documented(ALLOC_DELETE,
                        "Delete every allocation of a consumer.",
                        ("DELETE", _CONSUMER)),
        base.documented(RP_ALLOC_LIST,
                        "List the allocations made against a resource "
                        "provider.",
                        ("GET", "/resource_providers/{uuid}/allocations")),
    ]
