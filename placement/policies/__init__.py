"""Policy rule names and their defaults, one module per resource.

The rule names are operator-facing (policy files refer to them), so they are
those of OpenStack Placement.
"""

from __future__ import annotations

from oslo_policy import policy

from placement.policies import (
    base,
    resource_provider,
    inventory,
    aggregate,
    usage,
    trait,
    resource_class,
    allocation,
    allocation_candidate,
    reshaper,
)


def list_rules() -> list[policy.RuleDefault]:
    """Every rule, for the enforcer and for oslopolicy-sample-generator."""
    return [
        *base.rules(),
        *resource_provider.rules(),
        *inventory.rules(),
        *aggregate.rules(),
        *usage.rules(),
        *trait.rules(),
        *resource_class.rules(),
        *allocation.rules(),
        *allocation_candidate.rules(),
        *reshaper.rules(),
    ]
